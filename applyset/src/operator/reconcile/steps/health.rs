//! health: what the ApplySet waits for, judged once from the watch cache (see
//! [`crate::operator::waiting`]); nothing when it does not wait.

use super::super::Reconciliation;
use crate::apply::ApplyReport;
use crate::causes::Chain;
use crate::cluster::Cluster;
use crate::operator::outcome::Done;
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;
use crate::operator::waiting::{self, Verdict};

impl Reconciliation<'_> {
    /// health: what the ApplySet waits for, judged once (see [`crate::operator::waiting`]); nothing when it
    /// does not wait.
    pub(in crate::operator::reconcile) async fn health(
        &mut self,
        cluster: &Cluster,
        set_id: &str,
        report: &ApplyReport,
        done: &mut Done,
    ) -> Result<(), StepError> {
        let (applyset, ctx, intervals) = (self.applyset, self.ctx, self.intervals);
        if !waiting::waits(applyset) {
            return Ok(());
        }
        let timeout = match applyset.spec.health_timeout.as_deref() {
            Some(text) => crate::duration::parse(text).map_err(|e| {
                StepError::new(Stage::InvalidSpec, format!("spec.healthTimeout {text:?}: {e}", e = Chain(&e)))
            })?,
            None => intervals.timeout,
        };
        let token = format!("{}-{}", done.revision, done.applied_digest);
        let since = ctx.waits.since(&applyset.key(), &token);
        let (verdict, judged, externals) =
            waiting::health(applyset, since, &*self.cache.clone(), cluster, set_id, &report.visited, timeout).await?;
        if let Some(inventory) = &mut self.status.inventory {
            waiting::record(inventory, &judged);
        }
        // Targets outside the watch cache are watched while the wait goes on: their change
        // runs the ApplySet again (as a change of its own objects does).
        match &verdict {
            Verdict::Waiting { deadline, .. } => {
                let wake = ctx.schedule.waker(applyset);
                let client = cluster.client().clone();
                ctx.waits.watch_external(&applyset.key(), client, externals, *deadline, wake);
            }
            _ => ctx.waits.stop_watching(&applyset.key()),
        }
        done.health = Some(verdict);
        Ok(())
    }
}
