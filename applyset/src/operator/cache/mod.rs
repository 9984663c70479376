//! The controller's shared watch cache of managed objects: one watch per resource type, shared
//! by every ApplySet, filtered to objects carrying `applyset.kubernetes.io/part-of`. Runs read
//! live objects and prune candidates from it, so that a no-op interval sends no request on
//! managed objects; a kind is watched from the first time a run asks for it.
//!
//! It answers only from a complete view ([`store::KindStore`]): until a kind is listed, and
//! from a watch error (a 410, the apiserver away) until it is listed again, runs ask the
//! apiserver as before. Prune deletes what it took from here with the resourceVersion it saw as
//! a precondition, so an object changed since is never deleted on a stale view.
//!
//! Whole objects are kept, as compact JSON deflated against their kind's first object
//! (`packed.rs`): apply needs the live object, so keeping metadata only would cost a GET per
//! object per interval, the requests this cache exists to save.
//!
//! Changes that the controller did not make (`kubectl edit`, `scale`, `delete`) are sent to
//! [`triggers`], which starts the owning ApplySet's drift check at once; changes of status
//! start the runs of the ApplySets waiting for their objects' health.

pub mod packed;
mod scan;
pub mod store;
pub mod triggers;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use applyset_merge::Value;
use futures::StreamExt;
use kube::core::{ApiResource, DynamicResourceScope};
use kube::runtime::watcher;
use tokio::sync::mpsc;

use self::store::{Change, Entry, KindStore, Watched};
use super::lock;
use super::metrics::Metrics;
use crate::causes::Chain;
use crate::cluster::Mapping;
use crate::cluster::cache::{Cached, LiveText, ObjectCache};
use crate::cluster::list::Listed;
use crate::keys::PART_OF_LABEL;

/// How long the controller remembers its own writes: their watch events arrive within
/// milliseconds, or after a watch gap within a relist.
const OWN_WRITES_KEPT: Duration = Duration::from_secs(300);

/// The longest wait before a failed watch is started again: after an outage the view is
/// complete again (and drift seen at once) within this of the apiserver's return.
const WATCH_RETRY_LIMIT: Duration = Duration::from_secs(8);

/// How long a watch the apiserver forbids waits before it is tried again.
const FORBIDDEN_RETRY: Duration = Duration::from_secs(300);

/// `(group, version, plural)`: each version is its own watch (a run reads objects in the
/// version it applies).
type KindKey = (String, String, String);

pub struct ManagedCache {
    client: kube::Client,
    /// `--watch-namespace`: where namespaced kinds are watched when the apiserver forbids
    /// watching them cluster-wide (a controller whose rights end there); answered only there then.
    fallback: Option<String>,
    kinds: Mutex<HashMap<KindKey, Arc<RwLock<KindStore>>>>,
    watches: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Shared with the caches of remote clusters: a change is judged by the one drift check.
    own: Arc<Mutex<OwnWrites>>,
    changes: mpsc::UnboundedSender<Change>,
    metrics: Arc<Metrics>,
    /// The controller's own cluster's cache (the one the watched-kinds gauge counts).
    primary: bool,
}

impl ManagedCache {
    /// The cache, and the changes it sees that someone else may have made.
    pub fn new(
        client: kube::Client,
        fallback: Option<String>,
        metrics: Arc<Metrics>,
    ) -> (Arc<ManagedCache>, mpsc::UnboundedReceiver<Change>) {
        let (changes, receiver) = mpsc::unbounded_channel();
        let cache = ManagedCache {
            client,
            fallback,
            kinds: Mutex::new(HashMap::new()),
            watches: Mutex::new(Vec::new()),
            own: Arc::new(Mutex::new(OwnWrites::default())),
            changes,
            metrics,
            primary: true,
        };
        (Arc::new(cache), receiver)
    }

    /// A cache of another cluster (`spec.kubeConfig`) watched with `client`: its changes start
    /// the same drift checks, and the controller's writes there are known as its own.
    pub fn sibling(&self, client: kube::Client) -> Arc<ManagedCache> {
        Arc::new(ManagedCache {
            client,
            fallback: None,
            kinds: Mutex::new(HashMap::new()),
            watches: Mutex::new(Vec::new()),
            own: self.own.clone(),
            changes: self.changes.clone(),
            metrics: self.metrics.clone(),
            primary: false,
        })
    }

    /// The store of `resource`, its watch started on first use.
    fn kind(&self, resource: &ApiResource, namespaced: bool) -> Arc<RwLock<KindStore>> {
        let key = (resource.group.clone(), resource.version.clone(), resource.plural.clone());
        let mut kinds = lock(&self.kinds);
        if let Some(store) = kinds.get(&key) {
            return store.clone();
        }
        let store = Arc::new(RwLock::new(KindStore::default()));
        kinds.insert(key, store.clone());
        let fallback = self.fallback.clone().filter(|_| namespaced);
        let watch = watch_kind(
            self.client.clone(),
            resource.clone(),
            fallback,
            store.clone(),
            self.changes.clone(),
            self.metrics.clone(),
        );
        lock(&self.watches).push(tokio::spawn(watch));
        if self.primary {
            self.metrics.set_watched_kinds(kinds.len() as u64);
        }
        store
    }

