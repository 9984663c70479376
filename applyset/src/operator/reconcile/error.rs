//! Why a step failed, typed: [`StepError`] carries the step's [`Stage`] (the condition reason
//! and the bounded metric label; both live here, their one home), the condition message (its `Display`), and the error of the
//! module it came from as its source, so the cause chain reaches the log intact. Decisions are
//! made on the stage and on typed causes, never on the message text.

use std::sync::Arc;

use crate::causes::with_causes;

/// Where a reconcile failed: one condition reason and one metric label each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The spec cannot work as written (bad interval, ref, URL, ignore rule): no retry helps.
    InvalidSpec,
    Fetch,
    /// The source's kustomization did not build.
    Build,
    Load,
    Apply,
    /// Objects of the source belong to another ApplySet (and nothing else failed).
    OwnershipConflict,
    Prune,
    /// `spec.pruneGuard` stopped the prune (everything was applied).
    PruneGuarded,
    Delete,
    /// What the ApplySet waits for failed, or was not healthy within `healthTimeout`.
    HealthCheck,
    /// A `spec.dependsOn` ApplySet is not Ready: nothing was fetched or applied.
    DependencyNotReady,
    /// `spec.dependsOn` makes a cycle: no run can ever start (`Stalled`).
    DependencyCycle,
    /// The spec refers to another namespace and the controller forbids it
    /// (`--no-cross-namespace-refs`): no retry helps (`Stalled`).
    AccessDenied,
    /// The source has more objects than the status can record for prune: nothing is applied
    /// (`Stalled` until a commit or the spec makes it smaller; retried at the backoff).
    InventoryTooLarge,
}

impl Stage {
    /// Every stage (for exporting each `applyset_reconcile_total` result from the start).
    pub const ALL: [Stage; 14] = [
        Stage::InvalidSpec,
        Stage::Fetch,
        Stage::Build,
        Stage::Load,
        Stage::Apply,
        Stage::OwnershipConflict,
        Stage::Prune,
        Stage::PruneGuarded,
        Stage::Delete,
        Stage::HealthCheck,
        Stage::DependencyNotReady,
        Stage::DependencyCycle,
        Stage::AccessDenied,
        Stage::InventoryTooLarge,
    ];

    pub fn reason(self) -> &'static str {
        match self {
            Stage::InvalidSpec => crate::operator::status::reason::INVALID_SPEC,
            Stage::Fetch => crate::operator::status::reason::FETCH_FAILED,
            Stage::Build => crate::operator::status::reason::BUILD_FAILED,
            Stage::Load => crate::operator::status::reason::LOAD_FAILED,
            Stage::Apply => crate::operator::status::reason::APPLY_FAILED,
            Stage::OwnershipConflict => crate::operator::status::reason::OWNERSHIP_CONFLICT,
            Stage::Prune => crate::operator::status::reason::PRUNE_FAILED,
            Stage::PruneGuarded => crate::operator::status::reason::PRUNE_GUARDED,
            Stage::Delete => crate::operator::status::reason::DELETE_FAILED,
            Stage::HealthCheck => crate::operator::status::reason::HEALTH_CHECK_FAILED,
            Stage::DependencyNotReady => crate::operator::status::reason::DEPENDENCY_NOT_READY,
            Stage::DependencyCycle => crate::operator::status::reason::DEPENDENCY_CYCLE,
            Stage::AccessDenied => crate::operator::status::reason::ACCESS_DENIED,
            Stage::InventoryTooLarge => crate::operator::status::reason::INVENTORY_TOO_LARGE,
        }
    }

    /// The `result` label of `applyset_reconcile_total`.
    pub fn metric_label(self) -> &'static str {
        match self {
            Stage::InvalidSpec => "invalid_spec",
            Stage::Fetch => "fetch_failed",
            Stage::Build => "build_failed",
            Stage::Load => "load_failed",
            Stage::Apply => "apply_failed",
            Stage::OwnershipConflict => "ownership_conflict",
            Stage::Prune => "prune_failed",
            Stage::PruneGuarded => "prune_guarded",
            Stage::Delete => "delete_failed",
            Stage::HealthCheck => "health_check_failed",
            Stage::DependencyNotReady => "dependency_not_ready",
            Stage::DependencyCycle => "dependency_cycle",
            Stage::AccessDenied => "access_denied",
            Stage::InventoryTooLarge => "inventory_too_large",
        }
    }

    /// No run can succeed until the spec (or the controller's settings) changes: `Stalled`,
    /// and no retry until then.
    pub fn stalls(self) -> bool {
        matches!(self, Stage::InvalidSpec | Stage::AccessDenied | Stage::DependencyCycle | Stage::InventoryTooLarge)
    }

    /// Not retried at all until the ApplySet changes: the spec is what fails (a dependency
    /// cycle and a too-large source are retried at the backoff, as other ApplySets or a commit
    /// can heal them).
    pub fn awaits_spec_change(self) -> bool {
        matches!(self, Stage::InvalidSpec | Stage::AccessDenied)
    }
}

