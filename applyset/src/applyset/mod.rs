//! ApplySets (KEP-3659) exactly as `kubectl apply --prune --applyset=…` (kubectl 1.33,
//! `KUBECTL_APPLYSET=true`) manages them, and the one [`Run`] type the CLI and the controller
//! both drive.
//!
//! * [`codec`] (pure): the labels and annotations, the set's ID, kubectl's checks of a parent;
//! * [`reference`](mod@reference): `--applyset` parsing and validation;
//! * Go's string forms and the REST mapper come from [`crate::cluster::mapper`], the one mapper;
//! * [`parent`]: the parent's lifecycle; [`prune`]: candidates and deletes;
//! * [`run`]: the order of a run; [`error`]: typed errors rendering kubectl's texts.
//!
//! # Flow the apply command follows (kubectl's order)
//!
//! 1. [`Parent::prepare`] — while validating flags: parses `--applyset=[RESOURCE][.GROUP]/NAME`
//!    (no `/` → Secret `NAME`), resolves the resource through discovery (plural, singular or
//!    short name; empty group matches any group, core first), takes the namespace **only** from an
//!    explicit `-n`, and validates: Secret/ConfigMap (v1) or a custom resource whose CRD carries
//!    the label `applyset.kubernetes.io/is-parent-type`. Errors carry kubectl's texts
//!    (`invalid parent reference "x": …`, `namespace is required to use namespace-scoped
//!    ApplySet`, `resource "apps/v1, Resource=deployments" is not permitted as an ApplySet parent`).
//! 2. [`Parent::add_labels`] — on every input object: `applyset.kubernetes.io/part-of=<ID>`
//!    (before the last-applied annotation is computed, so it is part of it).
//!    [`Parent::part_of_label`] gives the pair for callers that label objects themselves.
//! 3. [`Run::begin`] ([`Parent::update_superset`], kubectl's `BeforeApply`) — GET the parent (NotFound is fine
//!    for Secret/ConfigMap, fatal for custom resources), check tooling/id/group-kinds with
//!    kubectl's messages, then server-side apply the parent with the union of the recorded and
//!    the to-be-applied kinds and namespaces (skipped for client dry-run).
//! 4. The caller applies every object and records each UID as [`crate::apply::Visited`].
//! 5. **Only if every object applied successfully** (the caller guarantees it; kubectl skips
//!    pruning on any apply error): [`Run::prune`] LISTs every kind recorded on the parent
//!    *before* this run × every recorded namespace with
//!    `labelSelector=applyset.kubernetes.io/part-of=<ID>` and deletes what was not visited.
//! 6. Only if the prune reported no error: [`Run::finish`] — the parent now records the
//!    kinds and namespaces of this run only. Its error text is already wrapped as
//!    `apply and prune succeeded, but ApplySet update failed: …`.
//!
//! # Deliberate choices
//!
//! * Tooling annotation ([`Tooling`]): the CLI writes kubectl 1.33's (`kubectl/v1.33.1`) and
//!   accepts kubectl's sets, so the two alternate on one set; the controller writes
//!   `applyset/v<crate version>` and refuses any other tool's parent with kubectl's message form
//!   (so kubectl in turn refuses its parents: `… is managed by tooling "applyset" instead of
//!   "kubectl"`).
//! * Field manager of the parent's server-side apply: `kubectl-applyset`, kubectl's own, so that
//!   kubectl can take a set over (after its tooling annotation is changed) without conflicts.
//! * The parent body is kubectl's PartialObjectMetadata: only name, namespace, the id label and
//!   the three annotations (SSA therefore drops the legacy `contains-group-resources`).
//! * Validation errors that kubectl aggregates are joined with a newline (kubectl prints one per

pub mod codec;
pub mod error;

pub mod legacy;
pub mod parent;
pub mod prune;
pub mod reference;
pub mod run;

pub use codec::*;
pub use error::{Category, Error};
pub use parent::{FieldValidation, Member, Parent, RecordedKind};
pub use prune::{
    Candidate, Candidates, DeleteOptions, Deleted, ForbiddenLists, Propagation, PruneSummary, PrunedObject,
    delete_candidates, select_applyset_candidates,
};
pub use reference::{ParentRefSpec, parse_parent_ref, validate_parent};
pub use run::{ParentWrites, Run};

#[cfg(test)]
mod tests;
