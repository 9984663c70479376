//! Prune: only recorded members that left git are deleted, only after every object applied,
//! and never an object marked to keep, a stranger that merely carries the label, nor more than
//! the prune guard allows.

use http::Method;
use serde_json::json;

use super::fake::Recorded;
use super::fixture::{Fixture, NS, configmap, configmap_path};
use crate::keys::{APPROVE_PRUNE, PARENT_ID_LABEL, PART_OF_LABEL};

fn deletes(f: &Fixture) -> Vec<String> {
    let requests = f.fake.requests();
    requests.iter().filter(|r| r.method == Method::DELETE).map(|r: &Recorded| r.path.clone()).collect()
}

#[tokio::test]
async fn reconcile_prune_deletes_only_recorded_members_that_left_git() {
    let f = Fixture::new();
    f.applied_three(json!({})).await;
    // Someone labels an object of theirs as a member: it was never applied by the set.
    let id = f.current("app").metadata.labels.clone().unwrap_or_default()[PARENT_ID_LABEL].clone();
    f.fake.put(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "stranger", "namespace": NS, "labels": { PART_OF_LABEL: id } },
    }));
    f.repo.remove("c.yaml").commit("c leaves");
    f.fake.clear_requests();

    f.run_requested("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("True", "Succeeded"), "{message}");
    assert_eq!(deletes(&f), [configmap_path("c")]);
    // The candidates were listed by the set's label.
    let listed = f.fake.requests().into_iter().find(|r| r.query("labelSelector").is_some()).expect("a prune LIST");
    assert_eq!(listed.query("labelSelector"), Some(format!("{PART_OF_LABEL}={id}").as_str()));
    assert!(f.configmap("c").is_none());
    assert!(f.configmap("a").is_some() && f.configmap("b").is_some() && f.configmap("stranger").is_some());
    let status = f.status("app");
    let skipped: Vec<(&str, &str)> = status.prune_skipped.iter().map(|s| (s.name.as_str(), s.state.as_str())).collect();
    assert_eq!(skipped, [("stranger", "NotInInventory")]);
    let members: Vec<String> = status
        .inventory
        .as_ref()
        .and_then(crate::operator::members::codec::members_in_status)
        .unwrap_or_default()
        .into_iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(members, ["a", "b"]);
    assert!(f.event("Pruned").contains("configmap/c"), "{:?}", f.events());
    assert!(f.event("PruneSkipped").contains("stranger"), "{:?}", f.events());
    assert_eq!(f.metric("applyset_pruned_objects_total"), 1.0);
}

#[tokio::test]
async fn reconcile_prune_orphans_an_object_marked_keep() {
    let f = Fixture::new();
    let kept =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  annotations:\n    helm.sh/resource-policy: keep\n";
    f.repo.write("a.yaml", &configmap("a", "1")).write("b.yaml", kept).commit("two");
    f.applyset("app", json!({}));
    f.reconcile("app").await.expect("the first run");
    f.repo.remove("b.yaml").commit("b leaves");
    f.fake.clear_requests();

    f.run_requested("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("True", "Succeeded"), "{message}");
    assert!(deletes(&f).is_empty(), "{:?}", deletes(&f));
    assert!(f.configmap("b").is_some());
    let skipped = f.status("app").prune_skipped;
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!((skipped[0].name.as_str(), skipped[0].state.as_str()), ("b", "Orphaned"));
    assert!(skipped[0].message.as_deref().is_some_and(|m| m.contains("helm.sh/resource-policy: keep")), "{skipped:?}");
    assert!(f.event("Orphaned").contains("ConfigMap b"), "{:?}", f.events());
    // Kept on purpose: not a warning.
    assert!(!f.events().iter().any(|(_, reason, _)| reason == "PruneSkipped"), "{:?}", f.events());
}

#[tokio::test]
async fn reconcile_prune_guard_holds_a_mass_deletion() {
    let f = Fixture::new();
    f.applied_three(json!({ "pruneGuard": { "maxObjects": 1 } })).await;
    let head = f.repo.remove("b.yaml").remove("c.yaml").commit("b and c leave");
    f.fake.clear_requests();

    f.run_requested("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("False", "PruneGuarded"), "{message}");
    assert!(message.contains("configmap/b") && message.contains("configmap/c"), "{message}");
    assert!(message.contains(APPROVE_PRUNE), "{message}");
    assert!(deletes(&f).is_empty(), "{:?}", deletes(&f));
    assert!(f.configmap("b").is_some() && f.configmap("c").is_some());
    // Both stay recorded, for the approved run to prune.
    let members = f
        .status("app")
        .inventory
        .as_ref()
        .and_then(crate::operator::members::codec::members_in_status)
        .unwrap_or_default();
    assert_eq!(members.len(), 3, "{members:?}");
    assert_eq!(f.metric("applyset_reconcile_total{result=\"prune_guarded\"}"), 1.0);

    // Approving this revision lets the same prune through.
    let mut applyset = f.fake.object(&super::fixture::applyset_path("app")).expect("app");
    let revision = f.status("app").last_attempted_revision.expect("the attempted revision");
    assert!(revision.ends_with(&head));
    applyset["metadata"]["annotations"][APPROVE_PRUNE] = revision.into();
    f.fake.put(applyset);
    f.run_now("app").await.expect("the approved run");
    assert_eq!(f.ready("app").0, "True", "{:?}", f.ready("app"));
    assert_eq!(deletes(&f), [configmap_path("b"), configmap_path("c")]);
}
