//! Test support for the operator: the real `applyset controller` binary run as a process
//! against the test control plane, scoped to one test's namespace (`--watch-namespace`), so
//! tests run in parallel without seeing each other's ApplySets.
//!
//! A controller test starts from a [`ControllerFixture`] (a namespace of its own with the CRD
//! installed, and a git repository), commits what it needs, then starts its controller with
//! [`start_controller`] or [`ControllerOptions`].

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use applyset::operator::api::ApplySet;
use kube::Api;
use kube::api::{Patch, PatchParams};

use crate::git::Fixture;
use crate::support::{self, TestNamespace, free_port};

/// What every controller test starts from: a namespace of its own with the ApplySet CRD
/// installed, and a git repository (work tree and bare remote) named after it.
pub struct ControllerFixture {
    pub ns: TestNamespace,
    pub repo: Fixture,
}

impl ControllerFixture {
    /// Namespace `applyset-test-<prefix>-<random>`, repository `<prefix>-<namespace>`.
    pub async fn new(prefix: &str) -> Result<ControllerFixture> {
        let ns = crd_namespace(prefix).await?;
        let repo = Fixture::new(&format!("{prefix}-{}", ns.name));
        Ok(ControllerFixture { ns, repo })
    }
}

/// A namespace of its own with the ApplySet CRD installed (for tests whose sources are not
/// one local repository).
pub async fn crd_namespace(prefix: &str) -> Result<TestNamespace> {
    let ns = TestNamespace::create(prefix).await?;
    install_crd(&ns.kubeconfig)?;
    Ok(ns)
}

/// A controller for the namespace that accepts `file://` sources (what most tests run).
pub fn start_controller(ns: &TestNamespace) -> Result<ControllerProcess> {
    ControllerOptions::for_namespace(ns).local_sources().start()
}

/// The value of one series (`name{labels}` exactly as exported) in a `/metrics` text.
pub fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let (key, value) = line.rsplit_once(' ')?;
        (key == series).then(|| value.parse().ok()).flatten()
    })
}

/// A Deployment with one container `app`; `env` adds environment variables to it.
pub fn deployment(name: &str, namespace: &str, image: &str, replicas: u32, env: &[(&str, &str)]) -> String {
    let mut env_yaml = String::new();
    if !env.is_empty() {
        env_yaml.push_str("        env:\n");
        for (key, value) in env {
            env_yaml.push_str(&format!("        - name: {key}\n          value: \"{value}\"\n"));
        }
    }
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {namespace}
  labels:
    app: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: app
        image: {image}
{env_yaml}"
    )
}

/// A Service selecting `app: <name>` on port 80.
pub fn service(name: &str, namespace: &str) -> String {
    format!(
        "apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {namespace}
spec:
  selector:
    app: {name}
  ports:
  - name: http
    port: 80
    targetPort: 8080
"
    )
}

/// A ConfigMap manifest with one `data.value`, as the controller tests commit them.
pub fn config_map(name: &str, namespace: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  value: \"{value}\"\n"
    )
}

/// `data.value` of a ConfigMap, or `None` when it does not exist.
pub fn config_map_value(ns: &TestNamespace, name: &str) -> Result<Option<String>> {
    let out =
        ns.kubectl_ok(&["get", "configmap", name, "--ignore-not-found", "-o", "jsonpath={.data.value}|"], None)?;
    Ok(out.strip_suffix('|').map(str::to_owned))
}

/// `status.lastAppliedRevision`.
pub fn applied_revision(applyset: &ApplySet) -> Option<&str> {
    applyset.status.as_ref()?.last_applied_revision.as_deref()
}

/// The revision of commit `sha` on `main`, as the status shows it.
pub fn revision(sha: &str) -> String {
    format!("main@sha1:{sha}")
}

/// `lastAppliedRevision` is `revision`.
pub fn applied(revision: String) -> impl Fn(&ApplySet) -> bool {
    move |applyset| applied_revision(applyset) == Some(revision.as_str())
}

/// Ready for the current generation, with `revision` applied.
pub fn ready_at(revision: String) -> impl Fn(&ApplySet) -> bool {
    move |applyset| applied_revision(applyset) == Some(revision.as_str()) && is_ready(applyset)
}

