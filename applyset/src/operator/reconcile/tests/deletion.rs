//! Deleting an ApplySet (its finalizer): its recorded objects are deleted, or orphaned, and
//! the finalizer is released so that the apiserver can remove it.

use http::Method;
use serde_json::json;

use super::fixture::{Fixture, applyset_path, configmap, configmap_path};

/// `a` and `b` applied by ApplySet `app` (with `spec`), which is then deleted (held by the
/// finalizer).
async fn deleted_after_applying(f: &Fixture, spec: serde_json::Value) {
    f.repo.write("a.yaml", &configmap("a", "1")).write("b.yaml", &configmap("b", "2")).commit("two");
    f.applyset("app", spec);
    f.reconcile("app").await.expect("the first run");
    assert_eq!(f.ready("app").0, "True");
    let mut applyset = f.fake.object(&applyset_path("app")).expect("app");
    applyset["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z".into();
    f.fake.put(applyset);
    f.fake.clear_requests();
}

fn deletes(f: &Fixture) -> Vec<String> {
    f.fake.requests().into_iter().filter(|r| r.method == Method::DELETE).map(|r| r.path).collect()
}

#[tokio::test]
async fn reconcile_deleted_applyset_deletes_its_objects_and_releases_the_finalizer() {
    let f = Fixture::new();
    deleted_after_applying(&f, json!({})).await;

    f.reconcile("app").await.expect("the cleanup");

    assert_eq!(deletes(&f), [configmap_path("a"), configmap_path("b")]);
    assert!(f.configmap("a").is_none() && f.configmap("b").is_none());
    // The finalizer's removal (a JSON patch) came after the deletes, and the ApplySet is gone.
    let requests = f.fake.requests();
    let release = requests.iter().position(|r| r.content_type.as_deref() == Some("application/json-patch+json"));
    let last_delete = requests.iter().rposition(|r| r.method == Method::DELETE);
    assert!(release.is_some() && last_delete < release, "{requests:?}");
    assert!(f.fake.object(&applyset_path("app")).is_none());
    assert!(f.event("Pruned").contains("deleted with the ApplySet: configmap/a, configmap/b"), "{:?}", f.events());
}

#[tokio::test]
async fn reconcile_deleted_applyset_with_orphan_policy_keeps_its_objects() {
    let f = Fixture::new();
    deleted_after_applying(&f, json!({ "deletionPolicy": "Orphan" })).await;

    f.reconcile("app").await.expect("the cleanup");

    assert!(deletes(&f).is_empty(), "{:?}", deletes(&f));
    assert!(f.configmap("a").is_some() && f.configmap("b").is_some());
    assert!(f.fake.object(&applyset_path("app")).is_none());
}
