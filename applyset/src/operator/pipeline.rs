//! The steps of one reconcile, top to bottom like Flux's: fetch → load → apply → drift → prune.
//! Each step is one function returning a [`Failure`] that carries its stage (the condition
//! reason and the metric label); nothing is pruned unless every earlier step succeeded.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use super::api::{
    APPROVE_PRUNE, ApplySet, ApplySetStatus, DriftMode, DriftStatus, DriftedObject, SecretsMode, StaleFields,
};
use super::context::Context;
use super::drift::IgnoreRules;
use super::history::{self, HistoryIndex};
use super::inventory;
use super::leftover::LeftoverPolicy;
use super::outcome::{Classified, Done, classify};
use super::postbuild;
use super::prune;
use super::reconcile::{api_resource, redact_owner};
use super::schedule::Intervals;
use super::status::{self, DRIFTED, Failure, Stage};
use super::waiting;
use crate::apply::last_applied::{self, LastAppliedCodecRef};
use crate::apply::{
    self, ApplyOptions, ApplyReport, DryRun, Fatal, FieldPolicyRef, Ownership, PatchFilter, UnusableLastApplied,
};
use crate::applyset::{ApiIndex, Parent, ParentWrites, Run};
use crate::cluster::Cluster;
use crate::cluster::cache::CacheRef;
use crate::fields::Reason;
use crate::manifest::{self, LoadedObject};
use crate::redact;
use crate::source::{Artifact, CacheKey, Credentials, ErrorCategory, GitUrl, Transport};

/// Runs the steps; `status` receives what the steps learn even when a later one fails.
pub(super) async fn pipeline(
    applyset: &ApplySet,
    ctx: &Context,
    previous: &ApplySetStatus,
    status: &mut ApplySetStatus,
    intervals: Intervals,
) -> Result<Done, Failure> {
    if ctx.settings.no_cross_namespace_refs {
        super::dependencies::cross_namespace(applyset)?;
    }
    if !applyset.spec.depends_on.is_empty() {
        super::dependencies::check(applyset, &ctx.applysets().await)?;
    }
    let (artifact, credentials) = fetch(applyset, ctx, previous, intervals).await?;
    status.last_attempted_revision = Some(artifact.revision.clone());
    tracing::Span::current().record("revision", artifact.revision.as_str());
    let cluster = ctx
        .cluster_for(&applyset.namespace_or_default(), ctx.service_account_for(applyset).as_deref())
        .map_err(|e| Failure::new(Stage::Apply, e.to_string()))?;
    let variables = postbuild::variables(applyset, &cluster).await?;
    let digest = match &variables {
        Some((_, vars_digest)) => format!("{}-{vars_digest}", applyset.spec.apply_digest()),
        None => applyset.spec.apply_digest(),
    };
    let loaded = load(applyset, ctx, &artifact, intervals, variables.map(|(vars, _)| vars)).await?;
    let recorded = previous.inventory.as_ref().and_then(|i| i.members.as_deref());
    inventory::check_fits(recorded, &loaded, &applyset.namespace_or_default())?;
    let ignore = IgnoreRules::new(&applyset.spec.drift.ignore).map_err(|e| Failure::new(Stage::InvalidSpec, e))?;
    let (history, history_warnings) = history(applyset, ctx, &artifact, &loaded, credentials, intervals).await;

    let mode = Mode::of(applyset, previous, &artifact, &digest);
    let ignore = Arc::new(ignore);
    let policy = LeftoverPolicy::new(
        &applyset.spec.drift,
        !mode.report_only,
        &ctx.settings.field_manager,
        ignore.clone(),
        history,
    );
    let mut run = begin_run(applyset, ctx, &cluster).await?;
    let report = apply(applyset, ctx, &cluster, &mut run, loaded, (ignore, policy), mode, intervals, &artifact).await?;
    let mut done = record(applyset, ctx, previous, status, &report, mode, &artifact).await?;
    done.warnings = history_warnings;
    done.applied_digest = digest;
    if !mode.report_only && applyset.spec.prune {
        prune(applyset, ctx, &cluster, &mut run, status, &report, previous, &mut done, intervals).await?;
    }
    health(applyset, ctx, &cluster, run.parent().id(), status, &report, &mut done, intervals).await?;
    Ok(done)
}

