//! Test support: a real Kubernetes v1.33 control plane and a fresh namespace
//! per test.
//!
//! The control plane is the one `scripts/control-plane up` runs (etcd,
//! kube-apiserver, kube-controller-manager, kube-scheduler, and kwok's two
//! simulated nodes); it is started, or attached to when already up, once per
//! test binary and left running for the next one.
//! Set `APPLYSET_TEST_KUBECONFIG` to a kubeconfig path (or to `1` to use
//! `$KUBECONFIG`) to run the tests against another cluster instead; a
//! developer's `$KUBECONFIG` is never used unless asked for that way.

// Each test binary includes this module and uses a different part of it.
#![allow(dead_code)]

pub mod pki;

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client, Config};

/// Label on every namespace the tests create, to find leftovers.
pub const TEST_NAMESPACE_LABEL: &str = "applyset.test/namespace";

/// How long the namespace guard waits for the apiserver when deleting.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The cluster the tests of this binary run against.
pub struct ControlPlane {
    /// Admin kubeconfig (system:masters).
    pub kubeconfig: PathBuf,
}

/// Starts the control plane, or attaches to it, on first use. A failure to
/// start is returned (with the script's output) to every test, so each one
/// fails with the reason instead of being skipped.
pub fn control_plane() -> Result<&'static ControlPlane> {
    static CONTROL_PLANE: OnceLock<std::result::Result<ControlPlane, String>> = OnceLock::new();
    CONTROL_PLANE
        .get_or_init(|| start_or_attach().map_err(|error| format!("{error:#}")))
        .as_ref()
        .map_err(|error| anyhow!("the test control plane is not available: {error}"))
}

fn start_or_attach() -> Result<ControlPlane> {
    if let Ok(requested) = std::env::var("APPLYSET_TEST_KUBECONFIG")
        && !requested.is_empty()
    {
        let kubeconfig = if requested == "1" {
            std::env::var("KUBECONFIG").context("APPLYSET_TEST_KUBECONFIG=1 asks for $KUBECONFIG, which is not set")?
        } else {
            requested
        };
        return Ok(ControlPlane { kubeconfig: kubeconfig.into() });
    }

    let script = repo_root().join("scripts/control-plane");
    let output =
        Command::new(&script).arg("up").output().with_context(|| format!("could not run {}", script.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        bail!("`{} up` failed ({}):\n{stderr}{stdout}", script.display(), output.status);
    }
    let kubeconfig =
        stdout.lines().last().and_then(|line| line.strip_prefix("KUBECONFIG=")).ok_or_else(|| {
            anyhow!("`{} up` did not end with a KUBECONFIG= line:\n{stderr}{stdout}", script.display())
        })?;
    Ok(ControlPlane { kubeconfig: kubeconfig.into() })
}

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

/// The workspace root (the repository's top directory).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the applyset package lives in the workspace root")
        .to_path_buf()
}

