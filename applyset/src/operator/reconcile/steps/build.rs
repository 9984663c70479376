//! From the checkout to the objects to apply: the apply identity's cluster, the post-build
//! variables, the manifests (loaded, or built by kustomize), the size check of the record they
//! would make, and the earlier revisions' manifests for stale fields.

use std::path::Path;
use std::sync::Arc;

use super::super::redact_owner;
use super::super::{Reconciliation, RunMode};
use super::source::Fetched;
use crate::causes::Chain;
use crate::cluster::Cluster;
use crate::manifest::{self, LoadedObject};
use crate::operator::api::{ApplySet, StaleFields};
use crate::operator::history::{self, HistoryIndex, RevisionReader};
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;
use crate::operator::{decryption, inventory, postbuild};
use crate::redact;
use crate::source::Artifact;

/// The post-build variables, and the digest of what shapes the apply (the spec fields, and
/// the variables when there are any).
pub(in crate::operator::reconcile) struct Variables {
    pub(in crate::operator::reconcile) values: Option<Arc<manifest::postbuild::Variables>>,
    pub(in crate::operator::reconcile) digest: String,
}

/// The earlier revisions' manifests of the objects git changed, and what could not be read.
pub(in crate::operator::reconcile) struct History {
    pub(in crate::operator::reconcile) index: Arc<HistoryIndex>,
    pub(in crate::operator::reconcile) warnings: Vec<String>,
}