/// health: what the ApplySet waits for, judged once (see [`super::waiting`]); nothing when it
/// does not wait.
#[allow(clippy::too_many_arguments)]
async fn health(
    applyset: &ApplySet,
    ctx: &Context,
    cluster: &Cluster,
    set_id: &str,
    status: &mut ApplySetStatus,
    report: &ApplyReport,
    done: &mut Done,
    intervals: Intervals,
) -> Result<(), Failure> {
    if !waiting::waits(applyset) {
        return Ok(());
    }
    let timeout = match applyset.spec.health_timeout.as_deref() {
        Some(text) => super::duration::parse(text)
            .map_err(|e| Failure::new(Stage::InvalidSpec, format!("spec.healthTimeout {text:?}: {e}")))?,
        None => intervals.timeout,
    };
    let token = format!("{}-{}", done.revision, done.applied_digest);
    let (verdict, judged) = waiting::health(applyset, ctx, cluster, set_id, &report.visited, &token, timeout).await?;
    if let Some(inventory) = &mut status.inventory {
        waiting::record(&mut inventory.objects, &judged);
    }
    done.health = Some(verdict);
    Ok(())
}

/// Whether this run re-applies what was applied before (any change now is drift), and whether
/// it only reports drift (a server dry run).
#[derive(Clone, Copy, Debug)]
struct Mode {
    steady: bool,
    report_only: bool,
}

impl Mode {
    /// Steady: this revision, with the spec fields that shape the apply, was applied in full
    /// before. Both are recorded only by successful runs, so a failed run in between (a git
    /// server away for a while) does not make a Report-mode run apply for real, nor hide
    /// corrected drift as a plain apply; and a spec change that does not shape the apply (the
    /// interval) does not either.
    fn of(applyset: &ApplySet, previous: &ApplySetStatus, artifact: &Artifact, digest: &str) -> Mode {
        let steady = previous.last_applied_revision.as_deref() == Some(artifact.revision.as_str())
            && match previous.last_applied_spec_digest.as_deref() {
                Some(previous_digest) => previous_digest == digest,
                None => status::condition(previous, DRIFTED)
                    .is_some_and(|c| c.observed_generation == applyset.metadata.generation),
            };
        Mode { steady, report_only: steady && applyset.spec.drift.mode == DriftMode::Report }
    }
}

/// fetch: the source's credentials, then the revision from git (the credentials are kept to
/// read earlier revisions).
async fn fetch(
    applyset: &ApplySet,
    ctx: &Context,
    previous: &ApplySetStatus,
    intervals: Intervals,
) -> Result<(Artifact, Option<Credentials>), Failure> {
    let credentials = credentials(applyset, ctx).await?;
    // The source's secrets (URL user info, the auth Secret's values) are redacted from
    // everything published from here on.
    let mut source_secrets = redact::Secrets::new();
    let values = crate::source::url_secrets(&applyset.spec.source.url).into_iter();
    for value in values.chain(credentials.iter().flat_map(Credentials::secret_values)) {
        source_secrets.add(&value);
    }
    redact::register(&redact_owner(applyset, "source"), source_secrets);
    if !ctx.settings.allow_local_sources
        && GitUrl::parse(&applyset.spec.source.url).is_ok_and(|url| url.transport() == Transport::Local)
    {
        return Err(Failure::new(
            Stage::InvalidSpec,
            "spec.source.url: local repositories (file:// or a path) are disabled on this controller (--allow-local-sources)",
        ));
    }
    let namespace = applyset.namespace_or_default();
    let fetch_started = Instant::now();
    let artifact = ctx
        .git
        .sync_since(
            &CacheKey::new(&namespace, applyset.name()),
            &applyset.spec.source,
            credentials.clone(),
            intervals.timeout,
            previous.last_applied_revision.as_deref(),
        )
        .await;
    match artifact {
        Ok(artifact) => {
            ctx.metrics.git_fetch(fetch_started.elapsed(), None);
            Ok((artifact, credentials))
        }
        Err(error) => {
            let category = error.category();
            ctx.metrics.git_fetch(fetch_started.elapsed(), Some(category.as_str()));
            let stage = if category == ErrorCategory::InvalidSpec { Stage::InvalidSpec } else { Stage::Fetch };
            Err(Failure::new(stage, error.to_string()))
        }
    }
}