/// A kube client for the kubeconfig's current context.
pub async fn client_for(kubeconfig: &Path) -> Result<Client> {
    let kubeconfig_file =
        Kubeconfig::read_from(kubeconfig).with_context(|| format!("reading kubeconfig {}", kubeconfig.display()))?;
    let config = Config::from_custom_kubeconfig(kubeconfig_file, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("loading kubeconfig {}", kubeconfig.display()))?;
    Client::try_from(config).context("building a kube client")
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
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// A namespace of its own for one test, deleted when dropped.
pub struct TestNamespace {
    /// Admin client.
    pub client: Client,
    pub name: String,
    pub kubeconfig: PathBuf,
}

impl TestNamespace {
    /// Creates `applyset-test-<prefix>-<random>` on the test control plane.
    pub async fn create(prefix: &str) -> Result<Self> {
        let kubeconfig = control_plane()?.kubeconfig.clone();
        let client = client_for(&kubeconfig).await?;
        let name = format!("applyset-test-{prefix}-{}", random_suffix());
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some([(TEST_NAMESPACE_LABEL.to_owned(), "true".to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .with_context(|| format!("creating namespace {name}"))?;
        Ok(Self { client, name, kubeconfig })
    }

    /// `kubectl.1.33` with the admin kubeconfig and this namespace.
    pub fn kubectl(&self) -> Result<Command> {
        kubectl(&self.kubeconfig, &self.name)
    }

    /// Runs admin kubectl with `args` (and `stdin`), failing with its
    /// stderr unless it succeeds; returns its stdout.
    pub fn kubectl_ok(&self, args: &[&str], stdin: Option<&str>) -> Result<String> {
        run(self.kubectl()?.args(args), stdin)?.success_stdout()
    }

    /// `kubectl get RESOURCE -o jsonpath=PATH` in this namespace.
    pub fn jsonpath(&self, resource: &str, path: &str) -> Result<String> {
        self.kubectl_ok(&["get", resource, "-o", &format!("jsonpath={path}")], None)
    }

    /// Whether `kind/name` (in this namespace, or cluster-scoped) exists.
    pub fn exists(&self, kind_name: &str) -> Result<bool> {
        let out = self.kubectl_ok(&["get", kind_name, "--ignore-not-found", "-o", "name"], None)?;
        Ok(!out.trim().is_empty())
    }

    /// Writes a kubeconfig for the same cluster that authenticates with
    /// `token` only (no client certificate), for kubectl and kube clients.
    /// The file is removed when the returned value is dropped.
    pub fn token_kubeconfig(&self, token: &str, file_name: &str) -> Result<TokenKubeconfig> {
        let admin = Kubeconfig::read_from(&self.kubeconfig)?;
        let mut kubeconfig = serde_json::to_value(&admin)?;
        kubeconfig["users"] = serde_json::json!([{ "name": "token", "user": { "token": token } }]);
        for context in kubeconfig["contexts"].as_array_mut().into_iter().flatten() {
            context["context"]["user"] = "token".into();
        }
        let path = std::env::temp_dir().join(format!("{}-{file_name}.kubeconfig", self.name));
        // JSON is YAML, so kubectl reads it as it is.
        std::fs::write(&path, serde_json::to_vec_pretty(&kubeconfig)?)?;
        Ok(TokenKubeconfig { path })
    }
}

/// A kubeconfig file holding a bearer token; deleted on drop.
pub struct TokenKubeconfig {
    pub path: PathBuf,
}

impl Drop for TokenKubeconfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for TestNamespace {
    /// Drops the finalizers of the namespace's ApplySets (no controller is left to honour them,
    /// and the namespace could never go), then deletes the namespace.
    fn drop(&mut self) {
        // Drop cannot await, and blocking inside the test's runtime would
        // stall it, so the deletion runs on a runtime of its own.
        let name = self.name.clone();
        let kubeconfig = self.kubeconfig.clone();
        let deletion = std::thread::spawn(move || -> Result<()> {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(async {
                let client = client_for(&kubeconfig).await?;
                let cleanup = async {
                    release_applyset_finalizers(&client, &name).await?;
                    let namespaces = Api::<Namespace>::all(client.clone());
                    match namespaces.delete(&name, &DeleteParams::background()).await {
                        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                        result => result.map(|_| ()).map_err(anyhow::Error::from),
                    }
                };
                match tokio::time::timeout(CLEANUP_TIMEOUT, cleanup).await {
                    Err(_) => bail!("timed out after {CLEANUP_TIMEOUT:?}"),
                    Ok(result) => result,
                }
            })
        });
        match deletion.join() {
            Ok(Ok(())) => {}
            Ok(Err(error)) => eprintln!("warning: could not delete test namespace {}: {error:#}", self.name),
            Err(_) => eprintln!("warning: deleting test namespace {} panicked", self.name),
        }
    }
}

/// Removes the finalizer from every ApplySet in `namespace` (nothing to do where the CRD is not
/// installed).
async fn release_applyset_finalizers(client: &Client, namespace: &str) -> Result<()> {
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("applyset.dev", "v1alpha1", "ApplySet"), "applysets");
    let applysets = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource);
    let list = match applysets.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
        list => list?,
    };
    let patch = serde_json::json!({ "metadata": { "finalizers": null } });
    for applyset in list.items.iter().filter(|a| a.metadata.finalizers.as_ref().is_some_and(|f| !f.is_empty())) {
        let name = applyset.metadata.name.as_deref().unwrap_or_default();
        applysets
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("removing the finalizers of ApplySet {namespace}/{name}"))?;
    }
    Ok(())
}

/// Deletes cluster-scoped CRDs a test created (the namespace's deletion leaves them), whatever
/// the test's outcome.
pub struct CrdCleanup {
    kubeconfig: PathBuf,
    names: Vec<String>,
}

