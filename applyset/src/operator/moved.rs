//! An ApplySet whose `spec.kubeConfig` changed (pointed at another cluster, or removed) applies
//! to a new cluster; its recorded members live in the old one. What a run finds out about that,
//! as plain values: the move, from the status's record of where its members live.

use super::api::{ApplySetStatus, InventoryMember};
use crate::cluster::ClusterIdentity;

/// The members the ApplySet applied to `from`, a cluster it no longer applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    pub from: ClusterIdentity,
    pub members: Vec<InventoryMember>,
}

/// The move a run finds: the record says its members live in another cluster than `current`.
/// None without a record of the cluster (a status from before it was kept: the cluster is
/// recorded by this run) or of members.
pub fn detect(previous: &ApplySetStatus, current: &ClusterIdentity) -> Option<Move> {
    let inventory = previous.inventory.as_ref()?;
    let from = inventory.cluster.as_ref().filter(|from| *from != current)?;
    let members = inventory.members.clone().filter(|members| !members.is_empty())?;
    Some(Move { from: from.clone(), members })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::api::InventoryStatus;

    fn identity(server: &str, ca: Option<&str>) -> ClusterIdentity {
        ClusterIdentity { server: server.into(), ca_digest: ca.map(str::to_owned) }
    }

    fn status(cluster: Option<ClusterIdentity>, members: usize) -> ApplySetStatus {
        let member =
            |i: usize| InventoryMember { kind: "ConfigMap".into(), name: format!("cm-{i}"), ..Default::default() };
        ApplySetStatus {
            inventory: Some(InventoryStatus {
                cluster,
                members: Some((0..members).map(member).collect()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_move_is_another_server_or_another_ca() {
        let a = identity("https://a.example:6443", Some("0011"));
        let found = detect(&status(Some(a.clone()), 2), &identity("https://b.example:6443", Some("0011")));
        assert_eq!(found.map(|m| (m.from, m.members.len())), Some((a.clone(), 2)));
        assert!(detect(&status(Some(a.clone()), 2), &identity("https://a.example:6443", Some("ffff"))).is_some());
        assert!(detect(&status(Some(a.clone()), 2), &a).is_none(), "the same cluster");
        assert!(detect(&status(None, 2), &a).is_none(), "no cluster recorded yet");
        assert!(detect(&status(Some(identity("https://b", None)), 0), &a).is_none(), "nothing there");
        assert!(detect(&ApplySetStatus::default(), &a).is_none());
    }
}