/// load: the revision's manifests (none for an empty source that `allowEmpty` accepts); the
/// values of the Secrets it applies are redacted from every status, Event and log line before
/// anything can fail with a message that quotes them.
async fn load(
    applyset: &ApplySet,
    ctx: &Context,
    artifact: &Artifact,
    intervals: Intervals,
    substitute: Option<Arc<manifest::postbuild::Variables>>,
) -> Result<Vec<LoadedObject>, Failure> {
    // kubectl refuses a directory without manifests; with allowEmpty it is an empty source.
    let empty_source =
        applyset.spec.allow_empty && !manifest::walk::holds_manifests(&artifact.dir, true).unwrap_or(true);
    let loaded = if manifest::kustomize::kustomization_file(&artifact.dir).is_some() {
        build(ctx, artifact, intervals, substitute).await?
    } else if empty_source {
        Vec::new()
    } else {
        load_manifests(&artifact.dir, &artifact.checkout, ctx.settings.manifest_limits, substitute)?
    };
    let mut secrets = redact::Secrets::new();
    for object in &loaded {
        secrets.add_manifest(&object.object);
    }
    redact::register(&redact_owner(applyset, "manifests"), secrets);
    if loaded.is_empty() && !applyset.spec.allow_empty {
        return Err(Failure::new(
            Stage::Load,
            format!(
                "no objects found in {} at {}; nothing was applied or pruned (set spec.allowEmpty to accept an empty source)",
                applyset.spec.source.path.as_deref().unwrap_or("the repository root"),
                artifact.revision
            ),
        ));
    }
    Ok(loaded)
}

/// build: a source holding a kustomization is built by kustomize (checked first: nothing from
/// outside the checkout, no remote base, no Helm, no plugins), within the timeout; its output
/// may be at most four times the revision size cap.
async fn build(
    ctx: &Context,
    artifact: &Artifact,
    intervals: Intervals,
    substitute: Option<Arc<manifest::postbuild::Variables>>,
) -> Result<Vec<LoadedObject>, Failure> {
    let kustomize = manifest::kustomize::Kustomize {
        binary: ctx.settings.kustomize_binary.clone(),
        timeout: intervals.timeout,
        max_output: ctx.settings.manifest_limits.total.unwrap_or(4 << 20).saturating_mul(4),
    };
    let options = manifest::LoadOptions { substitute, ..manifest::LoadOptions::default() };
    kustomize
        .build_with(&artifact.checkout, &artifact.dir, &options)
        .await
        .map_err(|error| Failure::new(Stage::Build, format!("{error}; nothing was applied or pruned")))
}

/// history: the earlier applied revisions' manifests of the objects git changed since, for
/// stale fields. A revision that cannot be read is left out with a warning.
async fn history(
    applyset: &ApplySet,
    ctx: &Context,
    artifact: &Artifact,
    loaded: &[LoadedObject],
    credentials: Option<Credentials>,
    intervals: Intervals,
) -> (Arc<HistoryIndex>, Vec<String>) {
    if applyset.spec.drift.stale_fields == StaleFields::Ignore {
        return (Arc::new(HistoryIndex::default()), Vec::new());
    }
    // Earlier revisions are read as plain manifests: a kustomization's would need building
    // (documented: a kustomize source reports foreign fields, not stale ones).
    if manifest::kustomize::kustomization_file(&artifact.dir).is_some() {
        return (Arc::new(HistoryIndex::default()), Vec::new());
    }
    let earlier = history::earlier(applyset, &artifact.revision);
    let (index, warnings) = ctx
        .history
        .index(&ctx.git, applyset, earlier, &artifact.revision, loaded, credentials, intervals.timeout)
        .await;
    for warning in &warnings {
        tracing::warn!(applyset = %applyset.key(), "{warning}");
    }
    (index, warnings)
}

