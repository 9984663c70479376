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

mod audit;
pub mod browser;
mod commands;
mod manifests;
mod namespace;
mod output;
mod second_plane;
mod sops;

// Re-exported, so `support::…` names all of them as before; each binary uses a different part.
#[allow(unused_imports)]
pub use self::{audit::*, commands::*, manifests::*, namespace::*, output::*, second_plane::*, sops::*};

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
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

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

/// The files ending in `.<extension>` under each of `dirs` (recursively, sorted); a folder that
/// does not exist gives none, and build output (`target`, fuzz `corpus` and `artifacts`) is
/// left out.
pub fn files_under(dirs: &[PathBuf], extension: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending: Vec<PathBuf> = dirs.iter().filter(|dir| dir.exists()).cloned().collect();
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target" && n != "corpus" && n != "artifacts") {
                    pending.push(path);
                }
            } else if path.extension().is_some_and(|e| e == extension) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A fresh, empty directory `<area>/<name>` under the test target's temp dir.
pub fn scratch_dir(area: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(area).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|error| panic!("cannot create {}: {error}", dir.display()));
    dir
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
