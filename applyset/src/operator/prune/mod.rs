//! The controller's prune step. It starts from kubectl's ApplySet prune (labelled members of
//! the recorded kinds that this run did not apply) and then refuses what kubectl would delete
//! but a controller acting for many users must not:
//! * objects that are not in the ApplySet's own record ([`super::inventory`]);
//! * the ApplySet's own Namespace, and (unless `spec.pruneNonEmptyNamespaces`) a Namespace
//!   holding objects the ApplySet does not manage;
//! * a second DELETE of an object that is already terminating (held by finalizers), which is
//!   reported instead;
//! * lists the apply identity may not make fail nothing: they are skipped with a warning;
//! * objects whose manifest carried a do-not-prune mark (orphaned, reported): ours
//!   (`applyset.dev/prune: disabled`), Helm's `helm.sh/resource-policy: keep`, Flux's
//!   `kustomize.toolkit.fluxcd.io/prune: disabled`, Argo CD's `argocd.argoproj.io/sync-options:
//!   Prune=false` ([`crate::keys::PruneMark`]);
//! * a revision that would prune more than `spec.pruneGuard` allows ([`guard`]).
//!
//! What it deletes goes in the reverse of the apply's stages, each waited for ([`order`]).

pub mod guard;
pub mod order;

use std::time::Instant;

use kube::api::{ListParams, ObjectMeta};
use kube::core::DynamicObject;
use kube::{Api, Client};

use super::api::{ApplySet, InventoryMember, InventoryObject, PruneGuard};
use super::inventory::{self, skipped};
use super::outcome::ObjectRef;
use crate::apply::Visited;
use crate::applyset::{Candidate, DeleteOptions, ForbiddenLists, Run};
use crate::causes::{Chain, with_causes};
use crate::cluster::list::{LIST_PAGE_SIZE, error_text, is_status};
use crate::cluster::mapper::{ApiIndex, GroupKind};
use crate::keys::APPROVE_PRUNE;

/// What the prune step did.
#[derive(Debug, Default)]
pub struct Pruned {
    /// Deleted.
    pub deleted: Vec<ObjectRef>,
    /// `configmap/x (finalizers: example.com/hold)`: being deleted, held by finalizers.
    pub terminating: Vec<String>,
    /// Left in place on purpose (`status.pruneSkipped`).
    pub skipped: Vec<InventoryObject>,
    /// For the log and a Warning Event (lists the identity may not make).
    pub warnings: Vec<String>,
    /// The first failure; the run fails with `PruneFailed`.
    pub error: Option<String>,
    /// The record of members after this prune.
    pub members: Vec<InventoryMember>,
    /// `spec.pruneGuard` stopped this prune (nothing was deleted): why, with the names.
    pub guarded: Option<String>,
}

impl Pruned {
    /// Why this prune is not done: its first failure, or the objects finalizers still hold.
    pub fn unfinished(&self) -> Option<String> {
        self.error.clone().or_else(|| {
            (!self.terminating.is_empty())
                .then(|| format!("still being deleted, held by finalizers: {}", self.terminating.join(", ")))
        })
    }
}

/// What the step needs to know of the ApplySet.
pub struct Scope<'a> {
    /// The record after this run's apply; `had_record` is false for an ApplySet whose status
    /// predates the record (nothing of it is pruned until it has one).
    pub members: &'a [InventoryMember],
    pub had_record: bool,
    pub own_namespace: &'a str,
    pub prune_non_empty_namespaces: bool,
    /// `spec.pruneGuard` with the approval annotation and this run's revision (none when the
    /// ApplySet itself is being deleted).
    pub guard: Option<GuardCheck<'a>>,
    /// Until when a stage waits for its objects to be gone.
    pub deadline: Instant,
}

