//! The one `Context` every reconcile shares: the controller's own client, the git cache, the
//! per-identity apply clusters (ServiceAccount impersonation), events and metrics.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};
use tokio::sync::mpsc;

use super::api::{ApplySet, SecretsMode};
use super::cache::ManagedCache;
use super::events::{EventPublisher, NewEvent};
use super::lock;
use super::metrics::Metrics;
use super::remote::{RemoteClusters, RemoteError, Target};
use super::schedule::Schedule;
use crate::apply::last_applied::HashedSecrets;
use crate::causes::Chain;
use crate::cluster::mapper::ApiIndex;
use crate::cluster::{Cluster, RateLimiter};
use crate::source::GitSource;

/// Settings from the command line that shape every reconcile.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Objects in flight per apply.
    pub apply_concurrency: usize,
    /// Impersonated for ApplySets without `spec.serviceAccountName` (multi-tenant lockdown).
    pub default_service_account: Option<String>,
    /// Accept `file://` and local-path sources (the demo and tests; never for tenants).
    pub allow_local_sources: bool,
    /// Refuse references into other namespaces (`--no-cross-namespace-refs`).
    pub no_cross_namespace_refs: bool,
    /// The field manager of the controller's writes to managed objects.
    pub field_manager: String,
    /// The shortest interval and retry interval accepted.
    pub min_interval: Duration,
    /// Size caps on each revision's manifests.
    pub manifest_limits: crate::manifest::Limits,
    /// `spec.secrets` when an ApplySet does not say.
    pub default_secrets: super::api::SecretsMode,
    /// Where the key of hashed Secret annotations is kept: (namespace, Secret name).
    pub secret_hash_key: (String, String),
    /// The kustomize program for sources holding a kustomization.
    pub kustomize_binary: std::path::PathBuf,
    /// Runs at once (`--concurrent-reconciles`), shared fairly between namespaces.
    pub concurrent_reconciles: usize,
    /// The largest record of members an ApplySet may have (bytes of compact JSON):
    /// [`super::members::codec::RECORD_LIMIT`], lower in tests.
    pub record_limit: usize,
    /// Let `spec.kubeConfig` kubeconfigs run exec plugins and read local files
    /// (`--allow-remote-exec`; never for tenants).
    pub allow_remote_exec: bool,
    /// The rate budget of each remote cluster (`--qps`, `--burst`).
    pub remote_rate: (f64, u32),
    /// A run of a new generation still going after this long says so in the status
    /// (`Reconciling`); a shorter one writes its status once, when it ends
    /// ([`PROGRESS_REPORT_AFTER`]; zero in tests that look at the progress write).
    pub progress_report_after: Duration,
}

/// When a new generation's run first says `Reconciling` in the status. Each write of an
/// ApplySet costs the apiserver 6–36 ms of CPU (its whole object is decoded, validated and
/// stored again), several times a ConfigMap's create; a run that ends sooner needs no word
/// of its progress: its generation not yet observed already says so (kstatus).
pub const PROGRESS_REPORT_AFTER: Duration = Duration::from_secs(5);

/// Apply clusters are kept this long, then rebuilt, so that discovery and OpenAPI caches
/// follow CRD changes made by others.
const CLUSTER_TTL: Duration = Duration::from_secs(600);

/// Where the apply clusters come from.
pub enum ClusterSource {
    /// Built from the controller's config, one per identity (impersonating ServiceAccounts),
    /// every one taking its turn at the process's one rate limiter.
    Config {
        config: Box<kube::Config>,
        limiter: Arc<RateLimiter>,
        built: Mutex<HashMap<ClusterKey, (Instant, Arc<Cluster>)>>,
    },
    /// One cluster for every identity (unit tests on a mocked apiserver).
    Fixed(Arc<Cluster>),
}

impl ClusterSource {
    pub fn from_config(config: kube::Config, limiter: Arc<RateLimiter>) -> ClusterSource {
        ClusterSource::Config { config: Box::new(config), limiter, built: Mutex::new(HashMap::new()) }
    }
}

