//! The apply path: `kubectl apply` (client-side, kubectl 1.33) against a live cluster, through
//! [`crate::cluster`], the only door to the apiserver.
//!
//! A run:
//! 1. **Plan** ([`plan()`], no writes): map each object's kind to its resource through discovery
//!    (one aggregated request pair per run; kinds defined by CRDs in the same input are
//!    predicted from those CRDs), default or check namespaces exactly as kubectl does, add the
//!    ApplySet label, and refuse the run when an object appears twice.
//! 2. **Stages** ([`execute`]): Namespaces, then CustomResourceDefinitions (then wait until each
//!    is `Established` and refresh discovery), then everything else, each stage in parallel.
//! 3. **Per stage**: one paginated LIST per (resource, namespace) instead of one GET per
//!    object; an object missing from its list is created, a present one is three-way patched
//!    (nothing is sent when the patch is `{}`). Up to `concurrency` objects are in flight and
//!    every request passes the cluster's rate limiter.
//! 4. Results come back in input order; the caller prints them and, if nothing failed, prunes.
//!
//! [`apply`] is both steps at once; callers that record an ApplySet parent between them (its
//! member kinds must be written before any member) call [`plan()`] and [`execute`].

mod error;
mod execute;
pub mod last_applied;
pub mod metadata;
pub mod object;
mod one;
mod options;
mod plan;
mod report;
pub mod selector;

pub use error::{BODY_OMITTED, ErrorCategory, Fatal, ObjectError};
pub use execute::execute;
pub use options::{
    ApplyOptions, FieldPolicyRef, Keep, Ownership, PatchFilter, PatchFilterFn, UnusableLastApplied, Verb,
};
pub use plan::CrdKinds;
pub use plan::{Member, Plan, plan};
pub(crate) use plan::{Predicted, default_namespace, predicted_mappings, stage_of};
pub use report::{ApplyReport, Details, Identity, ObjectReport, Visited};

use crate::cluster::Cluster;
use crate::manifest::LoadedObject;

/// Applies `loaded` as `kubectl apply -f` would; see the module documentation.
pub async fn apply(cluster: &Cluster, loaded: Vec<LoadedObject>, options: &ApplyOptions) -> Result<ApplyReport, Fatal> {
    let plan = plan(cluster, loaded, options).await?;
    Ok(execute(cluster, plan, options).await)
}
