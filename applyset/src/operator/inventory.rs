//! The ApplySet's own record of its members (pure): which objects it applied, with their UIDs.
//!
//! KEP-3659 prune (what kubectl does) deletes every object of the recorded kinds that carries
//! the set's `part-of` label. A label is no proof of membership: anyone who may patch an object
//! can add it, and the controller would then delete that object with its own identity. The
//! controller therefore deletes only objects that are in this record *and* still carry the
//! label, with the UID it applied (a re-created object of the same name is someone else's).

use std::collections::BTreeMap;

use super::api::{InventoryMember, InventoryObject};
use crate::apply::Visited;
use crate::applyset::Candidate;
use crate::cluster::mapper::GroupKind;
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;

/// Why prune left an object in place (`status.pruneSkipped[].state`).
pub mod skipped {
    /// Labelled as a member, but this ApplySet never applied it.
    pub const NOT_IN_INVENTORY: &str = "NotInInventory";
    /// The Namespace the ApplySet itself lives in.
    pub const OWN_NAMESPACE: &str = "OwnNamespace";
    /// A Namespace holding objects the ApplySet does not manage.
    pub const NAMESPACE_NOT_EMPTY: &str = "NamespaceNotEmpty";
    /// Left git with `applyset.dev/prune: disabled`: kept on purpose.
    pub const ORPHANED: &str = "Orphaned";
}

type Key = (String, Option<String>, String);

fn key_of(member: &InventoryMember) -> Key {
    (member.kind.clone(), member.namespace.clone(), member.name.clone())
}

/// `Kind[.group]` of a mapped resource.
fn kind_text(api_resource: &kube::core::ApiResource) -> String {
    GroupKind::of(api_resource).to_string()
}

pub fn member_of_visited(visited: &Visited) -> InventoryMember {
    InventoryMember {
        kind: kind_text(&visited.api_resource),
        namespace: visited.namespace.clone(),
        name: visited.name.clone(),
        uid: visited.uid.clone(),
    }
}

pub fn member_of_candidate(candidate: &Candidate) -> InventoryMember {
    InventoryMember {
        kind: kind_text(&candidate.kind.api_resource),
        namespace: candidate.listed.namespace.clone(),
        name: candidate.listed.name.clone(),
        uid: candidate.listed.uid.clone(),
    }
}

/// The record after an apply: everything recorded before, plus what this run applied (a newer
/// UID replaces an older one). Objects applied by a failed run stay recorded, so that a later
/// run can still prune them.
pub fn with_applied(previous: Option<&[InventoryMember]>, visited: &[Visited]) -> Vec<InventoryMember> {
    let mut members: BTreeMap<Key, InventoryMember> =
        previous.unwrap_or_default().iter().map(|m| (key_of(m), m.clone())).collect();
    for member in visited.iter().filter(|v| !v.uid.is_empty()).map(member_of_visited) {
        members.insert(key_of(&member), member);
    }
    members.into_values().collect()
}

/// A UID's length (`8-4-4-4-12` hex digits), for members not created yet.
const UID_LENGTH: usize = 36;

/// The member a manifest becomes once applied (its UID not known yet), if it names a kind and a
/// name; objects without a namespace are counted in `default_namespace` (a cluster-scoped one
/// is then over-counted by a few bytes).
pub fn planned_member(object: &applyset_merge::Value, default_namespace: &str) -> Option<InventoryMember> {
    let map = object.as_object()?;
    fn text(value: Option<&applyset_merge::Value>) -> Option<&str> {
        value.and_then(applyset_merge::Value::as_str)
    }
    let kind = text(map.get("kind"))?;
    let group = text(map.get("apiVersion")).and_then(|v| v.split_once('/')).map_or("", |(group, _)| group);
    let metadata = map.get("metadata").and_then(applyset_merge::Value::as_object)?;
    let name = text(metadata.get("name"))?;
    let namespace = text(metadata.get("namespace")).unwrap_or(default_namespace);
    Some(InventoryMember {
        kind: GroupKind::new(group, kind).to_string(),
        namespace: Some(namespace.to_owned()),
        name: name.to_owned(),
        uid: "0".repeat(UID_LENGTH),
    })
}

/// The bytes the record of these members takes in the status, as compact JSON.
pub fn record_bytes(members: &[InventoryMember]) -> usize {
    serde_json::to_vec(members).map_or(usize::MAX, |json| json.len())
}