/// The KEP-3659 run over the ApplySet itself as the parent, its metadata written with the
/// controller's identity (it is our own object).
async fn begin_run<'c>(applyset: &ApplySet, ctx: &Context, cluster: &'c Cluster) -> Result<Run<'c>, Failure> {
    let index = ctx.api_index(cluster, false).await.map_err(|e| Failure::new(Stage::Apply, e))?;
    let labels = applyset.metadata.labels.clone().unwrap_or_default();
    let annotations = applyset.metadata.annotations.clone().unwrap_or_default();
    let (mut parent, mut restored) = parent_for(applyset, &index, &labels, &annotations)?;
    if !parent.warnings.is_empty() {
        // A kind recorded on the parent may be newer than the cached discovery (a CRD the last
        // run created): look again before treating it as gone.
        let index = ctx.api_index(cluster, true).await.map_err(|e| Failure::new(Stage::Apply, e))?;
        (parent, restored) = parent_for(applyset, &index, &labels, &annotations)?;
        for warning in parent.warnings.drain(..) {
            tracing::warn!(applyset = %applyset.key(), "{warning}");
        }
    }
    if !restored.is_empty() {
        let note = format!(
            "the ApplySet's {} / {} annotations lacked what status.inventory.members records ({}); its members there are still considered for prune and the annotations are written again",
            crate::applyset::GROUP_KINDS_ANNOTATION,
            crate::applyset::ADDITIONAL_NAMESPACES_ANNOTATION,
            restored.join(", ")
        );
        tracing::warn!(applyset = %applyset.key(), "{note}");
        ctx.event(applyset, true, "ParentAnnotationsRestored", "Prune", note).await;
    }
    let writes = ParentWrites::Owned { client: ctx.client.clone(), labels, annotations };
    Ok(Run::new(cluster, parent, writes, DryRun::None).with_cache(ctx.cache.clone()))
}

/// apply: plan, record the members on the parent (not in Report mode), apply within the
/// timeout. An empty source applies nothing.
#[allow(clippy::too_many_arguments)]
async fn apply(
    applyset: &ApplySet,
    ctx: &Context,
    cluster: &Cluster,
    run: &mut Run<'_>,
    loaded: Vec<LoadedObject>,
    (ignore, policy): (Arc<IgnoreRules>, LeftoverPolicy),
    mode: Mode,
    intervals: Intervals,
    artifact: &Artifact,
) -> Result<ApplyReport, Failure> {
    if loaded.is_empty() {
        return Ok(ApplyReport::default());
    }
    let (loaded, last_applied) = secrets(applyset, ctx, loaded).await?;
    let options = ApplyOptions {
        // Report mode asks the apiserver what the apply would do (as `kubectl diff` does), so
        // that values it canonicalizes are not reported as drift.
        dry_run: if mode.report_only { DryRun::Server } else { DryRun::None },
        force: applyset.spec.force,
        default_namespace: Some(applyset.namespace_or_default()),
        field_manager: ctx.settings.field_manager.clone(),
        concurrency: ctx.settings.apply_concurrency,
        applyset_label: Some(run.parent().id().to_owned()),
        crd_timeout: intervals.timeout,
        keep_results: true,
        ownership: Ownership::RefuseOtherSets,
        // Beyond kubectl: whoever may patch one object must not be able to fail the run (and
        // so hold back the whole set's prune) by writing garbage into its annotation.
        unusable_last_applied: UnusableLastApplied::TreatAsAbsent,
        patch_filter: (!ignore.is_empty()).then(|| {
            let ignore = ignore.clone();
            PatchFilter(Arc::new(move |object, live, patch| ignore.filter_patch(object, live, patch)))
        }),
        field_policy: (!policy.is_idle()).then(|| FieldPolicyRef(Arc::new(policy))),
        last_applied,
        server_side_fallback: Some(SERVER_SIDE_MANAGER.into()),
        server_side_force: mode.steady,
        cache: Some(CacheRef {
            cache: ctx.cache.clone(),
            trust_unlabelled: ctx.service_account_for(applyset).is_none(),
        }),
        ..ApplyOptions::default()
    };
    let plan = plan(cluster, loaded, &options).await?;
    if !mode.report_only {
        // Every kind is recorded before anything is applied, so a failed run can still be
        // pruned later (KEP-3659's superset update).
        run.begin(&plan).await.map_err(|e| Failure::new(Stage::Apply, e.to_string()))?;
    }
    tokio::time::timeout(intervals.timeout, apply::execute(cluster, plan, &options)).await.map_err(|_| {
        Failure::new(
            Stage::Apply,
            format!("applying {} timed out after {:?}; nothing was pruned", artifact.revision, intervals.timeout),
        )
    })
}

