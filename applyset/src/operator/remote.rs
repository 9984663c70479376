//! ApplySets that apply to another cluster (`spec.kubeConfig.secretRef`, Flux's field): the
//! kubeconfig is read from a Secret of the ApplySet's namespace at every run (a rotated token is
//! used at once), and each distinct kubeconfig (by the digest of its content) gets one entry:
//! its clusters per identity, its own rate budget, and its own watch cache, so that drift there
//! is seen in seconds and a no-op interval reads no managed object. An entry is started on first
//! use and dropped (its watches stopped) once no ApplySet uses it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;

use super::api::{ApplySet, DEFAULT_KUBECONFIG_KEYS, KubeConfigSecretRef};
use super::cache::ManagedCache;
use super::lock;
use crate::cluster::remote::{LocalAccess, RemoteConfigError, config_from_bytes};
use crate::cluster::{Cluster, RateLimiter};

/// Remote clusters are rebuilt after this, as the controller's own (discovery follows CRDs).
const CLUSTER_TTL: Duration = Duration::from_secs(600);

/// Why an ApplySet's remote cluster cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("spec.kubeConfig.secretRef: cannot read Secret {namespace}/{name}")]
    ReadSecret {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("spec.kubeConfig.secretRef: Secret {namespace}/{name} has no key {keys}")]
    NoKey { namespace: String, name: String, keys: String },
    #[error("spec.kubeConfig.secretRef: Secret {namespace}/{name} key {key:?}")]
    Kubeconfig {
        namespace: String,
        name: String,
        key: String,
        #[source]
        source: RemoteConfigError,
    },
    #[error("spec.kubeConfig.secretRef: Secret {namespace}/{name} key {key:?} is not UTF-8 text")]
    NotText { namespace: String, name: String, key: String },
    #[error("spec.kubeConfig")]
    Cluster(#[from] crate::cluster::Error),
}

/// Where a run applies: a cluster (as the run's identity) and the watch cache of that cluster.
pub struct Target {
    pub cluster: Arc<Cluster>,
    pub cache: Arc<ManagedCache>,
    /// The remote server, when not the controller's own cluster (part of what shapes the apply:
    /// pointing the Secret at another cluster applies everything there).
    pub remote_server: Option<String>,
}

/// One kubeconfig's clusters and watch cache.
struct Remote {
    config: kube::Config,
    limiter: Arc<RateLimiter>,
    cache: Arc<ManagedCache>,
    clusters: Mutex<HashMap<Option<String>, Built>>,
}

/// A cluster and when it was built.
type Built = (Instant, Arc<Cluster>);

impl Remote {
    /// The remote cluster as `impersonate` (a ServiceAccount of the remote cluster), or as the
    /// kubeconfig's own user.
    fn cluster_as(&self, impersonate: Option<String>) -> crate::cluster::Result<Arc<Cluster>> {
        let mut clusters = lock(&self.clusters);
        if let Some((built, cluster)) = clusters.get(&impersonate)
            && built.elapsed() < CLUSTER_TTL
        {
            return Ok(cluster.clone());
        }
        let mut config = self.config.clone();
        if let Some(user) = &impersonate {
            config.auth_info.impersonate = Some(user.clone());
            config.auth_info.impersonate_groups = None;
        }
        let cluster = Arc::new(Cluster::from_config_sharing(config, self.limiter.clone())?);
        clusters.insert(impersonate, (Instant::now(), cluster.clone()));
        Ok(cluster)
    }
}

/// The remote clusters in use, by kubeconfig digest, and which ApplySet uses which.
pub struct RemoteClusters {
    local_access: LocalAccess,
    /// Each remote cluster's own budget (`--qps`, `--burst`): another apiserver.
    rate: (f64, u32),
    remotes: Mutex<HashMap<String, Arc<Remote>>>,
    /// `namespace/name` of an ApplySet → the digest of the kubeconfig it last used.
    users: Mutex<HashMap<String, String>>,
    /// `namespace/name` of an ApplySet → the remote it applied to before its `kubeConfig`
    /// changed, kept until its objects there are pruned (in memory only: a restart forgets it,
    /// and the ApplySet's status then says they are left there).
    kept: Mutex<HashMap<String, Arc<Remote>>>,
}

impl RemoteClusters {
    pub fn new(allow_remote_exec: bool, rate: (f64, u32)) -> RemoteClusters {
        RemoteClusters {
            local_access: if allow_remote_exec { LocalAccess::Allowed } else { LocalAccess::Refused },
            rate,
            remotes: Mutex::new(HashMap::new()),
            users: Mutex::new(HashMap::new()),
            kept: Mutex::new(HashMap::new()),
        }
    }

