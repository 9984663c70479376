//! The record of members: compressed in the status while small; too large for the status, kept
//! in `ApplySetRecord` parts, read back by a run that needs it (and not by one that changes
//! nothing), replaced when the members change, deleted with the ApplySet. A record edited by
//! hand loses the record, never an object; the plain list an earlier version wrote is read.

use http::Method;
use serde_json::json;

use super::fixture::{Fixture, NS, applyset_path, configmap, configmap_path};
use crate::keys::RECORD_OF_LABEL;
use crate::operator::api::MemberRecordRef;

/// ConfigMaps `cm-00000` … in one file: 800 make a record of about 28 KiB compressed, past
/// what the status keeps (600 still are).
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

async fn applied_800(f: &Fixture) -> MemberRecordRef {
    write_config_maps(f, 800);
    f.repo.commit("800");
    f.applyset("app", json!({}));
    f.reconcile("app").await.expect("the first run");
    assert_eq!(f.ready("app").0, "True", "{:?}", f.ready("app"));
    record_of(f)
}

#[tokio::test]
async fn reconcile_a_large_record_lives_in_parts_and_the_status_stays_small() {
    let f = Fixture::new();
    let record = applied_800(&f).await;
    assert_eq!((record.count, record.parts.len()), (800, 1), "{record:?}");
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

    // 200 leave git, after a restart (nothing remembered): the parts are read back, the 200
    // pruned, the new record written and the old part deleted.
    write_config_maps(&f, 600);
    f.repo.commit("600");
    f.ctx.records.forget(&f.current("app").key());
    f.fake.clear_requests();
    f.run_requested("app").await.expect("the run");
    assert_eq!(f.ready("app").0, "True", "{:?}", f.ready("app"));
    assert!(
        f.configmap("cm-00599").is_some() && f.configmap("cm-00600").is_none() && f.configmap("cm-00799").is_none()
    );
    let deleted =
        f.fake.requests().iter().filter(|r| r.method == Method::DELETE && r.path.contains("/configmaps/")).count();
    assert_eq!(deleted, 200);
    let after = record_of(&f);
    assert_eq!(after.count, 600);
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
    assert_eq!(inventory.members, None, "compressed, not a list");
    let record = inventory.record.clone().expect("a record");
    assert!(record.parts.is_empty() && record.inline.is_some(), "{record:?}");
    let members = crate::operator::members::codec::members_in_status(&inventory).expect("readable");
    assert_eq!(members.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["a"]);
    assert_eq!(record_requests(&f), Vec::<String>::new());

    // The next run reads it back from the status: "a" left git, so it is pruned.
    f.repo.write("a.yaml", "").write("b.yaml", &configmap("b", "1")).commit("two");
    f.run_requested("app").await.expect("the second run");
    assert!(f.configmap("a").is_none() && f.configmap("b").is_some());
    assert_eq!(record_requests(&f), Vec::<String>::new());
}

#[tokio::test]
async fn reconcile_a_part_edited_by_hand_loses_the_record_not_objects() {
    let f = Fixture::new();
    let record = applied_800(&f).await;
    let mut part = f.fake.object(&part_path(&record.parts[0])).expect("the part");
    part["spec"]["data"] = "H4sIAAAAAAAAA4uOBQApu0wNAgAAAA==".into(); // gzip of "[]"
    f.fake.put(part);
    f.ctx.records.forget(&f.current("app").key());

    write_config_maps(&f, 600);
    f.repo.commit("600");
    f.fake.clear_requests();
    f.run_requested("app").await.expect("the run");

    let lost = f.event("MemberRecordLost");
    assert!(lost.contains("SHA-256") && lost.contains("no longer pruned"), "{lost}");
    let deletes: Vec<String> =
        f.fake.requests().into_iter().filter(|r| r.method == Method::DELETE).map(|r| r.path).collect();
    assert!(!deletes.iter().any(|p| p.contains("/configmaps/")), "{deletes:?}");
    assert!(f.configmap("cm-00799").is_some());
    let status = f.status("app");
    assert_eq!((status.prune_skipped.len(), status.prune_skipped_omitted), (50, 150), "at most 50 listed");
    assert!(status.prune_skipped.iter().all(|s| s.state == "NotInInventory"));
    // The new record holds what this run applied; the edited part is gone.
    assert_eq!(record_of(&f).count, 600);
    assert!(f.fake.object(&part_path(&record.parts[0])).is_none());
    assert!(f.fake.object(&configmap_path("cm-00000")).is_some());
}

