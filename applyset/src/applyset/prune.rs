//! Pruning an ApplySet's members: LISTs by the part-of label over the recorded kinds and
//! namespaces, the candidates this run did not visit, and their DELETEs (kubectl's order: sorted,
//! stopping at the first failure). Also the LIST and DELETE helpers legacy prune shares.

use std::collections::{HashMap, HashSet};

use applyset_merge::Value;
use futures::StreamExt;
use kube::Client;
use kube::api::{DeleteParams, Preconditions, PropagationPolicy};
use kube::core::ApiResource;

use super::error::Error;
use super::parent::{Parent, RecordedKind};
use crate::apply::Visited;
use crate::cluster::DryRun;
use crate::cluster::cache::ObjectCache;
use crate::cluster::list::{LIST_CONCURRENCY, Listed, dynamic_api, fetch_object, is_status, list_all};
use crate::cluster::mapper::{GroupKind, gvk_string, printed_name};

/// The result of a prune, in kubectl's order: the objects a DELETE was sent for (or, for a
/// client dry run, would have been), the errors (the run fails if there is any; kubectl stops at
/// the first) and the warnings. The CLI prints them as kubectl does; the controller reports them.
#[derive(Debug, Default)]
pub struct PruneSummary {
    pub pruned: Vec<PrunedObject>,
    pub errors: Vec<Error>,
    pub warnings: Vec<String>,
}

/// One pruned object.
#[derive(Clone, Debug, PartialEq)]
pub struct PrunedObject {
    /// kubectl's printed name: `deployment.apps/web`.
    pub name: String,
    /// `None` for a cluster-scoped object.
    pub namespace: Option<String>,
    /// The object as it was just before the DELETE, when [`DeleteOptions::keep_objects`] asked
    /// for it (kubectl prints pruned objects with `-o json|yaml|jsonpath…`).
    pub object: Option<Value>,
}

impl PrunedObject {
    /// kubectl's line for it: `deployment.apps/web pruned` plus the dry-run suffix.
    pub fn line(&self, dry_run: DryRun) -> String {
        format!("{} pruned{}", self.name, dry_run.suffix())
    }
}

/// Whether a LIST that the apiserver forbids fails the prune (kubectl) or is skipped with a
/// warning (the controller: an identity that may not list a kind there cannot have created
/// anything of it there, and a parent that records it must not fail every run for good).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForbiddenLists {
    Fail,
    Skip,
}

/// A labelled member that this run did not visit.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub kind: RecordedKind,
    pub listed: Listed,
}

impl Candidate {
    /// `deployment.apps/web`.
    pub fn printed_name(&self) -> String {
        printed_name(&self.kind.api_resource, &self.listed.name)
    }
}

/// What [`Parent::prune_candidates`] found.
#[derive(Clone, Debug, Default)]
pub struct Candidates {
    pub objects: Vec<Candidate>,
    /// Lists skipped ([`ForbiddenLists::Skip`]): the kind and namespace (`None`: cluster-scoped).
    pub forbidden: Vec<(GroupKind, Option<String>)>,
}

impl Candidates {
    /// One warning per skipped list.
    pub fn warnings(&self) -> Vec<String> {
        self.forbidden
            .iter()
            .map(|(gk, ns)| {
                let place = ns.as_ref().map_or_else(|| "the cluster".to_owned(), |ns| format!("namespace {ns}"));
                format!(
                    "not allowed to list {gk} in {place}: objects of that kind there were not considered for pruning"
                )
            })
            .collect()
    }
}

/// What [`delete_candidates`] did.
#[derive(Debug, Default)]
pub struct Deleted {
    /// Gone (or, for a dry run, would be).
    pub deleted: Vec<Candidate>,
    /// Still there after the DELETE, held by finalizers.
    pub terminating: Vec<Candidate>,
    /// The first failure; nothing after it was attempted.
    pub error: Option<Error>,
    /// The objects as they were before their DELETE, by uid (with [`DeleteOptions::keep_objects`]).
    pub objects: HashMap<String, Value>,
}

impl Deleted {
    /// kubectl's printed lines: every object the DELETE was sent for is "pruned".
    fn into_summary(self) -> PruneSummary {
        let pruned = self
            .deleted
            .iter()
            .chain(&self.terminating)
            .map(|c| PrunedObject {
                name: c.printed_name(),
                namespace: c.listed.namespace.clone(),
                object: self.objects.get(&c.listed.uid).cloned(),
            })
            .collect();
        PruneSummary { pruned, errors: self.error.into_iter().collect(), warnings: Vec::new() }
    }
}