impl CrdCleanup {
    pub fn new(kubeconfig: &Path, names: impl IntoIterator<Item = String>) -> CrdCleanup {
        CrdCleanup { kubeconfig: kubeconfig.to_path_buf(), names: names.into_iter().collect() }
    }
}

impl Drop for CrdCleanup {
    fn drop(&mut self) {
        let Ok(mut command) = kubectl(&self.kubeconfig, "default") else { return };
        command.args(["delete", "crd", "--wait=false", "--ignore-not-found"]).args(&self.names);
        if let Err(error) = run(&mut command, None).and_then(CommandOutput::success_stdout) {
            eprintln!("warning: could not delete CRDs {:?}: {error:#}", self.names);
        }
    }
}

/// The Lease `name` in `namespace`, if there is one.
pub async fn read_lease(client: &Client, namespace: &str, name: &str) -> Result<Option<Lease>> {
    Ok(Api::<Lease>::namespaced(client.clone(), namespace).get_opt(name).await?)
}

/// Who holds the Lease (`None` when released: no holder, or an empty one).
pub fn lease_holder(lease: &Lease) -> Option<String> {
    lease.spec.as_ref()?.holder_identity.clone().filter(|holder| !holder.is_empty())
}

/// A free loopback port (bound then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("binding a loopback port").local_addr().expect("a local address").port()
}

/// A fresh, empty directory `<area>/<name>` under the test target's temp dir.
pub fn scratch_dir(area: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(area).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|error| panic!("cannot create {}: {error}", dir.display()));
    dir
}

/// A temporary directory of manifest files, removed when dropped.
pub struct ManifestDir(PathBuf);

impl ManifestDir {
    /// A new directory holding `files` (name, content).
    pub fn new(files: &[(&str, &str)]) -> Result<ManifestDir> {
        let dir = std::env::temp_dir().join(format!("applyset-manifests-{}", random_suffix()));
        std::fs::create_dir_all(&dir)?;
        let dir = ManifestDir(dir);
        for (name, text) in files {
            dir.write(name, text)?;
        }
        Ok(dir)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().expect("temp paths are UTF-8")
    }

    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_str().expect("UTF-8").to_owned()
    }

    pub fn write(&self, name: &str, text: &str) -> Result<()> {
        std::fs::write(self.0.join(name), text).map_err(Into::into)
    }

    pub fn remove(&self, name: &str) -> Result<()> {
        std::fs::remove_file(self.0.join(name)).map_err(Into::into)
    }
}

impl Drop for ManifestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `applyset SUBCOMMAND --kubeconfig K ARGS…`, run to completion (never with the developer's
/// `$KUBECONFIG`).
pub fn applyset_cli(kubeconfig: &Path, subcommand: &str, args: &[&str]) -> Result<CommandOutput> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_applyset"));
    command.env_remove("KUBECONFIG");
    command.arg(subcommand).arg("--kubeconfig").arg(kubeconfig).args(args);
    run(&mut command, None)
}

/// Printed objects with what the server assigns blanked (uid, resourceVersion, timestamps,
/// cluster IPs), in JSON (`"uid": "…"`, `"uid":"…"`), YAML (`uid: …`) and Go-syntax text
/// alike, so two namespaces' `-o json|yaml|jsonpath` outputs compare.
pub fn server_values_blanked(text: &str) -> String {
    let mut text = text.to_owned();
    for key in ["uid", "resourceVersion", "creationTimestamp", "time", "clusterIP"] {
        // (what precedes the value, what ends it): JSON, compact JSON, YAML, Go's `%v` of a map.
        let forms = [
            (format!("\"{key}\": \""), '"'),
            (format!("\"{key}\":\""), '"'),
            (format!(" {key}: "), '\n'),
            (format!(" {key}:"), ' '),
            (format!("[{key}:"), ' '),
        ];
        for (prefix, end) in forms {
            let mut out = String::new();
            let mut rest = text.as_str();
            while let Some(at) = rest.find(&prefix) {
                out.push_str(&rest[..at + prefix.len()]);
                rest = &rest[at + prefix.len()..];
                // `%v` forms only where a value follows directly (not YAML's `key: value`).
                if end == ' ' && (rest.starts_with(' ') || rest.starts_with('X')) {
                    continue;
                }
                out.push('X');
                // A `%v` value ends at the next entry or at the end of its map.
                let stop = if end == ' ' { rest.find([' ', ']']) } else { rest.find(end) };
                rest = &rest[stop.unwrap_or(rest.len())..];
            }
            out.push_str(rest);
            text = out;
        }
    }
    // Cluster IPs wherever they are (`clusterIPs` items): the test cluster's range is 10.0.0.0/24.
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("10.0.0.") {
        out.push_str(&rest[..at]);
        rest = rest[at + "10.0.0.".len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push_str("IP");
    }
    out.push_str(rest);
    out
}

/// ApplySet IDs (`applyset-<43 base64url characters>-v1`, derived from the parent's namespace,
/// so different on each side) replaced by `<applyset-id>`.
pub fn applyset_ids_blanked(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("applyset-") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + "applyset-".len()..];
        let id_len = tail.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_').count();
        if id_len >= 46 && tail[..id_len].ends_with("-v1") {
            out.push_str("<applyset-id>");
            rest = &tail[id_len..];
        } else {
            out.push_str("applyset-");
            rest = tail;
        }
    }
    out.push_str(rest);
    out
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

