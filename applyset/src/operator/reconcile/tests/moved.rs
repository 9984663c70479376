//! A change of cluster: the record says where the members live; a run that applies elsewhere
//! starts a new record there and reports the old cluster's objects when it cannot prune them.

use serde_json::json;

use super::fixture::{Fixture, applyset_path, configmap};

#[tokio::test]
async fn reconcile_records_the_cluster_its_members_live_in() {
    let f = Fixture::new();
    f.repo.write("a.yaml", &configmap("a", "1")).commit("one");
    f.applyset("app", json!({}));
    f.reconcile("app").await.expect("the run");
    let cluster = f.status("app").inventory.and_then(|i| i.cluster).expect("the cluster recorded");
    assert_eq!(cluster.server, "https://fake.invalid");
    assert!(f.status("app").previous_cluster.is_none());
}

#[tokio::test]
async fn reconcile_objects_left_on_a_cluster_it_cannot_reach_are_reported_once() {
    let f = Fixture::new();
    f.repo.write("a.yaml", &configmap("a", "1")).write("b.yaml", &configmap("b", "1")).commit("two");
    f.applyset("app", json!({}));
    f.reconcile("app").await.expect("the first run");
    // The record says its two members live on a cluster this controller has no kubeconfig of
    // (re-pointed, then restarted).
    let path = applyset_path("app");
    let mut object = f.fake.object(&path).expect("the ApplySet");
    object["status"]["inventory"]["cluster"] = json!({ "server": "https://old.example:6443", "caDigest": "0011" });
    f.fake.put(object);

    f.run_requested("app").await.expect("the run");

    let status = f.status("app");
    assert_eq!(f.ready("app").0, "True", "the new cluster is applied to as always");
    let left = status.previous_cluster.expect("reported");
    assert_eq!((left.server.as_str(), left.objects), ("https://old.example:6443", 2));
    assert!(left.message.starts_with("left there:"), "{}", left.message);
    let note = f.event("ObjectsLeftOnPreviousCluster");
    assert!(note.contains("2 object(s)") && note.contains("https://old.example:6443"), "{note}");
    let recorded = status.inventory.expect("an inventory");
    assert_eq!(recorded.cluster.map(|c| c.server).as_deref(), Some("https://fake.invalid"));

    // Reported once: the next run says nothing new.
    let events = f.events().len();
    f.run_requested("app").await.expect("the next run");
    assert_eq!(f.events().len(), events, "{:?}", f.events());
    assert!(f.status("app").previous_cluster.is_some(), "still said");
}
