//! The scene of a reconcile without a cluster: a git repository (made with git2) holding the
//! manifests, the fake apiserver as both the controller's client and the apply cluster, a
//! `Context` as the controller builds it, and ApplySets stored in the fake so that the runs'
//! status writes land there and the next run reads them back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::runtime::controller::Action;
use serde_json::{Value, json};

use super::fake::FakeApiServer;
use crate::cluster::Cluster;
use crate::keys::FINALIZER;
use crate::operator::api::{ApplySet, ApplySetStatus, SecretsMode};
use crate::operator::cache::ManagedCache;
use crate::operator::context::{ClusterSource, Context, Settings};
use crate::operator::metrics::Metrics;
use crate::operator::reconcile::{ReconcileError, reconcile};
use crate::operator::status::{self, READY};
use crate::source::GitSource;

/// The namespace of every test ApplySet and its objects.
pub const NS: &str = "ns";

/// The settings `controller.rs` would build, with local sources allowed and no minimum interval.
pub fn settings() -> Settings {
    Settings {
        apply_concurrency: 4,
        default_service_account: None,
        allow_local_sources: true,
        no_cross_namespace_refs: false,
        field_manager: "applyset-controller".into(),
        min_interval: Duration::ZERO,
        manifest_limits: crate::manifest::Limits { file: Some(4 << 20), document: Some(1 << 20), total: Some(8 << 20) },
        default_secrets: SecretsMode::Plain,
        secret_hash_key: ("applyset-system".into(), "applyset-secret-hash-key".into()),
        kustomize_binary: "kustomize".into(),
        concurrent_reconciles: 4,
        record_limit: crate::operator::members::codec::RECORD_LIMIT,
        allow_remote_exec: false,
        remote_rate: (50.0, 100),
        progress_report_after: Duration::ZERO,
    }
}