impl<'a> Scope<'a> {
    /// The scope of a run of `applyset` over `members` (the record after its apply) at
    /// `revision`: its namespace, its prune settings, its guard with the approval annotation
    /// it carries, waiting at most `timeout`. The run's prune step and `applyset plan` both
    /// take it from here.
    pub fn of_run(
        applyset: &'a ApplySet,
        own_namespace: &'a str,
        members: &'a [InventoryMember],
        had_record: bool,
        revision: &'a str,
        timeout: std::time::Duration,
    ) -> Scope<'a> {
        let approval = applyset.metadata.annotations.as_ref().and_then(|a| a.get(APPROVE_PRUNE)).map(String::as_str);
        Scope {
            members,
            had_record,
            own_namespace,
            prune_non_empty_namespaces: applyset.spec.prune_non_empty_namespaces,
            guard: applyset.spec.prune_guard.as_ref().map(|limits| GuardCheck { limits, approval, revision }),
            deadline: Instant::now() + timeout,
        }
    }
}

pub struct GuardCheck<'a> {
    pub limits: &'a PruneGuard,
    pub approval: Option<&'a str>,
    pub revision: &'a str,
}

/// What prune decided before deleting anything: read-only (LISTs of the candidates, and of the
/// objects of a Namespace to prune). `applyset plan` shows it for a local checkout.
#[derive(Debug, Default)]
pub struct Decision {
    /// To DELETE, in kubectl's order (see [`Run::prune_candidates`]).
    pub to_delete: Vec<Candidate>,
    /// Already being deleted (held by finalizers): waited for, not deleted again.
    pub held: Vec<Candidate>,
    /// Left in place on purpose (`status.pruneSkipped`).
    pub skipped: Vec<InventoryObject>,
    /// Recorded members that stay recorded whatever the DELETEs do.
    pub kept: Vec<InventoryMember>,
    /// For the log and a Warning Event (lists the identity may not make).
    pub warnings: Vec<String>,
    /// The candidates could not be listed: nothing is pruned.
    pub error: Option<String>,
    /// `spec.pruneGuard` stops this prune (nothing is deleted): why, with the names.
    pub guarded: Option<String>,
}

/// Decides what prune deletes: the candidates kubectl's prune would delete (labelled members of
/// the recorded kinds and namespaces that this run did not visit), minus what the controller's
/// guards keep (see the module docs), and `spec.pruneGuard`'s verdict on the rest.
pub async fn decide(run: &Run<'_>, index: &ApiIndex, visited: &[Visited], scope: &Scope<'_>) -> Decision {
    let mut decision = Decision::default();
    let client = run.client();
    let candidates = match run.prune_candidates(visited, ForbiddenLists::Skip).await {
        Ok(candidates) => candidates,
        Err(error) => {
            decision.error = Some(with_causes(&error));
            return decision;
        }
    };
    decision.warnings = candidates.warnings();
    let (recorded, strangers) =
        inventory::recorded_or_strangers(candidates.objects, scope.had_record.then_some(scope.members));
    for stranger in &strangers {
        decision.skipped.push(inventory::skipped_entry(
            stranger,
            skipped::NOT_IN_INVENTORY,
            "carries this ApplySet's part-of label but was not applied by it: not deleted".into(),
        ));
    }

    // Recorded members that are not candidates any more are gone (or no longer labelled):
    // they leave the record, except those in lists this identity may not make.
    decision.kept = scope
        .members
        .iter()
        .filter(|m| {
            candidates.forbidden.iter().any(|(gk, ns)| {
                gk.to_string() == m.kind && ns.as_deref().is_none_or(|ns| m.namespace.as_deref() == Some(ns))
            })
        })
        .cloned()
        .collect();
    for candidate in recorded {
        if candidate.listed.deleting {
            decision.kept.push(inventory::member_of_candidate(&candidate));
            decision.held.push(candidate);
        } else if let Some(mark) = candidate.listed.prune_mark {
            decision.skipped.push(inventory::skipped_entry(
                &candidate,
                skipped::ORPHANED,
                format!("left git with {}: kept, no longer applied", mark.text()),
            ));
            decision.kept.push(inventory::member_of_candidate(&candidate));
        } else if let Some(entry) = namespace_guard(client, index, &candidate, scope).await {
            decision.skipped.push(entry);
            decision.kept.push(inventory::member_of_candidate(&candidate));
        } else {
            decision.to_delete.push(candidate);
        }
    }
    if let Some(check) = &scope.guard {
        let names: Vec<String> = decision.to_delete.iter().map(Candidate::printed_name).collect();
        decision.guarded = guard::blocked(check.limits, &names, scope.members.len(), check.approval, check.revision);
    }
    decision
}