/// The record's size once `planned` (from [`planned_member`]) joins what was recorded before:
/// what the status holds between the apply and the prune.
pub fn planned_record_bytes(previous: Option<&[InventoryMember]>, planned: Vec<InventoryMember>) -> usize {
    let mut members: BTreeMap<Key, InventoryMember> =
        previous.unwrap_or_default().iter().map(|m| (key_of(m), m.clone())).collect();
    for member in planned {
        members.entry(key_of(&member)).or_insert(member);
    }
    record_bytes(&members.into_values().collect::<Vec<_>>())
}

/// `InventoryTooLarge` when the record of `loaded` (with what was recorded before) would not fit
/// in the status: refused before anything is applied, so that nothing is created that the set
/// could never record, nor prune.
pub fn check_fits(
    previous: Option<&[InventoryMember]>,
    loaded: &[crate::manifest::LoadedObject],
    default_namespace: &str,
    limit: usize,
) -> Result<(), StepError> {
    let planned: Vec<InventoryMember> =
        loaded.iter().filter_map(|o| planned_member(&o.object, default_namespace)).collect();
    let count = planned.len();
    let bytes = planned_record_bytes(previous, planned);
    if bytes <= limit {
        return Ok(());
    }
    Err(too_large(count, bytes, limit, "nothing was applied or pruned"))
}

/// The failure of a record over `limit` ([`RECORD_LIMIT`](super::members::codec::RECORD_LIMIT) but in tests).
pub fn too_large(count: usize, bytes: usize, limit: usize, consequence: &str) -> StepError {
    StepError::new(
        Stage::InventoryTooLarge,
        format!(
            "{count} object(s): recording them for prune takes {bytes} bytes, over the limit of {limit} bytes of an ApplySet's member record; {consequence}. Split the source into several ApplySets"
        ),
    )
}

/// The record after a prune: what this run applied, plus what is still being deleted or could
/// not be deleted (the next run looks again).
pub fn after_prune(visited: &[Visited], kept: impl IntoIterator<Item = InventoryMember>) -> Vec<InventoryMember> {
    with_applied(Some(&kept.into_iter().collect::<Vec<_>>()), visited)
}

/// Splits prune candidates into those this ApplySet applied (same kind, namespace, name and
/// UID in the record) and labelled strangers.
pub fn recorded_or_strangers(
    candidates: Vec<Candidate>,
    members: Option<&[InventoryMember]>,
) -> (Vec<Candidate>, Vec<Candidate>) {
    let recorded: BTreeMap<Key, &str> =
        members.unwrap_or_default().iter().map(|m| (key_of(m), m.uid.as_str())).collect();
    candidates.into_iter().partition(|candidate| {
        let member = member_of_candidate(candidate);
        recorded.get(&key_of(&member)).is_some_and(|uid| *uid == member.uid)
    })
}

/// Whether `(kind, namespace, name)` is in the record (any UID).
pub fn is_member(members: &[InventoryMember], kind: &str, namespace: Option<&str>, name: &str) -> bool {
    members.iter().any(|m| m.kind == kind && m.namespace.as_deref() == namespace && m.name == name)
}

