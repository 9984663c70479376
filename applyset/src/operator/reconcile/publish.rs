//! What a finished run publishes, in one place: the conditions, the status write, Events,
//! metrics, when the ApplySet runs next, and the wake-up of its dependants.

use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::controller::Action;

use super::{ReconcileError, now};
use crate::fields::Reason;
use crate::operator::api::{ApplySet, ApplySetStatus, DriftedObject, InventoryObject};
use crate::operator::context::Context;
use crate::operator::outcome::{Done, ObjectCounts, describe_drift, set_drift_condition};
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;
use crate::operator::schedule::{Intervals, backoff, with_jitter};
use crate::operator::status::{self, READY, reason};
use crate::operator::waiting::Verdict;
use crate::operator::{dependencies, history};
use crate::source::Ancestry;

/// What a finished run publishes from: the ApplySet, the status written before the run, and
/// when it started.
pub(super) struct Finish<'a> {
    pub(super) ctx: &'a Context,
    pub(super) applyset: &'a ApplySet,
    pub(super) written: &'a ApplySetStatus,
    pub(super) started: Instant,
}

impl Finish<'_> {
    /// A run that applied: `Ready` (or waiting for health, or `HealthCheckFailed`), the drift
    /// condition, the applied revision; the status written, Events, metrics; its dependants
    /// woken when it just became Ready.
    pub(super) async fn succeeded(
        &self,
        mut status: ApplySetStatus,
        done: Done,
        intervals: Intervals,
    ) -> Result<Action, ReconcileError> {
        let key = self.applyset.key();
        let generation = self.applyset.metadata.generation;
        let now = now();
        let ObjectCounts { applied, drifted, failed } = done.counts;
        let unchanged = done.inputs_unchanged_since.is_some();
        if !unchanged {
            self.ctx.metrics.set_objects(&key, applied, drifted, failed);
        }
        let mut message = format!("Applied revision: {}", done.revision);
        if let Some(since) = &done.inputs_unchanged_since {
            message.push_str(&format!(" (nothing this ApplySet reads changed since {since})"));
        }
        if !done.drifted.is_empty() && !done.corrected {
            message.push_str(&format!(" ({} object(s) drifted)", done.drifted.len()));
        }
        if let Some(note) = history_note(&done) {
            message.push_str(&format!(" ({note})"));
        }
        let health = health_outcome(&mut status, &done, &message, generation, &now);
        if !unchanged {
            set_drift_condition(&mut status, &done, generation, &now);
        }
        status.last_applied_revision = Some(done.revision.clone());
        status.applied_revisions = history::record_applied(
            &self.written.applied_revisions,
            &done.revision,
            self.applyset.spec.source.path.as_deref(),
            &now,
        );
        if !unchanged {
            status.last_applied_generation = generation;
        }
        status.last_applied_spec_digest = Some(done.applied_digest.clone());
        status.last_applied_inputs = done.inputs.clone();
        let was_ready = status::condition(self.written, READY).is_some_and(|c| c.status == "True");
        let health_before = status::condition(self.written, READY).map(|c| (c.reason.clone(), c.message.clone()));
        super::write_status(self.ctx, self.applyset, self.written, &mut status).await?;
        // A run that waits for health says "Succeeded" once, when it is healthy.
        publish_success_events(self.ctx, self.applyset, &done, was_ready || health.is_some()).await;
        let next = match health {
            Some(HealthOutcome::Waiting(until)) => {
                self.ctx.metrics.reconcile_finished("waiting", self.started.elapsed());
                with_jitter(intervals.interval).min(until)
            }
            Some(HealthOutcome::Failed(message)) => {
                let after = status::condition(&status, READY).map(|c| (c.reason.clone(), c.message.clone()));
                if health_before != after {
                    self.ctx.event(self.applyset, true, reason::HEALTH_CHECK_FAILED, "HealthCheck", message).await;
                }
                self.ctx.metrics.reconcile_finished(Stage::HealthCheck.metric_label(), self.started.elapsed());
                with_jitter(intervals.interval)
            }
            None => {
                self.ctx.schedule.succeeded(&key);
                let result = if unchanged { "inputs_unchanged" } else { "success" };
                self.ctx.metrics.reconcile_finished(result, self.started.elapsed());
                self.ctx.metrics.sync_succeeded(now.0.as_second() as f64);
                if !was_ready {
                    // Its dependants waited for this: they run now, not at their interval.
                    for dependant in dependencies::dependants(&key, &self.ctx.applysets().await) {
                        self.ctx.schedule.run_now(&dependant);
                    }
                }
                with_jitter(intervals.interval)
            }
        };
        self.ctx.schedule.ran(&key, generation, self.applyset.run_requests().as_deref(), next);
        Ok(Action::requeue(next))
    }

    /// A run that failed at a step: `Ready=False` with the step's reason (and `Stalled` when no
    /// retry helps), one Event per distinct failure, the metric, and the next try at the backoff.
    pub(super) async fn failed(
        &self,
        mut status: ApplySetStatus,
        failure: StepError,
        intervals: Option<Intervals>,
    ) -> Result<Action, ReconcileError> {
        let (ctx, applyset, written, started) = (self.ctx, self.applyset, self.written, self.started);
        let key = applyset.key();
        let generation = applyset.metadata.generation;
        let before = status::condition(written, READY).map(|c| (c.reason.clone(), c.message.clone()));
        status::mark_failed(&mut status, &failure, generation, &now());
        super::write_status(ctx, applyset, written, &mut status).await?;
        let after = status::condition(&status, READY).map(|c| (c.reason.clone(), c.message.clone()));
        // One Event per distinct failure, not one per retry.
        if before != after {
            ctx.event(applyset, true, failure.stage.reason(), "Reconcile", failure.message.clone()).await;
        }
        let module = failure.cause.as_deref().map(super::Cause::module).unwrap_or("reconcile");
        let causes = failure.causes().join(": ");
        tracing::warn!(applyset = %key, reason = failure.stage.reason(), module, message = %failure.message, causes, "reconcile failed");
        ctx.metrics.reconcile_finished(failure.stage.metric_label(), started.elapsed());
        // Those that stopped at this one as their dependency look again: it exists now, and it
        // may have closed a cycle they are part of.
        for dependant in dependencies::waiting_dependants(&key, &ctx.applysets().await) {
            ctx.schedule.run_now(&dependant);
        }
        let failures = ctx.schedule.failed(&key);
        let Some(intervals) = intervals.filter(|_| !failure.stage.awaits_spec_change()) else {
            return Ok(Action::await_change());
        };
        let next = backoff(intervals.retry, intervals.interval, failures);
        ctx.schedule.ran(&key, generation, applyset.run_requests().as_deref(), next);
        Ok(Action::requeue(next))
    }
}

