//! A namespace per test, deleted with whatever the test left in it, and other cleanup guards.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::Kubeconfig;
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client};

use super::{CommandOutput, client_for, control_plane, kubectl, random_suffix, run};

/// Label on every namespace the tests create, to find leftovers.
pub const TEST_NAMESPACE_LABEL: &str = "applyset.test/namespace";

/// How long the namespace guard waits for the apiserver when deleting.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);

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