/// A command's output with `namespace` written `NS` and server values blanked, so two
/// namespaces' outputs compare.
pub fn normalized(text: &str, namespace: &str) -> String {
    server_values_blanked(&text.replace(namespace, "NS"))
}

/// The lines of a command's output.
pub fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// A DNS-label-safe suffix unique within this run and unlikely to repeat
/// across runs (std's RandomState is seeded randomly per process).
pub fn random_suffix() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    format!("{:08x}", hasher.finish() as u32)
}

/// Polls `check` every 250 ms until it returns `Some`, or fails after
/// `timeout` saying what was awaited.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>>>,
{
    let started = Instant::now();
    let deadline = started + timeout;
    loop {
        if let Some(value) = check().await? {
            // Shown with a failing test's output, to tell slow from stuck.
            eprintln!("waited {:?} for {what}", started.elapsed());
            return Ok(value);
        }
        if Instant::now() >= deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A ConfigMap and a Deployment (limits, env, an HTML-escaped value, an empty one): the app
/// the CLI tests apply, diff and change.
/// A namespaced `Widget` CRD of `group`, schemaless: each test names a group of its own, since
/// a CRD is cluster-wide and another test may hold a `widgets` CRD meanwhile.
pub fn widget_crd(group: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.{group}\nspec:\n  group: {group}\n  scope: Namespaced\n  names: {{plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
    )
}

pub const APP: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: demo}
data:
  mode: "fast"
  html: "<b>&</b>"
  empty: ""
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 80
        env:
        - {name: A, value: "1"}
        resources:
          limits: {cpu: 500m, memory: 128Mi}
"#;

/// The test control plane's audit log (`scripts/control-plane` logs every finished request at
/// level Metadata), read from a point on: which requests the apiserver answered in a window.
pub struct AuditLog {
    path: PathBuf,
    offset: u64,
}

/// One audited request.
#[derive(Debug, Clone)]
pub struct AuditedRequest {
    pub verb: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub user_agent: String,
    pub uri: String,
}

impl AuditLog {
    /// From now on, on the control plane of `kubeconfig` (its state directory holds the log).
    pub fn from_now(kubeconfig: &Path) -> Result<AuditLog> {
        let state = kubeconfig.parent().context("the kubeconfig lies in the control plane's state directory")?;
        let path = state.join("logs/audit.log");
        let offset = std::fs::metadata(&path).with_context(|| format!("reading {}", path.display()))?.len();
        Ok(AuditLog { path, offset })
    }

    /// The requests logged since [`AuditLog::from_now`].
    pub fn requests(&self) -> Result<Vec<AuditedRequest>> {
        use std::io::{Read, Seek};
        let mut file = std::fs::File::open(&self.path)?;
        file.seek(std::io::SeekFrom::Start(self.offset))?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        let text_of = |value: &serde_json::Value| value.as_str().map(str::to_owned);
        Ok(text
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .map(|event| AuditedRequest {
                verb: text_of(&event["verb"]).unwrap_or_default(),
                resource: text_of(&event["objectRef"]["resource"]).unwrap_or_default(),
                namespace: text_of(&event["objectRef"]["namespace"]),
                name: text_of(&event["objectRef"]["name"]),
                user_agent: text_of(&event["userAgent"]).unwrap_or_default(),
                uri: text_of(&event["requestURI"]).unwrap_or_default(),
            })
            .collect())
    }
}
