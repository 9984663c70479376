//! One reconcile of an ApplySet, top to bottom: fetch → load → apply → prune → drift → status.
//! Each step that fails maps to one condition reason ([`Stage`]); nothing is pruned unless
//! every earlier step succeeded, and the status is written only when it changed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::core::ApiResource;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{self, Event as FinalizerEvent};

use super::api::DriftedObject;
use super::api::{ApplySet, ApplySetStatus, DeletionPolicy, FINALIZER, GROUP, KIND, PLURAL};
use super::context::Context;
use super::outcome::{Done, describe_drift, set_drift_condition};
use super::prune;
use super::schedule::{Intervals, backoff, with_jitter};
use super::status::{self, Failure, READY, Stage, reason};
use super::waiting::Verdict;
use crate::apply::DryRun;
use crate::applyset::{ParentWrites, Run};
use crate::fields::Reason;
use crate::redact;
use crate::source::{Ancestry, CacheKey};

/// Errors the controller retries on its own schedule (the reconcile's outcome is in the status).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("writing the status of {key}: {source}")]
    Status { key: String, source: kube::Error },
    #[error("finalizer: {0}")]
    Finalizer(String),
    #[error("{0}")]
    Cleanup(String),
}

pub fn api_resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: "v1alpha1".into(),
        api_version: format!("{GROUP}/v1alpha1"),
        kind: KIND.into(),
        plural: PLURAL.into(),
    }
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

/// The controller's entry point: finalizer handling, then `sync` or `cleanup`.
pub async fn reconcile(applyset: Arc<ApplySet>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let api: Api<ApplySet> = Api::namespaced(ctx.client.clone(), &applyset.namespace_or_default());
    finalizer::finalizer(&api, FINALIZER, applyset, |event| async {
        match event {
            FinalizerEvent::Apply(applyset) => sync(applyset, &ctx).await,
            FinalizerEvent::Cleanup(applyset) => cleanup(applyset, &ctx).await,
        }
    })
    .await
    .map_err(|e| match e {
        finalizer::Error::ApplyFailed(inner) | finalizer::Error::CleanupFailed(inner) => inner,
        other => ReconcileError::Finalizer(other.to_string()),
    })
}

/// The first retry after an unexpected error, doubled at each failure in a row up to
/// [`ERROR_RETRY_MAX`].
const ERROR_RETRY: Duration = Duration::from_secs(15);
const ERROR_RETRY_MAX: Duration = Duration::from_secs(600);

/// Unexpected errors (status writes, finalizer patches): retry with a backoff, so that a write
/// the apiserver keeps refusing does not re-run the whole ApplySet every few seconds.
pub fn error_policy(applyset: Arc<ApplySet>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let next = backoff(ERROR_RETRY, ERROR_RETRY_MAX, ctx.failed(&applyset.key()));
    tracing::warn!(applyset = %applyset.key(), %error, retry_in = ?next, "reconcile error");
    Action::requeue(next)
}