pub struct Context {
    /// The controller's own identity: ApplySets, their status, Secrets, Events.
    pub client: kube::Client,
    clusters: ClusterSource,
    pub git: GitSource,
    pub metrics: Arc<Metrics>,
    pub settings: Settings,
    /// Earlier revisions' manifests per ApplySet, for stale fields.
    pub history: super::history::HistoryCache,
    events: EventPublisher,
    /// When each ApplySet runs next, and the one way to ask for a run now.
    pub schedule: Schedule,
    /// The codec of `spec.secrets: Hashed`, once its key was read (or created).
    hashed_secrets: tokio::sync::OnceCell<Arc<HashedSecrets>>,
    /// The shared watch cache of managed objects.
    pub cache: Arc<ManagedCache>,
    /// When each ApplySet's current wait for health began.
    pub waits: super::waiting::Waits,
    /// The member records of large ApplySets, kept outside their status.
    pub records: super::members::MemberRecords,
    /// The controller's view of every ApplySet (for `dependsOn`), once it runs.
    applysets: OnceLock<Store<ApplySet>>,
    /// The clusters of ApplySets with `spec.kubeConfig`.
    remotes: RemoteClusters,
    /// The version of each ApplySet the controller's own last write produced.
    pub written: super::written::WrittenVersions,
    /// The objects each ApplySet left in the cluster it applied to before its `kubeConfig`
    /// changed, until they are pruned there (see `reconcile/steps/moved.rs`).
    pub moves: Mutex<HashMap<String, super::moved::Move>>,
}

/// Who applies: the controller itself (`None`) or an impersonated user. One cluster (and one
/// set of discovery and OpenAPI caches) per identity, shared by all its ApplySets.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClusterKey {
    impersonate: Option<String>,
}

impl ClusterKey {
    fn new(namespace: &str, service_account: Option<&str>) -> ClusterKey {
        ClusterKey {
            impersonate: service_account.map(|account| format!("system:serviceaccount:{namespace}:{account}")),
        }
    }
}

impl Context {
    pub fn new(
        client: kube::Client,
        clusters: ClusterSource,
        git: GitSource,
        metrics: Arc<Metrics>,
        settings: Settings,
        instance: String,
        cache: Arc<ManagedCache>,
    ) -> Context {
        let slots = settings.concurrent_reconciles;
        let remotes = RemoteClusters::new(settings.allow_remote_exec, settings.remote_rate);
        Context {
            events: EventPublisher::new(client.clone(), "applyset-controller", &instance),
            client,
            clusters,
            git,
            metrics,
            settings,
            history: Default::default(),
            schedule: Schedule::with_slots(slots),
            hashed_secrets: tokio::sync::OnceCell::new(),
            cache,
            waits: Default::default(),
            records: Default::default(),
            applysets: OnceLock::new(),
            remotes,
            written: Default::default(),
            moves: Mutex::default(),
        }
    }

    /// The codec of hashed Secret annotations, with the controller's key (read, or created,
    /// at the first need; a failure is retried at the next need).
    pub async fn hashed_secrets(&self) -> Result<Arc<HashedSecrets>, super::secret_key::HashKeyError> {
        let codec = self
            .hashed_secrets
            .get_or_try_init(|| async {
                let (namespace, name) = &self.settings.secret_hash_key;
                let key = super::secret_key::load_or_create(&self.client, namespace, name).await?;
                HashedSecrets::new(&key).map(Arc::new).map_err(super::secret_key::HashKeyError::Codec)
            })
            .await?;
        Ok(codec.clone())
    }

    /// The context of `applyset plan`'s run: every identity is the caller's `cluster` (a plan
    /// impersonates no one), with a watch cache it never starts and a git source it never uses.
    pub fn for_plan(cluster: Arc<Cluster>, settings: Settings) -> Context {
        let client = cluster.client().clone();
        let metrics = Arc::new(Metrics::new());
        let (cache, _changes) = ManagedCache::new(client.clone(), None, metrics.clone());
        let git = GitSource::new(std::env::temp_dir().join("applyset-plan-never-fetched"));
        Context::new(client, ClusterSource::Fixed(cluster), git, metrics, settings, "plan".into(), cache)
    }

    /// [`ApplySet::secrets_mode`] with this controller's `--default-secrets`.
    pub fn secrets_mode(&self, applyset: &ApplySet) -> SecretsMode {
        applyset.secrets_mode(self.settings.default_secrets)
    }

    /// The ServiceAccount an ApplySet applies as, if any.
    pub fn service_account_for(&self, applyset: &ApplySet) -> Option<String> {
        applyset.spec.service_account_name.clone().or_else(|| self.settings.default_service_account.clone())
    }

