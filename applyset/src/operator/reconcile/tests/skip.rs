//! The only-what-changed skip: a commit that changes nothing the ApplySet reads is recorded
//! without a run only at the generation a full run handled. One case per spec field: changed
//! alone, together with an unrelated commit, it is never taken for "nothing changed".

use serde_json::{Value, json};

use super::fixture::{Fixture, NS, configmap};

const SKIPPED: &str = "nothing this ApplySet reads changed since";

/// Every field of `ApplySetSpec` with a change to it alone, and whether the run that follows
/// gets as far as reading the objects (the others stop at a step of their own, which is not a
/// skip either: a missing Secret, a dependency, a suspension).
fn changes() -> Vec<(&'static str, Value, bool)> {
    vec![
        ("source", json!({ "source": { "ref": { "branch": "main" } } }), true),
        ("interval", json!({ "interval": "7m" }), true),
        ("retryInterval", json!({ "retryInterval": "1m" }), true),
        ("timeout", json!({ "timeout": "3m" }), true),
        ("suspend", json!({ "suspend": true }), false),
        ("prune", json!({ "prune": false }), true),
        ("allowEmpty", json!({ "allowEmpty": true }), true),
        ("force", json!({ "force": true }), true),
        ("serviceAccountName", json!({ "serviceAccountName": "deployer" }), true),
        ("kubeConfig", json!({ "kubeConfig": { "secretRef": { "name": "elsewhere" } } }), false),
        ("deletionPolicy", json!({ "deletionPolicy": "Orphan" }), true),
        ("drift", json!({ "drift": { "mode": "Report" } }), true),
        ("pruneNonEmptyNamespaces", json!({ "pruneNonEmptyNamespaces": true }), true),
        ("pruneGuard", json!({ "pruneGuard": { "maxObjects": 5 } }), true),
        ("prunePropagation", json!({ "prunePropagation": "Foreground" }), true),
        ("secrets", json!({ "secrets": "Hashed" }), false),
        ("postBuild", json!({ "postBuild": { "substitute": { "A": "1" } } }), true),
        ("webhook", json!({ "webhook": { "secretRef": { "name": "hook" } } }), true),
        ("decryption", json!({ "decryption": { "provider": "sops", "secretRef": { "name": "age" } } }), false),
        ("wait", json!({ "wait": true }), true),
        ("healthChecks", json!({ "healthChecks": [{ "apiVersion": "v1", "kind": "ConfigMap", "name": "a" }] }), true),
        ("healthTimeout", json!({ "healthTimeout": "30s" }), true),
        (
            "healthCheckExprs",
            json!({ "healthCheckExprs": [{ "apiVersion": "example.com/v1", "kind": "Thing", "current": "true" }] }),
            true,
        ),
        ("dependsOn", json!({ "dependsOn": [{ "name": "base" }] }), false),
    ]
}

/// A repository of two apps, and the ApplySet `app` of the first, applied by a first run.
async fn two_apps() -> Fixture {
    let f = Fixture::new();
    f.repo.write("app/a.yaml", &configmap("a", "1")).write("other/b.yaml", &configmap("b", "1")).commit("apps");
    f.applyset("app", json!({ "source": { "path": "app" } }));
    f.reconcile("app").await.expect("the first run");
    f
}

#[test]
fn every_spec_field_has_a_skip_case() {
    let crd = serde_json::to_value(crate::operator::api::crd()).expect("the CRD");
    let properties = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    let mut fields: Vec<&str> = properties.as_object().expect("spec properties").keys().map(String::as_str).collect();
    let mut cased: Vec<&str> = changes().iter().map(|(field, _, _)| *field).collect();
    fields.sort_unstable();
    cased.sort_unstable();
    assert_eq!(cased, fields, "a spec field without a case in changes()");
}

#[tokio::test]
async fn reconcile_spec_change_with_an_unrelated_commit_is_never_skipped() {
    for (field, change, reads_objects) in changes() {
        let f = two_apps().await;
        assert_eq!(f.ready("app").0, "True", "{field}: the first run");
        assert_eq!(f.status("app").last_applied_generation, Some(1), "{field}");

        f.repo.write("other/b.yaml", &configmap("b", "2")).commit("another app");
        f.edit_spec("app", change);
        f.fake.clear_requests();
        let _ = f.run_requested("app").await;

        let (_, _, message) = f.ready("app");
        assert!(!message.contains(SKIPPED), "{field}: a spec change taken for nothing changed: {message}");
        assert_eq!(f.metric("applyset_reconcile_total{result=\"inputs_unchanged\"}"), 0.0, "{field}");
        if reads_objects {
            let configmaps = format!("/api/v1/namespaces/{NS}/configmaps");
            let read = f.fake.requests().iter().any(|r| r.path.starts_with(&configmaps));
            assert!(read, "{field}: the run did not reach the objects: {message}");
            assert_eq!(f.status("app").last_applied_generation, Some(2), "{field}: {message}");
        }
    }
}

#[tokio::test]
async fn reconcile_unrelated_commit_at_the_generation_a_full_run_handled_is_skipped() {
    let f = two_apps().await;
    f.edit_spec("app", json!({ "serviceAccountName": "deployer" }));
    f.run_requested("app").await.expect("the run at the new generation");
    assert_eq!(f.status("app").last_applied_generation, Some(2));

    f.repo.write("other/b.yaml", &configmap("b", "2")).commit("another app");
    f.run_requested("app").await.expect("the run after an unrelated commit");

    let (ready, _, message) = f.ready("app");
    assert_eq!(ready, "True");
    assert!(message.contains(SKIPPED), "{message}");
    assert_eq!(f.metric("applyset_reconcile_total{result=\"inputs_unchanged\"}"), 1.0);
    assert_eq!(f.status("app").last_applied_generation, Some(2), "a skip keeps the generation of the full run");
}

#[tokio::test]
async fn reconcile_status_without_a_full_run_generation_runs_in_full() {
    // A status written before `lastAppliedGeneration` existed: the first run after the upgrade
    // is a full one.
    let f = two_apps().await;
    let path = super::fixture::applyset_path("app");
    let mut object = f.fake.object(&path).expect("the ApplySet");
    object["status"].as_object_mut().expect("a status").remove("lastAppliedGeneration");
    f.fake.put(object);

    f.repo.write("other/b.yaml", &configmap("b", "2")).commit("another app");
    f.run_requested("app").await.expect("the run");

    assert!(!f.ready("app").2.contains(SKIPPED));
    assert_eq!(f.status("app").last_applied_generation, Some(1));
}
