use kube::runtime::watcher::Event;
use serde_json::json;

use super::*;
use crate::keys::{LAST_APPLIED_ANNOTATION as LAST_APPLIED, PART_OF_LABEL, PRUNE_OPT_OUT, PruneMark};

const SET: &str = "applyset-a-v1";
const OTHER: &str = "applyset-b-v1";

fn object(name: &str, version: &str, set: &str, replicas: i64, ready: i64) -> Watched {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": format!("uid-{name}"),
            "resourceVersion": version,
            "labels": { PART_OF_LABEL: set },
            "managedFields": [{ "manager": "kube-controller-manager", "operation": "Update" }],
        },
        "spec": { "replicas": replicas },
        "status": { "readyReplicas": ready },
    }))
    .expect("a watched object")
}

fn listed(store: &mut KindStore, objects: Vec<Watched>) -> Vec<Change> {
    let mut changes = store.apply(Event::Init);
    for object in objects {
        changes.extend(store.apply(Event::InitApply(object)));
    }
    changes.extend(store.apply(Event::InitDone));
    changes
}

fn key(name: &str) -> Key {
    (Some("shop".into()), name.into())
}

fn names(listed: Option<Vec<Listed>>) -> Option<Vec<String>> {
    listed.map(|items| items.into_iter().map(|l| l.name).collect())
}

#[test]
fn answers_only_once_listed_and_the_first_list_shows_every_version_it_found() {
    let mut store = KindStore::default();
    assert_eq!(store.get(&key("web")), None, "nothing is known before the list");
    assert_eq!(store.members(SET, Some("shop")), None);
    store.apply(Event::Init);
    store.apply(Event::InitApply(object("web", "1", SET, 2, 0)));
    assert_eq!(store.get(&key("web")), None, "a list in progress is not a complete view");
    let first = store.apply(Event::InitDone);
    // Each listed version is a change; the triggers drop those the controller wrote or read.
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(!first[0].status_only && first[0].resource_version.as_deref() == Some("1"), "{first:?}");
    assert!(store.is_synced());
    let entry = store.get(&key("web")).flatten().expect("listed");
    assert_eq!(entry.listed.cached_version.as_deref(), Some("1"));
    let object = serde_json::to_value(entry.object().expect("parses")).expect("serializes");
    assert_eq!(object["spec"]["replicas"], 2, "the whole object is kept");
    assert_eq!(object["status"]["readyReplicas"], 0);
    assert_eq!(store.get(&key("api")), Some(None), "complete view: no labelled object of that name");
    assert_eq!(names(store.members(SET, Some("shop"))), Some(vec!["web".into()]));
    assert_eq!(names(store.members(SET, Some("other"))), Some(vec![]));
    assert_eq!(names(store.members(OTHER, Some("shop"))), Some(vec![]));
}

#[test]
fn objects_are_kept_deflated_and_read_back_as_the_watch_sent_them() {
    let mut store = KindStore::default();
    let sent = [object("web", "1", SET, 2, 0), object("api", "4", SET, 5, 1)];
    listed(&mut store, sent.to_vec());
    store.apply(Event::Apply(object("db", "7", OTHER, 1, 1)));
    for watched in sent.iter().chain([&object("db", "7", OTHER, 1, 1)]) {
        let Body::Text(text) = &watched.entry.body else { panic!("a watch event's object is text") };
        let stored = store.get(&watched.entry.key()).flatten().expect("stored");
        assert!(matches!(stored.body, Body::Packed(_)), "{:?}", stored.body);
        assert_eq!(stored.text().as_deref(), Some(&**text), "byte for byte");
        assert_eq!(stored.content, watched.entry.content);
    }
}

#[test]
fn status_updates_are_told_apart_from_spec_edits() {
    let mut store = KindStore::default();
    listed(&mut store, vec![object("web", "1", SET, 2, 0)]);
    let change = |version: &str, status_only: bool| Change {
        set_id: SET.into(),
        uid: "uid-web".into(),
        resource_version: Some(version.into()),
        status_only,
    };
    assert_eq!(store.apply(Event::Apply(object("web", "2", SET, 2, 2))), [change("2", true)], "status only");
    assert!(store.apply(Event::Apply(object("web", "2", SET, 2, 2))).is_empty(), "the same version again");
    let scaled = store.apply(Event::Apply(object("web", "3", SET, 5, 2)));
    assert_eq!(scaled, [change("3", false)]);
    assert_eq!(store.get(&key("web")).flatten().expect("kept").resource_version, "3", "the newest version is kept");
}

