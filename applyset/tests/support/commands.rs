//! Running commands: kubectl v1.33, helm, kustomize and the applyset CLI.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, Result, anyhow, bail};

use super::{TestNamespace, repo_root};

/// The pinned kustomize, built by `scripts/build-kustomize` on first use (cached).
pub fn kustomize_binary() -> Result<PathBuf> {
    static BINARY: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            let out = Command::new(repo_root().join("scripts/build-kustomize")).output().map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(format!("scripts/build-kustomize failed:\n{}", String::from_utf8_lossy(&out.stderr)));
            }
            let stdout = String::from_utf8_lossy(&out.stdout);
            Ok(PathBuf::from(stdout.lines().last().unwrap_or_default().trim()))
        })
        .clone()
        .map_err(anyhow::Error::msg)
}

/// The real `kubectl` v1.33: `$APPLYSET_TEST_KUBECTL`, else `kubectl.1.33`
/// next to the `kubectl` on PATH (the machine ships one per minor version).
pub fn kubectl_path() -> Result<PathBuf> {
    if let Ok(path) = std::env::var("APPLYSET_TEST_KUBECTL") {
        return Ok(path.into());
    }
    let kubectl = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("kubectl"))
        .find(|candidate| candidate.is_file())
        .context("no kubectl on PATH (expected kubectl.1.33 beside it)")?;
    let versioned =
        std::fs::canonicalize(&kubectl)?.parent().context("kubectl has no parent directory")?.join("kubectl.1.33");
    if !versioned.is_file() {
        bail!("{} does not exist (looked beside {})", versioned.display(), kubectl.display());
    }
    Ok(versioned)
}

/// `kubectl.1.33` with `kubeconfig` and no namespace (for objects that name their own).
pub fn kubectl_cluster(kubeconfig: &Path) -> Result<Command> {
    let mut command = Command::new(kubectl_path()?);
    command.arg("--kubeconfig").arg(kubeconfig);
    Ok(command)
}

/// Helm, for the tests that render the chart: `$APPLYSET_TEST_HELM`, else the pinned helm that
/// `scripts/install-tools --helm-only` installs into `.cache/tools` (once per test binary; only
/// the first run on a machine downloads it).
pub fn helm_path() -> Result<PathBuf> {
    static HELM: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    HELM.get_or_init(|| {
        if let Ok(path) = std::env::var("APPLYSET_TEST_HELM")
            && !path.is_empty()
        {
            return Ok(path.into());
        }
        let script = repo_root().join("scripts/install-tools");
        let output = run(Command::new(&script).arg("--helm-only"), None).map_err(|error| format!("{error:#}"))?;
        let bin = output.stdout.lines().last().unwrap_or_default().to_owned();
        if !output.success || bin.is_empty() {
            return Err(format!("`{} --helm-only` failed:\n{}{}", script.display(), output.stderr, output.stdout));
        }
        Ok(Path::new(&bin).join("helm"))
    })
    .clone()
    .map_err(|error| anyhow!("no helm: {error}"))
}

/// `kubectl.1.33` with `kubeconfig` and `namespace`.
pub fn kubectl(kubeconfig: &Path, namespace: &str) -> Result<Command> {
    let mut command = Command::new(kubectl_path()?);
    command.arg("--kubeconfig").arg(kubeconfig).arg("--namespace").arg(namespace);
    Ok(command)
}

/// What a finished command said.
#[derive(Debug)]
pub struct CommandOutput {
    pub command: String,
    pub success: bool,
    /// The exit code (`None` when a signal ended the process).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl CommandOutput {
    pub fn success_stdout(self) -> Result<String> {
        if !self.success {
            bail!("`{}` failed:\n{}{}", self.command, self.stderr, self.stdout);
        }
        Ok(self.stdout)
    }
}

/// Runs `command` to completion, feeding it `stdin` when given.
pub fn run(command: &mut Command, stdin: Option<&str>) -> Result<CommandOutput> {
    use std::io::Write;
    use std::process::Stdio;

    let description = format!("{command:?}");
    command.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().with_context(|| format!("could not start {description}"))?;
    if let Some(input) = stdin {
        // Dropping the handle at the end of the statement closes the pipe.
        child.stdin.take().expect("stdin is piped").write_all(input.as_bytes())?;
    }
    let output = child.wait_with_output()?;
    Ok(CommandOutput {
        command: description,
        success: output.status.success(),
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// `applyset SUBCOMMAND --kubeconfig K ARGS…`, run to completion (never with the developer's
/// `$KUBECONFIG`).
pub fn applyset_cli(kubeconfig: &Path, subcommand: &str, args: &[&str]) -> Result<CommandOutput> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_applyset"));
    command.env_remove("KUBECONFIG");
    command.arg(subcommand).arg("--kubeconfig").arg(kubeconfig).args(args);
    run(&mut command, None)
}

/// `kubectl apply ARGS` (real kubectl) in `ns`, run to completion.
pub fn kubectl_apply(ns: &TestNamespace, args: &[&str]) -> Result<CommandOutput> {
    let mut command = ns.kubectl()?;
    command.arg("apply").args(args);
    run(&mut command, None)
}

/// `applyset apply --kubeconfig … -n NS ARGS`, run to completion.
pub fn applyset_apply(ns: &TestNamespace, args: &[&str]) -> Result<CommandOutput> {
    applyset_cli(&ns.kubeconfig, "apply", &[&["-n", &ns.name][..], args].concat())
}
