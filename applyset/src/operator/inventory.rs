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
use crate::applyset::{Candidate, GroupKind};

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
    use crate::applyset::{Listed, RecordedKind};
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
    fn the_record_after_a_prune_is_what_was_applied_and_what_remains() {
        let kept = vec![member_of_candidate(&candidate("terminating", "5"))];
        let members = after_prune(&[visited("a", "1")], kept);
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["a", "terminating"]);
        assert!(is_member(&members, "ConfigMap", Some("ns"), "terminating"));
        assert!(!is_member(&members, "ConfigMap", Some("other"), "a"));
    }
}
