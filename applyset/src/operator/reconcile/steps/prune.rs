//! prune: only after every object applied, through the controller's guards (see
//! [`crate::operator::prune`]); then the parent records this run's kinds only.

use super::super::Reconciliation;
use crate::apply::ApplyReport;
use crate::applyset::Run;
use crate::cluster::Cluster;
use crate::operator::inventory;
use crate::operator::outcome::Done;
use crate::operator::prune;
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;
use crate::operator::status;

impl Reconciliation<'_> {
    /// prune: only after every object applied, through the controller's guards; then the parent
    /// records this run's kinds only.
    pub(in crate::operator::reconcile) async fn prune(
        &mut self,
        cluster: &Cluster,
        run: &mut Run<'_>,
        report: &ApplyReport,
        done: &mut Done,
    ) -> Result<(), StepError> {
        let (applyset, ctx, previous, intervals) = (self.applyset, self.ctx, self.previous, self.intervals);
        let status = &mut self.status;
        let members = status.inventory.as_ref().and_then(|i| i.members.clone());
        let namespace = applyset.namespace_or_default();
        let had_record = previous.inventory.as_ref().is_some_and(|i| i.members.is_some());
        let members = members.as_deref().unwrap_or_default();
        let scope = prune::Scope::of_run(applyset, &namespace, members, had_record, &done.revision, intervals.timeout);
        // The cluster's discovery as it is now: this run may have added kinds (new CRDs).
        let index = ctx.api_index(cluster, false).await.map_err(|e| StepError::of(Stage::Prune, e))?;
        let pruned = prune::prune(run, &index, &report.visited, scope, &applyset.delete_options()).await;
        ctx.metrics.pruned(pruned.deleted.len() as u64);
        if let Some(inventory) = &mut status.inventory {
            inventory.members = Some(pruned.members.clone());
        }
        status.prune_skipped = pruned.skipped.iter().take(status::PRUNE_SKIPPED_LIMIT).cloned().collect();
        status.prune_skipped_omitted = pruned.skipped.len().saturating_sub(status::PRUNE_SKIPPED_LIMIT) as u64;
        for warning in &pruned.warnings {
            tracing::warn!(applyset = %applyset.key(), "{warning}");
        }
        done.pruned = pruned.deleted.clone();
        // Orphaned objects were kept on purpose: an `Orphaned` Event, not a warning.
        let unexpected = pruned.skipped.iter().filter(|e| e.state != inventory::skipped::ORPHANED);
        done.prune_skipped = unexpected.cloned().collect();
        done.prune_warnings = pruned.warnings.clone();
        // Newly orphaned only (of those the status lists): a steady run publishes nothing.
        let orphaned = status.prune_skipped.iter().filter(|e| e.state == inventory::skipped::ORPHANED);
        done.orphaned = orphaned.filter(|e| !previous.prune_skipped.contains(e)).cloned().collect();
        if let Some(message) = pruned.guarded {
            return Err(StepError::new(Stage::PruneGuarded, message));
        }
        if let Some(error) = pruned.error {
            return Err(StepError::new(Stage::Prune, error));
        }
        if !pruned.terminating.is_empty() {
            return Err(StepError::new(
                Stage::Prune,
                format!(
                    "{} object(s) removed from the source are still being deleted, held by finalizers (not deleted again): {}",
                    pruned.terminating.len(),
                    pruned.terminating.join(", ")
                ),
            ));
        }
        let finished = run.finish().await;
        self.ctx.written.note(&self.applyset.key(), run.parent().written_version());
        finished.map_err(|e| StepError::of(Stage::Apply, e))
    }
}
