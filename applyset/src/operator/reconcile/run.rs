//! One run of an ApplySet as a value: [`Reconciliation`] holds what every step needs (the
//! ApplySet, the controller's context, the status before and the one being built), and
//! [`Reconciliation::run`] reads as the reconcile does, one step a line. Each step is a method
//! in [`super::steps`] that fails with one [`StepError`] (its stage is the condition reason and
//! the metric label); nothing is pruned unless every earlier step succeeded.
//!
//! The run is the only place the steps are sequenced. Its [`RunMode`] says where the revision
//! comes from and whether anything is written: the controller's runs fetch and write;
//! `applyset plan` runs the same steps on a local checkout under a client dry run, and stops
//! where the run would start writing what it applied (its record, the prune, the health wait),
//! with what it would do.

use super::super::api::{ApplySet, ApplySetStatus, DriftMode};
use super::super::cache::ManagedCache;
use super::super::context::Context;
use super::super::outcome::Done;
use super::super::schedule::Intervals;
use super::super::status::{self, DRIFTED};
use super::steps::apply::ApplyInput;
use crate::apply::CrdKinds;
use crate::cluster::cache::{ObjectCache, WritesOnly};
use crate::operator::reconcile::StepError;
use crate::source::Artifact;

/// Where a run's revision comes from, and whether it writes.
pub(crate) enum RunMode {
    /// The controller's run: the revision fetched from git; applied, recorded and pruned for
    /// real; Events published.
    Sync,
    /// `applyset plan`: a local checkout, applied under a client dry run (GETs and LISTs
    /// only); the prune decided, not done. Nothing is written.
    Plan(Box<LocalCheckout>),
}

/// The local checkout a plan runs on.
pub(crate) struct LocalCheckout {
    /// Its revision, with `dir` (the ApplySet's directory) and `checkout` (the repository's
    /// root) as a fetch would give them.
    pub(crate) artifact: Artifact,
    /// What decrypts its SOPS files when not the Secret `spec.decryption` names
    /// (`--decryption-key`).
    pub(crate) decryption: Option<crate::manifest::decryption::Decryption>,
}

impl RunMode {
    /// Whether the run writes (the controller's) or only reads (a plan).
    pub(super) fn writes(&self) -> bool {
        matches!(self, RunMode::Sync)
    }
}

/// What a run knows of its ApplySet, and the status it builds (kept when a later step fails:
/// the revision attempted, the record of what was applied).
pub(in crate::operator) struct Reconciliation<'a> {
    pub(super) applyset: &'a ApplySet,
    pub(super) ctx: &'a Context,
    /// The status as the run found it.
    pub(super) previous: &'a ApplySetStatus,
    /// The status the run writes, success or failure.
    pub(super) status: ApplySetStatus,
    pub(super) intervals: Intervals,
    /// The run checks for drift someone else made (a watch event asked for it).
    pub(super) drift_check: bool,
    /// The watch cache of the cluster the run applies to (the controller's own until the
    /// cluster step chose a remote one).
    pub(super) cache: std::sync::Arc<ManagedCache>,
    /// The cluster the run applies to, once the cluster step chose it (the record says so).
    pub(super) cluster: Option<crate::cluster::ClusterIdentity>,
    /// The record's members live in another cluster (see `steps/moved.rs`): this run's record
    /// starts empty.
    pub(super) record_starts_empty: bool,
    pub(super) mode: RunMode,
}

impl<'a> Reconciliation<'a> {
    pub(in crate::operator) fn new(
        applyset: &'a ApplySet,
        ctx: &'a Context,
        previous: &'a ApplySetStatus,
        status: ApplySetStatus,
        intervals: Intervals,
    ) -> Self {
        let cache = ctx.cache.clone();
        Reconciliation {
            applyset,
            ctx,
            previous,
            status,
            intervals,
            drift_check: false,
            cache,
            cluster: None,
            record_starts_empty: false,
            mode: RunMode::Sync,
        }
    }

    /// The run's mode (the controller's [`RunMode::Sync`] unless said).
    pub(in crate::operator) fn in_mode(mut self, mode: RunMode) -> Self {
        self.mode = mode;
        self
    }

    /// The run was asked for by a change someone else made to a managed object.
    pub(in crate::operator) fn checking_drift(mut self, drift_check: bool) -> Self {
        self.drift_check = drift_check;
        self
    }

    /// Where the run reads live objects and prune candidates: the shared watch cache, except in
    /// a run someone asked for since the last one (a `reconcile` request, a webhook push), which
    /// reads from the apiserver (one LIST per kind and namespace) so that it sees a change made
    /// a moment before, even while that change's watch event is still on its way.
    pub(super) fn object_cache(&self) -> std::sync::Arc<dyn ObjectCache> {
        let handled = self.previous.last_handled_reconcile_at.as_deref();
        if reads_fresh(self.applyset.reconcile_requested_at(), handled) {
            std::sync::Arc::new(WritesOnly(self.cache.clone()))
        } else {
            self.cache.clone()
        }
    }

    /// The status built so far (after [`Reconciliation::run`]: the one to write).
    pub(in crate::operator) fn into_status(self) -> ApplySetStatus {
        self.status
    }