async fn sync(applyset: Arc<ApplySet>, ctx: &Context) -> Result<Action, ReconcileError> {
    let started = Instant::now();
    let key = applyset.key();
    let generation = applyset.metadata.generation;
    let previous = applyset.status.clone().unwrap_or_default();
    let mut status = previous.clone();
    if let Some(requested) = applyset.reconcile_requested_at() {
        status.last_handled_reconcile_at = Some(requested.to_owned());
    }

    if applyset.spec.suspend {
        status::mark_suspended(&mut status, generation, &now());
        write_status(ctx, &applyset, &previous, &mut status).await?;
        ctx.metrics.reconcile_finished("suspended", started.elapsed());
        return Ok(Action::await_change());
    }
    let intervals = match Intervals::of(&applyset, ctx.settings.min_interval) {
        Ok(intervals) => intervals,
        Err(message) => {
            let failure = Failure::new(Stage::InvalidSpec, message);
            return finish_failed(ctx, &applyset, &previous, status, failure, started, None).await;
        }
    };
    // A status write or a repeated watch event must not start a new run before it is due; a
    // change to its objects made by someone else makes it due at once.
    let drift_check = ctx.take_run_request(&key);
    if !drift_check && !ctx.is_due(&key, generation, applyset.run_requests().as_deref()) {
        return Ok(Action::requeue(ctx.remaining(&key)));
    }

    let mut written = previous.clone();
    if previous.observed_generation != generation || status::condition(&previous, READY).is_none() {
        let message = format!("Reconciling generation {}", generation.unwrap_or(0));
        status::mark_progressing(&mut status, &message, generation, &now());
        write_status(ctx, &applyset, &previous, &mut status).await?;
        written = status.clone();
    }

    // One span per run: every log line of the run (and of each object it applies) carries the
    // ApplySet and, once fetched, the revision.
    let span = tracing::info_span!("reconcile", applyset = %key, revision = tracing::field::Empty);
    let run = tracing::Instrument::instrument(
        super::pipeline::pipeline(&applyset, ctx, &previous, &mut status, intervals),
        span,
    );
    match run.await {
        Ok(done) => {
            let now = now();
            let (applied, drifted, failed) = done.counts;
            ctx.metrics.set_objects(&key, applied, drifted, failed);
            let mut message = format!("Applied revision: {}", done.revision);
            if !done.drifted.is_empty() && !done.corrected {
                message.push_str(&format!(" ({} object(s) drifted)", done.drifted.len()));
            }
            if let Some(note) = history_note(&done) {
                message.push_str(&format!(" ({note})"));
            }
            let health = health_outcome(&mut status, &done, &message, generation, &now);
            set_drift_condition(&mut status, &done, generation, &now);
            status.last_applied_revision = Some(done.revision.clone());
            status.applied_revisions = super::history::record_applied(
                &previous.applied_revisions,
                &done.revision,
                applyset.spec.source.path.as_deref(),
            );
            status.last_applied_spec_digest = Some(done.applied_digest.clone());
            let was_ready = status::condition(&written, READY).is_some_and(|c| c.status == "True");
            let health_before = status::condition(&written, READY).map(|c| (c.reason.clone(), c.message.clone()));
            write_status(ctx, &applyset, &written, &mut status).await?;
            // A run that waits for health says "Succeeded" once, when it is healthy.
            publish_success_events(ctx, &applyset, &done, was_ready || health.is_some()).await;
            let next = match health {
                Some(HealthOutcome::Waiting(until)) => {
                    ctx.metrics.reconcile_finished("waiting", started.elapsed());
                    with_jitter(intervals.interval).min(until)
                }
                Some(HealthOutcome::Failed(message)) => {
                    let after = status::condition(&status, READY).map(|c| (c.reason.clone(), c.message.clone()));
                    if health_before != after {
                        ctx.event(&applyset, true, reason::HEALTH_CHECK_FAILED, "HealthCheck", message).await;
                    }
                    ctx.metrics.reconcile_finished(Stage::HealthCheck.metric_label(), started.elapsed());
                    with_jitter(intervals.interval)
                }
                None => {
                    ctx.succeeded(&key);
                    ctx.metrics.reconcile_finished("success", started.elapsed());
                    ctx.metrics.sync_succeeded(now.0.as_second() as f64);
                    if !was_ready {
                        // Its dependants waited for this: they run now, not at their interval.
                        for dependant in super::dependencies::dependants(&key, &ctx.applysets().await) {
                            ctx.run_now(&dependant);
                        }
                    }
                    with_jitter(intervals.interval)
                }
            };
            ctx.ran(&key, generation, applyset.run_requests().as_deref(), next);
            Ok(Action::requeue(next))
        }
        Err(failure) => finish_failed(ctx, &applyset, &written, status, failure, started, Some(intervals)).await,
    }
}

async fn finish_failed(
    ctx: &Context,
    applyset: &ApplySet,
    written: &ApplySetStatus,
    mut status: ApplySetStatus,
    failure: Failure,
    started: Instant,
    intervals: Option<Intervals>,
) -> Result<Action, ReconcileError> {
    let key = applyset.key();
    let generation = applyset.metadata.generation;
    let before = status::condition(written, READY).map(|c| (c.reason.clone(), c.message.clone()));
    status::mark_failed(&mut status, &failure, generation, &now());
    write_status(ctx, applyset, written, &mut status).await?;
    let after = status::condition(&status, READY).map(|c| (c.reason.clone(), c.message.clone()));
    // One Event per distinct failure, not one per retry.
    if before != after {
        ctx.event(applyset, true, failure.stage.reason(), "Reconcile", failure.message.clone()).await;
    }
    tracing::warn!(applyset = %key, reason = failure.stage.reason(), message = %failure.message, "reconcile failed");
    ctx.metrics.reconcile_finished(failure.stage.metric_label(), started.elapsed());
    let failures = ctx.failed(&key);
    let Some(intervals) = intervals.filter(|_| !matches!(failure.stage, Stage::InvalidSpec | Stage::AccessDenied))
    else {
        return Ok(Action::await_change());
    };
    let next = backoff(intervals.retry, intervals.interval, failures);
    ctx.ran(&key, generation, applyset.run_requests().as_deref(), next);
    Ok(Action::requeue(next))
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
            let failure = Failure::new(Stage::HealthCheck, format!("{applied}, but {message}"));
            status::mark_failed(status, &failure, generation, now);
            Some(HealthOutcome::Failed(failure.message))
        }
    }
}

/// The secrets of one ApplySet are registered in parts, each replaced on its own.
const REDACT_PARTS: [&str; 3] = ["source", "manifests", "postbuild"];