/// The field manager of the server-side apply of objects too large for client-side apply.
pub const SERVER_SIDE_MANAGER: &str = "applyset";

/// `spec.secrets: Hashed`: Secrets' `stringData` folded into `data` (a live Secret has none,
/// so it would be sent again at every run) and their annotations recorded as hashes.
async fn secrets(
    applyset: &ApplySet,
    ctx: &Context,
    mut loaded: Vec<LoadedObject>,
) -> Result<(Vec<LoadedObject>, Option<LastAppliedCodecRef>), Failure> {
    if ctx.secrets_mode(applyset) != SecretsMode::Hashed {
        return Ok((loaded, None));
    }
    let codec = ctx.hashed_secrets().await.map_err(|e| Failure::new(Stage::Apply, e))?;
    for object in &mut loaded {
        last_applied::fold_string_data(&mut object.object);
    }
    Ok((loaded, Some(LastAppliedCodecRef(codec))))
}

/// drift and inventory, from what apply did (or, in Report mode, would do); a failed object
/// fails the run here, before anything is pruned.
async fn record(
    applyset: &ApplySet,
    ctx: &Context,
    previous: &ApplySetStatus,
    status: &mut ApplySetStatus,
    report: &ApplyReport,
    mode: Mode,
    artifact: &Artifact,
) -> Result<Done, Failure> {
    // The apiserver's warnings on each object (deprecated APIs, unknown fields with Warn
    // validation) go to the controller's log, where the CLI prints them to stderr.
    for object in &report.objects {
        for warning in &object.warnings {
            tracing::warn!(applyset = %applyset.key(), object = %object.name, "{warning}");
        }
    }
    let discarded: Vec<&str> = report
        .objects
        .iter()
        .filter(|o| o.details.as_ref().is_some_and(|d| d.last_applied_discarded))
        .map(|o| o.name.as_str())
        .collect();
    if !discarded.is_empty() && !mode.report_only {
        let note = format!(
            "the {} annotation of {} was not a JSON object (edited by hand?); treated as absent and written anew",
            crate::applyset::LAST_APPLIED_ANNOTATION,
            discarded.join(", ")
        );
        ctx.event(applyset, true, "LastAppliedDiscarded", "Apply", note).await;
    }
    let Classified { mut done, inventory, errors } =
        classify(report, &artifact.revision, mode.steady, mode.report_only);
    done.history = artifact.change.clone();
    let previous_members = previous.inventory.as_ref().and_then(|i| i.members.as_deref());
    // The record grows with every object applied, even by a failed run, so that a later run
    // can prune it; a Report-mode dry run applies nothing.
    let members = if mode.report_only {
        previous_members.map(<[_]>::to_vec)
    } else {
        Some(inventory::with_applied(previous_members, &report.visited))
    };
    status.inventory = Some(status::inventory(inventory, status::INVENTORY_LIMIT));
    // The estimate before the apply keeps this rare (names the kustomize build changed): the
    // record that does not fit is not written, the earlier one stays, nothing is pruned.
    if let Some(members) = members.as_deref()
        && inventory::record_bytes(members) > inventory::RECORD_LIMIT
    {
        let bytes = inventory::record_bytes(members);
        if let Some(inventory) = &mut status.inventory {
            inventory.members = previous_members.map(<[_]>::to_vec);
        }
        return Err(inventory::too_large(members.len(), bytes, "applied, but not recorded: nothing was pruned"));
    }
    if let Some(inventory) = &mut status.inventory {
        inventory.members = members;
    }
    status.drift = Some(drift_status(&applyset.spec.drift.mode, &done));
    done.left_behind_changed = left_behind_of(previous.drift.as_ref()) != left_behind_of(status.drift.as_ref());
    if done.corrected && !done.drifted.is_empty() {
        ctx.metrics.drift_corrected(done.drifted.len() as u64);
    }
    if errors.is_empty() {
        return Ok(done);
    }
    let count = errors.len();
    let conflicts: Vec<&str> =
        report.objects.iter().filter_map(|o| o.result.as_ref().err()?.conflict_with.as_deref()).collect();
    let stage = if conflicts.len() == count { Stage::OwnershipConflict } else { Stage::Apply };
    let mut message = format!("{count} object(s) failed to apply at {}; nothing was pruned:\n", artifact.revision);
    message.push_str(&errors.into_iter().take(5).collect::<Vec<_>>().join("\n"));
    if !conflicts.is_empty() {
        message.push_str(&format!("\nowned by: {}", name_applysets(ctx, &conflicts).await));
    }
    Err(Failure::new(stage, message))
}

