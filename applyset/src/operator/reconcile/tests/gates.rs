//! What a run waits for: its dependencies before it fetches (the controller's view of the
//! ApplySets, given as a reflector store filled here as its watch would), and the health of
//! what it applied before it is Ready.

use http::Method;
use kube::runtime::controller::Action;
use kube::runtime::{reflector, watcher};
use serde_json::json;

use super::fixture::{Fixture, NS, configmap};
use crate::operator::api::ApplySet;
use crate::operator::reconcile::reconcile;
use crate::operator::status::{HEALTHY, STALLED};

/// Connects the context to a view of these ApplySets (as stored now), complete.
fn view_of(f: &Fixture, names: &[&str]) -> reflector::store::Writer<ApplySet> {
    let (_, mut writer) = reflector::store::<ApplySet>();
    writer.apply_watcher_event(&watcher::Event::Init);
    for name in names {
        writer.apply_watcher_event(&watcher::Event::InitApply((*f.current(name)).clone()));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    writer
}

#[tokio::test]
async fn reconcile_missing_dependency_is_dependency_not_ready_and_fetches_nothing() {
    let f = Fixture::new();
    f.repo.write("a.yaml", &configmap("a", "1")).commit("one");
    f.applyset("app", json!({ "dependsOn": [{ "name": "base" }] }));
    let writer = view_of(&f, &["app"]);
    let _queue = f.ctx.connect(writer.as_reader());

    f.reconcile("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("False", "DependencyNotReady"));
    assert_eq!(message, format!("dependency ApplySet {NS}/base not found"));
    assert!(f.condition("app", STALLED).is_none(), "a dependency may appear: retried, not stalled");
    assert!(!f.fetched_anything());
    assert!(f.configmap("a").is_none());
    assert!(!f.fake.requests().iter().any(|r| r.path == "/api"));
}

#[tokio::test]
async fn reconcile_dependant_waits_for_its_dependency_and_is_woken_when_it_is_ready() {
    let f = Fixture::new();
    f.repo.write("base/a.yaml", &configmap("a", "1")).write("app/b.yaml", &configmap("b", "2")).commit("two sets");
    f.applyset("base", json!({ "source": { "path": "base" } }));
    f.applyset("app", json!({ "source": { "path": "app" }, "dependsOn": [{ "name": "base" }] }));
    let mut writer = view_of(&f, &["base", "app"]);
    let mut queue = f.ctx.connect(writer.as_reader()).expect("the run-now queue");

    f.reconcile("app").await.expect("the dependant's run");
    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("False", "DependencyNotReady"));
    assert!(message.contains(&format!("{NS}/base is not ready (not reconciled yet)")), "{message}");
    assert!(f.configmap("b").is_none());

    f.reconcile("base").await.expect("the dependency's run");
    assert_eq!(f.ready("base").0, "True");
    // The dependency just became Ready: its dependant is asked to run now.
    let woken = queue.try_recv().expect("a run-now request");
    assert_eq!((woken.name.as_str(), woken.namespace.as_deref()), ("app", Some(NS)));
    writer.apply_watcher_event(&watcher::Event::Apply((*f.current("base")).clone()));

    f.reconcile("app").await.expect("the dependant's second run");
    assert_eq!(f.ready("app").0, "True", "{:?}", f.ready("app"));
    assert!(f.configmap("b").is_some());
}

#[tokio::test]
async fn a_dependency_whose_run_fails_wakes_the_dependants_that_wait_for_it() {
    let f = Fixture::new();
    f.repo.write("app/b.yaml", &configmap("b", "2")).commit("one set");
    f.applyset("base", json!({ "source": { "path": "missing" } }));
    f.applyset("app", json!({ "source": { "path": "app" }, "dependsOn": [{ "name": "base" }] }));
    let mut writer = view_of(&f, &["base", "app"]);
    let mut queue = f.ctx.connect(writer.as_reader()).expect("the run-now queue");

    f.reconcile("app").await.expect("the dependant's run");
    assert_eq!(f.ready("app").1, "DependencyNotReady");
    writer.apply_watcher_event(&watcher::Event::Apply((*f.current("app")).clone()));
    assert!(queue.try_recv().is_err(), "nothing waits for the dependant");

    // The dependency's run fails (its path is not in the repository): what the dependant
    // would find changed (the dependency has a failure to name now), so it looks again at
    // once, not at its retry interval.
    f.reconcile("base").await.expect("the dependency's run, failed");
    assert_eq!(f.ready("base").0, "False");
    let woken = queue.try_recv().expect("a run-now request");
    assert_eq!((woken.name.as_str(), woken.namespace.as_deref()), ("app", Some(NS)));
    assert!(queue.try_recv().is_err(), "one request");
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
";

#[tokio::test]
async fn reconcile_waits_for_a_deployment_until_it_is_available() {
    let f = Fixture::new();
    f.repo.write("web.yaml", DEPLOYMENT).commit("web");
    f.applyset("app", json!({ "wait": true }));

    f.reconcile("app").await.expect("the first run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("Unknown", "Progressing"), "{message}");
    assert!(message.contains("waiting for 1 of 1 object(s) to be healthy: deployment.apps/web"), "{message}");
    assert_eq!(f.condition("app", HEALTHY).map(|c| c.status), Some("Unknown".into()));
    let inventory = f.status("app").inventory.expect("an inventory");
    assert_eq!(inventory.objects[0].health.as_deref(), Some("InProgress"), "{inventory:?}");
    assert_eq!(f.metric("applyset_reconcile_total{result=\"waiting\"}"), 1.0);

    // The Deployment rolls out.
    let path = format!("/apis/apps/v1/namespaces/{NS}/deployments/web");
    let mut web = f.fake.object(&path).expect("the Deployment");
    web["status"] = json!({
        "observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
        "conditions": [
            { "type": "Available", "status": "True" },
            { "type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable" },
        ],
    });
    f.fake.put(web);
    f.fake.clear_requests();
    f.run_now("app").await.expect("the second run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("True", "Succeeded"), "{message}");
    assert!(message.ends_with("; 1 object(s) healthy"), "{message}");
    assert_eq!(f.condition("app", HEALTHY).map(|c| c.status), Some("True".into()));
    assert!(!f.fake.requests().iter().any(|r| r.method == Method::PATCH && r.path == path), "the apply was steady");
}

#[tokio::test]
async fn reconcile_health_timeout_passed_is_health_check_failed() {
    let f = Fixture::new();
    f.repo.write("web.yaml", DEPLOYMENT).commit("web");
    f.applyset("app", json!({ "wait": true, "healthTimeout": "0s" }));

    f.reconcile("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("False", "HealthCheckFailed"), "{message}");
    assert!(message.contains("1 object(s) not healthy after 0s: deployment.apps/web"), "{message}");
    assert_eq!(f.condition("app", HEALTHY).map(|c| c.status), Some("False".into()));
    // Applied all the same: the Deployment exists and the revision is recorded.
    assert!(f.status("app").last_applied_revision.is_some());
    assert!(f.event("HealthCheckFailed").contains("deployment.apps/web"), "{:?}", f.events());
    assert_eq!(f.metric("applyset_reconcile_total{result=\"health_check_failed\"}"), 1.0);
}

#[tokio::test]
async fn a_due_applyset_waiting_for_its_turn_holds_little() {
    let f = Fixture::new();
    let applyset = f.applyset("app", json!({}));
    // Every due ApplySet's task holds this future while it waits for its turn (a thousand at
    // once when they fall due together); the run's own state is allocated once the turn comes.
    let waiting = crate::operator::reconcile::reconcile(applyset, f.ctx.clone());
    let size = std::mem::size_of_val(&waiting);
    assert!(size <= 2048, "a waiting reconcile holds {size} bytes");
}

/// ApplySet `app` (applying ConfigMap a) as created by a user: with `finalizers` (none when
/// `None`), not the controller's.
fn new_applyset_with_finalizers(finalizers: Option<serde_json::Value>) -> Fixture {
    let f = Fixture::new();
    f.repo.write("a.yaml", &configmap("a", "1")).commit("one");
    f.applyset("app", json!({}));
    let mut stored = f.fake.object(&super::fixture::applyset_path("app")).expect("stored");
    let metadata = stored["metadata"].as_object_mut().expect("metadata");
    match finalizers {
        Some(finalizers) => metadata.insert("finalizers".into(), finalizers),
        None => metadata.remove("finalizers"),
    };
    f.fake.put(stored);
    f
}

/// The writes of the ApplySet `app` itself (not its status), in order.
fn applyset_writes(f: &Fixture) -> Vec<super::fake::Recorded> {
    f.fake.writes().into_iter().filter(|r| r.path.ends_with("/applysets/app")).collect()
}

#[tokio::test]
async fn a_new_applyset_gets_the_finalizer_with_its_first_parent_write() {
    let f = new_applyset_with_finalizers(None);

    f.reconcile("app").await.expect("the run");
    let finalizers = f.current("app").metadata.finalizers.clone().unwrap_or_default();
    assert_eq!(finalizers, [crate::keys::FINALIZER]);
    assert_eq!(f.ready("app").0, "True");
    assert!(f.configmap("a").is_some());
    // One write of the ApplySet, not two: the KEP-3659 parent write (a server-side apply)
    // carries the finalizer, and comes before the first object: a delete from then on finds
    // it, whatever the run has created.
    let own = applyset_writes(&f);
    assert_eq!(own.len(), 1, "{own:?}");
    assert!(own[0].content_type.as_deref().is_some_and(|t| t.starts_with("application/apply-patch")));
    assert_eq!(own[0].body.as_ref().map(|b| &b["metadata"]["finalizers"]), Some(&json!([crate::keys::FINALIZER])));
    let writes: Vec<String> = f.fake.writes().iter().map(|r| format!("{} {}", r.method, r.path)).collect();
    let parent = writes.iter().position(|w| w.starts_with("PATCH") && w.ends_with("/applysets/app"));
    let first_object = writes.iter().position(|w| w.contains("/configmaps"));
    assert!(matches!((parent, first_object), (Some(p), Some(o)) if p < o), "{writes:?}");

    // The next run writes nothing of the ApplySet's metadata: it holds the finalizer already.
    f.run_requested("app").await.expect("a second run");
    assert_eq!(applyset_writes(&f).len(), 1);
    assert_eq!(f.current("app").metadata.finalizers.clone().unwrap_or_default(), [crate::keys::FINALIZER]);
}

#[tokio::test]
async fn a_new_applyset_whose_first_run_fails_before_applying_gets_the_finalizer_at_its_next_reconcile() {
    let f = new_applyset_with_finalizers(None);
    let missing = f.root().join("no-such-repository");
    let mut stored = f.fake.object(&super::fixture::applyset_path("app")).expect("stored");
    stored["spec"]["source"]["url"] = format!("file://{}", missing.display()).into();
    f.fake.put(stored);

    f.reconcile("app").await.expect("the failed run is in the status");
    assert_eq!(f.ready("app").0, "False");
    assert!(f.current("app").metadata.finalizers.is_none(), "no parent write, no finalizer yet");
    // The status write's watch event brings the reconcile that adds it (and nothing else: the
    // run is not due again yet).
    f.reconcile("app").await.expect("the finalizer added");
    assert_eq!(f.current("app").metadata.finalizers.clone().unwrap_or_default(), [crate::keys::FINALIZER]);
    let own = applyset_writes(&f);
    assert_eq!(own.len(), 1, "{own:?}");
    assert!(own[0].content_type.as_deref().is_some_and(|t| t.starts_with("application/json-patch")));
}

#[tokio::test]
async fn a_new_applyset_keeps_the_finalizers_of_others() {
    let f = new_applyset_with_finalizers(Some(json!(["example.com/keep"])));

    f.reconcile("app").await.expect("the finalizer added, then the run");
    let finalizers = f.current("app").metadata.finalizers.clone().unwrap_or_default();
    assert_eq!(finalizers, ["example.com/keep", crate::keys::FINALIZER]);
    assert!(f.configmap("a").is_some());
}

#[tokio::test]
async fn a_reconcile_handed_a_copy_older_than_the_controllers_own_writes_waits_for_the_store() {
    let f = new_applyset_with_finalizers(None);
    let before_the_run = f.current("app");
    f.reconcile("app").await.expect("the run");
    assert_eq!(f.ready("app").0, "True");
    let requests = f.fake.requests().len();

    // The store still holds the copy from before the run's writes (their watch events are on
    // their way) while a run is asked for: nothing is read or written from that copy.
    f.ctx.schedule.run_now(&before_the_run);
    let action = reconcile(before_the_run, f.ctx.clone()).await.expect("a retry, not an error");
    assert_eq!(action, Action::requeue(std::time::Duration::from_millis(100)));
    assert_eq!(f.fake.requests().len(), requests, "no request from an old copy");

    // The newer copy, once the store has it, runs: the request was kept for it.
    let runs = || f.metric("applyset_reconcile_total{result=\"success\"}");
    let before = runs();
    f.reconcile("app").await.expect("the asked-for run");
    assert_eq!(runs(), before + 1.0, "the request ran on the newer copy");
    f.reconcile("app").await.expect("nothing due");
    assert_eq!(runs(), before + 1.0, "and was taken by that run");
}
