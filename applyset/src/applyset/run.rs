//! One KEP-3659 run, the same for the CLI and the controller: [`Run::begin`] records the plan's
//! members on the parent before anything is applied (the superset write, so that a failed run
//! can still be pruned later), the caller applies, [`Run::prune`] (or the caller's own policy
//! over [`Run::prune_candidates`] and [`Run::delete`]) removes what this run did not apply, and
//! [`Run::finish`] records only this run's kinds and namespaces (the latest write).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::error::Error;
use super::parent::{Member, Parent};
use super::prune::{Candidate, Candidates, DeleteOptions, Deleted, ForbiddenLists, PruneSummary, delete_candidates};
use crate::apply::{Plan, Visited};
use crate::cluster::cache::ObjectCache;
use crate::cluster::{Cluster, DryRun};

/// How the parent's ApplySet metadata is written.
#[derive(Clone)]
pub enum ParentWrites {
    /// kubectl's: GET the parent and run kubectl's checks, then server-side apply it as
    /// `kubectl-applyset` with the run's dry-run mode (the CLI).
    Kubectl,
    /// The caller's own object (the controller's ApplySet), written with `client` (the
    /// controller's identity, not the apply identity) and only when `labels`/`annotations`/
    /// `finalizers` (as last seen) lack a value of the new metadata.
    Owned {
        client: kube::Client,
        labels: BTreeMap<String, String>,
        annotations: BTreeMap<String, String>,
        finalizers: Vec<String>,
        /// The caller's finalizer, carried by every write: the first write of a new object adds
        /// it (one write, not two), and a later server-side apply that left it out would take it
        /// away again (its field manager owns it).
        finalizer: Option<&'static str>,
    },
}

/// One run over one parent.
pub struct Run<'c> {
    cluster: &'c Cluster,
    parent: Parent,
    writes: ParentWrites,
    dry_run: DryRun,
    /// Prune candidates from a watch cache where it answers (the controller's).
    cache: Option<Arc<dyn ObjectCache>>,
}

impl<'c> Run<'c> {
    pub fn new(cluster: &'c Cluster, parent: Parent, writes: ParentWrites, dry_run: DryRun) -> Self {
        Self { cluster, parent, writes, dry_run, cache: None }
    }

    /// Prune candidates are taken from `cache` where it answers, and deletes reported to it.
    pub fn with_cache(mut self, cache: Arc<dyn ObjectCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The apply identity's client (prune's own LISTs go through the same door).
    pub fn client(&self) -> &kube::Client {
        self.cluster.client()
    }

    pub fn parent(&self) -> &Parent {
        &self.parent
    }

    /// Warnings the parent's writes produced (a forced update after a conflict, recorded kinds
    /// no longer served), each returned once.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.parent.warnings)
    }

    /// Records the plan's members and writes the superset of the recorded and the planned kinds
    /// and namespaces (kubectl's `BeforeApply`).
    pub async fn begin(&mut self, plan: &Plan) -> Result<(), Error> {
        let members = plan.members();
        let members = members.iter().map(|m| Member {
            api_resource: &m.api_resource,
            namespaced: m.namespaced,
            namespace: m.namespace.as_deref(),
        });
        match &mut self.writes {
            ParentWrites::Kubectl => self.parent.update_superset(self.cluster.client(), members, self.dry_run).await,
            ParentWrites::Owned { .. } => {
                self.parent.record_members(members);
                let body = self.parent.superset_body();
                self.write_owned(body).await
            }
        }
    }

    /// kubectl's prune: every recorded member this run did not visit is deleted. Call only
    /// when every object applied.
    pub async fn prune(&self, visited: &[Visited], options: &DeleteOptions) -> PruneSummary {
        self.parent.prune(self.cluster.client(), visited, options).await
    }

    /// The recorded members this run did not visit, for a caller with its own prune policy.
    pub async fn prune_candidates(&self, visited: &[Visited], forbidden: ForbiddenLists) -> Result<Candidates, Error> {
        self.parent.prune_candidates(self.cluster.client(), visited, forbidden, self.cache.as_deref()).await
    }

    /// DELETEs the candidates in order, stopping at the first failure.
    pub async fn delete(&self, candidates: &[Candidate], options: &DeleteOptions) -> Deleted {
        delete_candidates(self.cluster.client(), candidates, options, self.cache.as_deref()).await
    }

    /// Records this run's kinds and namespaces only. Call only when the prune had no error.
    pub async fn finish(&mut self) -> Result<(), Error> {
        match &self.writes {
            ParentWrites::Kubectl => self.parent.update_latest(self.cluster.client(), self.dry_run).await,
            ParentWrites::Owned { .. } => {
                let body = self.parent.latest_body();
                self.write_owned(body).await
            }
        }
    }

    /// Writes the caller's own parent when its metadata lacks a value of `body`, and keeps the
    /// annotations as last seen in step for the next comparison.
    async fn write_owned(&mut self, mut body: serde_json::Value) -> Result<(), Error> {
        let ParentWrites::Owned { client, labels, annotations, finalizers, finalizer } = &mut self.writes else {
            return Ok(());
        };
        if let Some(finalizer) = finalizer {
            body["metadata"]["finalizers"] = serde_json::json!([finalizer]);
        }
        self.parent
            .apply_if_changed(client, body.clone(), labels, annotations, finalizers)
            .await
            .map_err(|e| e.context("updating the ApplySet parent metadata"))?;
        if let Some(finalizer) = finalizer.filter(|f| !finalizers.iter().any(|held| held == f)) {
            finalizers.push(finalizer.to_owned());
        }
        // Both maps, so that the next comparison (finish after begin) sees what was written: a
        // fresh parent's id label looked missing again and the same body was sent twice.
        for (field, seen) in [("annotations", &mut *annotations), ("labels", &mut *labels)] {
            if let Some(written) = body["metadata"][field].as_object() {
                for (key, value) in written {
                    seen.insert(key.clone(), value.as_str().unwrap_or_default().to_owned());
                }
            }
        }
        Ok(())
    }
}