/// The drift report: objects with changed, stale or foreign fields (bounded), counts by reason,
/// and what this run removed.
fn drift_status(mode: &DriftMode, done: &Done) -> DriftStatus {
    let mut objects: Vec<DriftedObject> = done.drifted.clone();
    for entry in &done.left_behind {
        match objects
            .iter_mut()
            .find(|o| o.kind == entry.kind && o.name == entry.name && o.namespace == entry.namespace)
        {
            Some(object) => object.fields.extend(entry.fields.iter().cloned()),
            None => objects.push(entry.clone()),
        }
    }
    let mut reasons = BTreeMap::new();
    for field in objects.iter().flat_map(|o| &o.fields) {
        *reasons.entry(field.reason.clone()).or_insert(0u64) += 1;
    }
    let bounded = |objects: &[DriftedObject]| -> Vec<DriftedObject> {
        objects
            .iter()
            .take(status::DRIFT_LIMIT)
            .map(|o| DriftedObject {
                fields: o.fields.iter().take(status::DRIFT_FIELD_LIMIT).cloned().collect(),
                ..o.clone()
            })
            .collect()
    };
    DriftStatus {
        count: objects.len() as u64,
        mode: format!("{mode:?}"),
        reasons,
        objects: bounded(&objects),
        removed: bounded(&done.removed),
    }
}

/// The stale and foreign fields a drift report lists.
fn left_behind_of(drift: Option<&DriftStatus>) -> Vec<(String, String, String)> {
    let Some(drift) = drift else { return Vec::new() };
    let mut fields: Vec<(String, String, String)> = drift
        .objects
        .iter()
        .flat_map(|o| {
            o.fields
                .iter()
                .filter(|f| f.reason == Reason::Stale.as_str() || f.reason == Reason::Foreign.as_str())
                .map(|f| (format!("{}/{}", o.kind, o.name), f.path.clone(), f.reason.clone()))
        })
        .collect();
    fields.sort();
    fields
}