/// A `status.pruneSkipped` entry.
pub fn skipped_entry(candidate: &Candidate, reason: &str, message: String) -> InventoryObject {
    InventoryObject {
        kind: kind_text(&candidate.kind.api_resource),
        namespace: candidate.listed.namespace.clone(),
        name: candidate.listed.name.clone(),
        state: reason.to_owned(),
        message: Some(message),
        method: None,
        ..InventoryObject::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::applyset::RecordedKind;
    use crate::cluster::list::Listed;
    use crate::operator::members::codec::RECORD_LIMIT;
    use kube::core::{ApiResource, GroupVersionKind};

    fn config_maps() -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "ConfigMap"), "configmaps")
    }

    fn visited(name: &str, uid: &str) -> Visited {
        Visited {
            api_resource: config_maps(),
            namespaced: true,
            namespace: Some("ns".into()),
            name: name.into(),
            uid: uid.into(),
        }
    }

    fn candidate(name: &str, uid: &str) -> Candidate {
        Candidate {
            kind: RecordedKind { api_resource: config_maps(), namespaced: true },
            listed: Listed { name: name.into(), namespace: Some("ns".into()), uid: uid.into(), ..Listed::default() },
        }
    }

    #[test]
    fn applied_objects_join_the_record_and_newer_uids_win() {
        let first = with_applied(None, &[visited("a", "1"), visited("b", "2")]);
        assert_eq!(first.len(), 2);
        let second = with_applied(Some(&first), &[visited("a", "3")]);
        let a = second.iter().find(|m| m.name == "a").unwrap();
        assert_eq!((a.kind.as_str(), a.uid.as_str()), ("ConfigMap", "3"));
        assert!(second.iter().any(|m| m.name == "b"), "a failed run's earlier members stay");
        // A client dry-run object has no UID and is never recorded.
        assert_eq!(with_applied(None, &[visited("c", "")]), vec![]);
    }

    #[test]
    fn only_recorded_objects_with_the_applied_uid_are_pruned() {
        let members = with_applied(None, &[visited("old", "1"), visited("recreated", "2")]);
        let (recorded, strangers) = recorded_or_strangers(
            vec![candidate("old", "1"), candidate("labelled-by-hand", "9"), candidate("recreated", "7")],
            Some(&members),
        );
        let names = |c: &[Candidate]| c.iter().map(|c| c.listed.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&recorded), ["old"]);
        assert_eq!(names(&strangers), ["labelled-by-hand", "recreated"]);
        // No record at all (an ApplySet from before the record existed): nothing is pruned.
        let (recorded, strangers) = recorded_or_strangers(vec![candidate("old", "1")], None);
        assert!(recorded.is_empty());
        assert_eq!(strangers.len(), 1);
    }

    #[test]
    fn the_planned_record_is_measured_before_anything_is_applied() {
        let object = |kind: &str, api_version: &str, name: &str, namespace: Option<&str>| {
            let mut metadata = serde_json::json!({ "name": name });
            if let Some(ns) = namespace {
                metadata["namespace"] = ns.into();
            }
            let json = serde_json::json!({ "apiVersion": api_version, "kind": kind, "metadata": metadata });
            applyset_merge::Value::from_json_str(&json.to_string()).unwrap()
        };
        let web = planned_member(&object("Deployment", "apps/v1", "web", None), "shop").unwrap();
        assert_eq!((web.kind.as_str(), web.namespace.as_deref(), web.uid.len()), ("Deployment.apps", Some("shop"), 36));
        let cm = planned_member(&object("ConfigMap", "v1", "c", Some("other")), "shop").unwrap();
        assert_eq!((cm.kind.as_str(), cm.namespace.as_deref()), ("ConfigMap", Some("other")));
        assert_eq!(
            planned_member(&applyset_merge::Value::from_json_str(r#"{"kind":"ConfigMap"}"#).unwrap(), "ns"),
            None
        );

        // The estimate is the size of the record once the UIDs are known.
        let applied = with_applied(None, &[visited("a", "0a1b2c3d-0000-4000-8000-000000000001")]);
        let planned = vec![planned_member(&object("ConfigMap", "v1", "a", Some("ns")), "ns").unwrap()];
        assert_eq!(planned_record_bytes(None, planned.clone()), record_bytes(&applied));
        // A member recorded before counts once, and so does one still to be pruned.
        let before = with_applied(None, &[visited("a", "1"), visited("old", "2")]);
        assert_eq!(planned_record_bytes(Some(&before), planned), record_bytes(&before));

        // 50,000 small ConfigMaps fit; 700,000 do not.
        let many = |count: usize| -> Vec<InventoryMember> {
            (0..count)
                .map(|i| planned_member(&object("ConfigMap", "v1", &format!("config-{i}"), None), "tenant-a").unwrap())
                .collect()
        };
        assert!(planned_record_bytes(None, many(700_000)) > RECORD_LIMIT);
        assert!(planned_record_bytes(None, many(50_000)) < RECORD_LIMIT);
    }

    #[test]
    fn the_record_after_a_prune_is_what_was_applied_and_what_remains() {
        let kept = vec![member_of_candidate(&candidate("terminating", "5"))];
        let members = after_prune(&[visited("a", "1")], kept);
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["a", "terminating"]);
        assert!(is_member(&members, "ConfigMap", Some("ns"), "terminating"));
        assert!(!is_member(&members, "ConfigMap", Some("other"), "a"));
    }
}