    /// The apply cluster for an ApplySet: with a ServiceAccount (of the ApplySet's namespace)
    /// every request is made as that account.
    pub fn cluster_for(&self, namespace: &str, service_account: Option<&str>) -> crate::cluster::Result<Arc<Cluster>> {
        let (config, limiter, built) = match &self.clusters {
            ClusterSource::Fixed(cluster) => return Ok(cluster.clone()),
            ClusterSource::Config { config, limiter, built } => (config, limiter, built),
        };
        let key = ClusterKey::new(namespace, service_account);
        let mut clusters = lock(built);
        if let Some((built, cluster)) = clusters.get(&key)
            && built.elapsed() < CLUSTER_TTL
        {
            return Ok(cluster.clone());
        }
        let mut config = (**config).clone();
        if let Some(user) = &key.impersonate {
            // Groups are left out: the apiserver adds the ServiceAccount's own groups.
            config.auth_info.impersonate = Some(user.clone());
            config.auth_info.impersonate_groups = None;
        }
        let cluster = Arc::new(Cluster::from_config_sharing(config, limiter.clone())?);
        clusters.insert(key, (Instant::now(), cluster.clone()));
        Ok(cluster)
    }

    /// Where the ApplySet's objects are applied, watched and pruned: its `spec.kubeConfig`
    /// cluster, or the controller's own, as its identity.
    pub async fn target_for(&self, applyset: &ApplySet) -> Result<Target, RemoteError> {
        let service_account = self.service_account_for(applyset);
        match &applyset.spec.kube_config {
            Some(reference) => {
                let reference = &reference.secret_ref;
                self.remotes.target(&self.client, &self.cache, applyset, reference, service_account.as_deref()).await
            }
            None => {
                self.remotes.release(&applyset.key());
                let cluster = self.cluster_for(&applyset.namespace_or_default(), service_account.as_deref())?;
                Ok(Target { cluster, cache: self.cache.clone(), remote_server: None })
            }
        }
    }

    /// The remote clusters in use.
    pub fn remotes(&self) -> &RemoteClusters {
        &self.remotes
    }

    /// Discovery for the ApplySet parent's recorded kinds: the apply cluster's own (one fetch
    /// serves the apply path and the parent), fetched again when `refresh` is set.
    pub async fn api_index(&self, cluster: &Cluster, refresh: bool) -> crate::cluster::Result<Arc<ApiIndex>> {
        if refresh {
            cluster.refresh_discovery().await?;
        }
        cluster.api_index().await
    }

    /// Connects the context to the running controller: its view of the ApplySets (for
    /// `dependsOn`); returns the stream of run-now requests it reconciles on.
    pub fn connect(&self, applysets: Store<ApplySet>) -> Option<mpsc::UnboundedReceiver<ObjectRef<ApplySet>>> {
        let _ = self.applysets.set(applysets);
        self.schedule.connect()
    }

    /// Every ApplySet the controller sees, once its first list is complete (a run that starts
    /// before would not find a dependency that exists).
    pub async fn applysets(&self) -> Vec<Arc<ApplySet>> {
        let Some(store) = self.applysets.get() else { return Vec::new() };
        let _ = tokio::time::timeout(Duration::from_secs(30), store.wait_until_ready()).await;
        store.state()
    }

    /// The ApplySet is gone: its schedule, waits, remote cluster and metrics (its object counts
    /// and `applyset_condition` series) are dropped.
    pub fn forget(&self, key: &str) {
        self.metrics.forget(key);
        self.schedule.forget(key);
        self.waits.forget(key);
        self.remotes.forget(key);
        lock(&self.moves).remove(key);
        self.written.forget(key);
    }

    /// Publishes an Event on the ApplySet; a failure to record is logged, never fatal.
    pub async fn event(&self, applyset: &ApplySet, warning: bool, reason: &str, action: &str, note: String) {
        let note = super::status::truncate(&crate::redact::redact(&note), super::status::MAX_EVENT_NOTE);
        let event = NewEvent { warning, reason, action, note };
        if let Err(error) = self.events.publish(&applyset.object_ref(&()), event).await {
            tracing::warn!(applyset = %applyset.key(), error = %Chain(&error), "cannot record an event");
        }
    }
}
