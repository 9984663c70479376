//! The order of a run and what it writes: steps before writes, objects before `Ready`, no
//! write when nothing changed, and the runs that stop before fetching (suspended, invalid).

use std::time::Duration;

use http::Method;
use serde_json::json;

use super::fixture::{Fixture, NS, applyset_path, configmap, settings};
use crate::operator::context::Settings;
use crate::operator::status::STALLED;

/// Position of the first request matching `test` in `requests`.
fn first(requests: &[super::fake::Recorded], test: impl Fn(&super::fake::Recorded) -> bool) -> usize {
    requests.iter().position(test).unwrap_or_else(|| panic!("no such request in {requests:?}"))
}

#[tokio::test]
async fn reconcile_fresh_applyset_discovers_and_fetches_before_writing_objects_and_creates_them_before_ready() {
    let f = Fixture::new();
    let head = f.repo.write("a.yaml", &configmap("a", "1")).write("b.yaml", &configmap("b", "2")).commit("two");
    f.applyset("app", json!({}));

    f.reconcile("app").await.expect("the run");

    let requests = f.fake.requests();
    let status_path = format!("{}/status", applyset_path("app"));
    let configmaps = format!("/api/v1/namespaces/{NS}/configmaps");
    // The first write says the run began; the run's status write comes last.
    let writes: Vec<_> = requests.iter().filter(|r| r.is_write() && !r.path.contains("/events")).collect();
    assert_eq!(writes.first().map(|r| r.path.as_str()), Some(status_path.as_str()), "{writes:?}");
    let progressing = writes[0].body.as_ref().expect("a body")["status"]["conditions"].to_string();
    assert!(progressing.contains("Progressing"), "{progressing}");
    assert_eq!(writes.last().map(|r| r.path.as_str()), Some(status_path.as_str()), "{writes:?}");
    // Discovery, then the parent records the kinds, then the objects are read (a GET each, as
    // kubectl does: two objects are fewer than a LIST is worth) and created, all of them before
    // the status that says Ready.
    let discovery = first(&requests, |r| r.path == "/api").max(first(&requests, |r| r.path == "/apis"));
    let parent = first(&requests, |r| r.method == Method::PATCH && r.path == applyset_path("app"));
    let listed = first(&requests, |r| r.method == Method::GET && r.path.starts_with(&format!("{configmaps}/")));
    assert!(!requests.iter().any(|r| r.method == Method::GET && r.path == configmaps), "no LIST: {requests:?}");
    let posts: Vec<usize> = (0..requests.len())
        .filter(|i| requests[*i].method == Method::POST && requests[*i].path == configmaps)
        .collect();
    let ready = requests.iter().rposition(|r| r.path == status_path).expect("the final status write");
    assert_eq!(posts.len(), 2, "{requests:?}");
    assert!(discovery < parent && parent < listed && listed < posts[0] && posts[1] < ready, "{requests:?}");
    // The parent's metadata is written once: the end of the run records the same kinds and
    // namespaces, which the first write already holds (it used to be sent twice).
    let parent_writes = requests.iter().filter(|r| r.method == Method::PATCH && r.path == applyset_path("app"));
    assert_eq!(parent_writes.count(), 1, "{requests:?}");
    let conditions = requests[ready].body.as_ref().expect("a body")["status"]["conditions"].clone();
    let said = conditions.as_array().into_iter().flatten().find(|c| c["type"] == "Ready").map(|c| c["status"].clone());
    assert_eq!(said, Some("True".into()), "{conditions}");
    // Fetched: the revision applied is the repository's head.
    let status = f.status("app");
    assert!(status.last_applied_revision.as_deref().is_some_and(|r| r.ends_with(&head)), "{status:?}");
    let (ready, reason, _) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("True", "Succeeded"));
    // Recorded with the uids the server gave.
    let members =
        status.inventory.as_ref().and_then(crate::operator::members::codec::members_in_status).expect("members");
    let uid_of = |name: &str| f.configmap(name).expect(name)["metadata"]["uid"].as_str().map(str::to_owned);
    let recorded: Vec<(String, Option<String>)> =
        members.iter().map(|m| (m.name.clone(), Some(m.uid.clone()))).collect();
    assert_eq!(recorded, [("a".to_owned(), uid_of("a")), ("b".to_owned(), uid_of("b"))]);
    // Both objects carry the set's label and the last-applied annotation.
    let a = f.configmap("a").expect("a");
    assert!(a["metadata"]["labels"]["applyset.kubernetes.io/part-of"].is_string(), "{a}");
    assert!(a["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].is_string(), "{a}");
    assert!(f.event("Applied").contains("created: configmap/a, configmap/b"), "{:?}", f.events());
    assert_eq!(f.metric("applyset_reconcile_total{result=\"success\"}"), 1.0);
}

/// The status writes of a fresh ApplySet's run whose progress is said after `after`, with
/// its ConfigMap's create answered after `create_takes`: their Ready condition, in order.
async fn ready_written(after: Duration, create_takes: Duration) -> Vec<String> {
    let f = Fixture::with_settings(Settings { progress_report_after: after, ..settings() });
    f.repo.write("a.yaml", &configmap("a", "1")).commit("one");
    f.applyset("app", json!({}));
    f.fake.delay(Method::POST, &format!("/api/v1/namespaces/{NS}/configmaps"), create_takes);
    f.reconcile("app").await.expect("the run");
    let status_path = format!("{}/status", applyset_path("app"));
    let writes = f.fake.writes().into_iter().filter(|r| r.path == status_path);
    writes
        .map(|w| {
            let conditions = w.body.expect("a body")["status"]["conditions"].clone();
            let ready = conditions.as_array().into_iter().flatten().find(|c| c["type"] == "Ready").cloned();
            ready
                .map(|c| format!("{}/{}", c["status"].as_str().unwrap_or(""), c["reason"].as_str().unwrap_or("")))
                .unwrap_or_default()
        })
        .collect()
}

#[tokio::test]
async fn reconcile_short_run_of_a_new_generation_writes_its_status_once() {
    let written = ready_written(Duration::from_secs(3600), Duration::ZERO).await;
    assert_eq!(written, ["True/Succeeded"]);
}

#[tokio::test]
async fn reconcile_run_still_going_after_the_setting_says_reconciling_then_ready() {
    // The create takes ten times the setting: the progress is said while the run waits for it.
    let written = ready_written(Duration::from_millis(50), Duration::from_millis(500)).await;
    assert_eq!(written, ["Unknown/Progressing", "True/Succeeded"]);
}

#[tokio::test]
async fn reconcile_second_run_with_nothing_changed_writes_no_status_and_patches_nothing() {
    let f = Fixture::new();
    f.repo.write("a.yaml", &configmap("a", "1")).write("b.yaml", &configmap("b", "2")).commit("two");
    f.applyset("app", json!({}));
    f.reconcile("app").await.expect("the first run");
    let status_before = f.status("app");
    let events_before = f.events().len();
    f.fake.clear_requests();

    f.run_now("app").await.expect("the second run");

    let requests = f.fake.requests();
    // It did run: it read the objects again.
    assert!(requests.iter().any(|r| r.path == format!("/api/v1/namespaces/{NS}/configmaps")), "{requests:?}");
    let writes = f.fake.writes();
    assert!(writes.is_empty(), "a steady run wrote: {writes:?}");
    assert_eq!(f.status("app"), status_before);
    assert_eq!(f.events().len(), events_before, "{:?}", f.events());
    assert_eq!(f.metric("applyset_reconcile_total{result=\"success\"}"), 2.0);
}

#[tokio::test]
async fn reconcile_commit_that_leaves_its_path_alone_records_the_revision_and_applies_nothing() {
    let f = Fixture::new();
    f.repo.write("app/a.yaml", &configmap("a", "1")).write("other/b.yaml", &configmap("b", "1")).commit("apps");
    f.applyset("app", json!({ "source": { "path": "app" } }));
    f.reconcile("app").await.expect("the first run");
    let first = f.status("app");
    let second = f.repo.write("other/b.yaml", &configmap("b", "2")).commit("another app");
    f.fake.clear_requests();

    f.run_requested("app").await.expect("the run");

    let status = f.status("app");
    assert!(status.last_applied_revision.as_deref().is_some_and(|r| r.ends_with(&second)), "{status:?}");
    assert_eq!(status.last_applied_inputs, first.last_applied_inputs, "the same inputs");
    let (ready, _, message) = f.ready("app");
    assert_eq!(ready, "True");
    assert!(message.contains("nothing this ApplySet reads changed since"), "{message}");
    let on_objects: Vec<_> = f.fake.requests().into_iter().filter(|r| r.path.contains("/configmaps")).collect();
    assert!(on_objects.is_empty(), "nothing read or applied: {on_objects:?}");
    assert_eq!(f.metric("applyset_reconcile_total{result=\"inputs_unchanged\"}"), 1.0);

    // A commit to its own path applies as always.
    let third = f.repo.write("app/a.yaml", &configmap("a", "2")).commit("this app");
    f.run_requested("app").await.expect("the run");
    assert_eq!(f.configmap("a").expect("a")["data"]["value"], "2");
    assert!(f.status("app").last_applied_revision.is_some_and(|r| r.ends_with(&third)));
}

#[tokio::test]
async fn reconcile_suspended_fetches_nothing_and_says_suspended() {
    let f = Fixture::new();
    f.repo.write("a.yaml", &configmap("a", "1")).commit("one");
    f.applyset("app", json!({ "suspend": true }));

    f.reconcile("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("Unknown", "Suspended"), "{message}");
    assert!(!f.fetched_anything());
    let writes = f.fake.writes();
    assert_eq!(writes.len(), 1, "only the status: {writes:?}");
    assert!(writes[0].path.ends_with("/status"));
    assert!(f.configmap("a").is_none());
    assert_eq!(f.metric("applyset_reconcile_total{result=\"suspended\"}"), 1.0);
}

#[tokio::test]
async fn reconcile_interval_below_the_minimum_is_invalid_spec_stalled_and_fetches_nothing() {
    let mut settings = settings();
    settings.min_interval = std::time::Duration::from_secs(10);
    let f = Fixture::with_settings(settings);
    f.repo.write("a.yaml", &configmap("a", "1")).commit("one");
    f.applyset("app", json!({ "interval": "1s" }));

    f.reconcile("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("False", "InvalidSpec"));
    assert!(message.contains("spec.interval") && message.contains("--min-interval"), "{message}");
    let stalled = f.condition("app", STALLED).expect("Stalled");
    assert_eq!((stalled.status.as_str(), stalled.reason.as_str()), ("True", "InvalidSpec"));
    assert!(!f.fetched_anything());
    assert!(f.configmap("a").is_none());
    assert!(f.event("InvalidSpec").contains("spec.interval"));
}

#[tokio::test]
async fn reconcile_bad_drift_ignore_rule_is_invalid_spec_and_applies_nothing() {
    let f = Fixture::new();
    f.repo.write("a.yaml", &configmap("a", "1")).commit("one");
    f.applyset("app", json!({ "drift": { "ignore": [{ "paths": ["data/value"] }] } }));

    f.reconcile("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("False", "InvalidSpec"));
    assert!(message.contains("spec.drift.ignore[0].paths"), "{message}");
    assert_eq!(f.condition("app", STALLED).map(|c| c.status), Some("True".into()));
    assert!(f.configmap("a").is_none());
    let object_writes: Vec<_> = f.fake.writes().into_iter().filter(|r| r.path.contains("/configmaps")).collect();
    assert!(object_writes.is_empty(), "{object_writes:?}");
}

/// A CRD gone right after its apply (deleted by hand while a drift run re-applied it) does not
/// hold the run until its timeout: it will never be Established, so its wait ends at once.
#[tokio::test]
async fn a_crd_gone_after_its_apply_does_not_hold_the_run() {
    let f = Fixture::new();
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.test\nspec:\n  group: example.test\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget}\n  versions:\n  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}\n";
    f.repo.write("crd.yaml", crd).write("a.yaml", &configmap("a", "1")).commit("a CRD and a ConfigMap");
    f.applyset("app", json!({ "timeout": "10m" }));
    // Its create lands; every read of it afterwards finds it gone.
    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.test";
    f.fake.fail(Method::GET, path, 404, "NotFound");

    // A bound far below the run's timeout: without it, a regression would wait ten minutes.
    let run = tokio::time::timeout(Duration::from_secs(60), f.reconcile("app")).await;
    run.expect("the run ended without waiting for the CRD").expect("the run");
    let created = f
        .fake
        .requests()
        .iter()
        .any(|r| r.method == Method::POST && r.path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    assert!(created, "{:?}", f.fake.requests());
    let (ready, reason, _) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("True", "Succeeded"));
}