    /// Whether the change was the controller's own write or delete.
    pub fn is_own(&self, change: &Change) -> bool {
        lock(&self.own).contains(&change.uid, change.resource_version.as_deref())
    }

    /// Objects held, over every kind (for the metric and the benchmark).
    pub fn objects(&self) -> usize {
        let kinds: Vec<_> = lock(&self.kinds).values().cloned().collect();
        kinds.iter().map(|store| store.read().unwrap_or_else(|p| p.into_inner()).len()).sum()
    }
}

impl Drop for ManagedCache {
    fn drop(&mut self) {
        for watch in lock(&self.watches).drain(..) {
            watch.abort();
        }
    }
}

impl ManagedCache {
    /// The entry of `name` when the kind's view is complete: `Some(None)` when no labelled object
    /// has the name.
    fn entry(&self, mapping: &Mapping, namespace: Option<&str>, name: &str) -> Option<Option<Arc<Entry>>> {
        let namespace = namespace.filter(|_| mapping.namespaced);
        let store = self.kind(&mapping.resource, mapping.namespaced);
        let key = (namespace.map(str::to_owned), name.to_owned());
        store.read().unwrap_or_else(|p| p.into_inner()).get(&key)
    }
}

/// An entry's text, with the type its kind's watch leaves out; `None` when it cannot be read
/// back (the run asks the apiserver).
fn live_text(mapping: &Mapping, entry: &Entry) -> Option<LiveText> {
    let type_meta = (mapping.resource.api_version.clone(), mapping.resource.kind.clone());
    Some(LiveText::new(entry.text()?, Some(type_meta)))
}

impl ObjectCache for ManagedCache {
    fn live(&self, mapping: &Mapping, namespace: Option<&str>, name: &str, set_id: &str) -> Option<Cached> {
        match self.entry(mapping, namespace, name)? {
            None => Some(Cached::Unlabelled),
            Some(entry) if entry.set_id == set_id => live_text(mapping, &entry).map(Cached::Found),
            // Another set's: read from the apiserver, with the run's identity.
            Some(_) => None,
        }
    }

    fn at_version(
        &self,
        mapping: &Mapping,
        namespace: Option<&str>,
        name: &str,
        resource_version: &str,
    ) -> Option<LiveText> {
        let entry = self.entry(mapping, namespace, name)??;
        (entry.resource_version == resource_version).then(|| live_text(mapping, &entry)).flatten()
    }

    fn members(&self, resource: &ApiResource, namespace: Option<&str>, set_id: &str) -> Option<Vec<Listed>> {
        let store = self.kind(resource, namespace.is_some());
        store.read().unwrap_or_else(|p| p.into_inner()).members(set_id, namespace)
    }

    fn wrote(&self, object: &Value) {
        let metadata = object.as_object().and_then(|o| o.get("metadata")).and_then(Value::as_object);
        let text = |key: &str| metadata.and_then(|m| m.get(key)).and_then(Value::as_str);
        if let (Some(uid), Some(version)) = (text("uid"), text("resourceVersion")) {
            lock(&self.own).wrote(uid, version);
        }
    }

    fn deleted(&self, uid: &str) {
        lock(&self.own).deleted(uid);
    }
}

/// The writes and deletes the controller made lately, by uid.
#[derive(Default)]
struct OwnWrites {
    writes: HashMap<(String, String), Instant>,
    deletes: HashMap<String, Instant>,
    /// When the expired entries were last dropped: at most once a second, since dropping walks
    /// every entry (20,000 writes each walking all the others would be quadratic).
    expired_at: Option<Instant>,
}

impl OwnWrites {
    fn wrote(&mut self, uid: &str, version: &str) {
        self.expire();
        self.writes.insert((uid.to_owned(), version.to_owned()), Instant::now());
    }

    fn deleted(&mut self, uid: &str) {
        self.expire();
        self.deletes.insert(uid.to_owned(), Instant::now());
    }

    fn contains(&self, uid: &str, version: Option<&str>) -> bool {
        match version {
            Some(version) => self.writes.contains_key(&(uid.to_owned(), version.to_owned())),
            None => self.deletes.contains_key(uid),
        }
    }

    fn expire(&mut self) {
        if self.expired_at.is_some_and(|at| at.elapsed() < Duration::from_secs(1)) {
            return;
        }
        self.expired_at = Some(Instant::now());
        self.writes.retain(|_, at| at.elapsed() < OWN_WRITES_KEPT);
        self.deletes.retain(|_, at| at.elapsed() < OWN_WRITES_KEPT);
    }
}