    /// webhook path → dependencies → fetch → cluster (a move noted) → variables → (inputs
    /// unchanged: done) → load → size check → history → apply → (a plan: what it would do) →
    /// record → prune → the previous cluster's objects → health.
    pub(in crate::operator) async fn run(&mut self) -> Result<Done, StepError> {
        if self.mode.writes() {
            self.webhook_path().await;
            self.dependencies().await?;
        }
        let fetched = self.fetch().await?;
        let local = self.local_cluster()?;
        let (cluster, remote_server) = self.cluster().await?;
        if self.mode.writes() {
            self.note_cluster(&cluster);
        }
        let mut variables = self.variables(&local).await?;
        if let Some(server) = remote_server {
            // Another cluster behind the same Secret is a new target: everything is applied there.
            variables.digest = format!("{}-{}", variables.digest, crate::digest::short_sha256(&server));
        }
        if let Some(done) = self.inputs_unchanged(&fetched.artifact, &variables.digest) {
            return Ok(done);
        }
        let loaded = self.load(&cluster, &fetched.artifact, variables.values).await?;
        self.check_record_fits(&loaded)?;
        let ignore = self.ignore_rules()?;
        let history = self.history(&fetched, &loaded).await;
        let mode = self.apply_mode(&fetched.artifact, &variables.digest);
        let mut run = self.begin_run(&cluster).await?;
        let revision = fetched.artifact.revision.clone();
        // A plan cannot create CRDs: it tells the kinds they define (their objects are created).
        let crd_kinds = (!self.mode.writes()).then(|| CrdKinds::of(&loaded, &self.applyset.namespace_or_default()));
        let input = ApplyInput { loaded, ignore, history: history.index, mode, revision };
        let report = self.apply(&cluster, &mut run, input).await?;
        if !self.mode.writes() {
            return Ok(self
                .planned(&cluster, &run, report, crd_kinds.unwrap_or_default(), &fetched.artifact.revision)
                .await);
        }
        let mut done = self.record(&report, mode, &fetched.artifact).await?;
        done.warnings = history.warnings;
        done.applied_digest = variables.digest;
        done.inputs = fetched.artifact.inputs.clone();
        if mode.prunes(self.applyset) {
            self.prune(&cluster, &mut run, &report, &mut done).await?;
        }
        if !mode.report_only {
            self.finish_move().await;
        }
        self.health(&cluster, run.parent().id(), &report, &mut done).await?;
        Ok(done)
    }

    /// How this run applies ([`Mode::of`]); a plan is of its checkout as a new revision, which
    /// the run it previews applies for real (a Report-mode ApplySet's too).
    fn apply_mode(&self, artifact: &Artifact, digest: &str) -> Mode {
        match self.mode {
            RunMode::Sync => Mode::of(self.applyset, self.previous, artifact, digest),
            RunMode::Plan(_) => Mode { steady: false, report_only: false },
        }
    }
}

/// Whether a run handles a request made since the last run (`requestedAt` differs from what
/// the status says was handled), and so reads live objects from the apiserver.
pub(super) fn reads_fresh(requested: Option<&str>, handled: Option<&str>) -> bool {
    requested.is_some() && requested != handled
}

/// Whether this run re-applies what was applied before (any change now is drift), and whether
/// it only reports drift (a server dry run).
#[derive(Clone, Copy, Debug)]
pub(super) struct Mode {
    pub(super) steady: bool,
    pub(super) report_only: bool,
}

impl Mode {
    /// Steady: this revision, with the spec fields that shape the apply, was applied in full
    /// before. Both are recorded only by successful runs, so a failed run in between (a git
    /// server away for a while) does not make a Report-mode run apply for real, nor hide
    /// corrected drift as a plain apply; and a spec change that does not shape the apply (the
    /// interval) does not either.
    pub(super) fn of(applyset: &ApplySet, previous: &ApplySetStatus, artifact: &Artifact, digest: &str) -> Mode {
        let steady = previous.last_applied_revision.as_deref() == Some(artifact.revision.as_str())
            && match previous.last_applied_spec_digest.as_deref() {
                Some(previous_digest) => previous_digest == digest,
                None => status::condition(previous, DRIFTED)
                    .is_some_and(|c| c.observed_generation == applyset.metadata.generation),
            };
        Mode { steady, report_only: steady && applyset.spec.drift.mode == DriftMode::Report }
    }

    /// Prune runs after a real apply of an ApplySet that prunes.
    fn prunes(self, applyset: &ApplySet) -> bool {
        !self.report_only && applyset.spec.prune
    }
}

#[cfg(test)]
mod tests {
    use super::reads_fresh;

    #[test]
    fn only_a_request_not_handled_yet_reads_from_the_apiserver() {
        assert!(reads_fresh(Some("2026-11-26T10:00:00Z"), None), "the first request");
        assert!(reads_fresh(Some("2026-11-26T10:05:00Z"), Some("2026-11-26T10:00:00Z")), "a new request");
        assert!(!reads_fresh(Some("2026-11-26T10:00:00Z"), Some("2026-11-26T10:00:00Z")), "handled before");
        assert!(!reads_fresh(None, None), "an interval or drift-triggered run reads the cache");
        assert!(!reads_fresh(None, Some("2026-11-26T10:00:00Z")), "the annotation removed");
    }
}