/// DELETEs each candidate in order, stopping at the first failure (kubectl's behaviour); each
/// delete is reported to the watch cache, if any.
pub async fn delete_candidates(
    client: &Client,
    candidates: &[Candidate],
    options: &DeleteOptions,
    cache: Option<&dyn ObjectCache>,
) -> Deleted {
    let mut done = Deleted::default();
    for candidate in candidates {
        let (api_resource, ns, name) =
            (&candidate.kind.api_resource, candidate.listed.namespace.as_deref(), &candidate.listed.name);
        if options.keep_objects
            && let Some(object) = fetch_object(client, api_resource, ns, name).await
        {
            done.objects.insert(candidate.listed.uid.clone(), object);
        }
        let precondition = candidate.listed.cached_version.as_deref().map(|version| (&candidate.listed.uid, version));
        if let (Some(cache), DryRun::None) = (cache, options.dry_run) {
            cache.deleted(&candidate.listed.uid);
        }
        match delete_one(client, api_resource, ns, name, options, precondition).await {
            Ok(Some(remaining)) => {
                let mut candidate = candidate.clone();
                candidate.listed.deleting = true;
                candidate.listed.finalizers = remaining;
                done.terminating.push(candidate);
            }
            Ok(None) => done.deleted.push(candidate.clone()),
            // Known from a watch cache that had not seen it go yet: it is gone.
            Err(error) if precondition.is_some() && is_status(&error, 404) => done.deleted.push(candidate.clone()),
            Err(error) => {
                let gk = GroupKind::of(api_resource);
                let object = match ns {
                    Some(ns) => format!("{gk} {ns}/{name}"),
                    None => format!("{gk} {name}"),
                };
                let context = match precondition {
                    Some((_, version)) if is_status(&error, 409) => format!(
                        "pruning {object}: it changed since the watch cache saw it at resourceVersion {version}, so it was not deleted (the next run decides again)"
                    ),
                    _ => format!("pruning {object}"),
                };
                done.error = Some(Error::request(context, error));
                return done;
            }
        }
    }
    done
}

/// How pruned objects are deleted (kubectl's `--cascade`, `--grace-period`, `--dry-run`).
#[derive(Clone, Copy, Debug)]
pub struct DeleteOptions {
    pub dry_run: DryRun,
    pub propagation: Propagation,
    /// Sent only when set (kubectl: `--grace-period >= 0`).
    pub grace_period_seconds: Option<u32>,
    /// Read each object before deleting it, for printing ([`PrunedObject::object`]).
    pub keep_objects: bool,
}

/// `--cascade`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

impl DeleteOptions {
    /// kubectl's defaults: Background, no grace period.
    pub fn new(dry_run: DryRun) -> Self {
        Self { dry_run, propagation: Propagation::Background, grace_period_seconds: None, keep_objects: false }
    }

    fn dry_run_server(&self) -> bool {
        matches!(self.dry_run, DryRun::Server)
    }

    fn params(&self, precondition: Option<(&String, &str)>) -> DeleteParams {
        DeleteParams {
            dry_run: matches!(self.dry_run, DryRun::Server),
            grace_period_seconds: self.grace_period_seconds,
            propagation_policy: Some(match self.propagation {
                Propagation::Background => PropagationPolicy::Background,
                Propagation::Foreground => PropagationPolicy::Foreground,
                Propagation::Orphan => PropagationPolicy::Orphan,
            }),
            preconditions: precondition.map(|(uid, version)| Preconditions {
                uid: Some(uid.clone()),
                resource_version: Some(version.to_owned()),
            }),
        }
    }
}

/// DELETEs one object (nothing is sent for client dry-run). `Some(finalizers)` when the object
/// is still there afterwards, being deleted (the apiserver answers with the object instead of
/// a Status): finalizers hold it.
pub(crate) async fn delete_one(
    client: &Client,
    api_resource: &ApiResource,
    namespace: Option<&str>,
    name: &str,
    options: &DeleteOptions,
    precondition: Option<(&String, &str)>,
) -> Result<Option<Vec<String>>, kube::Error> {
    if matches!(options.dry_run, DryRun::Client) {
        return Ok(None);
    }
    let api = dynamic_api(client, api_resource, namespace);
    let answer = api.delete(name, &options.params(precondition)).await?;
    Ok(answer.left().and_then(|object| {
        let finalizers = object.metadata.finalizers.unwrap_or_default();
        let held = object.metadata.deletion_timestamp.is_some() && !finalizers.is_empty() && !options.dry_run_server();
        held.then_some(finalizers)
    }))
}