/// What the health step means for the run (`None`: Ready; nothing to wait for, or healthy).
enum HealthOutcome {
    /// Not healthy yet: run again by then at the latest (changes of its objects run it sooner).
    Waiting(Duration),
    /// `HealthCheckFailed`, with the message.
    Failed(String),
}

/// Sets `Ready` (and `Healthy`, when the ApplySet waits) from the run's health verdict.
fn health_outcome(
    status: &mut ApplySetStatus,
    done: &Done,
    applied: &str,
    generation: Option<i64>,
    now: &Time,
) -> Option<HealthOutcome> {
    match &done.health {
        None => {
            status::remove_condition(&mut status.conditions, status::HEALTHY);
            status::mark_ready(status, applied, generation, now);
            None
        }
        Some(Verdict::Healthy { count }) => {
            let message = format!("{count} object(s) healthy");
            status::mark_healthy(status, "True", reason::SUCCEEDED, &message, generation, now);
            status::mark_ready(status, &format!("{applied}; {message}"), generation, now);
            None
        }
        Some(Verdict::Waiting { message, deadline }) => {
            status::mark_healthy(status, "Unknown", reason::PROGRESSING, message, generation, now);
            status::mark_progressing(status, &format!("{applied}; {message}"), generation, now);
            status.observed_generation = generation;
            Some(HealthOutcome::Waiting(deadline.saturating_duration_since(Instant::now())))
        }
        Some(Verdict::Failed { message }) => {
            status::mark_healthy(status, "False", reason::HEALTH_CHECK_FAILED, message, generation, now);
            let failure = StepError::new(Stage::HealthCheck, format!("{applied}, but {message}"));
            status::mark_failed(status, &failure, generation, now);
            Some(HealthOutcome::Failed(failure.message))
        }
    }
}

/// For the Ready message: a rewritten history, said in the run that applied it.
fn history_note(done: &Done) -> Option<String> {
    let change = done.history.as_ref().filter(|c| c.ancestry == Ancestry::Rewritten)?;
    Some(format!("history rewritten: was {}, not an ancestor", change.previous))
}

/// `old → new`, as Flux says it: a Warning when the new commit does not descend from the one
/// applied before (a force-push backwards, a rebase), whose removed objects this run pruned.
async fn publish_revision_event(ctx: &Context, applyset: &ApplySet, done: &Done) {
    let Some(change) = &done.history else { return };
    let moved = format!("{} → {}", change.previous, done.revision);
    match change.ancestry {
        Ancestry::Rewritten => {
            let note =
                format!("{moved}: history rewritten, {} is not an ancestor of the new revision", change.previous);
            ctx.event(applyset, true, "HistoryRewritten", "Fetch", note).await;
        }
        Ancestry::Unknown => {
            let note = format!(
                "{moved} (whether it descends from the previous revision is unknown: not in the shallow cache)"
            );
            ctx.event(applyset, false, "NewRevision", "Fetch", note).await;
        }
        Ancestry::Descendant | Ancestry::NotCompared => ctx.event(applyset, false, "NewRevision", "Fetch", moved).await,
    }
}