impl Reconciliation<'_> {
    /// The cluster the ApplySet applies to (its `spec.kubeConfig` cluster, or the controller's
    /// own), as its identity (its ServiceAccount, if any), with the remote server when remote;
    /// the run reads live objects from that cluster's watch cache.
    pub(in crate::operator::reconcile) async fn cluster(
        &mut self,
    ) -> Result<(Arc<Cluster>, Option<String>), StepError> {
        if !self.mode.writes() {
            // A plan is of the cluster it was asked against, as its user.
            return Ok((self.local_cluster()?, None));
        }
        let target = self.ctx.target_for(self.applyset).await.map_err(|e| StepError::of(Stage::Apply, e))?;
        self.cache = target.cache;
        Ok((target.cluster, target.remote_server))
    }

    /// The controller's own cluster as the ApplySet's identity: where `spec.postBuild`'s
    /// ConfigMaps and Secrets are (as Flux reads them, also for a remote ApplySet).
    pub(in crate::operator::reconcile) fn local_cluster(&self) -> Result<Arc<Cluster>, StepError> {
        let service_account = self.ctx.service_account_for(self.applyset);
        self.ctx
            .cluster_for(&self.applyset.namespace_or_default(), service_account.as_deref())
            .map_err(|e| StepError::of(Stage::Apply, e))
    }

    /// `spec.postBuild`'s variables, read as the apply identity in the controller's cluster.
    pub(in crate::operator::reconcile) async fn variables(&self, cluster: &Cluster) -> Result<Variables, StepError> {
        let spec_digest = self.applyset.spec.apply_digest();
        Ok(match postbuild::variables(self.applyset, cluster).await? {
            Some((values, vars_digest)) => {
                Variables { values: Some(values), digest: format!("{spec_digest}-{vars_digest}") }
            }
            None => Variables { values: None, digest: spec_digest },
        })
    }

    /// The revision's manifests (none for an empty source that `allowEmpty` accepts), its
    /// SOPS-encrypted files decrypted under `spec.decryption` (refused without it); the
    /// values of the Secrets it applies, and every decrypted value, are redacted from every
    /// status, Event and log line before anything can fail with a message that quotes them.
    pub(in crate::operator::reconcile) async fn load(
        &self,
        cluster: &Cluster,
        artifact: &Artifact,
        substitute: Option<Arc<manifest::postbuild::Variables>>,
    ) -> Result<Vec<LoadedObject>, StepError> {
        let settings = &self.ctx.settings;
        let given = match &self.mode {
            RunMode::Plan(local) => local.decryption.clone(),
            RunMode::Sync => None,
        };
        let decryption = match given {
            Some(given) => given,
            None => decryption::for_applyset(self.applyset, cluster).await?,
        };
        let build = BuildSettings {
            limits: settings.manifest_limits,
            kustomize_binary: &settings.kustomize_binary,
            timeout: self.intervals.timeout,
            decryption: &decryption,
        };
        let rendered = render(self.applyset, &artifact.dir, &artifact.checkout, &build, substitute).await;
        // Registered whether the build succeeded or not: kustomize may quote a decrypted file.
        let mut revealed = redact::Secrets::new();
        for value in decryption.cleartexts() {
            revealed.add(&value);
        }
        redact::register(&redact_owner(self.applyset, "decryption"), revealed);
        let loaded = rendered?;
        let mut secrets = redact::Secrets::new();
        for object in &loaded {
            secrets.add_manifest(&object.object);
        }
        redact::register(&redact_owner(self.applyset, "manifests"), secrets);
        require_objects(self.applyset, &loaded, &artifact.revision)?;
        Ok(loaded)
    }

    /// The record the objects would make must fit in the status ([`inventory::check_fits`]).
    pub(in crate::operator::reconcile) fn check_record_fits(&self, loaded: &[LoadedObject]) -> Result<(), StepError> {
        let recorded = self.previous.inventory.as_ref().and_then(|i| i.members.as_deref());
        inventory::check_fits(recorded, loaded, &self.applyset.namespace_or_default(), self.ctx.settings.record_limit)
    }

    /// The earlier applied revisions' manifests of the objects git changed since, for stale
    /// fields. A revision that cannot be read is left out with a warning.
    pub(in crate::operator::reconcile) async fn history(&self, fetched: &Fetched, loaded: &[LoadedObject]) -> History {
        let (applyset, artifact) = (self.applyset, &fetched.artifact);
        let none = || History { index: Arc::new(HistoryIndex::default()), warnings: Vec::new() };
        // A plan does not look for stale fields (earlier revisions come from git).
        if applyset.spec.drift.stale_fields == StaleFields::Ignore || !self.mode.writes() {
            return none();
        }
        // Earlier revisions are read as plain manifests: a kustomization's would need building
        // (documented: a kustomize source reports foreign fields, not stale ones).
        if manifest::kustomize::kustomization_file(&artifact.dir).is_some() {
            return none();
        }
        let earlier = history::earlier(applyset, &artifact.revision);
        let reader = RevisionReader {
            git: &self.ctx.git,
            credentials: fetched.credentials.clone(),
            timeout: self.intervals.timeout,
        };
        let (index, warnings) = self.ctx.history.index(reader, applyset, earlier, &artifact.revision, loaded).await;
        for warning in &warnings {
            tracing::warn!(applyset = %applyset.key(), "{warning}");
        }
        History { index, warnings }
    }
}

/// What the controller's settings and the ApplySet's timeout give a build.
pub(crate) struct BuildSettings<'a> {
    /// The caps on the revision's manifest files (`--max-manifest-*`).
    pub(crate) limits: manifest::Limits,
    /// The kustomize program (`--kustomize-binary`).
    pub(crate) kustomize_binary: &'a Path,
    /// `spec.timeout`: how long kustomize may run.
    pub(crate) timeout: std::time::Duration,
    /// SOPS-encrypted files: decrypted (`spec.decryption`) or refused.
    pub(crate) decryption: &'a manifest::decryption::Decryption,
}