#[test]
fn a_relabelled_object_is_a_change_for_both_sets_and_moves_between_them() {
    let mut store = KindStore::default();
    listed(&mut store, vec![object("web", "1", SET, 2, 0)]);
    let changes = store.apply(Event::Apply(object("web", "2", OTHER, 2, 0)));
    let sets: Vec<&str> = changes.iter().map(|c| c.set_id.as_str()).collect();
    assert_eq!(sets, [SET, OTHER]);
    assert_eq!(names(store.members(SET, Some("shop"))), Some(vec![]));
    assert_eq!(names(store.members(OTHER, Some("shop"))), Some(vec!["web".into()]));
}

#[test]
fn a_delete_is_a_change_without_a_version() {
    let mut store = KindStore::default();
    listed(&mut store, vec![object("web", "1", SET, 2, 0)]);
    let changes = store.apply(Event::Delete(object("web", "2", SET, 2, 0)));
    assert_eq!(
        changes,
        [Change { set_id: SET.into(), uid: "uid-web".into(), resource_version: None, status_only: false }]
    );
    assert_eq!(store.get(&key("web")), Some(None));
    assert_eq!(store.len(), 0);
}

#[test]
fn after_a_watch_error_nothing_is_answered_until_the_relist_which_reports_the_gap() {
    let mut store = KindStore::default();
    listed(
        &mut store,
        vec![object("web", "1", SET, 2, 0), object("db", "1", SET, 1, 0), object("old", "1", SET, 1, 0)],
    );
    store.fail();
    assert_eq!(store.get(&key("web")), None, "no answer from a view that may be stale");
    assert_eq!(store.members(SET, Some("shop")), None, "never a prune decision from it");
    store.apply(Event::Init);
    store.apply(Event::InitApply(object("web", "9", SET, 7, 0)));
    assert_eq!(store.members(SET, Some("shop")), None, "nor while the relist runs");
    // During the gap: web scaled, db's status changed, old deleted, new created.
    store.apply(Event::InitApply(object("db", "9", SET, 1, 1)));
    store.apply(Event::InitApply(object("new", "9", SET, 1, 0)));
    let mut changes: Vec<Change> = store.apply(Event::InitDone).into_iter().filter(|c| !c.status_only).collect();
    changes.sort_by(|a, b| a.uid.cmp(&b.uid));
    let seen: Vec<(&str, Option<&str>)> =
        changes.iter().map(|c| (c.uid.as_str(), c.resource_version.as_deref())).collect();
    assert_eq!(seen, [("uid-new", Some("9")), ("uid-old", None), ("uid-web", Some("9"))]);
    assert_eq!(
        names(store.members(SET, Some("shop"))).map(|mut n| {
            n.sort();
            n
        }),
        Some(vec!["db".into(), "new".into(), "web".into()])
    );
}

#[test]
fn cluster_scoped_objects_have_no_namespace() {
    let mut store = KindStore::default();
    let namespace: Watched = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": { "name": "shop", "uid": "u", "resourceVersion": "4", "labels": { PART_OF_LABEL: SET },
                      "annotations": { PRUNE_OPT_OUT: "disabled" }, "deletionTimestamp": "2026-01-01T00:00:00Z",
                      "finalizers": ["kubernetes"] },
    }))
    .expect("a watched object");
    listed(&mut store, vec![namespace]);
    let members = store.members(SET, None).expect("synced");
    assert_eq!(members.len(), 1);
    let member = &members[0];
    assert_eq!((member.namespace.as_deref(), member.name.as_str()), (None, "shop"));
    assert!(member.prune_mark == Some(PruneMark::Applyset) && member.deleting && !member.has_last_applied);
    assert_eq!(member.finalizers, ["kubernetes"]);
}

#[test]
fn a_store_watching_one_namespace_answers_for_it_only() {
    let mut store = KindStore::default();
    store.set_scope(Some("shop".into()));
    listed(&mut store, vec![object("web", "1", SET, 2, 0)]);
    assert!(store.get(&key("web")).is_some(), "its namespace is answered");
    assert_eq!(store.get(&(Some("other".into()), "web".into())), None, "another is not");
    assert_eq!(store.members(SET, Some("other")), None);
    assert_eq!(names(store.members(SET, Some("shop"))), Some(vec!["web".into()]));
}