async fn publish_success_events(ctx: &Context, applyset: &ApplySet, done: &Done, was_ready: bool) {
    publish_revision_event(ctx, applyset, done).await;
    fn list(names: &[impl std::fmt::Display]) -> String {
        let shown: Vec<String> = names.iter().take(20).map(ToString::to_string).collect();
        let more = names.len().saturating_sub(shown.len());
        if more > 0 { format!("{} and {more} more", shown.join(", ")) } else { shown.join(", ") }
    }
    if !done.created.is_empty() || !done.configured.is_empty() {
        let mut parts = Vec::new();
        if !done.created.is_empty() {
            parts.push(format!("created: {}", list(&done.created)));
        }
        if !done.configured.is_empty() {
            parts.push(format!("configured: {}", list(&done.configured)));
        }
        ctx.event(applyset, false, "Applied", "Apply", format!("Revision {}: {}", done.revision, parts.join("; ")))
            .await;
    } else if !was_ready {
        ctx.event(applyset, false, reason::SUCCEEDED, "Reconcile", format!("Applied revision {}", done.revision)).await;
    }
    if !done.pruned.is_empty() {
        ctx.event(applyset, false, "Pruned", "Prune", format!("pruned: {}", list(&done.pruned))).await;
    }
    if !done.orphaned.is_empty() {
        let names: Vec<String> = done.orphaned.iter().map(|e| format!("{} {}{}", e.kind, e.name, place(e))).collect();
        let note = format!("left git and kept (a do-not-prune mark, see status.pruneSkipped): {}", list(&names));
        ctx.event(applyset, false, "Orphaned", "Prune", note).await;
    }
    if !done.prune_skipped.is_empty() || !done.prune_warnings.is_empty() {
        let lines: Vec<String> =
            done.prune_skipped.iter().map(describe_skipped).chain(done.prune_warnings.iter().cloned()).collect();
        ctx.event(applyset, true, "PruneSkipped", "Prune", format!("not pruned: {}", lines.join("; "))).await;
    }
    if !done.drifted.is_empty() {
        let (why, action) = if done.corrected {
            (reason::DRIFT_CORRECTED, "CorrectDrift")
        } else {
            (reason::DRIFT_DETECTED, "DetectDrift")
        };
        ctx.event(applyset, !done.corrected, why, action, describe_drift(&done.drifted)).await;
    }
    left_behind_events(ctx, applyset, done).await;
}

/// Stale and foreign fields: reported when they change (a steady report publishes nothing),
/// removed whenever a run removes some.
async fn left_behind_events(ctx: &Context, applyset: &ApplySet, done: &Done) {
    for (reason, event, removed_event) in [
        (Reason::Stale, "StaleFields", "StaleFieldsRemoved"),
        (Reason::Foreign, "ForeignFields", "ForeignFieldsRemoved"),
    ] {
        let only = |objects: &[DriftedObject]| -> Vec<DriftedObject> {
            objects
                .iter()
                .filter_map(|o| {
                    let fields: Vec<_> = o.fields.iter().filter(|f| f.reason == reason.as_str()).cloned().collect();
                    (!fields.is_empty()).then(|| DriftedObject { fields, ..o.clone() })
                })
                .collect()
        };
        let reported = only(&done.left_behind);
        if done.left_behind_changed && !reported.is_empty() {
            ctx.event(applyset, true, event, "DetectDrift", describe_drift(&reported)).await;
        }
        let removed = only(&done.removed);
        if !removed.is_empty() {
            ctx.event(applyset, false, removed_event, "CorrectDrift", describe_drift(&removed)).await;
        }
    }
    if !done.warnings.is_empty() {
        ctx.event(applyset, true, "HistoryUnavailable", "DetectDrift", done.warnings.join("; ")).await;
    }
}

/// ` in <namespace>` of a namespaced object, nothing for a cluster-scoped one.
fn place(entry: &InventoryObject) -> String {
    entry.namespace.as_ref().map(|ns| format!(" in {ns}")).unwrap_or_default()
}

/// `configmap/x in ns: NotInInventory (…)`.
pub(super) fn describe_skipped(entry: &InventoryObject) -> String {
    let message = entry.message.as_deref().unwrap_or_default();
    format!("{} {}{}: {} ({message})", entry.kind, entry.name, place(entry), entry.state)
}