    /// The remote target of `applyset` (whose `spec.kubeConfig.secretRef` is `reference`), as
    /// `service_account` of its namespace when set; `primary` is the controller's own cache
    /// (the remote cache shares its drift checks and its record of the controller's writes).
    pub async fn target(
        &self,
        client: &kube::Client,
        primary: &ManagedCache,
        applyset: &ApplySet,
        reference: &KubeConfigSecretRef,
        service_account: Option<&str>,
    ) -> Result<Target, RemoteError> {
        let namespace = applyset.namespace_or_default();
        let (key, text) = read_kubeconfig(client, &namespace, reference).await?;
        let digest = crate::digest::short_sha256(&text);
        let existing = lock(&self.remotes).get(&digest).cloned();
        let remote = match existing {
            Some(remote) => remote,
            None => {
                let config = config_from_bytes(&text, self.local_access).await.map_err(|source| {
                    RemoteError::Kubeconfig { namespace: namespace.clone(), name: reference.name.clone(), key, source }
                })?;
                let limiter = Arc::new(RateLimiter::new(self.rate.0, self.rate.1));
                let watcher = Cluster::from_config_sharing(config.clone(), limiter.clone())?;
                let cache = primary.sibling(watcher.client().clone());
                let remote = Arc::new(Remote { config, limiter, cache, clusters: Mutex::new(HashMap::new()) });
                lock(&self.remotes).entry(digest.clone()).or_insert(remote).clone()
            }
        };
        let previous = lock(&self.users).insert(applyset.key(), digest.clone());
        if let Some(previous) = previous.filter(|previous| *previous != digest) {
            self.keep(&applyset.key(), &previous);
            self.drop_unused(&previous);
        }
        let impersonate = service_account.map(|account| format!("system:serviceaccount:{namespace}:{account}"));
        let cluster = remote.cluster_as(impersonate)?;
        let remote_server = Some(cluster.server().to_owned());
        Ok(Target { cluster, cache: remote.cache.clone(), remote_server })
    }

    /// The ApplySet no longer applies to a remote cluster (its `kubeConfig` removed: the remote
    /// is kept for its objects there, see [`RemoteClusters::previous`]; or deleted, see
    /// [`RemoteClusters::forget`]).
    pub fn release(&self, applyset_key: &str) {
        // The guard is dropped before `drop_unused` locks the users again.
        let released = lock(&self.users).remove(applyset_key);
        if let Some(digest) = released {
            self.keep(applyset_key, &digest);
            self.drop_unused(&digest);
        }
    }

    /// The ApplySet is gone: nothing of it is kept.
    pub fn forget(&self, applyset_key: &str) {
        self.release(applyset_key);
        lock(&self.kept).remove(applyset_key);
    }

    /// Keeps the remote of `digest` for the ApplySet's objects there.
    fn keep(&self, applyset_key: &str, digest: &str) {
        if let Some(remote) = lock(&self.remotes).get(digest).cloned() {
            lock(&self.kept).insert(applyset_key.to_owned(), remote);
        }
    }

    /// The cluster the ApplySet applied to before its `kubeConfig` changed, as
    /// `service_account` of `namespace`, when the controller still has its kubeconfig and it
    /// is the cluster `identity` names.
    pub fn previous(
        &self,
        applyset_key: &str,
        identity: &crate::cluster::ClusterIdentity,
        namespace: &str,
        service_account: Option<&str>,
    ) -> Option<Arc<Cluster>> {
        let remote = lock(&self.kept).get(applyset_key).cloned()?;
        let impersonate = service_account.map(|account| format!("system:serviceaccount:{namespace}:{account}"));
        let cluster = remote.cluster_as(impersonate).ok()?;
        (cluster.identity() == *identity).then_some(cluster)
    }

    /// The objects of the ApplySet's previous remote are dealt with: it is kept no longer.
    pub fn forget_previous(&self, applyset_key: &str) {
        lock(&self.kept).remove(applyset_key);
    }

    /// Drops the entry of `digest` (stopping its watches) when no ApplySet uses it any more.
    fn drop_unused(&self, digest: &str) {
        let used = lock(&self.users).values().any(|d| d == digest);
        if !used && let Some(remote) = lock(&self.remotes).remove(digest) {
            tracing::info!(server = %remote.config.cluster_url, "no ApplySet applies to this remote cluster any more: its watches stop");
        }
    }

    /// Remote clusters in use (for tests and logs).
    pub fn len(&self) -> usize {
        lock(&self.remotes).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The kubeconfig text of the Secret, and the key it came from.
async fn read_kubeconfig(
    client: &kube::Client,
    namespace: &str,
    reference: &KubeConfigSecretRef,
) -> Result<(String, String), RemoteError> {
    let secrets: kube::Api<Secret> = kube::Api::namespaced(client.clone(), namespace);
    let (namespace, name) = (namespace.to_owned(), reference.name.clone());
    let secret = match secrets.get(&name).await {
        Ok(secret) => secret,
        Err(source) => return Err(RemoteError::ReadSecret { namespace, name, source }),
    };
    let data = secret.data.unwrap_or_default();
    let keys: Vec<&str> = match &reference.key {
        Some(key) => vec![key.as_str()],
        None => DEFAULT_KUBECONFIG_KEYS.to_vec(),
    };
    let Some((key, bytes)) = keys.iter().find_map(|key| data.get(*key).map(|bytes| (key.to_string(), bytes))) else {
        let keys = keys.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(" or ");
        return Err(RemoteError::NoKey { namespace, name, keys });
    };
    match String::from_utf8(bytes.0.clone()) {
        Ok(text) => Ok((key, text)),
        Err(_) => Err(RemoteError::NotText { namespace, name, key }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releasing_an_applyset_forgets_only_its_use() {
        let remotes = RemoteClusters::new(false, (1.0, 1));
        lock(&remotes.users).insert("team-a/app".into(), "digest".into());
        lock(&remotes.users).insert("team-b/app".into(), "digest".into());
        remotes.release("team-a/app");
        assert_eq!(lock(&remotes.users).keys().collect::<Vec<_>>(), ["team-b/app"]);
        remotes.release("team-b/app");
        remotes.release("never-used/app");
        assert!(lock(&remotes.users).is_empty() && remotes.is_empty());
    }
}