#[test]
fn the_text_kept_is_the_objects_json_as_sent_not_written_again() {
    // The apiserver's key order (not sorted) and its spacing: kept as they came.
    let sent = r#"{"metadata":{"name":"web","namespace":"shop","uid":"u","resourceVersion":"3","labels":{"applyset.kubernetes.io/part-of":"applyset-a-v1"}}, "kind":"ConfigMap","apiVersion":"v1","data":{"b":"2","a":"1"}}"#;
    let watched: Watched = serde_json::from_str(sent).expect("a watched object");
    let Body::Text(text) = &watched.entry.body else { panic!("a watch event's object is text") };
    assert_eq!(&**text, sent);
    assert_eq!((watched.entry.listed.name.as_str(), watched.entry.set_id.as_str()), ("web", SET));
}

#[test]
fn the_content_digest_leaves_out_what_the_apiserver_and_other_controllers_change() {
    let digest = |object: serde_json::Value| serde_json::from_value::<Watched>(object).expect("watched").entry.content;
    let base = || object("web", "1", SET, 2, 0);
    let mut as_listed = serde_json::to_value(base().entry.object().expect("parses")).expect("serializes");
    let root = as_listed.as_object_mut().expect("an object");
    root.remove("apiVersion");
    root.remove("kind");
    root["metadata"]["resourceVersion"] = "9".into();
    root["metadata"]["generation"] = 4.into();
    root["metadata"]["managedFields"] = json!([]);
    root["status"] = json!({ "readyReplicas": 2 });
    assert_eq!(digest(as_listed.clone()), base().entry.content, "a LIST's item, a later status and version");
    for (path, value) in [("spec", json!({ "replicas": 3 })), ("metadata", json!({ "name": "web" }))] {
        let mut edited = as_listed.clone();
        edited[path] = value;
        assert_ne!(digest(edited), base().entry.content, "{path} changed");
    }
    // Values that write alike in other shapes feed different bytes.
    let spec = |spec: serde_json::Value| {
        let mut edited = as_listed.clone();
        edited["spec"] = spec;
        digest(edited)
    };
    assert_ne!(spec(json!({ "a": ["b"] })), spec(json!({ "a": "b" })));
    assert_ne!(spec(json!({ "a": 1 })), spec(json!({ "a": 1.0 })));
    assert_ne!(spec(json!({ "a": [1, 2] })), spec(json!({ "a": [[1], 2] })));
}

#[test]
fn a_rollouts_revision_annotation_alone_is_no_change_to_what_the_set_applies() {
    let with_annotations = |version: &str, annotations: serde_json::Value| {
        let mut value = serde_json::to_value(object("web", version, SET, 2, 0).entry.object().expect("parses"))
            .expect("serializes");
        value["metadata"]["annotations"] = annotations;
        serde_json::from_value::<Watched>(value).expect("watched")
    };
    let applied = json!({ LAST_APPLIED: "{}" });
    let mut store = KindStore::default();
    listed(&mut store, vec![with_annotations("1", applied.clone())]);
    // kube-controller-manager marks the rollout the apply started.
    let revision = json!({ LAST_APPLIED: "{}", "deployment.kubernetes.io/revision": "1" });
    let changes = store.apply(Event::Apply(with_annotations("2", revision)));
    assert!(changes.len() == 1 && changes[0].status_only, "{changes:?}");
    let edited = json!({ LAST_APPLIED: "{}", "deployment.kubernetes.io/revision": "1", "team": "a" });
    let changes = store.apply(Event::Apply(with_annotations("3", edited)));
    assert!(changes.len() == 1 && !changes[0].status_only, "any other annotation is a change: {changes:?}");

    // Without other annotations, the cluster's alone count as none.
    let mut store = KindStore::default();
    listed(&mut store, vec![object("web", "1", SET, 2, 0)]);
    let changes = store.apply(Event::Apply(with_annotations("2", json!({ "deployment.kubernetes.io/revision": "1" }))));
    assert!(changes.len() == 1 && changes[0].status_only, "{changes:?}");
    let changes = store.apply(Event::Apply(with_annotations("3", json!({}))));
    assert!(changes.len() == 1 && changes[0].status_only, "{changes:?}");
}