// ------------------------------------------------------------------------------------------

impl Parent {
    /// Deletes every member recorded before this run that this run did not visit. Call only when
    /// every object applied successfully; call [`Parent::update_latest`] only when the returned
    /// summary has no error.
    pub async fn prune(&self, client: &Client, visited: &[Visited], options: &DeleteOptions) -> PruneSummary {
        match self.prune_candidates(client, visited, ForbiddenLists::Fail, None).await {
            Ok(candidates) => delete_candidates(client, &candidates.objects, options, None).await.into_summary(),
            Err(error) => PruneSummary { errors: vec![error], ..PruneSummary::default() },
        }
    }

    /// The members recorded before this run (by kind and namespace, labelled with this set's ID)
    /// that this run did not visit, sorted by group, kind, namespace and name (kubectl's order).
    /// A kind and namespace the watch cache answers for is not listed.
    pub async fn prune_candidates(
        &self,
        client: &Client,
        visited: &[Visited],
        forbidden: ForbiddenLists,
        cache: Option<&dyn ObjectCache>,
    ) -> Result<Candidates, Error> {
        let visited: HashSet<&str> = visited.iter().map(|v| v.uid.as_str()).collect();
        let mut tasks: Vec<(&RecordedKind, Option<&str>)> = Vec::new();
        for (gk, kind) in &self.current_kinds {
            if kind.namespaced {
                for ns in &self.current_namespaces {
                    if ns.is_empty() {
                        return Err(Error::InvalidParent(format!(
                            "unexpectedly encountered empty namespace during prune of namespace-scoped resource {gk}"
                        )));
                    }
                    tasks.push((kind, Some(ns)));
                }
            } else {
                tasks.push((kind, None));
            }
        }
        let selector = self.member_selector();
        // Owned values (no borrowed closure arguments): a closure over borrowed items is not
        // provably `Send` for every lifetime, which the controller's spawned reconciles need.
        let set_id = self.id().to_owned();
        let lists: Vec<(ApiResource, Option<String>, Option<Vec<Listed>>)> = tasks
            .iter()
            .map(|(kind, ns)| {
                let known = cache.and_then(|cache| cache.members(&kind.api_resource, *ns, &set_id));
                (kind.api_resource.clone(), ns.map(str::to_owned), known)
            })
            .collect();
        let skip_unknown_kinds = self.skip_unknown_kinds;
        let results: Vec<_> = futures::stream::iter(lists.into_iter().map(|(api_resource, ns, known)| {
            let selector = selector.clone();
            let client = client.clone();
            async move {
                if let Some(known) = known {
                    return Ok(Some(known));
                }
                match list_all(&client, &api_resource, ns.as_deref(), &selector).await {
                    // The kind went away since discovery was read (its CRD deleted): nothing
                    // of it is left to prune.
                    Err(error) if skip_unknown_kinds && is_status(&error, 404) => Ok(Some(Vec::new())),
                    Err(error) if forbidden == ForbiddenLists::Skip && is_status(&error, 403) => Ok(None),
                    other => other.map(Some),
                }
                .map_err(|error| {
                    let gvk = gvk_string(&api_resource.group, &api_resource.version, &api_resource.kind);
                    Error::request(format!("listing {gvk} objects for pruning"), error)
                })
            }
        }))
        .buffered(LIST_CONCURRENCY)
        .collect()
        .await;
        let mut candidates = Candidates::default();
        for ((kind, ns), result) in tasks.iter().zip(results) {
            match result? {
                Some(items) => {
                    for item in select_applyset_candidates(&items, &visited) {
                        candidates.objects.push(Candidate { kind: (*kind).clone(), listed: item.clone() });
                    }
                }
                None => candidates.forbidden.push((GroupKind::of(&kind.api_resource), ns.map(str::to_owned))),
            }
        }
        candidates.objects.sort_by(|a, b| {
            (&a.kind.api_resource.group, &a.kind.api_resource.kind, &a.listed.namespace, &a.listed.name).cmp(&(
                &b.kind.api_resource.group,
                &b.kind.api_resource.kind,
                &b.listed.namespace,
                &b.listed.name,
            ))
        });
        Ok(candidates)
    }
}

/// ApplySet prune candidates: every listed object whose UID was not visited, sorted by
/// namespace and name.
pub fn select_applyset_candidates<'a>(items: &'a [Listed], visited: &HashSet<&str>) -> Vec<&'a Listed> {
    let mut selected: Vec<&Listed> = items.iter().filter(|item| !visited.contains(item.uid.as_str())).collect();
    selected.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    selected
}
