//! Drift: a change someone made to a live object is reverted (Correct) or only reported, with
//! a server dry run (Report), by the next run of the same revision.

use http::Method;
use serde_json::json;

use super::fixture::{Fixture, configmap, configmap_path};
use crate::operator::status::DRIFTED;

/// `a` applied by ApplySet `app` (with `spec`), then edited by hand.
async fn edited_by_hand(f: &Fixture, spec: serde_json::Value) {
    f.repo.write("a.yaml", &configmap("a", "1")).commit("one");
    f.applyset("app", spec);
    f.reconcile("app").await.expect("the first run");
    let mut a = f.configmap("a").expect("a");
    a["data"]["value"] = "edited".into();
    f.fake.put(a);
    f.fake.clear_requests();
}

#[tokio::test]
async fn reconcile_drift_on_a_live_object_is_corrected_and_reported() {
    let f = Fixture::new();
    edited_by_hand(&f, json!({})).await;

    f.run_now("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("True", "Succeeded"), "{message}");
    assert_eq!(f.configmap("a").expect("a")["data"]["value"], "1");
    let patches: Vec<_> = f.fake.writes().into_iter().filter(|r| r.path == configmap_path("a")).collect();
    assert_eq!(patches.len(), 1, "{patches:?}");
    assert_eq!(patches[0].content_type.as_deref(), Some("application/strategic-merge-patch+json"));
    assert_eq!(patches[0].body.as_ref().map(|b| b["data"].clone()), Some(json!({ "value": "1" })));
    assert_eq!(f.event("DriftCorrected"), "ConfigMap/a [data.value]");
    assert_eq!(f.metric("applyset_drift_corrected_objects_total"), 1.0);
}

#[tokio::test]
async fn reconcile_drift_in_report_mode_is_found_with_a_dry_run_and_left_in_place() {
    let f = Fixture::new();
    edited_by_hand(&f, json!({ "drift": { "mode": "Report" } })).await;

    f.run_now("app").await.expect("the run");

    assert_eq!(f.configmap("a").expect("a")["data"]["value"], "edited");
    let patches: Vec<_> =
        f.fake.requests().into_iter().filter(|r| r.method == Method::PATCH && r.path == configmap_path("a")).collect();
    assert!(!patches.is_empty() && patches.iter().all(|r| r.query("dryRun") == Some("All")), "{patches:?}");
    let drifted = f.condition("app", DRIFTED).expect("Drifted");
    assert_eq!((drifted.status.as_str(), drifted.reason.as_str()), ("True", "DriftDetected"), "{drifted:?}");
    let drift = f.status("app").drift.expect("a drift report");
    assert_eq!((drift.count, drift.objects[0].name.as_str()), (1, "a"), "{drift:?}");
    assert_eq!(f.event("DriftDetected"), "ConfigMap/a [data.value]");
    // Ready all the same: the source is applied, the drift is reported.
    assert_eq!(f.ready("app").0, "True");
}