/// The objects of the directory `dir` of the checkout `checkout` (both canonical), as a run
/// builds them: a kustomization built by kustomize, else every manifest loaded with the caps
/// (none for an empty directory that `spec.allowEmpty` accepts), with `spec.postBuild`'s
/// variables substituted. Reads only the disk (and runs kustomize): `applyset build` and
/// `applyset plan` render a local checkout with it, so that they show what a run applies.
pub(crate) async fn render(
    applyset: &ApplySet,
    dir: &Path,
    checkout: &Path,
    settings: &BuildSettings<'_>,
    substitute: Option<Arc<manifest::postbuild::Variables>>,
) -> Result<Vec<LoadedObject>, StepError> {
    // kubectl refuses a directory without manifests; with allowEmpty it is an empty source.
    let empty_source = applyset.spec.allow_empty && !manifest::walk::holds_manifests(dir, true).unwrap_or(true);
    if manifest::kustomize::kustomization_file(dir).is_some() {
        kustomize_build(dir, checkout, settings, substitute).await
    } else if empty_source {
        Ok(Vec::new())
    } else {
        load_manifests(dir, checkout, settings, substitute)
    }
}

/// A source holding a kustomization is built by kustomize (checked first: nothing from
/// outside the checkout, no remote base, no Helm, no plugins), within the timeout; its
/// output may be at most four times the revision size cap.
async fn kustomize_build(
    dir: &Path,
    checkout: &Path,
    settings: &BuildSettings<'_>,
    substitute: Option<Arc<manifest::postbuild::Variables>>,
) -> Result<Vec<LoadedObject>, StepError> {
    let kustomize = manifest::kustomize::Kustomize {
        binary: settings.kustomize_binary.to_path_buf(),
        timeout: settings.timeout,
        max_output: settings.limits.total.unwrap_or(4 << 20).saturating_mul(4),
    };
    let options = manifest::LoadOptions {
        substitute,
        decryption: Some(settings.decryption.clone()),
        ..manifest::LoadOptions::default()
    };
    kustomize.build_with(checkout, dir, &options).await.map_err(|error| {
        StepError::caused(Stage::Build, format!("{error}; nothing was applied or pruned", error = Chain(&error)), error)
    })
}

/// A run with no objects fails unless `spec.allowEmpty` (nothing is applied or pruned).
pub(crate) fn require_objects(applyset: &ApplySet, loaded: &[LoadedObject], revision: &str) -> Result<(), StepError> {
    if !loaded.is_empty() || applyset.spec.allow_empty {
        return Ok(());
    }
    Err(StepError::new(
        Stage::Load,
        format!(
            "no objects found in {} at {revision}; nothing was applied or pruned (set spec.allowEmpty to accept an empty source)",
            applyset.spec.source.path.as_deref().unwrap_or("the repository root"),
        ),
    ))
}

/// Loads every manifest under `dir`; file names in errors and sources are relative to the
/// repository root. Beyond kubectl: size caps, and patch directives written in a manifest are
/// refused here, before anything is applied (the check needs nothing from the cluster).
fn load_manifests(
    dir: &Path,
    checkout: &Path,
    settings: &BuildSettings<'_>,
    substitute: Option<Arc<manifest::postbuild::Variables>>,
) -> Result<Vec<LoadedObject>, StepError> {
    // The fetch resolved `dir` inside the checkout; "" is the repository root itself.
    let within = dir.strip_prefix(checkout).unwrap_or(dir);
    let options = manifest::LoadOptions {
        limits: settings.limits,
        reject_patch_directives: true,
        base_dir: Some(checkout.into()),
        substitute,
        kubectl_validation: false,
        decryption: Some(settings.decryption.clone()),
    };
    manifest::load_with(&[within.to_path_buf()], true, std::io::empty(), &options).map_err(|error| {
        let count = error.errors.len();
        let lines: Vec<String> = error.errors.iter().take(10).map(ToString::to_string).collect();
        // Post-build substitution and decryption are part of the build (as in Flux): BuildFailed.
        let substitution = error
            .errors
            .iter()
            .any(|e| matches!(e.kind, manifest::ErrorKind::Substitution | manifest::ErrorKind::Decryption));
        let message =
            format!("{count} error(s) loading the manifests; nothing was applied or pruned:\n{}", lines.join("\n"));
        StepError::caused(if substitution { Stage::Build } else { Stage::Load }, message, error)
    })
}
