//! How a run applies: the options of `kubectl apply` this tool supports, the controller's own
//! (ownership, patch filter), and the words kubectl prints for each outcome.

use std::time::Duration;

use applyset_merge::Value;

use crate::cluster::WriteParams;

use crate::cluster::DryRun;

/// How a run applies.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    pub dry_run: DryRun,
    /// Delete and re-create an object whose patch fails with Conflict or Invalid.
    pub force: bool,
    /// `--overwrite` (kubectl's default true): false makes a strategic merge patch that would
    /// overwrite a change made to the live object since the last apply fail.
    pub overwrite: bool,
    pub field_manager: String,
    /// `Strict` (kubectl's default), `Warn` or `Ignore`.
    pub field_validation: String,
    /// `-n` when given explicitly.
    pub namespace: Option<String>,
    /// The namespace for objects without one when `namespace` is not given (instead of the
    /// kubeconfig context's); unlike `namespace`, objects may name another.
    pub default_namespace: Option<String>,
    /// Objects in flight at once.
    pub concurrency: usize,
    /// Value of the `applyset.kubernetes.io/part-of` label to add to every object.
    pub applyset_label: Option<String>,
    /// How long to wait for an applied CRD to become `Established`.
    pub crd_timeout: Duration,
    /// How long `--force` waits for a deleted object to disappear.
    pub force_timeout: Duration,
    /// What of each object's computation the report keeps ([`Keep`]).
    pub keep_results: Keep,
    /// Removes parts of each computed patch before it is sent (fields other controllers own).
    pub patch_filter: Option<PatchFilter>,
    /// Live objects read from a watch cache instead of the stage's LISTs (the controller's),
    /// and the writes reported back to it.
    pub cache: Option<crate::cluster::cache::CacheRef>,
    /// Finds the fields kubectl's patch would leave behind (stale, foreign) and may have the
    /// patch remove them; its findings are kept in each object's details.
    pub field_policy: Option<FieldPolicyRef>,
    /// The field manager of server-side apply for an object whose last-applied annotation would
    /// exceed the apiserver's limit; `None`: such an object fails, as with kubectl.
    pub server_side_fallback: Option<String>,
    /// With the fallback: force conflicts on every field of the manifest, not only those the
    /// live object gives to this tool's managers. The controller sets it when it re-applies a
    /// revision it applied before: every field of it was the ApplySet's, so a field another
    /// manager took since is drift to correct.
    pub server_side_force: bool,
    /// What the last-applied annotation records (kubectl's copy of the manifest when `None`).
    pub last_applied: Option<super::last_applied::LastAppliedCodecRef>,
    /// Whether an object that another ApplySet's `part-of` label claims is taken over.
    pub ownership: Ownership,
    /// What a live last-applied annotation that is not a JSON object does.
    pub unusable_last_applied: UnusableLastApplied,
}

/// What to do with a live object whose last-applied annotation is not a JSON object (invalid
/// JSON, or JSON of another type): anyone who may patch the object can write one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum UnusableLastApplied {
    /// kubectl's behaviour: the object fails, and keeps failing until the annotation is fixed.
    #[default]
    Fail,
    /// The controller's: the annotation is treated as absent (the patch is computed from the
    /// manifest and the live object, as for an object without one, and writes the annotation
    /// anew); the object's details say so ([`super::Details::last_applied_discarded`]). One
    /// object's annotation must not fail the run, and with it hold back the set's prune.
    TreatAsAbsent,
}

/// What to do with an object whose live `applyset.kubernetes.io/part-of` label names another
/// ApplySet than [`ApplyOptions::applyset_label`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ownership {
    /// kubectl's behaviour: the apply relabels it.
    #[default]
    Adopt,
    /// The controller's: the object fails with [`super::ObjectError::conflict_with`] set,
    /// unless its manifest carries [`crate::keys::TAKE_OWNERSHIP_ANNOTATION`]` = "true"`. Two
    /// ApplySets that list the same object would otherwise take it from each other at every
    /// interval, and the one that stops listing it would delete it while the other still
    /// declares it.
    RefuseOtherSets,
}

/// Called with (manifest, live object, computed patch) for every object that exists; may
/// remove parts of the patch. An emptied patch sends nothing.
#[derive(Clone)]
pub struct PatchFilter(pub std::sync::Arc<PatchFilterFn>);

/// (manifest, live object, computed patch) → the patch with parts removed.
pub type PatchFilterFn = dyn Fn(&Value, &Value, &mut Value) + Send + Sync;

impl std::fmt::Debug for PatchFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PatchFilter")
    }
}

/// A shared [`crate::fields::FieldPolicy`].
#[derive(Clone)]
pub struct FieldPolicyRef(pub std::sync::Arc<dyn crate::fields::FieldPolicy>);

impl std::fmt::Debug for FieldPolicyRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FieldPolicy")
    }
}

/// What the report keeps of each object's computation ([`super::Details`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Keep {
    /// Nothing (`kubectl apply` without `-o`).
    #[default]
    Nothing,
    /// The patch, live object and result of every object (`diff`, `apply -o yaml`).
    Everything,
    /// All of it for objects the apply patched; of those it created or left unchanged, only
    /// what names them (the controller: the full objects of a 20,000-object set would be
    /// held until the run ends, for nothing).
    Changed,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            dry_run: DryRun::None,
            force: false,
            overwrite: true,
            field_manager: "kubectl-client-side-apply".into(),
            field_validation: "Strict".into(),
            namespace: None,
            default_namespace: None,
            concurrency: 16,
            applyset_label: None,
            crd_timeout: Duration::from_secs(60),
            force_timeout: Duration::from_secs(60),
            keep_results: Keep::Nothing,
            patch_filter: None,
            cache: None,
            field_policy: None,
            last_applied: None,
            server_side_fallback: None,
            server_side_force: false,
            ownership: Ownership::Adopt,
            unusable_last_applied: UnusableLastApplied::Fail,
        }
    }
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Created,
    Configured,
    Unchanged,
}

impl Verb {
    pub fn word(self) -> &'static str {
        match self {
            Verb::Created => "created",
            Verb::Configured => "configured",
            Verb::Unchanged => "unchanged",
        }
    }
}

impl ApplyOptions {
    /// The query parameters of this run's writes (server dry run travels as `dryRun=All`;
    /// client dry run sends no writes at all).
    pub(super) fn write_params(&self) -> WriteParams {
        WriteParams {
            field_manager: self.field_manager.clone(),
            field_validation: self.field_validation.clone(),
            server_dry_run: self.dry_run == DryRun::Server,
            force: false,
        }
    }
}
