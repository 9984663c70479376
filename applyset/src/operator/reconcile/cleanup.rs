//! Deleting an ApplySet (its finalizer): prune every object it recorded (or orphan them), then
//! drop its git cache and everything the controller keeps for it.

use std::sync::Arc;

use kube::runtime::controller::Action;

use super::publish::describe_skipped;
use super::steps::apply::{owned_writes, parent_for};
use super::{REDACT_PARTS, ReconcileError, redact_owner};
use crate::applyset::Run;
use crate::causes::Chain;
use crate::cluster::DryRun;
use crate::operator::api::{ApplySet, DeletionPolicy};
use crate::operator::context::Context;
use crate::operator::prune;
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;
use crate::operator::status::reason;
use crate::redact;
use crate::source::CacheKey;

/// How long deletion waits for each stage's objects to be gone: the ApplySet's timeout.
fn deletion_timeout(applyset: &ApplySet) -> std::time::Duration {
    let timeout = applyset.spec.timeout.as_deref().and_then(|t| crate::duration::parse(t).ok());
    timeout.unwrap_or(std::time::Duration::from_secs(120))
}

/// Prunes every one of `members` in `cluster`, as deleting the ApplySet does (no guard: all of
/// it leaves that cluster; do-not-prune marks and the Namespace rules hold), waiting for each
/// stage until `deadline`. `None`: no record (nothing is pruned). Deletion uses it, and so does
/// a run that leaves the cluster it applied to before (`steps/moved.rs`).
pub(super) async fn prune_all(
    ctx: &Context,
    applyset: &ApplySet,
    cluster: &crate::cluster::Cluster,
    members: Option<&[crate::operator::api::InventoryMember]>,
    deadline: std::time::Instant,
) -> Result<prune::Pruned, StepError> {
    let index = ctx.api_index(cluster, true).await.map_err(|e| StepError::of(Stage::Delete, e))?;
    let labels = applyset.metadata.labels.clone().unwrap_or_default();
    let annotations = applyset.metadata.annotations.clone().unwrap_or_default();
    let (parent, _) = parent_for(applyset, members.unwrap_or_default(), &index, &labels, &annotations)?;
    let run = Run::new(cluster, parent, owned_writes(ctx, applyset, labels, annotations), DryRun::None);
    let namespace = applyset.namespace_or_default();
    let scope = prune::Scope {
        members: members.unwrap_or_default(),
        had_record: members.is_some(),
        own_namespace: &namespace,
        prune_non_empty_namespaces: applyset.spec.prune_non_empty_namespaces,
        guard: None,
        deadline,
    };
    let pruned = prune::prune(&run, &index, &[], scope, &applyset.delete_options()).await;
    ctx.metrics.pruned(pruned.deleted.len() as u64);
    Ok(pruned)
}

/// Deleting an ApplySet: prune every object it recorded (or orphan them), then drop the git
/// cache. A failure keeps the finalizer and is retried.
pub(super) async fn cleanup(applyset: Arc<ApplySet>, ctx: &Context) -> Result<Action, ReconcileError> {
    let key = applyset.key();
    let namespace = applyset.namespace_or_default();
    if applyset.deletion_policy() == DeletionPolicy::Delete && !applyset.spec.suspend {
        let failed = |source: StepError| ReconcileError::Cleanup { key: key.clone(), source };
        // Pruned where they were applied: a remote ApplySet's objects in its remote cluster.
        let target = ctx.target_for(&applyset).await.map_err(|e| failed(StepError::of(Stage::Delete, e)))?;
        let cluster = target.cluster;
        let recorded = super::read_record(ctx, &applyset, applyset.status.clone().unwrap_or_default()).await?;
        let members = recorded.inventory.and_then(|i| i.members);
        let deadline = std::time::Instant::now() + deletion_timeout(&applyset);
        let pruned = prune_all(ctx, &applyset, &cluster, members.as_deref(), deadline).await.map_err(failed)?;
        if let Some(message) = pruned.unfinished() {
            ctx.event(&applyset, true, reason::DELETE_FAILED, "Delete", message.clone()).await;
            return Err(failed(StepError::new(Stage::Delete, message)));
        }
        if !pruned.deleted.is_empty() {
            ctx.event(
                &applyset,
                false,
                "Pruned",
                "Delete",
                format!(
                    "deleted with the ApplySet: {}",
                    pruned.deleted.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
                ),
            )
            .await;
        }
        let skipped: Vec<String> = pruned.skipped.iter().map(describe_skipped).collect();
        if !skipped.is_empty() {
            ctx.event(&applyset, true, "PruneSkipped", "Delete", format!("left in place: {}", skipped.join("; ")))
                .await;
        }
    }
    if let Err(source) = ctx.records.delete_all(&ctx.client, &applyset).await {
        return Err(ReconcileError::Record { key, source });
    }
    ctx.history.forget(&key);
    if let Err(error) = ctx.git.purge(&CacheKey::new(&namespace, applyset.name())).await {
        tracing::warn!(applyset = %key, error = %Chain(&error), "cannot remove the git cache");
    }
    ctx.forget(&key);
    for part in REDACT_PARTS {
        redact::forget(&redact_owner(&applyset, part));
    }
    Ok(Action::await_change())
}