/// A failed step of a run.
#[derive(Debug, Clone)]
pub struct StepError {
    pub stage: Stage,
    /// The condition message (and the Event's note): what failed, named, and what it means
    /// for the run ("nothing was applied or pruned").
    pub message: String,
    /// The typed error behind it, when a module produced one (shared: a failure is cloned
    /// into the status and the Event).
    pub cause: Option<Arc<Cause>>,
}

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StepError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_deref().map(|cause| cause as &(dyn std::error::Error + 'static))
    }
}

/// The error of the module a step called.
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    #[error(transparent)]
    Source(#[from] crate::source::SourceError),
    #[error(transparent)]
    Load(#[from] crate::manifest::LoadError),
    #[error(transparent)]
    Build(#[from] crate::manifest::kustomize::BuildError),
    #[error(transparent)]
    Apply(#[from] crate::apply::Fatal),
    #[error(transparent)]
    ApplySet(#[from] crate::applyset::Error),
    #[error(transparent)]
    Cluster(#[from] crate::cluster::Error),
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Health(#[from] crate::health::cel::CompileError),
    #[error(transparent)]
    Intervals(#[from] crate::operator::schedule::IntervalError),
    #[error(transparent)]
    IgnoreRule(#[from] crate::operator::drift::IgnoreRuleError),
    #[error(transparent)]
    HashKey(#[from] crate::operator::secret_key::HashKeyError),
    #[error(transparent)]
    Remote(#[from] crate::operator::remote::RemoteError),
}

impl StepError {
    /// A failure the step itself judged (a guard, a spec field, a dependency): no cause.
    pub fn new(stage: Stage, message: impl Into<String>) -> StepError {
        StepError { stage, message: message.into(), cause: None }
    }

    /// A failure a module reported: `message` says it in the condition's words, `cause` keeps
    /// the module's error.
    pub fn caused(stage: Stage, message: impl Into<String>, cause: impl Into<Cause>) -> StepError {
        StepError { stage, message: message.into(), cause: Some(Arc::new(cause.into())) }
    }

    /// A failure whose message is the cause's own text.
    pub fn of(stage: Stage, cause: impl Into<Cause>) -> StepError {
        let cause = cause.into();
        StepError { stage, message: with_causes(&cause), cause: Some(Arc::new(cause)) }
    }
}

impl Cause {
    /// The module the cause came from (a bounded label for logs).
    pub fn module(&self) -> &'static str {
        match self {
            Cause::Source(_) => "source",
            Cause::Load(_) => "manifest",
            Cause::Build(_) => "kustomize",
            Cause::Apply(_) => "apply",
            Cause::ApplySet(_) => "applyset",
            Cause::Cluster(_) => "cluster",
            Cause::Kube(_) => "kube",
            Cause::Health(_) => "health",
            Cause::Intervals(_) | Cause::IgnoreRule(_) => "spec",
            Cause::HashKey(_) => "secret_key",
            Cause::Remote(_) => "remote",
        }
    }
}

impl StepError {
    /// The causes below the message, each as its module says it (for the log: the condition
    /// message may have rephrased them).
    pub fn causes(&self) -> Vec<String> {
        crate::causes::causes(self).map(ToString::to_string).collect()
    }
}

/// Two failures are the same failure when they say the same thing at the same step (what the
/// status and its Event compare).
impl PartialEq for StepError {
    fn eq(&self, other: &StepError) -> bool {
        self.stage == other.stage && self.message == other.message
    }
}

impl Eq for StepError {}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn the_message_is_the_condition_and_the_cause_is_kept() {
        let cause = crate::cluster::Error::Config("cannot read kubeconfig".into());
        let failure = StepError::caused(Stage::Apply, "connecting as team-a/deployer: cannot read kubeconfig", cause);
        assert_eq!(failure.to_string(), "connecting as team-a/deployer: cannot read kubeconfig");
        let source = failure.source().expect("the cause");
        assert!(matches!(source.downcast_ref::<Cause>(), Some(Cause::Cluster(_))), "{source:?}");
        assert_eq!(
            StepError::new(Stage::Apply, "x"),
            StepError::of(Stage::Apply, crate::cluster::Error::Config("x".into()))
        );
        assert!(StepError::new(Stage::Load, "y").source().is_none());
    }
}
