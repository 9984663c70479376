//! moved: an ApplySet whose `spec.kubeConfig` changed (another cluster, or removed) leaves its
//! recorded members in the cluster it applied to before. The run notes the move when it knows
//! its cluster (the new record starts empty, `status.previousCluster` says the old objects are
//! pending), applies to the new cluster, and only once that apply and its prune succeeded prunes
//! the old cluster's members there, with the kubeconfig the controller kept (the controller's
//! own cluster is always at hand). When it cannot (the old cluster does not answer, the
//! controller restarted and lost the old kubeconfig, `prune` is off), the status and a Warning
//! Event name the old server and the count: never silently.

use super::super::Reconciliation;
use crate::causes::with_causes;
use crate::cluster::{Cluster, ClusterIdentity};
use crate::operator::api::PreviousCluster;
use crate::operator::lock;
use crate::operator::moved::{self, Move};
use crate::operator::outcome::ObjectRef;

/// The Events of a move.
const PRUNED: &str = "PreviousClusterPruned";
const LEFT: &str = "ObjectsLeftOnPreviousCluster";

/// `status.previousCluster.state`.
const STATE_PENDING: &str = "Pending";
const STATE_LEFT: &str = "Left";

impl Reconciliation<'_> {
    /// The run applies to `cluster`: recorded as where the members live; when the record says
    /// they live in another one, the move is noted (in the status, and in the controller's
    /// memory with the members) and the new record starts empty.
    pub(in crate::operator::reconcile) fn note_cluster(&mut self, cluster: &Cluster) {
        let current = cluster.identity();
        if let Some(found) = moved::detect(self.previous, &current) {
            tracing::info!(applyset = %self.applyset.key(), from = %found.from.server, to = %current.server,
                objects = found.members.len(), "the ApplySet moved to another cluster");
            self.status.previous_cluster = Some(PreviousCluster {
                server: found.from.server.clone(),
                objects: found.members.len() as u64,
                state: STATE_PENDING.into(),
                message: format!("pruned there once this run's apply to {} succeeded", current.server),
            });
            lock(&self.ctx.moves).insert(self.applyset.key(), found);
            self.record_starts_empty = true;
        }
        self.cluster = Some(current);
    }

    /// After the new cluster's apply and prune: the old cluster's members pruned there, or
    /// reported as left there.
    pub(in crate::operator::reconcile) async fn finish_move(&mut self) {
        let Some(report) = self.status.previous_cluster.clone().filter(|r| r.state == STATE_PENDING) else { return };
        let key = self.applyset.key();
        let pending = lock(&self.ctx.moves).get(&key).cloned();
        let (state, message) = match pending {
            None => (STATE_LEFT, "left there: the controller lost the members' list and kubeconfig (it restarted, or another replica leads) before pruning them; delete them there by hand".to_owned()),
            Some(_) if !self.applyset.spec.prune => (STATE_LEFT, "left there: spec.prune is off".to_owned()),
            Some(found) => match self.previous_cluster(&found.from) {
                None => (STATE_LEFT, "left there: the controller no longer has that cluster's kubeconfig".to_owned()),
                Some(old) => match self.prune_previous(&old, &found).await {
                    Ok(deleted) => {
                        lock(&self.ctx.moves).remove(&key);
                        self.ctx.remotes().forget_previous(&key);
                        self.status.previous_cluster = None;
                        let note = format!(
                            "pruned {} object(s) from {}: {}",
                            deleted.len(),
                            found.from.server,
                            deleted.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
                        );
                        self.ctx.event(self.applyset, false, PRUNED, "Prune", note).await;
                        return;
                    }
                    // Tried again at the next run, while the controller keeps the kubeconfig.
                    Err(why) => (STATE_PENDING, format!("not pruned yet, tried again at the next run: {why}")),
                },
            },
        };
        if state == STATE_LEFT {
            lock(&self.ctx.moves).remove(&key);
            self.ctx.remotes().forget_previous(&key);
        }
        let unchanged = self.previous.previous_cluster.as_ref().is_some_and(|p| p.message == message);
        self.status.previous_cluster =
            Some(PreviousCluster { state: state.into(), message: message.clone(), ..report.clone() });
        if !unchanged {
            let note = format!("{} object(s) this ApplySet applied to {} are {message}", report.objects, report.server);
            tracing::warn!(applyset = %key, "{note}");
            self.ctx.event(self.applyset, true, LEFT, "Prune", note).await;
        }
    }

    /// The cluster `identity` names, as the ApplySet's identity: the controller's own, or the
    /// remote the controller kept.
    fn previous_cluster(&self, identity: &ClusterIdentity) -> Option<std::sync::Arc<Cluster>> {
        let (ctx, applyset) = (self.ctx, self.applyset);
        let namespace = applyset.namespace_or_default();
        let service_account = ctx.service_account_for(applyset);
        let local = ctx.cluster_for(&namespace, service_account.as_deref()).ok()?;
        if local.identity() == *identity {
            return Some(local);
        }
        ctx.remotes().previous(&applyset.key(), identity, &namespace, service_account.as_deref())
    }

    /// Prunes every member of `found` in `old`, as deleting the ApplySet would.
    async fn prune_previous(&self, old: &Cluster, found: &Move) -> Result<Vec<ObjectRef>, String> {
        let deadline = std::time::Instant::now() + self.intervals.timeout;
        let pruned = super::super::cleanup::prune_all(self.ctx, self.applyset, old, Some(&found.members), deadline)
            .await
            .map_err(|e| with_causes(&e))?;
        match pruned.unfinished() {
            Some(why) => Err(why),
            None => Ok(pruned.deleted),
        }
    }
}