/// prune: only after every object applied, through the controller's guards; then the parent
/// records this run's kinds only.
#[allow(clippy::too_many_arguments)]
async fn prune(
    applyset: &ApplySet,
    ctx: &Context,
    cluster: &Cluster,
    run: &mut Run<'_>,
    status: &mut ApplySetStatus,
    report: &ApplyReport,
    previous: &ApplySetStatus,
    done: &mut Done,
    intervals: Intervals,
) -> Result<(), Failure> {
    let members = status.inventory.as_ref().and_then(|i| i.members.clone());
    let namespace = applyset.namespace_or_default();
    let approval = applyset.metadata.annotations.as_ref().and_then(|a| a.get(APPROVE_PRUNE)).map(String::as_str);
    let scope = prune::Scope {
        members: members.as_deref().unwrap_or_default(),
        had_record: previous.inventory.as_ref().is_some_and(|i| i.members.is_some()),
        own_namespace: &namespace,
        prune_non_empty_namespaces: applyset.spec.prune_non_empty_namespaces,
        guard: applyset.spec.prune_guard.as_ref().map(|limits| prune::GuardCheck {
            limits,
            approval,
            revision: &done.revision,
        }),
        deadline: std::time::Instant::now() + intervals.timeout,
    };
    // The cluster's discovery as it is now: this run may have added kinds (new CRDs).
    let index = ctx.api_index(cluster, false).await.map_err(|e| Failure::new(Stage::Prune, e))?;
    let pruned = prune::prune(run, &index, &report.visited, scope, &applyset.delete_options()).await;
    ctx.metrics.pruned(pruned.deleted.len() as u64);
    if let Some(inventory) = &mut status.inventory {
        inventory.members = Some(pruned.members.clone());
    }
    status.prune_skipped = pruned.skipped.clone();
    for warning in &pruned.warnings {
        tracing::warn!(applyset = %applyset.key(), "{warning}");
    }
    done.pruned = pruned.deleted.clone();
    // Orphaned objects were kept on purpose: an `Orphaned` Event, not a warning.
    let unexpected = pruned.skipped.iter().filter(|e| e.state != inventory::skipped::ORPHANED);
    done.prune_skipped = unexpected.map(describe_skipped).chain(pruned.warnings.iter().cloned()).collect();
    // Newly orphaned only: a steady run publishes nothing.
    let orphaned = pruned.skipped.iter().filter(|e| e.state == inventory::skipped::ORPHANED);
    done.orphaned = orphaned
        .filter(|e| !previous.prune_skipped.contains(e))
        .map(|e| {
            let place = e.namespace.as_ref().map(|ns| format!(" in {ns}")).unwrap_or_default();
            format!("{} {}{place}", e.kind, e.name)
        })
        .collect();
    if let Some(message) = pruned.guarded {
        return Err(Failure::new(Stage::PruneGuarded, message));
    }
    if let Some(error) = pruned.error {
        return Err(Failure::new(Stage::Prune, error));
    }
    if !pruned.terminating.is_empty() {
        return Err(Failure::new(
            Stage::Prune,
            format!(
                "{} object(s) removed from the source are still being deleted, held by finalizers (not deleted again): {}",
                pruned.terminating.len(),
                pruned.terminating.join(", ")
            ),
        ));
    }
    run.finish().await.map_err(|e| Failure::new(Stage::Apply, e.to_string()))
}

/// `configmap/x in ns: NotInInventory (…)`.
pub(super) fn describe_skipped(entry: &super::api::InventoryObject) -> String {
    let place = entry.namespace.as_ref().map(|ns| format!(" in {ns}")).unwrap_or_default();
    format!("{} {}{place}: {} ({})", entry.kind, entry.name, entry.state, entry.message.as_deref().unwrap_or_default())
}

/// `namespace/name` of the ApplySets with these IDs (the parent ID label), or the ID itself
/// when no ApplySet of this controller has it (a kubectl ApplySet, or one the controller
/// cannot read).
async fn name_applysets(ctx: &Context, ids: &[&str]) -> String {
    let api: Api<ApplySet> = Api::all(ctx.client.clone());
    let mut names = std::collections::BTreeSet::new();
    for id in ids.iter().collect::<std::collections::BTreeSet<_>>() {
        let selector = format!("{}={id}", crate::applyset::PARENT_ID_LABEL);
        let found = api.list_metadata(&kube::api::ListParams::default().labels(&selector)).await.ok();
        let named: Vec<String> = found
            .into_iter()
            .flat_map(|list| list.items)
            .map(|item| {
                format!(
                    "ApplySet {}/{}",
                    item.metadata.namespace.unwrap_or_default(),
                    item.metadata.name.unwrap_or_default()
                )
            })
            .collect();
        if named.is_empty() {
            names.insert(format!("the ApplySet with id {id}"));
        } else {
            names.extend(named);
        }
    }
    names.into_iter().collect::<Vec<_>>().join(", ")
}

