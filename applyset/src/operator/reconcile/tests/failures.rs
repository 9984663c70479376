//! Runs that fail at a step: the condition names the step and what failed, and nothing after
//! it happens (above all, nothing is pruned).

use http::Method;
use serde_json::json;

use super::fixture::{Fixture, configmap, configmap_path};
use crate::operator::context::Settings;

/// Two objects applied and recorded, so that a later failed run has something it must not prune.
async fn applied_two(f: &Fixture) {
    f.repo.write("a.yaml", &configmap("a", "1")).write("b.yaml", &configmap("b", "2")).commit("two");
    f.applyset("app", json!({}));
    f.reconcile("app").await.expect("the first run");
    assert_eq!(f.ready("app").0, "True");
}

fn deletes(f: &Fixture) -> Vec<super::fake::Recorded> {
    f.fake.requests().into_iter().filter(|r| r.method == Method::DELETE).collect()
}

#[tokio::test]
async fn reconcile_fetch_failure_is_fetch_failed_and_applies_and_prunes_nothing() {
    let f = Fixture::new();
    applied_two(&f).await;
    let missing = f.root().join("no-such-repository");
    f.edit_spec("app", json!({ "source": { "url": format!("file://{}", missing.display()) } }));
    f.fake.clear_requests();

    f.reconcile("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("False", "FetchFailed"), "{message}");
    // Nothing after the fetch: no discovery, no object touched.
    let requests = f.fake.requests();
    assert!(!requests.iter().any(|r| r.path == "/api" || r.path.contains("/configmaps")), "{requests:?}");
    assert!(deletes(&f).is_empty());
    assert!(f.configmap("a").is_some() && f.configmap("b").is_some());
    assert!(f.event("FetchFailed").contains("no-such-repository"), "{:?}", f.events());
    assert_eq!(f.metric("applyset_reconcile_total{result=\"fetch_failed\"}"), 1.0);
}

#[tokio::test]
async fn reconcile_unparsable_manifest_is_load_failed_and_applies_and_prunes_nothing() {
    let f = Fixture::new();
    applied_two(&f).await;
    f.repo.write("a.yaml", &configmap("a", "changed")).write("broken.yaml", "kind: [unclosed\n").remove("b.yaml");
    f.repo.commit("broken");
    f.fake.clear_requests();

    f.run_requested("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("False", "LoadFailed"), "{message}");
    assert!(message.contains("broken.yaml"), "{message}");
    let object_writes: Vec<_> = f.fake.writes().into_iter().filter(|r| r.path.contains("/configmaps")).collect();
    assert!(object_writes.is_empty(), "{object_writes:?}");
    assert_eq!(f.configmap("a").expect("a")["data"]["value"], "1");
    assert!(f.configmap("b").is_some(), "b left git but nothing is pruned");
}

#[tokio::test]
async fn reconcile_object_refused_with_422_is_apply_failed_naming_it_and_prunes_nothing() {
    let f = Fixture::new();
    f.applied_three(json!({})).await;
    f.repo
        .write("a.yaml", &configmap("a", "1b"))
        .write("b.yaml", &configmap("b", "2b"))
        .remove("c.yaml")
        .commit("b, c");
    f.fake.fail(Method::PATCH, &configmap_path("b"), 422, "Invalid");
    f.fake.clear_requests();

    f.run_requested("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("False", "ApplyFailed"), "{message}");
    assert!(message.contains("1 object(s) failed to apply") && message.contains("nothing was pruned"), "{message}");
    assert!(message.contains("b.yaml") && message.contains("The ConfigMap \"b\" is invalid: data:"), "{message}");
    let inventory = f.status("app").inventory.expect("an inventory");
    let b = inventory.objects.iter().find(|o| o.name == "b").expect("b in the inventory");
    assert_eq!(b.state, "Failed", "{b:?}");
    // The PATCH of b was sent and refused; a was applied; c, which left git, is still there.
    let mut patched: Vec<String> = f
        .fake
        .requests()
        .iter()
        .filter(|r| r.method == Method::PATCH && r.path.contains("/configmaps/"))
        .map(|r| r.path.clone())
        .collect();
    // Applied concurrently: in no particular order.
    patched.sort();
    assert_eq!(patched, [configmap_path("a"), configmap_path("b")], "{patched:?}");
    assert_eq!(f.configmap("a").expect("a")["data"]["value"], "1b");
    assert_eq!(f.configmap("b").expect("b")["data"]["value"], "2");
    assert!(deletes(&f).is_empty(), "{:?}", deletes(&f));
    assert!(f.configmap("c").is_some());
    // c stays recorded, so that a later run can still prune it.
    let members = f
        .status("app")
        .inventory
        .as_ref()
        .and_then(crate::operator::members::codec::members_in_status)
        .expect("members");
    assert!(members.iter().any(|m| m.name == "c"), "{members:?}");
    assert!(f.event("ApplyFailed").contains("b"));
    assert_eq!(f.metric("applyset_reconcile_total{result=\"apply_failed\"}"), 1.0);
}

#[tokio::test]
async fn reconcile_record_over_the_size_limit_is_inventory_too_large_and_creates_nothing() {
    // A limit of 8 KiB (the real one is 64 MiB, some 600,000 objects) and 100 objects of about
    // 95 bytes each in the record.
    let limit = 8 * 1024;
    let f = Fixture::with_settings(Settings { record_limit: limit, ..super::fixture::settings() });
    let count = 100;
    let text: String = (0..count).map(|i| format!("---\n{}", configmap(&format!("cm-{i:05}"), "1"))).collect();
    f.repo.write("many.yaml", &text).commit("many");
    f.applyset("app", json!({}));

    f.reconcile("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("False", "InventoryTooLarge"), "{message}");
    assert!(message.contains(&format!("{count} object(s)")) && message.contains("nothing was applied"), "{message}");
    assert!(message.contains(&format!("over the limit of {limit} bytes")), "{message}");
    assert_eq!(f.condition("app", crate::operator::status::STALLED).map(|c| c.status), Some("True".into()));
    let requests = f.fake.requests();
    assert!(!requests.iter().any(|r| r.path.contains("/configmaps")), "{requests:?}");
    assert!(f.status("app").inventory.is_none());
}

#[tokio::test]
async fn reconcile_unusable_last_applied_annotation_is_treated_as_absent_with_an_event() {
    let f = Fixture::new();
    f.repo.write("a.yaml", &configmap("a", "1")).commit("one");
    f.applyset("app", json!({}));
    f.reconcile("app").await.expect("the first run");
    let annotation = "kubectl.kubernetes.io/last-applied-configuration";
    let mut a = f.configmap("a").expect("a");
    a["metadata"]["annotations"][annotation] = "[\"not\", \"an object\"]".into();
    f.fake.put(a);
    f.fake.clear_requests();

    f.run_now("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("True", "Succeeded"), "{message}");
    let note = f.event("LastAppliedDiscarded");
    assert!(note.contains("not a JSON object") && note.contains('a'), "{note}");
    // Written anew: the annotation is the manifest again.
    let written = f.configmap("a").expect("a")["metadata"]["annotations"][annotation].as_str().map(str::to_owned);
    let recorded: serde_json::Value = serde_json::from_str(&written.expect("an annotation")).expect("JSON");
    assert_eq!(recorded["data"]["value"], "1");
    assert_eq!(recorded["metadata"]["name"], "a");
    let patches = f.fake.writes().into_iter().filter(|r| r.path == configmap_path("a")).count();
    assert_eq!(patches, 1);
}

/// One run as a value, without the entry point: the step's failure keeps its stage and its
/// module's typed error, and the run itself writes nothing (publishing is the entry's job).
#[tokio::test]
async fn reconcile_run_failure_keeps_the_stage_and_the_typed_cause() {
    use crate::operator::reconcile::Stage;
    use crate::operator::reconcile::{Cause, Reconciliation};
    use crate::operator::schedule::Intervals;

    let f = Fixture::new();
    let missing = f.root().join("no-such-repository");
    let applyset = f.applyset("app", json!({ "source": { "url": format!("file://{}", missing.display()) } }));
    let previous = crate::operator::api::ApplySetStatus::default();
    let intervals = Intervals::of(&applyset, std::time::Duration::ZERO).expect("valid intervals");

    let mut run = Reconciliation::new(&applyset, &f.ctx, &previous, previous.clone(), intervals);
    let failure = run.run().await.expect_err("there is no repository");

    assert_eq!(failure.stage, Stage::Fetch);
    assert!(matches!(failure.cause.as_deref(), Some(Cause::Source(_))), "{failure:?}");
    assert!(!failure.causes().is_empty());
    assert_eq!(run.into_status(), previous, "nothing fetched, nothing recorded");
    assert!(f.fake.requests().is_empty(), "{:?}", f.fake.requests());
}