/// ConfigMaps a and b applied by ApplySet `app`, its record in the status.
async fn applied_a_and_b() -> Fixture {
    let f = Fixture::new();
    f.repo.write("a.yaml", &configmap("a", "1")).write("b.yaml", &configmap("b", "1")).commit("two");
    f.applyset("app", json!({}));
    f.reconcile("app").await.expect("the first run");
    f
}

/// The names the status of `app` records itself.
fn recorded_names(f: &Fixture) -> Vec<String> {
    let inventory = f.status("app").inventory.expect("an inventory");
    let members = crate::operator::members::codec::members_in_status(&inventory).expect("a readable record");
    members.into_iter().map(|m| m.name).collect()
}

#[tokio::test]
async fn reconcile_an_inline_record_edited_by_hand_loses_the_record_not_objects() {
    let f = applied_a_and_b().await;
    let mut applyset = f.fake.object(&applyset_path("app")).expect("app");
    applyset["status"]["inventory"]["record"]["inline"] = "H4sIAAAAAAAAA4uOBQApu0wNAgAAAA==".into(); // gzip of "[]"
    f.fake.put(applyset);
    f.ctx.records.forget(&f.current("app").key());

    f.repo.write("b.yaml", "").commit("one");
    f.run_requested("app").await.expect("the run");
    let lost = f.event("MemberRecordLost");
    assert!(lost.contains("SHA-256") && lost.contains("no longer pruned"), "{lost}");
    assert!(f.configmap("b").is_some(), "not pruned: the record that named it is lost");
    assert_eq!(recorded_names(&f), ["a"]);
}

#[tokio::test]
async fn reconcile_a_status_of_an_earlier_version_is_read_and_written_compressed() {
    let f = applied_a_and_b().await;
    // The status as an earlier version wrote it: the record as a plain list of members.
    let inventory = f.status("app").inventory.expect("an inventory");
    let members = crate::operator::members::codec::members_in_status(&inventory).expect("members");
    let mut applyset = f.fake.object(&applyset_path("app")).expect("app");
    let stored = &mut applyset["status"]["inventory"];
    stored.as_object_mut().expect("an object").remove("record");
    stored["members"] = serde_json::to_value(&members).unwrap();
    f.fake.put(applyset);
    f.ctx.records.forget(&f.current("app").key());

    f.repo.write("b.yaml", "").commit("one");
    f.run_requested("app").await.expect("the run");
    assert!(f.configmap("b").is_none(), "pruned: the list recorded it");
    let inventory = f.status("app").inventory.expect("an inventory");
    assert_eq!(inventory.members, None, "the list is gone");
    assert!(inventory.record.as_ref().is_some_and(|r| r.inline.is_some()), "{inventory:?}");
    assert_eq!(recorded_names(&f), ["a"]);
}

#[tokio::test]
async fn reconcile_an_edited_parent_annotation_hides_no_member_a_record_in_parts_holds() {
    let f = Fixture::new();
    applied_800(&f).await;
    let mut applyset = f.fake.object(&applyset_path("app")).expect("app");
    applyset["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"] = "Secret".into();
    f.fake.put(applyset);
    f.ctx.records.forget(&f.current("app").key());

    write_config_maps(&f, 600);
    f.repo.commit("600");
    f.run_requested("app").await.expect("the run");
    assert!(f.event("ParentAnnotationsRestored").contains("ConfigMap"), "{:?}", f.events());
    assert!(
        f.configmap("cm-00599").is_some() && f.configmap("cm-00600").is_none() && f.configmap("cm-00799").is_none()
    );
}
