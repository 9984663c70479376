//! A second control plane of its own (`scripts/control-plane up` with `APPLYSET_CP_STATE`
//! set to a directory of its own): the "other cluster" of the remote-cluster tests. It is
//! stopped (`down`, which removes its state) when dropped: only what it started.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};

pub struct SecondControlPlane {
    state: PathBuf,
    /// Its admin kubeconfig (inline certificates).
    pub kubeconfig: PathBuf,
}

impl SecondControlPlane {
    /// Starts a control plane whose state is `scratch_dir("control-planes", name)`.
    pub fn up(name: &str) -> Result<SecondControlPlane> {
        let state = super::scratch_dir("control-planes", name);
        let output = script(&state).arg("up").output().context("running scripts/control-plane up")?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            bail!("the second control plane did not start:\n{}{stdout}", String::from_utf8_lossy(&output.stderr));
        }
        let kubeconfig = stdout
            .lines()
            .last()
            .and_then(|line| line.strip_prefix("KUBECONFIG="))
            .context("`control-plane up` ends with KUBECONFIG=")?;
        Ok(SecondControlPlane { state, kubeconfig: kubeconfig.into() })
    }

    /// `kubectl --kubeconfig <this plane>` with `args`; its stdout.
    pub fn kubectl(&self, args: &[&str]) -> Result<String> {
        let output = Command::new("kubectl").arg("--kubeconfig").arg(&self.kubeconfig).args(args).output()?;
        if !output.status.success() {
            bail!("kubectl {args:?} on the second plane: {}", String::from_utf8_lossy(&output.stderr));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

fn script(state: &std::path::Path) -> Command {
    let mut command = Command::new(super::repo_root().join("scripts/control-plane"));
    command.env("APPLYSET_CP_STATE", state);
    command
}

impl Drop for SecondControlPlane {
    fn drop(&mut self) {
        match script(&self.state).arg("down").output() {
            Ok(output) if output.status.success() => {}
            Ok(output) => eprintln!("second control plane down: {}", String::from_utf8_lossy(&output.stderr)),
            Err(error) => eprintln!("second control plane down: {error}"),
        }
    }
}