pub(super) fn redact_owner(applyset: &ApplySet, part: &str) -> String {
    format!("{}#{part}", applyset.key())
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
    let list = |names: &[String]| {
        let shown: Vec<&str> = names.iter().take(20).map(String::as_str).collect();
        let more = names.len().saturating_sub(shown.len());
        if more > 0 { format!("{} and {more} more", shown.join(", ")) } else { shown.join(", ") }
    };
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
        let note =
            format!("left git and kept (a do-not-prune mark, see status.pruneSkipped): {}", list(&done.orphaned));
        ctx.event(applyset, false, "Orphaned", "Prune", note).await;
    }
    if !done.prune_skipped.is_empty() {
        ctx.event(applyset, true, "PruneSkipped", "Prune", format!("not pruned: {}", done.prune_skipped.join("; ")))
            .await;
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

/// Writes the status subresource when it differs from `written` (timestamps aside), after
/// redacting its messages (in place, so that the caller keeps what was written).
///
/// The body is a JSON merge patch from `written` to `next`, so keys that disappeared (a
/// healed failure's inventory state, drifted objects that no longer drift) are removed on the
/// server too: a patch of `next` alone would keep them, and every later run would find the
/// status "changed" and write it again.
async fn write_status(
    ctx: &Context,
    applyset: &ApplySet,
    written: &ApplySetStatus,
    next: &mut ApplySetStatus,
) -> Result<(), ReconcileError> {
    status::redact(next);
    if status::same_ignoring_time(written, next) {
        return Ok(());
    }
    let api: Api<ApplySet> = Api::namespaced(ctx.client.clone(), &applyset.namespace_or_default());
    let patch = serde_json::json!({ "status": status::merge_patch(written, next) });
    api.patch_status(&applyset.name(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
        .map_err(|source| ReconcileError::Status { key: applyset.key(), source })
}

/// How long deletion waits for each stage's objects to be gone: the ApplySet's timeout.
fn deletion_timeout(applyset: &ApplySet) -> std::time::Duration {
    let timeout = applyset.spec.timeout.as_deref().and_then(|t| super::duration::parse(t).ok());
    timeout.unwrap_or(std::time::Duration::from_secs(120))
}

/// Deleting an ApplySet: prune every object it recorded (or orphan them), then drop the git
/// cache. A failure keeps the finalizer and is retried.
async fn cleanup(applyset: Arc<ApplySet>, ctx: &Context) -> Result<Action, ReconcileError> {
    let key = applyset.key();
    let namespace = applyset.namespace_or_default();
    if applyset.deletion_policy() == DeletionPolicy::Delete && !applyset.spec.suspend {
        let service_account = ctx.service_account_for(&applyset);
        let cluster = ctx
            .cluster_for(&namespace, service_account.as_deref())
            .map_err(|e| ReconcileError::Cleanup(e.to_string()))?;
        let index = ctx.api_index(&cluster, true).await.map_err(ReconcileError::Cleanup)?;
        let labels = applyset.metadata.labels.clone().unwrap_or_default();
        let annotations = applyset.metadata.annotations.clone().unwrap_or_default();
        let (parent, _) = super::pipeline::parent_for(&applyset, &index, &labels, &annotations)
            .map_err(|f| ReconcileError::Cleanup(f.message))?;
        let writes = ParentWrites::Owned { client: ctx.client.clone(), labels, annotations };
        let run = Run::new(&cluster, parent, writes, DryRun::None);
        let members = applyset.status.as_ref().and_then(|s| s.inventory.as_ref()).and_then(|i| i.members.clone());
        let scope = prune::Scope {
            members: members.as_deref().unwrap_or_default(),
            had_record: members.is_some(),
            own_namespace: &namespace,
            prune_non_empty_namespaces: applyset.spec.prune_non_empty_namespaces,
            // Deleting the ApplySet deletes what it manages, however much that is.
            guard: None,
            deadline: std::time::Instant::now() + deletion_timeout(&applyset),
        };
        let pruned = prune::prune(&run, &index, &[], scope, &applyset.delete_options()).await;
        ctx.metrics.pruned(pruned.deleted.len() as u64);
        let not_yet = pruned.error.clone().or_else(|| {
            (!pruned.terminating.is_empty())
                .then(|| format!("still being deleted, held by finalizers: {}", pruned.terminating.join(", ")))
        });
        if let Some(message) = not_yet {
            ctx.event(&applyset, true, reason::DELETE_FAILED, "Delete", message.clone()).await;
            return Err(ReconcileError::Cleanup(format!("deleting the objects of {key}: {message}")));
        }
        if !pruned.deleted.is_empty() {
            ctx.event(
                &applyset,
                false,
                "Pruned",
                "Delete",
                format!("deleted with the ApplySet: {}", pruned.deleted.join(", ")),
            )
            .await;
        }
        let skipped: Vec<String> = pruned.skipped.iter().map(super::pipeline::describe_skipped).collect();
        if !skipped.is_empty() {
            ctx.event(&applyset, true, "PruneSkipped", "Delete", format!("left in place: {}", skipped.join("; ")))
                .await;
        }
    }
    ctx.history.forget(&key);
    if let Err(error) = ctx.git.purge(&CacheKey::new(&namespace, applyset.name())).await {
        tracing::warn!(applyset = %key, %error, "cannot remove the git cache");
    }
    ctx.metrics.forget(&key);
    ctx.forget(&key);
    for part in REDACT_PARTS {
        redact::forget(&redact_owner(&applyset, part));
    }
    Ok(Action::await_change())
}