/// Installs the CRD from `crds/` (as users do) once per test binary.
pub fn install_crd(kubeconfig: &Path) -> Result<()> {
    static INSTALLED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let crd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crds/applyset.dev_applysets.yaml");
            let mut command = support::kubectl(kubeconfig, "default").map_err(|e| e.to_string())?;
            command.args(["apply", "--server-side", "--force-conflicts", "-f"]).arg(&crd);
            support::run(&mut command, None).and_then(|o| o.success_stdout()).map_err(|e| format!("{e:#}"))?;
            let mut wait = support::kubectl(kubeconfig, "default").map_err(|e| e.to_string())?;
            wait.args(["wait", "--for=condition=Established", "--timeout=60s"]);
            wait.args(["crd/applysets.applyset.dev", "crd/applysetrecords.applyset.dev"]);
            support::run(&mut wait, None).and_then(|o| o.success_stdout()).map(|_| ()).map_err(|e| format!("{e:#}"))
        })
        .clone()
        .map_err(|e| anyhow::anyhow!("installing the ApplySet CRD: {e}"))
}

/// A running `applyset controller`; stopped (SIGTERM, then kill) when dropped. (The namespace's
/// ApplySets keep their finalizers: the [`TestNamespace`] drops them before it goes.)
pub struct ControllerProcess {
    child: Option<Child>,
    pub metrics_port: u16,
    pub health_port: u16,
    pub log_path: PathBuf,
    pub cache_dir: PathBuf,
}

/// How to start a controller.
#[derive(Clone)]
pub struct ControllerOptions<'a> {
    pub kubeconfig: &'a Path,
    /// `--watch-namespace` (always set in tests, to isolate them).
    pub namespace: &'a str,
    pub extra_args: Vec<String>,
    /// Wait for /readyz before returning.
    pub wait_ready: bool,
    /// `Some`: the process gets only `PATH`, a `HOME` of its own and these variables, as a pod
    /// gets its Deployment's, and no `--watch-namespace` (they must name it).
    pub pod_env: Option<Vec<(String, String)>>,
}

impl<'a> ControllerOptions<'a> {
    pub fn new(kubeconfig: &'a Path, namespace: &'a str) -> Self {
        ControllerOptions { kubeconfig, namespace, extra_args: Vec::new(), wait_ready: true, pod_env: None }
    }

    /// A controller for `ns` with the admin kubeconfig, watching `ns` only.
    pub fn for_namespace(ns: &'a TestNamespace) -> Self {
        Self::new(&ns.kubeconfig, &ns.name)
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.extra_args.push(arg.into());
        self
    }

    /// `--allow-local-sources`: `file://` repositories (a user's controller refuses them).
    pub fn local_sources(self) -> Self {
        self.arg("--allow-local-sources")
    }

    pub fn start(self) -> Result<ControllerProcess> {
        ControllerProcess::start(self)
    }
}

