//! A record of members too large for the status: kept in `ApplySetRecord` parts, read back by
//! a run that needs it (and not by one that changes nothing), replaced when the members change,
//! deleted with the ApplySet; a part lost by hand loses the record, never an object.

use http::Method;
use serde_json::json;

use super::fixture::{Fixture, NS, applyset_path, configmap, configmap_path};
use crate::operator::api::MemberRecordRef;
use crate::operator::members::RECORD_OF_LABEL;

/// ConfigMaps `cm-00000` … in one file: 400 make a record of about 30 KiB, past what the
/// status keeps.
fn write_config_maps(f: &Fixture, count: usize) {
    let text: String = (0..count).map(|i| format!("---\n{}", configmap(&format!("cm-{i:05}"), "1"))).collect();
    f.repo.write("many.yaml", &text);
}

fn part_path(name: &str) -> String {
    format!("/apis/applyset.dev/v1alpha1/namespaces/{NS}/applysetrecords/{name}")
}

fn record_of(f: &Fixture) -> MemberRecordRef {
    let inventory = f.status("app").inventory.expect("an inventory");
    assert_eq!(inventory.members, None, "not in the status");
    inventory.record.expect("a record in parts")
}

fn record_requests(f: &Fixture) -> Vec<String> {
    let requests = f.fake.requests();
    requests
        .iter()
        .filter(|r| r.path.contains("/applysetrecords"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

async fn applied_400(f: &Fixture) -> MemberRecordRef {
    write_config_maps(f, 400);
    f.repo.commit("400");
    f.applyset("app", json!({}));
    f.reconcile("app").await.expect("the first run");
    assert_eq!(f.ready("app").0, "True", "{:?}", f.ready("app"));
    record_of(f)
}

#[tokio::test]
async fn reconcile_a_large_record_lives_in_parts_and_the_status_stays_small() {
    let f = Fixture::new();
    let record = applied_400(&f).await;
    assert_eq!((record.count, record.parts.len()), (400, 1), "{record:?}");
    let status_bytes = serde_json::to_vec(&f.status("app")).unwrap().len();
    assert!(status_bytes < 16 * 1024, "the status takes {status_bytes} bytes");
    let part = f.fake.object(&part_path(&record.parts[0])).expect("the part");
    let uid = f.current("app").metadata.uid.clone().expect("a uid");
    assert_eq!(part["metadata"]["labels"][RECORD_OF_LABEL], uid.as_str());
    assert_eq!(
        (part["spec"]["applySet"].as_str(), part["spec"]["digest"].as_str()),
        (Some("app"), Some(&*record.digest))
    );

    // A run that changes nothing reads and writes no part.
    f.fake.clear_requests();
    f.run_now("app").await.expect("a steady run");
    assert_eq!(record_requests(&f), Vec::<String>::new());
    assert_eq!(record_of(&f), record);

    // 100 leave git, after a restart (nothing remembered): the parts are read back, the 100
    // pruned, the new record written and the old part deleted.
    write_config_maps(&f, 300);
    f.repo.commit("300");
    f.ctx.records.forget(&f.current("app").key());
    f.fake.clear_requests();
    f.run_requested("app").await.expect("the run");
    assert_eq!(f.ready("app").0, "True", "{:?}", f.ready("app"));
    assert!(
        f.configmap("cm-00299").is_some() && f.configmap("cm-00300").is_none() && f.configmap("cm-00399").is_none()
    );
    let deleted =
        f.fake.requests().iter().filter(|r| r.method == Method::DELETE && r.path.contains("/configmaps/")).count();
    assert_eq!(deleted, 100);
    let after = record_of(&f);
    assert_eq!(after.count, 300);
    assert_ne!(after.digest, record.digest);
    let old = part_path(&record.parts[0]);
    assert!(record_requests(&f).contains(&format!("GET {old}")), "{:?}", record_requests(&f));
    assert!(f.fake.object(&old).is_none(), "the old part is deleted");
    assert!(f.fake.object(&part_path(&after.parts[0])).is_some());

    // Deleting the ApplySet deletes its objects and its record.
    let mut applyset = f.fake.object(&applyset_path("app")).expect("app");
    applyset["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z".into();
    f.fake.put(applyset);
    f.reconcile("app").await.expect("the cleanup");
    assert!(f.configmap("cm-00000").is_none());
    assert!(f.fake.object(&part_path(&after.parts[0])).is_none(), "the record is deleted with the ApplySet");
}

#[tokio::test]
async fn reconcile_a_small_record_stays_in_the_status() {
    let f = Fixture::new();
    f.repo.write("a.yaml", &configmap("a", "1")).commit("one");
    f.applyset("app", json!({}));
    f.reconcile("app").await.expect("the run");
    let inventory = f.status("app").inventory.expect("an inventory");
    assert_eq!(inventory.members.map(|m| m.len()), Some(1));
    assert_eq!(inventory.record, None);
    assert_eq!(record_requests(&f), Vec::<String>::new());
}

#[tokio::test]
async fn reconcile_a_part_edited_by_hand_loses_the_record_not_objects() {
    let f = Fixture::new();
    let record = applied_400(&f).await;
    let mut part = f.fake.object(&part_path(&record.parts[0])).expect("the part");
    part["spec"]["data"] = "H4sIAAAAAAAAA4uOBQApu0wNAgAAAA==".into(); // gzip of "[]"
    f.fake.put(part);
    f.ctx.records.forget(&f.current("app").key());

    write_config_maps(&f, 300);
    f.repo.commit("300");
    f.fake.clear_requests();
    f.run_requested("app").await.expect("the run");

    let lost = f.event("MemberRecordLost");
    assert!(lost.contains("SHA-256") && lost.contains("no longer pruned"), "{lost}");
    let deletes: Vec<String> =
        f.fake.requests().into_iter().filter(|r| r.method == Method::DELETE).map(|r| r.path).collect();
    assert!(!deletes.iter().any(|p| p.contains("/configmaps/")), "{deletes:?}");
    assert!(f.configmap("cm-00399").is_some());
    let status = f.status("app");
    assert_eq!((status.prune_skipped.len(), status.prune_skipped_omitted), (50, 50), "at most 50 listed");
    assert!(status.prune_skipped.iter().all(|s| s.state == "NotInInventory"));
    // The new record holds what this run applied; the edited part is gone.
    assert_eq!(record_of(&f).count, 300);
    assert!(f.fake.object(&part_path(&record.parts[0])).is_none());
    assert!(f.fake.object(&configmap_path("cm-00000")).is_some());
}