pub struct Fixture {
    pub fake: FakeApiServer,
    pub ctx: Arc<Context>,
    /// The fake as a cluster (the controller's apply cluster, and what a CLI command is given).
    pub cluster: Arc<Cluster>,
    pub repo: Repo,
    root: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::with_settings(settings())
    }

    /// Must be called inside a tokio runtime (the kube client spawns its buffer there).
    pub fn with_settings(settings: Settings) -> Fixture {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("applyset-reconcile-tests-{}-{id}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("a scratch directory");
        let fake = FakeApiServer::new();
        let client = fake.client();
        let cluster = Arc::new(Cluster::from_client(fake.client(), "https://fake.invalid".into(), NS.into(), 0.0, 1));
        let metrics = Arc::new(Metrics::new());
        // The changes a watch would report: none, the fake allows no watches.
        let (cache, _changes) = ManagedCache::new(client.clone(), None, metrics.clone());
        let git = GitSource::new(root.join("git-cache"));
        let clusters = ClusterSource::Fixed(cluster.clone());
        let ctx = Context::new(client, clusters, git, metrics, settings, "test".into(), cache);
        let repo = Repo::init(&root.join("repo"));
        Fixture { fake, ctx: Arc::new(ctx), cluster, repo, root }
    }

    /// Stores an ApplySet (already carrying the finalizer, so the reconcile goes straight to
    /// the run) whose spec is `spec` over the repository's URL and a 5m interval.
    pub fn applyset(&self, name: &str, spec: Value) -> Arc<ApplySet> {
        let mut full = json!({ "source": { "url": self.repo.url() }, "interval": "5m" });
        merge(&mut full, spec);
        self.fake.put(json!({
            "apiVersion": "applyset.dev/v1alpha1",
            "kind": "ApplySet",
            "metadata": { "name": name, "namespace": NS, "generation": 1, "finalizers": [FINALIZER] },
            "spec": full,
        }));
        self.current(name)
    }

    /// The ApplySet as the fake holds it now (as the controller's watch would see it).
    pub fn current(&self, name: &str) -> Arc<ApplySet> {
        let object = self.fake.object(&applyset_path(name)).unwrap_or_else(|| panic!("no ApplySet {name}"));
        Arc::new(serde_json::from_value(object).expect("a valid ApplySet"))
    }

    /// Edits the ApplySet's spec (a merge), raising its generation as the apiserver would.
    pub fn edit_spec(&self, name: &str, spec: Value) {
        let mut object = self.fake.object(&applyset_path(name)).expect("the ApplySet");
        merge(&mut object["spec"], spec);
        let generation = object["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
        object["metadata"]["generation"] = generation.into();
        self.fake.put(object);
    }

    /// ConfigMaps `a`, `b` and `c` committed, applied and recorded by ApplySet `app` (with
    /// `spec`), which is Ready.
    pub async fn applied_three(&self, spec: Value) {
        self.repo
            .write("a.yaml", &configmap("a", "1"))
            .write("b.yaml", &configmap("b", "2"))
            .write("c.yaml", &configmap("c", "3"));
        self.repo.commit("three");
        self.applyset("app", spec);
        self.reconcile("app").await.expect("the first run");
        assert_eq!(self.ready("app").0, "True", "{:?}", self.ready("app"));
    }

    /// The controller's entry point on the ApplySet as stored.
    pub async fn reconcile(&self, name: &str) -> Result<Action, ReconcileError> {
        reconcile(self.current(name), self.ctx.clone()).await
    }

    /// A run asked for now, as a webhook push or `reconcile` asks (the request annotation set
    /// to the current time): it lists the remote, so it sees a commit made since the last run.
    pub async fn run_requested(&self, name: &str) -> Result<Action, ReconcileError> {
        let mut object = self.fake.object(&applyset_path(name)).expect("the ApplySet");
        let now = k8s_openapi::jiff::Timestamp::now().to_string();
        object["metadata"]["annotations"][crate::keys::RECONCILE_REQUESTED_AT] = now.into();
        self.fake.put(object);
        self.reconcile(name).await
    }

    /// A run before the interval is over, as a change someone made to an object asks for.
    pub async fn run_now(&self, name: &str) -> Result<Action, ReconcileError> {
        let applyset = self.current(name);
        self.ctx.schedule.run_now(&applyset);
        reconcile(applyset, self.ctx.clone()).await
    }

    pub fn status(&self, name: &str) -> ApplySetStatus {
        self.current(name).status.clone().unwrap_or_default()
    }

    pub fn condition(&self, name: &str, type_: &str) -> Option<Condition> {
        status::condition(&self.status(name), type_).cloned()
    }

    /// `(status, reason, message)` of `Ready`.
    pub fn ready(&self, name: &str) -> (String, String, String) {
        let ready = self.condition(name, READY).unwrap_or_else(|| panic!("{name} has no Ready condition"));
        (ready.status, ready.reason, ready.message)
    }

    /// A ConfigMap of the namespace, as stored.
    pub fn configmap(&self, name: &str) -> Option<Value> {
        self.fake.object(&configmap_path(name))
    }

    /// `(type, reason, note)` of every Event recorded.
    pub fn events(&self) -> Vec<(String, String, String)> {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        self.fake.events().iter().map(|e| (text(&e["type"]), text(&e["reason"]), text(&e["note"]))).collect()
    }

    /// The note of the Event with this reason (the test fails when there is none).
    pub fn event(&self, reason: &str) -> String {
        let events = self.events();
        let found = events.iter().find(|(_, r, _)| r == reason);
        found.map(|(_, _, note)| note.clone()).unwrap_or_else(|| panic!("no {reason} Event in {events:?}"))
    }

    /// The value of one rendered metric series (`name{labels}`), 0 when absent.
    pub fn metric(&self, series: &str) -> f64 {
        let rendered = self.ctx.metrics.render();
        let line = rendered.lines().find(|l| l.split_once(' ').is_some_and(|(s, _)| s == series));
        line.and_then(|l| l.rsplit_once(' ')?.1.parse().ok()).unwrap_or(0.0)
    }

    /// The git cache directory: it exists once anything was fetched.
    pub fn fetched_anything(&self) -> bool {
        std::fs::read_dir(self.root.join("git-cache")).is_ok_and(|mut entries| entries.next().is_some())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

pub fn applyset_path(name: &str) -> String {
    format!("/apis/applyset.dev/v1alpha1/namespaces/{NS}/applysets/{name}")
}

pub fn configmap_path(name: &str) -> String {
    format!("/api/v1/namespaces/{NS}/configmaps/{name}")
}

/// A ConfigMap manifest (no namespace: the ApplySet's applies).
pub fn configmap(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  value: {value:?}\n")
}

/// RFC 7386 merge of `patch` into `target`.
fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                if value.is_null() {
                    target.remove(&key);
                } else {
                    merge(target.entry(key).or_insert(Value::Null), value);
                }
            }
        }
        (target, patch) => *target = patch,
    }
}

/// A work repository on `main`, fetched over `file://`.
pub struct Repo {
    dir: PathBuf,
    repo: git2::Repository,
}

impl Repo {
    fn init(dir: &Path) -> Repo {
        let mut options = git2::RepositoryInitOptions::new();
        options.initial_head("main");
        let repo = git2::Repository::init_opts(dir, &options).expect("git init");
        Repo { dir: dir.to_owned(), repo }
    }

    pub fn url(&self) -> String {
        format!("file://{}", self.dir.display())
    }

    /// The work tree (a local checkout, as `applyset plan --path` takes it).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn write(&self, file: &str, text: &str) -> &Repo {
        let path = self.dir.join(file);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write a manifest");
        self
    }

    pub fn remove(&self, file: &str) -> &Repo {
        std::fs::remove_file(self.dir.join(file)).expect("remove a manifest");
        self
    }

    /// Commits the work tree as it is (additions and removals); returns the commit's hex id.
    pub fn commit(&self, message: &str) -> String {
        let mut index = self.repo.index().expect("index");
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).expect("git add");
        index.update_all(["*"], None).expect("git add -u");
        index.write().expect("write the index");
        let tree = self.repo.find_tree(index.write_tree().expect("write tree")).expect("tree");
        let signature = git2::Signature::now("Test", "test@example.com").expect("signature");
        let parent = self.repo.head().ok().and_then(|head| head.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let id = self.repo.commit(Some("HEAD"), &signature, &signature, message, &tree, &parents).expect("commit");
        id.to_string()
    }
}