pub async fn prune(
    run: &Run<'_>,
    index: &ApiIndex,
    visited: &[Visited],
    scope: Scope<'_>,
    options: &DeleteOptions,
) -> Pruned {
    let Decision { to_delete, held, skipped, mut kept, warnings, error, guarded } =
        decide(run, index, visited, &scope).await;
    let mut pruned = Pruned { members: scope.members.to_vec(), skipped, warnings, ..Pruned::default() };
    if error.is_some() {
        pruned.error = error;
        return pruned;
    }
    if guarded.is_some() {
        pruned.guarded = guarded;
        kept.extend(to_delete.iter().map(inventory::member_of_candidate));
        pruned.terminating = held.iter().map(terminating_text).collect();
        pruned.members = inventory::after_prune(visited, kept);
        return pruned;
    }

    let client = run.client();
    let (deleted, error) = delete_in_stages(client, run, to_delete.clone(), held, options, scope.deadline).await;
    pruned.deleted = deleted.deleted.iter().map(ObjectRef::of_candidate).collect();
    pruned.terminating = deleted.terminating.iter().map(terminating_text).collect();
    let gone: Vec<InventoryMember> = deleted.deleted.iter().map(inventory::member_of_candidate).collect();
    kept.extend(to_delete.iter().map(inventory::member_of_candidate));
    kept.retain(|m| !gone.contains(m));
    pruned.error = error;
    pruned.members = inventory::after_prune(visited, kept);
    pruned
}

/// DELETEs `to_delete` stage by stage ([`order`]); a stage's objects held by finalizers (and
/// those already being deleted, `held`) are waited for until `deadline`. A stage still held
/// then, or a failed DELETE, stops the later stages.
async fn delete_in_stages(
    client: &Client,
    run: &Run<'_>,
    to_delete: Vec<Candidate>,
    held: Vec<Candidate>,
    options: &DeleteOptions,
    deadline: Instant,
) -> (crate::applyset::Deleted, Option<String>) {
    let mut stages: Vec<(Vec<Candidate>, Vec<Candidate>)> = vec![Default::default(); order::STAGES];
    for candidate in to_delete {
        stages[order::stage_of(&candidate)].0.push(candidate);
    }
    for candidate in held {
        stages[order::stage_of(&candidate)].1.push(candidate);
    }
    let mut done = crate::applyset::Deleted::default();
    for (stage, already_held) in stages {
        let deleted = run.delete(&stage, options).await;
        done.deleted.extend(deleted.deleted);
        if let Some(error) = deleted.error {
            done.terminating.extend(already_held);
            return (done, Some(with_causes(&error)));
        }
        let waiting: Vec<Candidate> = already_held.into_iter().chain(deleted.terminating).collect();
        let still =
            if waiting.is_empty() { Vec::new() } else { order::wait_gone(client, waiting.clone(), deadline).await };
        let uid_of_still: Vec<&str> = still.iter().map(|c| c.listed.uid.as_str()).collect();
        done.deleted.extend(waiting.iter().filter(|c| !uid_of_still.contains(&c.listed.uid.as_str())).cloned());
        if !still.is_empty() {
            done.terminating = still;
            return (done, None);
        }
    }
    (done, None)
}

fn terminating_text(candidate: &Candidate) -> String {
    format!("{} (finalizers: {})", candidate.printed_name(), candidate.listed.finalizers.join(", "))
}

