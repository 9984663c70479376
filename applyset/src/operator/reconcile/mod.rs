//! The reconcile of an ApplySet: [`reconcile`] handles the finalizer and decides whether a run
//! is due; a run is a `Reconciliation` value (`run.rs`) whose `run` calls the steps
//! (dependencies → fetch → load → apply → record → prune → health, one method each in
//! `steps/`); `publish.rs` turns its outcome into conditions, the status write, Events, metrics
//! and the next run; `cleanup.rs` is the deletion of an ApplySet. Each step that fails maps to one condition reason and one metric label
//! ([`Stage`]); nothing is pruned unless every earlier step succeeded, and the status is written
//! only when it changed.

mod cleanup;
mod error;
mod publish;
mod run;
mod steps;
#[cfg(test)]
pub(crate) mod tests;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::core::ApiResource;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{self, Event as FinalizerEvent};

use super::api::{ApplySet, ApplySetStatus, GROUP, KIND, PLURAL};
use super::context::Context;
use super::schedule::{Intervals, backoff};
use super::status::{self, READY};
use crate::causes::Chain;
use crate::keys::FINALIZER;
pub use error::{Cause, Stage, StepError};
use publish::Finish;
pub(super) use run::Reconciliation;
pub(crate) use run::{LocalCheckout, RunMode};
pub use steps::apply::SERVER_SIDE_MANAGER;
// The pieces of a run that `applyset build` and `applyset plan` run on a local checkout.
pub(crate) use steps::build::{BuildSettings, render, require_objects};