impl ControllerProcess {
    pub fn start(options: ControllerOptions<'_>) -> Result<ControllerProcess> {
        let metrics_port = free_port();
        let health_port = free_port();
        let dir = support::scratch_dir("controller", &format!("{}-{}", options.namespace, support::random_suffix()));
        let log_path = dir.join("controller.log");
        let cache_dir = dir.join("cache");
        let log = std::fs::File::create(&log_path)?;
        let mut command = Command::new(env!("CARGO_BIN_EXE_applyset"));
        command.arg("controller").arg("--kubeconfig").arg(options.kubeconfig);
        if options.pod_env.is_none() {
            command.args(["--watch-namespace", options.namespace]);
        }
        command
            .arg("--cache-dir")
            .arg(&cache_dir)
            .args(["--metrics-bind-address", &format!("127.0.0.1:{metrics_port}")])
            .args(["--health-probe-bind-address", &format!("127.0.0.1:{health_port}")])
            .args(&options.extra_args);
        match &options.pod_env {
            None => {
                command
                    .env("RUST_LOG", "info,applyset=debug")
                    // The tests use intervals of a few seconds (a user's controller refuses less than 10s).
                    .env("APPLYSET_MIN_INTERVAL", "1s")
                    .env_remove("POD_NAME")
                    .env_remove("POD_NAMESPACE");
            }
            Some(env) => {
                // The chart's receiver port, like its other ports, becomes a free loopback one.
                if env.iter().any(|(name, _)| name == "APPLYSET_WEBHOOK_BIND_ADDRESS") {
                    command.arg(format!("--webhook-bind-address=127.0.0.1:{}", free_port()));
                }
                let home = dir.join("home");
                std::fs::create_dir_all(&home)?;
                command
                    .env_clear()
                    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                    .env("HOME", &home)
                    .envs(env.iter().map(|(name, value)| (name, value)));
            }
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting applyset controller")?;
        let mut process = ControllerProcess { child: Some(child), metrics_port, health_port, log_path, cache_dir };
        if options.wait_ready {
            process.wait_ready(Duration::from_secs(60))?;
        }
        Ok(process)
    }

    /// Waits for `GET /readyz` to answer 200.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok((200, _)) = http_get(self.health_port, "/readyz") {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!("the controller exited ({status}) before it was ready:\n{}", self.log());
            }
            if Instant::now() > deadline {
                bail!("the controller was not ready within {timeout:?}:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `GET /metrics` as text.
    pub fn metrics(&self) -> Result<String> {
        match http_get(self.metrics_port, "/metrics")? {
            (200, body) => Ok(body),
            (code, body) => bail!("/metrics answered {code}: {body}"),
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process has exited (and how).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// SIGTERM, then wait up to 40 s (the controller finishes reconciles in flight).
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(40);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        child.wait().ok()
    }

    /// SIGKILL: no lease release, no cleanup (a crash).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ControllerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A plain HTTP/1.1 GET on loopback: (status, body).
pub fn http_get(port: u16, path: &str) -> Result<(u16, String)> {
    http_request(port, &format!("GET {path} HTTP/1.1\r\nHost: localhost"), "")
}

/// One HTTP/1.1 request to `127.0.0.1:port`: `head` (request line and headers, without the
/// final CRLF), `Content-Length` and `Connection: close` added, then `body`; the status code
/// and the body of the answer.
pub fn http_request(port: u16, head: &str, body: &str) -> Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(stream, "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let code = response.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Ok((code, body))
}

/// Creates (server-side applies) an ApplySet from a JSON spec.
pub async fn create_applyset(ns: &TestNamespace, name: &str, spec: serde_json::Value) -> Result<()> {
    let api: Api<ApplySet> = Api::namespaced(ns.client.clone(), &ns.name);
    let body = serde_json::json!({
        "apiVersion": "applyset.dev/v1alpha1",
        "kind": "ApplySet",
        "metadata": { "name": name, "namespace": ns.name },
        "spec": spec,
    });
    api.patch(name, &PatchParams::apply("applyset-tests").force(), &Patch::Apply(&body)).await?;
    Ok(())
}

/// Merge-patches an ApplySet's spec.
pub async fn patch_spec(ns: &TestNamespace, name: &str, spec: serde_json::Value) -> Result<()> {
    let api: Api<ApplySet> = Api::namespaced(ns.client.clone(), &ns.name);
    api.patch(name, &PatchParams::default(), &Patch::Merge(&serde_json::json!({ "spec": spec }))).await?;
    Ok(())
}

/// Sets `applyset.dev/reconcile-requested-at` to a new value (what a "reconcile now" does).
pub async fn request_reconcile(ns: &TestNamespace, name: &str) -> Result<String> {
    let api: Api<ApplySet> = Api::namespaced(ns.client.clone(), &ns.name);
    let value = format!("{:?}", std::time::SystemTime::now());
    let patch = serde_json::json!({ "metadata": { "annotations": { "applyset.dev/reconcile-requested-at": value } } });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(value)
}

pub async fn get_applyset(ns: &TestNamespace, name: &str) -> Result<ApplySet> {
    let api: Api<ApplySet> = Api::namespaced(ns.client.clone(), &ns.name);
    Ok(api.get(name).await?)
}

/// The status of condition `type_` (`True`/`False`/`Unknown`), its reason and message.
pub fn condition(applyset: &ApplySet, type_: &str) -> Option<(String, String, String)> {
    applyset
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Waits until `check` accepts the ApplySet; the error shows its last status and the
/// controller's log.
pub async fn wait_for_applyset(
    ns: &TestNamespace,
    name: &str,
    controller: &ControllerProcess,
    what: &str,
    timeout: Duration,
    check: impl Fn(&ApplySet) -> bool,
) -> Result<ApplySet> {
    let deadline = Instant::now() + timeout;
    let started = Instant::now();
    loop {
        let current = get_applyset(ns, name).await.ok();
        if let Some(current) = &current
            && check(current)
        {
            eprintln!("waited {:?} for {what}", started.elapsed());
            return Ok(current.clone());
        }
        if Instant::now() > deadline {
            let status = current.and_then(|c| c.status).map(|s| serde_json::to_string_pretty(&s).unwrap_or_default());
            bail!(
                "timed out after {timeout:?} waiting for {what}; last status: {}\ncontroller log:\n{}",
                status.unwrap_or_else(|| "(none)".into()),
                tail(&controller.log(), 60)
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Ready=True for the current generation.
pub fn is_ready(applyset: &ApplySet) -> bool {
    let generation = applyset.metadata.generation;
    condition(applyset, "Ready").is_some_and(|(status, _, _)| status == "True")
        && applyset.status.as_ref().is_some_and(|s| s.observed_generation == generation)
}

/// Ready=False with `reason`.
/// The condition `type_` has the reason `reason`.
pub fn reason_is(type_: &'static str, reason: &'static str) -> impl Fn(&ApplySet) -> bool {
    move |a| condition(a, type_).is_some_and(|c| c.1 == reason)
}

pub fn failed_with(reason: &str) -> impl Fn(&ApplySet) -> bool + '_ {
    move |applyset| condition(applyset, "Ready").is_some_and(|(status, r, _)| status == "False" && r == reason)
}

/// The last `lines` lines of a log, a run of lines alike but for their timestamp folded into
/// one (a periodic debug line must not push what happened before it out of a failure's report).
pub fn tail(text: &str, lines: usize) -> String {
    let mut folded: Vec<(String, usize)> = Vec::new();
    for line in text.lines() {
        let unstamped = line.split_once(' ').map_or(line, |(_, rest)| rest);
        match folded.last_mut() {
            Some((last, repeats)) if last.split_once(' ').map_or(last.as_str(), |(_, rest)| rest) == unstamped => {
                *repeats += 1;
            }
            _ => folded.push((line.to_owned(), 0)),
        }
    }
    let shown = folded.len().saturating_sub(lines);
    folded[shown..]
        .iter()
        .map(|(line, repeats)| match repeats {
            0 => line.clone(),
            n => format!("{line}\n  (and {n} more like it)"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Events recorded on an ApplySet (events.k8s.io).
pub async fn events_on(ns: &TestNamespace, name: &str) -> Result<Vec<k8s_openapi::api::events::v1::Event>> {
    use k8s_openapi::api::events::v1::Event;
    let api: Api<Event> = Api::namespaced(ns.client.clone(), &ns.name);
    let list = api.list(&kube::api::ListParams::default()).await?;
    Ok(list.items.into_iter().filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)).collect())
}

/// Events recorded on an ApplySet, as (type, reason, note).
pub async fn events_for(ns: &TestNamespace, name: &str) -> Result<Vec<(String, String, String)>> {
    Ok(events_on(ns, name)
        .await?
        .into_iter()
        .map(|e| (e.type_.unwrap_or_default(), e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
        .collect())
}

/// Events recorded on an ApplySet once one with `reason` is there: the controller records its
/// Events after the status write a test waits for, so reading them at once races the recorder.
pub async fn events_with(ns: &TestNamespace, name: &str, reason: &str) -> Result<Vec<(String, String, String)>> {
    let what = format!("an Event {reason} on {name}");
    let found = support::eventually(&what, Duration::from_secs(15), || async {
        let events = events_for(ns, name).await?;
        Ok(events.iter().any(|(_, r, _)| r == reason).then_some(events))
    })
    .await;
    match found {
        Ok(events) => Ok(events),
        // The caller's assertion prints what is there.
        Err(_) => events_for(ns, name).await,
    }
}