/// `Some(entry)` when a Namespace candidate must be kept.
async fn namespace_guard(
    client: &Client,
    index: &ApiIndex,
    candidate: &Candidate,
    scope: &Scope<'_>,
) -> Option<InventoryObject> {
    let api_resource = &candidate.kind.api_resource;
    if !(api_resource.group.is_empty() && api_resource.kind == "Namespace") {
        return None;
    }
    let name = &candidate.listed.name;
    if name == scope.own_namespace {
        return Some(inventory::skipped_entry(
            candidate,
            skipped::OWN_NAMESPACE,
            "the ApplySet itself lives in this Namespace: never pruned".into(),
        ));
    }
    if scope.prune_non_empty_namespaces {
        return None;
    }
    let message = match unmanaged_objects(client, index, name, scope.members).await {
        Ok(found) if found.is_empty() => return None,
        Ok(found) => format!(
            "holds objects this ApplySet does not manage ({}): not pruned (spec.pruneNonEmptyNamespaces allows it)",
            found.join(", ")
        ),
        Err(error) => {
            format!(
                "cannot tell whether it holds objects this ApplySet does not manage ({error}): not pruned",
                error = Chain(&error)
            )
        }
    };
    Some(inventory::skipped_entry(candidate, skipped::NAMESPACE_NOT_EMPTY, message))
}

/// A namespace's objects of one resource could not be listed: the apiserver's answer, in
/// kubectl's words, is part of the message, so the client error is data, not a source.
#[derive(Debug, thiserror::Error)]
#[error("listing {plural}: {}", error_text(.error))]
struct ListingFailed {
    plural: String,
    error: kube::Error,
}

/// How many unmanaged objects a message names at most.
const UNMANAGED_SHOWN: usize = 5;

/// Objects in `namespace` that the ApplySet does not manage, leaving out what the cluster makes
/// by itself (objects with an owner, Events, Endpoints, the `default` ServiceAccount and the
/// `kube-root-ca.crt` ConfigMap).
async fn unmanaged_objects(
    client: &Client,
    index: &ApiIndex,
    namespace: &str,
    members: &[InventoryMember],
) -> Result<Vec<String>, ListingFailed> {
    let mut found = Vec::new();
    for entry in index.namespaced_listable() {
        let resource = &entry.api_resource;
        if is_made_by_the_cluster(&resource.group, &resource.kind) {
            continue;
        }
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, resource);
        let mut params = ListParams::default().limit(LIST_PAGE_SIZE);
        loop {
            let page = match api.list_metadata(&params).await {
                Ok(page) => page,
                // The type went away since discovery was cached (a CRD deleted): no objects of it.
                Err(e) if is_status(&e, 404) => break,
                Err(error) => return Err(ListingFailed { plural: resource.plural.clone(), error }),
            };
            let kind = GroupKind::of(resource).to_string();
            for meta in page.items.into_iter().map(|item| item.metadata) {
                if !is_default_object(&resource.kind, &meta)
                    && !inventory::is_member(members, &kind, Some(namespace), meta.name.as_deref().unwrap_or_default())
                {
                    found.push(format!("{}/{}", resource.kind.to_lowercase(), meta.name.unwrap_or_default()));
                    if found.len() >= UNMANAGED_SHOWN {
                        return Ok(found);
                    }
                }
            }
            match page.metadata.continue_.filter(|token| !token.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
    }
    Ok(found)
}

fn is_made_by_the_cluster(group: &str, kind: &str) -> bool {
    matches!((group, kind), ("", "Event") | ("events.k8s.io", "Event") | ("", "Endpoints"))
}

fn is_default_object(kind: &str, meta: &ObjectMeta) -> bool {
    let owned = meta.owner_references.as_ref().is_some_and(|refs| !refs.is_empty());
    let name = meta.name.as_deref().unwrap_or_default();
    owned || (kind == "ServiceAccount" && name == "default") || (kind == "ConfigMap" && name == "kube-root-ca.crt")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_cluster_makes_is_not_unmanaged() {
        let meta = |name: &str, owned: bool| ObjectMeta {
            name: Some(name.into()),
            owner_references: owned.then(|| vec![Default::default()]),
            ..ObjectMeta::default()
        };
        assert!(is_default_object("ServiceAccount", &meta("default", false)));
        assert!(is_default_object("ConfigMap", &meta("kube-root-ca.crt", false)));
        assert!(is_default_object("Pod", &meta("web-abc", true)));
        assert!(!is_default_object("ConfigMap", &meta("data", false)));
        assert!(!is_default_object("ServiceAccount", &meta("builder", false)));
        assert!(is_made_by_the_cluster("events.k8s.io", "Event"));
        assert!(!is_made_by_the_cluster("", "PersistentVolumeClaim"));
    }
}