impl kube::Resource for Watched {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(resource: &ApiResource) -> std::borrow::Cow<'_, str> {
        resource.kind.as_str().into()
    }
    fn group(resource: &ApiResource) -> std::borrow::Cow<'_, str> {
        resource.group.as_str().into()
    }
    fn version(resource: &ApiResource) -> std::borrow::Cow<'_, str> {
        resource.version.as_str().into()
    }
    fn api_version(resource: &ApiResource) -> std::borrow::Cow<'_, str> {
        resource.api_version.as_str().into()
    }
    fn plural(resource: &ApiResource) -> std::borrow::Cow<'_, str> {
        resource.plural.as_str().into()
    }
    fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &self.meta
    }
    fn meta_mut(&mut self) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &mut self.meta
    }
}

/// Watches one kind for as long as the controller runs. Any watch error (a 410 Gone, a dropped
/// connection, the apiserver away, a forbidden watch) makes the view incomplete and starts over
/// with a fresh list after a backoff, so that the view is complete again only once listed.
async fn watch_kind(
    client: kube::Client,
    resource: ApiResource,
    fallback: Option<String>,
    store: Arc<RwLock<KindStore>>,
    changes: mpsc::UnboundedSender<Change>,
    metrics: Arc<Metrics>,
) {
    let mut failures: u32 = 0;
    let mut namespace: Option<String> = None;
    loop {
        // Asked first (a SelfSubjectAccessReview), so that a watch RBAC does not grant is never
        // sent: cluster-wide, else in --watch-namespace, else not at all for a while.
        let scope = watchable_scope(&client, &resource, fallback.as_deref()).await;
        match scope {
            Some(scope) if scope != namespace => {
                namespace = scope;
                store.write().unwrap_or_else(|p| p.into_inner()).set_scope(namespace.clone());
            }
            Some(_) => {}
            None => {
                tracing::info!(kind = %resource.kind, group = %resource.group, "not allowed to watch: runs read this kind from the apiserver");
                tokio::time::sleep(FORBIDDEN_RETRY).await;
                continue;
            }
        }
        let mut forbidden = false;
        let api: kube::Api<Watched> = match &namespace {
            Some(namespace) => kube::Api::namespaced_with(client.clone(), namespace, &resource),
            None => kube::Api::all_with(client.clone(), &resource),
        };
        let config = watcher::Config::default().labels(PART_OF_LABEL).any_semantic();
        let mut events = std::pin::pin!(watcher::watcher(api, config));
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => {
                    let synced = matches!(event, watcher::Event::InitDone);
                    let found = {
                        let mut store = store.write().unwrap_or_else(|p| p.into_inner());
                        let before = store.len();
                        let found = store.apply(event);
                        metrics.cached_objects_changed(store.len() as i64 - before as i64);
                        found
                    };
                    for change in found {
                        let _ = changes.send(change);
                    }
                    if synced {
                        failures = 0;
                        tracing::debug!(kind = %resource.kind, group = %resource.group, "watch cache synced");
                    }
                }
                Err(error) => {
                    store.write().unwrap_or_else(|p| p.into_inner()).fail();
                    metrics.watch_failed();
                    forbidden = is_forbidden(&error);
                    if failures == 0 {
                        tracing::warn!(kind = %resource.kind, group = %resource.group, error = %Chain(&error), "watch failed: reading from the apiserver until it is listed again");
                    }
                    break;
                }
            }
        }
        failures = failures.saturating_add(1);
        let wait = match forbidden {
            // RBAC rarely changes: runs LIST this kind meanwhile.
            true => FORBIDDEN_RETRY,
            false => super::schedule::backoff(Duration::from_secs(1), WATCH_RETRY_LIMIT, failures),
        };
        tokio::time::sleep(wait).await;
    }
}

/// Where the controller may list and watch `resource`: `Some(None)` cluster-wide,
/// `Some(Some(ns))` in `fallback` only, `None` nowhere. A review that cannot be made says
/// cluster-wide (the watch itself then tells).
async fn watchable_scope(
    client: &kube::Client,
    resource: &ApiResource,
    fallback: Option<&str>,
) -> Option<Option<String>> {
    if may_list_and_watch(client, resource, None).await {
        return Some(None);
    }
    let namespace = fallback?;
    may_list_and_watch(client, resource, Some(namespace)).await.then(|| Some(namespace.to_owned()))
}

async fn may_list_and_watch(client: &kube::Client, resource: &ApiResource, namespace: Option<&str>) -> bool {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    };
    let reviews: kube::Api<SelfSubjectAccessReview> = kube::Api::all(client.clone());
    for verb in ["list", "watch"] {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    group: Some(resource.group.clone()),
                    resource: Some(resource.plural.clone()),
                    verb: Some(verb.into()),
                    namespace: namespace.map(str::to_owned),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        match reviews.create(&kube::api::PostParams::default(), &review).await {
            Ok(answer) if !answer.status.as_ref().is_some_and(|s| s.allowed) => return false,
            _ => {}
        }
    }
    true
}

/// The controller may not list or watch the kind cluster-wide (a namespaced RBAC mode).
fn is_forbidden(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.code == 403,
        watcher::Error::WatchError(status) => status.code == 403,
        _ => false,
    }
}