/// Reads the source `auth` Secret (same namespace) into credentials; never logs its data.
async fn credentials(applyset: &ApplySet, ctx: &Context) -> Result<Option<Credentials>, Failure> {
    let Some(secret_ref) = &applyset.spec.source.secret_ref else { return Ok(None) };
    let namespace = applyset.namespace_or_default();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
    let secret = secrets.get_opt(&secret_ref.name).await.map_err(|e| {
        Failure::new(
            Stage::Fetch,
            format!("reading Secret {namespace}/{}: {}", secret_ref.name, crate::applyset::error_text(&e)),
        )
    })?;
    let Some(secret) = secret else {
        return Err(Failure::new(
            Stage::Fetch,
            format!("Secret {namespace}/{} (spec.source.secretRef) not found", secret_ref.name),
        ));
    };
    let data: BTreeMap<String, Vec<u8>> = secret.data.unwrap_or_default().into_iter().map(|(k, v)| (k, v.0)).collect();
    Credentials::from_secret_data(&data)
        .map(Some)
        .map_err(|e| Failure::new(Stage::Fetch, format!("Secret {namespace}/{}: {e}", secret_ref.name)))
}

/// Loads every manifest under `dir`; file names in errors and sources are relative to the
/// repository root. Beyond kubectl: size caps, and patch directives written in a manifest are
/// refused here, before anything is applied (the check needs nothing from the cluster).
fn load_manifests(
    dir: &Path,
    checkout: &Path,
    limits: manifest::Limits,
    substitute: Option<Arc<manifest::postbuild::Variables>>,
) -> Result<Vec<LoadedObject>, Failure> {
    // The fetch resolved `dir` inside the checkout; "" is the repository root itself.
    let within = dir.strip_prefix(checkout).unwrap_or(dir);
    let options = manifest::LoadOptions {
        limits,
        reject_patch_directives: true,
        base_dir: Some(checkout.into()),
        substitute,
        kubectl_validation: false,
    };
    manifest::load_with(&[within.to_path_buf()], true, std::io::empty(), &options).map_err(|error| {
        let count = error.errors.len();
        let lines: Vec<String> = error.errors.iter().take(10).map(ToString::to_string).collect();
        // Post-build substitution is part of the build (as in Flux): BuildFailed.
        let substitution = error.errors.iter().any(|e| e.kind == manifest::ErrorKind::Substitution);
        Failure::new(
            if substitution { Stage::Build } else { Stage::Load },
            format!("{count} error(s) loading the manifests; nothing was applied or pruned:\n{}", lines.join("\n")),
        )
    })
}

/// Plans the apply; kinds unknown to a cached discovery are looked up once more.
async fn plan(cluster: &Cluster, loaded: Vec<LoadedObject>, options: &ApplyOptions) -> Result<apply::Plan, Failure> {
    let to_failure = |e: Fatal| match e {
        Fatal::Duplicates(_) | Fatal::NoObjects => Failure::new(Stage::Load, e.to_string()),
        Fatal::Cluster(e) => Failure::new(Stage::Apply, e.to_string()),
    };
    let retry_with = loaded.clone();
    let plan = apply::plan(cluster, loaded, options).await.map_err(to_failure)?;
    if !plan.has_failures() {
        return Ok(plan);
    }
    cluster.refresh_discovery().await.map_err(|e| Failure::new(Stage::Apply, e.to_string()))?;
    apply::plan(cluster, retry_with, options).await.map_err(to_failure)
}

/// The ApplySet as the KEP-3659 parent: the kinds and namespaces its annotations record, plus
/// those of the members its status records (an edited annotation cannot hide a member from
/// prune). Returns what the annotations lacked.
pub(super) fn parent_for(
    applyset: &ApplySet,
    index: &ApiIndex,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Result<(Parent, Vec<String>), Failure> {
    let mut parent = Parent::from_existing(
        index.clone(),
        api_resource(),
        &applyset.name(),
        &applyset.namespace_or_default(),
        labels,
        annotations,
    )
    .map_err(|e| Failure::new(Stage::Apply, e.to_string()))?;
    let members = applyset.status.as_ref().and_then(|s| s.inventory.as_ref()).and_then(|i| i.members.as_deref());
    let restored =
        parent.include_recorded(members.unwrap_or_default().iter().map(|m| (m.kind.as_str(), m.namespace.as_deref())));
    Ok((parent, restored))
}