/// Errors the controller retries on its own schedule (the reconcile's outcome is in the status).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("writing the status of {key}")]
    Status { key: String, source: kube::Error },
    /// Adding or removing the finalizer failed.
    #[error("finalizer of {key}")]
    Finalizer { key: String, source: kube::Error },
    /// The object cannot carry a finalizer (no name, or an invalid finalizer value).
    #[error("finalizer of {key}: {what}")]
    FinalizerUnusable { key: String, what: &'static str },
    /// The member record kept outside the status could not be read or written.
    #[error("member record of {key}")]
    Record { key: String, source: crate::operator::members::RecordError },
    /// Deleting the ApplySet's objects did not finish.
    #[error("deleting the objects of {key}")]
    Cleanup { key: String, source: StepError },
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

pub(super) fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

/// The controller's entry point: finalizer handling, then `sync` or `cleanup`.
///
/// An ApplySet that carries the finalizer and is not being deleted goes straight to `sync`,
/// as kube's finalizer helper would send it. The helper's future holds room for the patches
/// it may send (about 6 KiB), and every due ApplySet's task holds its future while it waits
/// for its turn: a thousand due at once would hold 6 MB for nothing.
///
/// A new ApplySet (no status yet) gets the finalizer with its first parent write: the run's
/// KEP-3659 write, which comes before any object is applied, carries it (one write of the
/// ApplySet fewer for each new one; kube's helper would also end the reconcile there and make
/// the run wait for the patch's watch event). A deletion before that write finds nothing of
/// the ApplySet's applied. A run that ends before it (a fetch that failed, Report mode) writes
/// its status, and the reconcile of that write's watch event adds the finalizer on its own,
/// as it does for any ApplySet with a status and without it, before its run.
pub async fn reconcile(applyset: Arc<ApplySet>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    // A copy older than the controller's own last write (its watch event not in yet): the
    // event brings a reconcile of the newer copy; this one only makes sure of a retry.
    if ctx.written.is_behind(&applyset.key(), applyset.metadata.resource_version.as_deref()) {
        return Ok(Action::requeue(STORE_CATCH_UP));
    }
    if applyset.metadata.deletion_timestamp.is_none() {
        let finalizers = applyset.metadata.finalizers.as_deref().unwrap_or_default();
        if finalizers.iter().any(|f| f == FINALIZER) || applyset.status.is_none() {
            return sync(applyset, &ctx).await;
        }
        let applyset = Box::pin(add_finalizer(&applyset, &ctx)).await?;
        return sync(Arc::new(applyset), &ctx).await;
    }
    Box::pin(with_finalizer(applyset, ctx)).await
}

/// When a reconcile handed a copy older than the controller's own last write tries again (the
/// watch event of the write usually comes first and reconciles at once).
const STORE_CATCH_UP: Duration = Duration::from_millis(100);

/// Adds the finalizer as kube's helper does (a JSON patch whose `test` refuses it when the
/// finalizers changed meanwhile: the reconcile fails and is retried) and returns the ApplySet
/// the apiserver answered with.
async fn add_finalizer(applyset: &ApplySet, ctx: &Context) -> Result<ApplySet, ReconcileError> {
    let key = applyset.key();
    let Some(name) = applyset.metadata.name.as_deref() else {
        return Err(ReconcileError::FinalizerUnusable { key, what: "the object has no name" });
    };
    let operations = match applyset.metadata.finalizers.as_deref().unwrap_or_default() {
        [] => serde_json::json!([
            { "op": "test", "path": "/metadata/finalizers", "value": null },
            { "op": "add", "path": "/metadata/finalizers", "value": [FINALIZER] },
        ]),
        others => serde_json::json!([
            { "op": "test", "path": "/metadata/finalizers", "value": others },
            { "op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER },
        ]),
    };
    let patch: json_patch::Patch = serde_json::from_value(operations).expect("a JSON patch of fixed shape");
    let api: Api<ApplySet> = Api::namespaced(ctx.client.clone(), &applyset.namespace_or_default());
    let written = api
        .patch(name, &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
        .map_err(|source| ReconcileError::Finalizer { key: key.clone(), source })?;
    ctx.written.note(&key, written.metadata.resource_version.as_deref());
    Ok(written)
}

/// Once the ApplySet is being deleted: the cleanup and then the finalizer removed, by kube's
/// helper (nothing to do when it carries none).
async fn with_finalizer(applyset: Arc<ApplySet>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let api: Api<ApplySet> = Api::namespaced(ctx.client.clone(), &applyset.namespace_or_default());
    let key = applyset.key();
    finalizer::finalizer(&api, FINALIZER, applyset, |event| async {
        match event {
            FinalizerEvent::Apply(applyset) => sync(applyset, &ctx).await,
            FinalizerEvent::Cleanup(applyset) => cleanup::cleanup(applyset, &ctx).await,
        }
    })
    .await
    .map_err(|e| match e {
        finalizer::Error::ApplyFailed(inner) | finalizer::Error::CleanupFailed(inner) => inner,
        finalizer::Error::AddFinalizer(source) | finalizer::Error::RemoveFinalizer(source) => {
            ReconcileError::Finalizer { key, source }
        }
        finalizer::Error::UnnamedObject => ReconcileError::FinalizerUnusable { key, what: "the object has no name" },
        finalizer::Error::InvalidFinalizer => {
            ReconcileError::FinalizerUnusable { key, what: "the finalizer name is invalid" }
        }
    })
}

/// The first retry after an unexpected error, doubled at each failure in a row up to
/// [`ERROR_RETRY_MAX`].
const ERROR_RETRY: Duration = Duration::from_secs(15);
const ERROR_RETRY_MAX: Duration = Duration::from_secs(600);

/// Unexpected errors (status writes, finalizer patches): retry with a backoff, so that a write
/// the apiserver keeps refusing does not re-run the whole ApplySet every few seconds.
pub fn error_policy(applyset: Arc<ApplySet>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let next = backoff(ERROR_RETRY, ERROR_RETRY_MAX, ctx.schedule.failed(&applyset.key()));
    tracing::warn!(applyset = %applyset.key(), error = %Chain(&error), retry_in = ?next, "reconcile error");
    Action::requeue(next)
}

async fn sync(applyset: Arc<ApplySet>, ctx: &Context) -> Result<Action, ReconcileError> {
    let started = Instant::now();
    let key = applyset.key();
    let generation = applyset.metadata.generation;

    if applyset.spec.suspend {
        let (on_server, mut status) = statuses(&applyset);
        status::mark_suspended(&mut status, generation, &now());
        Box::pin(write_status(ctx, &applyset, &on_server, &mut status)).await?;
        ctx.metrics.reconcile_finished("suspended", started.elapsed());
        return Ok(Action::await_change());
    }
    let intervals = match Intervals::of(&applyset, ctx.settings.min_interval) {
        Ok(intervals) => intervals,
        Err(error) => {
            let (on_server, status) = statuses(&applyset);
            let failure = StepError::of(Stage::InvalidSpec, error);
            let finish = Finish { ctx, applyset: &applyset, written: &on_server, started };
            return Box::pin(finish.failed(status, failure, None)).await;
        }
    };
    // A status write or a repeated watch event must not start a new run before it is due; a
    // change to its objects made by someone else makes it due at once.
    let asked = ctx.schedule.take_request(&key);
    let drift_check = ctx.schedule.take_drift(&key);
    if !asked && !ctx.schedule.is_due(&key, generation, applyset.run_requests().as_deref()) {
        return Ok(Action::requeue(ctx.schedule.remaining(&key)));
    }

    // Runs of one namespace cannot keep another's waiting: each takes a fair turn. Every due
    // ApplySet waits here (a thousand at once when they fall due together), so what a run
    // holds is made after its turn comes, and its (large) future is allocated then; the rare
    // writes above are boxed too, or their futures would size every waiting one.
    let slot = ctx.schedule.slot(&applyset.namespace_or_default()).await;
    Box::pin(run_in_slot(applyset, ctx, slot, Turn { started, intervals, drift_check })).await
}

/// What [`sync`] decided before its run's turn came.
struct Turn {
    started: Instant,
    intervals: Intervals,
    drift_check: bool,
}

/// The status as on the server (what a status write is a patch from), and the one a run
/// builds from it (the reconcile request it handles recorded).
fn statuses(applyset: &ApplySet) -> (ApplySetStatus, ApplySetStatus) {
    let on_server = applyset.status.clone().unwrap_or_default();
    let mut status = on_server.clone();
    if let Some(requested) = applyset.reconcile_requested_at() {
        status.last_handled_reconcile_at = Some(requested.to_owned());
    }
    (on_server, status)
}

/// The run of a due ApplySet, once its turn (`_slot`) came.
async fn run_in_slot(
    applyset: Arc<ApplySet>,
    ctx: &Context,
    _slot: super::fair::Slot,
    turn: Turn,
) -> Result<Action, ReconcileError> {
    let Turn { started, intervals, drift_check } = turn;
    let (key, generation) = (applyset.key(), applyset.metadata.generation);
    let (on_server, mut status) = statuses(&applyset);
    let _running = ctx.schedule.start(&key);
    // The run works on the whole record of members, wherever it is kept.
    let previous = read_record(ctx, &applyset, on_server.clone()).await?;
    status.inventory.clone_from(&previous.inventory);
    let mut written = on_server.clone();
    // A new generation's run says `Reconciling` once it has gone on for a while (at once when
    // the setting is zero): a short run writes its status once, at its end.
    let mut progress = (previous.observed_generation != generation || status::condition(&previous, READY).is_none())
        .then(|| Progress::new(generation));
    if let Some(report) = progress.as_mut().filter(|_| ctx.settings.progress_report_after.is_zero()) {
        written = report.write(ctx, &applyset, &on_server, &previous).await?;
    }

    // One span per run: every log line of the run (and of each object it applies) carries the
    // ApplySet and, once fetched, the revision.
    let span = tracing::info_span!("reconcile", applyset = %key, revision = tracing::field::Empty);
    let mut reconciliation =
        Reconciliation::new(&applyset, ctx, &previous, status, intervals).checking_drift(drift_check);
    let outcome = {
        let mut run = std::pin::pin!(tracing::Instrument::instrument(reconciliation.run(), span));
        match progress.as_mut().filter(|report| report.at.is_none()) {
            None => run.await,
            Some(report) => match tokio::time::timeout(ctx.settings.progress_report_after, &mut run).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    // The run goes on whether or not its progress could be said.
                    match report.write(ctx, &applyset, &on_server, &previous).await {
                        Ok(status) => written = status,
                        Err(error) => {
                            tracing::warn!(applyset = %key, error = %Chain(&error), "the run's progress was not written")
                        }
                    }
                    run.await
                }
            },
        }
    };
    let mut status = reconciliation.into_status();
    if let Some(report) = &progress
        && let Some(at) = &report.at
    {
        // The run's status goes on from what the server holds: its conditions say Reconciling.
        report.mark(&mut status, at);
    }
    let finish = Finish { ctx, applyset: &applyset, written: &written, started };
    match outcome {
        Ok(done) => finish.succeeded(status, done, intervals).await,
        Err(failure) => finish.failed(status, failure, Some(intervals)).await,
    }
}

/// The `Reconciling` status of a new generation's run, written when the run starts or once it
/// has gone on for [`super::context::PROGRESS_REPORT_AFTER`].
struct Progress {
    message: String,
    generation: Option<i64>,
    /// When it was written, once it was.
    at: Option<Time>,
}

impl Progress {
    fn new(generation: Option<i64>) -> Self {
        let message = format!("Reconciling generation {}", generation.unwrap_or(0));
        Progress { message, generation, at: None }
    }

    /// Sets the conditions of a run in progress since `at` on `status`.
    fn mark(&self, status: &mut ApplySetStatus, at: &Time) {
        status::mark_progressing(status, &self.message, self.generation, at);
    }

    /// Writes the status in progress (the run's starting status: `previous` is its record of
    /// members); returns it as written (what the run's own write is a patch from).
    async fn write(
        &mut self,
        ctx: &Context,
        applyset: &ApplySet,
        on_server: &ApplySetStatus,
        previous: &ApplySetStatus,
    ) -> Result<ApplySetStatus, ReconcileError> {
        let at = now();
        let (_, mut status) = statuses(applyset);
        status.inventory.clone_from(&previous.inventory);
        self.mark(&mut status, &at);
        write_status(ctx, applyset, on_server, &mut status).await?;
        self.at = Some(at);
        Ok(status)
    }
}

/// `status` with the record of members it names read in. A record lost for good (a part
/// deleted or edited by hand) is said in a `MemberRecordLost` Event, and the run goes on
/// without it: nothing it named is pruned (such objects are reported in `pruneSkipped`).
async fn read_record(
    ctx: &Context,
    applyset: &ApplySet,
    mut status: ApplySetStatus,
) -> Result<ApplySetStatus, ReconcileError> {
    match ctx.records.read_into(&ctx.client, applyset, &mut status).await {
        Ok(()) => Ok(status),
        Err(error) if error.is_lost() => {
            let note = format!(
                "{}: objects it recorded are no longer pruned by this ApplySet (see status.pruneSkipped)",
                error.describe()
            );
            ctx.event(applyset, true, "MemberRecordLost", "Prune", note).await;
            if let Some(inventory) = &mut status.inventory {
                inventory.record = None;
                inventory.members = None;
            }
            Ok(status)
        }
        Err(source) => Err(ReconcileError::Record { key: applyset.key(), source }),
    }
}

/// `applyset plan`'s run: the steps of the controller's, on a local checkout under a client dry
/// run, with `ctx`'s identity ([`Context::for_plan`]); what it would do is in
/// [`Done::planned`](super::outcome::Done::planned).
pub(crate) async fn plan(
    applyset: &ApplySet,
    ctx: &Context,
    previous: &ApplySetStatus,
    checkout: LocalCheckout,
) -> Result<super::outcome::Done, StepError> {
    let intervals = Intervals::of(applyset, Duration::ZERO).map_err(|e| StepError::of(Stage::InvalidSpec, e))?;
    let mut reconciliation = Reconciliation::new(applyset, ctx, previous, previous.clone(), intervals)
        .in_mode(RunMode::Plan(Box::new(checkout)));
    reconciliation.run().await
}

/// The secrets of one ApplySet are registered in parts, each replaced on its own.
pub(super) const REDACT_PARTS: [&str; 4] = ["source", "manifests", "postbuild", "decryption"];

pub(super) fn redact_owner(applyset: &ApplySet, part: &str) -> String {
    format!("{}#{part}", applyset.key())
}

/// Writes the status subresource when it differs from `written` (timestamps aside), after
/// redacting its messages (in place, so that the caller keeps what was written).
///
/// The body is a JSON merge patch from `written` to `next`, so keys that disappeared (a
/// healed failure's inventory state, drifted objects that no longer drift) are removed on the
/// server too: a patch of `next` alone would keep them, and every later run would find the
/// status "changed" and write it again.
///
/// The ApplySet's `applyset_condition` series then follow the conditions of `next`.
pub(super) async fn write_status(
    ctx: &Context,
    applyset: &ApplySet,
    written: &ApplySetStatus,
    next: &mut ApplySetStatus,
) -> Result<(), ReconcileError> {
    status::redact(next);
    let record_error = |source| ReconcileError::Record { key: applyset.key(), source };
    let stale = ctx.records.store_from(&ctx.client, applyset, written, next).await.map_err(record_error)?;
    if !status::same_ignoring_time(written, next) {
        let api: Api<ApplySet> = Api::namespaced(ctx.client.clone(), &applyset.namespace_or_default());
        let patch = serde_json::json!({ "status": status::merge_patch(written, next) });
        // What changed is worth seeing when a status is written where none was expected (the
        // messages are redacted above).
        tracing::debug!(%patch, "writing the status");
        let written = api
            .patch_status(&applyset.name(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| ReconcileError::Status { key: applyset.key(), source })?;
        ctx.written.note(&applyset.key(), written.metadata.resource_version.as_deref());
        ctx.records.delete_parts(&ctx.client, applyset, &stale).await;
    }
    // `applyset_condition` says what the status says: every run's outcome (publish.rs), a
    // suspension, the start of a new generation; also when nothing changed (after a restart).
    ctx.metrics.set_conditions(&applyset.namespace_or_default(), &applyset.name(), &next.conditions);
    Ok(())
}
