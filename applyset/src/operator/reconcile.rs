//! One reconcile of an ApplySet, top to bottom: fetch → load → apply → prune → drift → status.
//! Each step that fails maps to one condition reason ([`Stage`]); nothing is pruned unless
//! every earlier step succeeded, and the status is written only when it changed.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::core::ApiResource;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{self, Event as FinalizerEvent};

use super::api::{ApplySet, ApplySetStatus, DeletionPolicy, DriftMode, DriftStatus, FINALIZER, GROUP, KIND, PLURAL};
use super::context::Context;
use super::drift::IgnoreRules;
use super::inventory;
use super::outcome::{Classified, Done, classify, describe_drift, set_drift_condition};
use super::prune;
use super::schedule::{Intervals, backoff, with_jitter};
use super::status::{self, DRIFTED, Failure, READY, Stage, reason};
use crate::apply::applyset_parent::{ApiIndex, DeleteOptions, Parent};
use crate::apply::{self, ApplyOptions, ApplyReport, DryRun, Fatal, Ownership, PatchFilter};
use crate::cluster::Cluster;
use crate::manifest::{self, LoadedObject};
use crate::redact;
use crate::source::{Ancestry, CacheKey, Credentials, GitUrl, Transport};

/// Errors the controller retries on its own schedule (the reconcile's outcome is in the status).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("writing the status of {key}: {source}")]
    Status { key: String, source: kube::Error },
    #[error("finalizer: {0}")]
    Finalizer(String),
    #[error("{0}")]
    Cleanup(String),
}

pub fn api_resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: "v1alpha1".into(),
        api_version: format!("{GROUP}/v1alpha1"),
        kind: KIND.into(),
        plural: PLURAL.into(),
    }
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

/// The controller's entry point: finalizer handling, then [`sync`] or [`cleanup`].
pub async fn reconcile(applyset: Arc<ApplySet>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let api: Api<ApplySet> = Api::namespaced(ctx.client.clone(), &applyset.namespace_or_default());
    finalizer::finalizer(&api, FINALIZER, applyset, |event| async {
        match event {
            FinalizerEvent::Apply(applyset) => sync(applyset, &ctx).await,
            FinalizerEvent::Cleanup(applyset) => cleanup(applyset, &ctx).await,
        }
    })
    .await
    .map_err(|e| match e {
        finalizer::Error::ApplyFailed(inner) | finalizer::Error::CleanupFailed(inner) => inner,
        other => ReconcileError::Finalizer(other.to_string()),
    })
}

/// Unexpected errors (status writes, finalizer patches): retry soon.
pub fn error_policy(applyset: Arc<ApplySet>, error: &ReconcileError, _ctx: Arc<Context>) -> Action {
    tracing::warn!(applyset = %applyset.key(), %error, "reconcile error");
    Action::requeue(Duration::from_secs(15))
}

async fn sync(applyset: Arc<ApplySet>, ctx: &Context) -> Result<Action, ReconcileError> {
    let started = Instant::now();
    let key = applyset.key();
    let generation = applyset.metadata.generation;
    let previous = applyset.status.clone().unwrap_or_default();
    let mut status = previous.clone();
    if let Some(requested) = applyset.reconcile_requested_at() {
        status.last_handled_reconcile_at = Some(requested.to_owned());
    }

    if applyset.spec.suspend {
        status::mark_suspended(&mut status, generation, &now());
        write_status(ctx, &applyset, &previous, &mut status).await?;
        ctx.metrics.reconcile_finished("suspended", started.elapsed());
        return Ok(Action::await_change());
    }
    let intervals = match Intervals::of(&applyset, ctx.settings.min_interval) {
        Ok(intervals) => intervals,
        Err(message) => {
            let failure = Failure::new(Stage::InvalidSpec, message);
            return finish_failed(ctx, &applyset, &previous, status, failure, started, None).await;
        }
    };
    // A status write or a repeated watch event must not start a new run before it is due.
    if !ctx.is_due(&key, generation, applyset.reconcile_requested_at()) {
        return Ok(Action::requeue(ctx.remaining(&key)));
    }

    let mut written = previous.clone();
    if previous.observed_generation != generation || status::condition(&previous, READY).is_none() {
        let message = format!("Reconciling generation {}", generation.unwrap_or(0));
        status::mark_progressing(&mut status, &message, generation, &now());
        write_status(ctx, &applyset, &previous, &mut status).await?;
        written = status.clone();
    }

    // One span per run: every log line of the run (and of each object it applies) carries the
    // ApplySet and, once fetched, the revision.
    let span = tracing::info_span!("reconcile", applyset = %key, revision = tracing::field::Empty);
    let run = tracing::Instrument::instrument(pipeline(&applyset, ctx, &previous, &mut status, intervals), span);
    match run.await {
        Ok(done) => {
            let now = now();
            let (applied, drifted, failed) = done.counts;
            ctx.metrics.set_objects(&key, applied, drifted, failed);
            let mut message = format!("Applied revision: {}", done.revision);
            if !done.drifted.is_empty() && !done.corrected {
                message.push_str(&format!(" ({} object(s) drifted)", done.drifted.len()));
            }
            if let Some(note) = history_note(&done) {
                message.push_str(&format!(" ({note})"));
            }
            status::mark_ready(&mut status, &message, generation, &now);
            set_drift_condition(&mut status, &done, generation, &now);
            status.last_applied_revision = Some(done.revision.clone());
            status.last_applied_spec_digest = Some(applyset.spec.apply_digest());
            let was_ready = status::condition(&written, READY).is_some_and(|c| c.status == "True");
            write_status(ctx, &applyset, &written, &mut status).await?;
            publish_success_events(ctx, &applyset, &done, was_ready).await;
            ctx.succeeded(&key);
            ctx.metrics.reconcile_finished("success", started.elapsed());
            ctx.metrics.sync_succeeded(now.0.as_second() as f64);
            let next = with_jitter(intervals.interval);
            ctx.ran(&key, generation, applyset.reconcile_requested_at(), next);
            Ok(Action::requeue(next))
        }
        Err(failure) => finish_failed(ctx, &applyset, &written, status, failure, started, Some(intervals)).await,
    }
}

async fn finish_failed(
    ctx: &Context,
    applyset: &ApplySet,
    written: &ApplySetStatus,
    mut status: ApplySetStatus,
    failure: Failure,
    started: Instant,
    intervals: Option<Intervals>,
) -> Result<Action, ReconcileError> {
    let key = applyset.key();
    let generation = applyset.metadata.generation;
    let before = status::condition(written, READY).map(|c| (c.reason.clone(), c.message.clone()));
    status::mark_failed(&mut status, &failure, generation, &now());
    write_status(ctx, applyset, written, &mut status).await?;
    let after = status::condition(&status, READY).map(|c| (c.reason.clone(), c.message.clone()));
    // One Event per distinct failure, not one per retry.
    if before != after {
        ctx.event(applyset, true, failure.stage.reason(), "Reconcile", failure.message.clone()).await;
    }
    tracing::warn!(applyset = %key, reason = failure.stage.reason(), message = %failure.message, "reconcile failed");
    ctx.metrics.reconcile_finished(failure.stage.metric_label(), started.elapsed());
    let failures = ctx.failed(&key);
    let Some(intervals) = intervals.filter(|_| failure.stage != Stage::InvalidSpec) else {
        return Ok(Action::await_change());
    };
    let next = backoff(intervals.retry, intervals.interval, failures);
    ctx.ran(&key, generation, applyset.reconcile_requested_at(), next);
    Ok(Action::requeue(next))
}

async fn pipeline(
    applyset: &ApplySet,
    ctx: &Context,
    previous: &ApplySetStatus,
    status: &mut ApplySetStatus,
    intervals: Intervals,
) -> Result<Done, Failure> {
    let namespace = applyset.namespace_or_default();
    let name = applyset.name();

    // fetch
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
    let fetch_started = Instant::now();
    let artifact = ctx
        .git
        .sync_since(
            &CacheKey::new(&namespace, &name),
            &applyset.spec.source,
            credentials,
            intervals.timeout,
            previous.last_applied_revision.as_deref(),
        )
        .await;
    let artifact = match artifact {
        Ok(artifact) => {
            ctx.metrics.git_fetch(fetch_started.elapsed(), None);
            artifact
        }
        Err(error) => {
            let category = error.category();
            ctx.metrics.git_fetch(fetch_started.elapsed(), Some(category.as_str()));
            let stage = if category.as_str() == "InvalidSpec" { Stage::InvalidSpec } else { Stage::Fetch };
            return Err(Failure::new(stage, error.to_string()));
        }
    };
    status.last_attempted_revision = Some(artifact.revision.clone());
    tracing::Span::current().record("revision", artifact.revision.as_str());

    // load
    // kubectl refuses a directory without manifests; with allowEmpty it is an empty source.
    let empty_source =
        applyset.spec.allow_empty && !manifest::walk::holds_manifests(&artifact.dir, true).unwrap_or(true);
    let loaded =
        if empty_source { Vec::new() } else { load(&artifact.dir, &artifact.checkout, ctx.settings.manifest_limits)? };
    // Before anything can fail with a message that quotes them: the values of the Secrets
    // this revision applies are redacted from every status, Event and log line.
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
    let ignore = IgnoreRules::new(&applyset.spec.drift.ignore).map_err(|e| Failure::new(Stage::InvalidSpec, e))?;

    // apply
    let service_account = ctx.service_account_for(applyset);
    let cluster = ctx
        .cluster_for(&namespace, service_account.as_deref())
        .map_err(|e| Failure::new(Stage::Apply, e.to_string()))?;
    // Steady: this revision, with the spec fields that shape the apply, was applied in full
    // before, so any difference now is drift. Both are recorded only by successful runs, so a
    // failed run in between (a git server away for a while) does not make a Report-mode run
    // apply for real, nor hide corrected drift as a plain apply; and a spec change that does
    // not shape the apply (the interval) does not either.
    let digest = applyset.spec.apply_digest();
    let steady = previous.last_applied_revision.as_deref() == Some(artifact.revision.as_str())
        && match previous.last_applied_spec_digest.as_deref() {
            Some(previous_digest) => previous_digest == digest,
            None => status::condition(previous, DRIFTED)
                .is_some_and(|c| c.observed_generation == applyset.metadata.generation),
        };
    let report_only = steady && applyset.spec.drift.mode == DriftMode::Report;
    let index = ctx.api_index(&cluster, false).await.map_err(|e| Failure::new(Stage::Apply, e))?;
    let labels = applyset.metadata.labels.clone().unwrap_or_default();
    let mut annotations = applyset.metadata.annotations.clone().unwrap_or_default();
    let mut parent = parent_for(applyset, &index, &labels, &annotations)?;
    if !parent.warnings.is_empty() {
        // A kind recorded on the parent may be newer than the cached discovery (a CRD the last
        // run created): look again before treating it as gone.
        let index = ctx.api_index(&cluster, true).await.map_err(|e| Failure::new(Stage::Apply, e))?;
        parent = parent_for(applyset, &index, &labels, &annotations)?;
        for warning in parent.warnings.drain(..) {
            tracing::warn!(applyset = %applyset.key(), "{warning}");
        }
    }
    let ignore = Arc::new(ignore);
    let options = ApplyOptions {
        // Report mode asks the apiserver what the apply would do (as `kubectl diff` does), so
        // that values it canonicalizes are not reported as drift.
        dry_run: if report_only { DryRun::Server } else { DryRun::None },
        force: applyset.spec.force,
        default_namespace: Some(namespace.clone()),
        field_manager: ctx.settings.field_manager.clone(),
        concurrency: ctx.settings.apply_concurrency,
        applyset_label: Some(parent.id().to_owned()),
        crd_timeout: intervals.timeout,
        keep_results: true,
        ownership: Ownership::RefuseOtherSets,
        patch_filter: (!ignore.is_empty()).then(|| {
            let ignore = ignore.clone();
            PatchFilter(Arc::new(move |object, _live, patch| ignore.filter_patch(object, patch)))
        }),
        ..ApplyOptions::default()
    };
    // An empty source (allowed by spec.allowEmpty) applies nothing and prunes everything.
    let empty = loaded.is_empty();
    let plan = if empty { None } else { Some(plan(&cluster, loaded, &options).await?) };
    if let Some(plan) = plan.as_ref().filter(|_| !report_only) {
        parent.record_members(plan.members().iter().map(|m| crate::apply::applyset_parent::Member {
            api_resource: &m.api_resource,
            namespaced: m.namespaced,
            namespace: m.namespace.as_deref(),
        }));
        // The parent records every kind before anything is applied, so a failed run can
        // still be pruned later (KEP-3659's superset update).
        let body = parent.superset_body();
        update_parent(ctx, &mut parent, body, &labels, &mut annotations).await?;
    }
    let report = match plan {
        None => ApplyReport::default(),
        Some(plan) => match tokio::time::timeout(intervals.timeout, apply::execute(&cluster, plan, &options)).await {
            Ok(report) => report,
            Err(_) => {
                return Err(Failure::new(
                    Stage::Apply,
                    format!(
                        "applying {} timed out after {:?}; nothing was pruned",
                        artifact.revision, intervals.timeout
                    ),
                ));
            }
        },
    };

    // drift and inventory, from what apply did (or, in Report mode, would do)
    let Classified { mut done, inventory, errors } = classify(&report, &artifact.revision, steady, report_only);
    done.history = artifact.change.clone();
    let previous_members = previous.inventory.as_ref().and_then(|i| i.members.as_deref());
    // The record grows with every object applied, even by a failed run, so that a later run
    // can prune it; a Report-mode dry run applies nothing.
    let members = if report_only {
        previous_members.map(<[_]>::to_vec)
    } else {
        Some(inventory::with_applied(previous_members, &report.visited))
    };
    status.inventory = Some(status::inventory(inventory, status::INVENTORY_LIMIT));
    if let Some(inventory) = &mut status.inventory {
        inventory.members = members.clone();
    }
    status.drift = Some(DriftStatus {
        count: done.drifted.len() as u64,
        mode: format!("{:?}", applyset.spec.drift.mode),
        objects: done.drifted.iter().take(status::DRIFT_LIMIT).cloned().collect(),
    });
    if done.corrected && !done.drifted.is_empty() {
        ctx.metrics.drift_corrected(done.drifted.len() as u64);
    }
    if !errors.is_empty() {
        let count = errors.len();
        let conflicts: Vec<&str> =
            report.objects.iter().filter_map(|o| o.result.as_ref().err()?.conflict_with.as_deref()).collect();
        let stage = if conflicts.len() == count { Stage::OwnershipConflict } else { Stage::Apply };
        let mut message = format!("{count} object(s) failed to apply at {}; nothing was pruned:\n", artifact.revision);
        message.push_str(&errors.into_iter().take(5).collect::<Vec<_>>().join("\n"));
        if !conflicts.is_empty() {
            message.push_str(&format!("\nowned by: {}", name_applysets(ctx, &conflicts).await));
        }
        return Err(Failure::new(stage, message));
    }

    // prune: only after every object applied
    if !report_only && applyset.spec.prune {
        let scope = prune::Scope {
            members: members.as_deref().unwrap_or_default(),
            had_record: previous_members.is_some(),
            own_namespace: &namespace,
            prune_non_empty_namespaces: applyset.spec.prune_non_empty_namespaces,
        };
        // The cluster's discovery as it is now: this run may have added kinds (new CRDs).
        let index = ctx.api_index(&cluster, false).await.map_err(|e| Failure::new(Stage::Prune, e))?;
        let pruned =
            prune::prune(cluster.client(), &parent, &index, &report.visited, scope, &DeleteOptions::new(DryRun::None))
                .await;
        ctx.metrics.pruned(pruned.deleted.len() as u64);
        if let Some(inventory) = &mut status.inventory {
            inventory.members = Some(pruned.members.clone());
        }
        status.prune_skipped = pruned.skipped.clone();
        for warning in &pruned.warnings {
            tracing::warn!(applyset = %applyset.key(), "{warning}");
        }
        done.pruned = pruned.deleted.clone();
        done.prune_skipped =
            pruned.skipped.iter().map(describe_skipped).chain(pruned.warnings.iter().cloned()).collect();
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
        let body = parent.latest_body();
        update_parent(ctx, &mut parent, body, &labels, &mut annotations).await?;
    }
    Ok(done)
}

/// The secrets of one ApplySet are registered in parts, each replaced on its own.
const REDACT_PARTS: [&str; 2] = ["source", "manifests"];

fn redact_owner(applyset: &ApplySet, part: &str) -> String {
    format!("{}#{part}", applyset.key())
}

/// `configmap/x in ns: NotInInventory (…)`.
fn describe_skipped(entry: &super::api::InventoryObject) -> String {
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
        let selector = format!("{}={id}", crate::apply::applyset_parent::PARENT_ID_LABEL);
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
            format!(
                "reading Secret {namespace}/{}: {}",
                secret_ref.name,
                crate::apply::applyset_parent::error_text(&e)
            ),
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
fn load(dir: &Path, checkout: &Path, limits: manifest::Limits) -> Result<Vec<LoadedObject>, Failure> {
    let relative =
        |path: &Path| path.strip_prefix(checkout).map(Path::to_path_buf).unwrap_or_else(|_| path.to_path_buf());
    let options = manifest::LoadOptions { limits, reject_patch_directives: true };
    match manifest::load_with(&[dir.to_path_buf()], true, std::io::empty(), &options) {
        Ok(mut loaded) => {
            for object in &mut loaded {
                object.source.path = relative(&object.source.path);
            }
            Ok(loaded)
        }
        Err(error) => {
            let count = error.errors.len();
            let lines: Vec<String> = error
                .errors
                .into_iter()
                .map(|mut e| {
                    e.path = e.path.as_deref().map(relative);
                    let checkout_prefix = format!("{}/", checkout.display());
                    e.to_string().replace(&checkout_prefix, "")
                })
                .take(10)
                .collect();
            Err(Failure::new(
                Stage::Load,
                format!("{count} error(s) loading the manifests; nothing was applied or pruned:\n{}", lines.join("\n")),
            ))
        }
    }
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

fn parent_for(
    applyset: &ApplySet,
    index: &ApiIndex,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Result<Parent, Failure> {
    Parent::from_existing(
        index.clone(),
        api_resource(),
        &applyset.name(),
        &applyset.namespace_or_default(),
        labels,
        annotations,
    )
    .map_err(|e| Failure::new(Stage::Apply, e))
}

/// Writes the parent's ApplySet metadata with the controller's identity (it is our own
/// object) when it changed, and keeps `annotations` in step for the next comparison.
async fn update_parent(
    ctx: &Context,
    parent: &mut Parent,
    body: serde_json::Value,
    labels: &BTreeMap<String, String>,
    annotations: &mut BTreeMap<String, String>,
) -> Result<(), Failure> {
    parent
        .apply_if_changed(&ctx.client, body.clone(), labels, annotations)
        .await
        .map_err(|e| Failure::new(Stage::Apply, format!("updating the ApplySet parent metadata: {e}")))?;
    if let Some(written) = body["metadata"]["annotations"].as_object() {
        for (key, value) in written {
            annotations.insert(key.clone(), value.as_str().unwrap_or_default().to_owned());
        }
    }
    Ok(())
}

/// For the Ready message: a rewritten history, said in the run that applied it.
fn history_note(done: &Done) -> Option<String> {
    let change = done.history.as_ref().filter(|c| c.ancestry == Ancestry::Rewritten)?;
    Some(format!("history rewritten: was {}, not an ancestor", change.previous))
}

/// `old → new`, as Flux says it: a Warning when the new commit does not descend from the one
/// applied before (a force-push backwards, a rebase), whose removed objects this run pruned.
async fn publish_revision_event(ctx: &Context, applyset: &ApplySet, done: &Done) {
    let Some(change) = &done.history else { return };
    let moved = format!("{} → {}", change.previous, done.revision);
    match change.ancestry {
        Ancestry::Rewritten => {
            let note =
                format!("{moved}: history rewritten, {} is not an ancestor of the new revision", change.previous);
            ctx.event(applyset, true, "HistoryRewritten", "Fetch", note).await;
        }
        Ancestry::Unknown => {
            let note = format!(
                "{moved} (whether it descends from the previous revision is unknown: not in the shallow cache)"
            );
            ctx.event(applyset, false, "NewRevision", "Fetch", note).await;
        }
        Ancestry::Descendant | Ancestry::NotCompared => ctx.event(applyset, false, "NewRevision", "Fetch", moved).await,
    }
}

async fn publish_success_events(ctx: &Context, applyset: &ApplySet, done: &Done, was_ready: bool) {
    publish_revision_event(ctx, applyset, done).await;
    let list = |names: &[String]| {
        let shown: Vec<&str> = names.iter().take(20).map(String::as_str).collect();
        let more = names.len().saturating_sub(shown.len());
        if more > 0 { format!("{} and {more} more", shown.join(", ")) } else { shown.join(", ") }
    };
    if !done.created.is_empty() || !done.configured.is_empty() {
        let mut parts = Vec::new();
        if !done.created.is_empty() {
            parts.push(format!("created: {}", list(&done.created)));
        }
        if !done.configured.is_empty() {
            parts.push(format!("configured: {}", list(&done.configured)));
        }
        ctx.event(applyset, false, "Applied", "Apply", format!("Revision {}: {}", done.revision, parts.join("; ")))
            .await;
    } else if !was_ready {
        ctx.event(applyset, false, reason::SUCCEEDED, "Reconcile", format!("Applied revision {}", done.revision)).await;
    }
    if !done.pruned.is_empty() {
        ctx.event(applyset, false, "Pruned", "Prune", format!("pruned: {}", list(&done.pruned))).await;
    }
    if !done.prune_skipped.is_empty() {
        ctx.event(applyset, true, "PruneSkipped", "Prune", format!("not pruned: {}", done.prune_skipped.join("; ")))
            .await;
    }
    if !done.drifted.is_empty() {
        let (why, action) = if done.corrected {
            (reason::DRIFT_CORRECTED, "CorrectDrift")
        } else {
            (reason::DRIFT_DETECTED, "DetectDrift")
        };
        ctx.event(applyset, !done.corrected, why, action, describe_drift(&done.drifted)).await;
    }
}

/// Writes the status subresource when it differs from `written` (timestamps aside), after
/// redacting its messages (in place, so that the caller keeps what was written).
///
/// The body is a JSON merge patch from `written` to `next`, so keys that disappeared (a
/// healed failure's inventory state, drifted objects that no longer drift) are removed on the
/// server too: a patch of `next` alone would keep them, and every later run would find the
/// status "changed" and write it again.
async fn write_status(
    ctx: &Context,
    applyset: &ApplySet,
    written: &ApplySetStatus,
    next: &mut ApplySetStatus,
) -> Result<(), ReconcileError> {
    status::redact(next);
    if status::same_ignoring_time(written, next) {
        return Ok(());
    }
    let api: Api<ApplySet> = Api::namespaced(ctx.client.clone(), &applyset.namespace_or_default());
    let patch = serde_json::json!({ "status": status::merge_patch(written, next) });
    api.patch_status(&applyset.name(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
        .map_err(|source| ReconcileError::Status { key: applyset.key(), source })
}

/// Deleting an ApplySet: prune every object it recorded (or orphan them), then drop the git
/// cache. A failure keeps the finalizer and is retried.
async fn cleanup(applyset: Arc<ApplySet>, ctx: &Context) -> Result<Action, ReconcileError> {
    let key = applyset.key();
    let namespace = applyset.namespace_or_default();
    if applyset.deletion_policy() == DeletionPolicy::Delete && !applyset.spec.suspend {
        let service_account = ctx.service_account_for(&applyset);
        let cluster = ctx
            .cluster_for(&namespace, service_account.as_deref())
            .map_err(|e| ReconcileError::Cleanup(e.to_string()))?;
        let index = ctx.api_index(&cluster, true).await.map_err(ReconcileError::Cleanup)?;
        let labels = applyset.metadata.labels.clone().unwrap_or_default();
        let annotations = applyset.metadata.annotations.clone().unwrap_or_default();
        let parent =
            parent_for(&applyset, &index, &labels, &annotations).map_err(|f| ReconcileError::Cleanup(f.message))?;
        let members = applyset.status.as_ref().and_then(|s| s.inventory.as_ref()).and_then(|i| i.members.clone());
        let scope = prune::Scope {
            members: members.as_deref().unwrap_or_default(),
            had_record: members.is_some(),
            own_namespace: &namespace,
            prune_non_empty_namespaces: applyset.spec.prune_non_empty_namespaces,
        };
        let pruned =
            prune::prune(cluster.client(), &parent, &index, &[], scope, &DeleteOptions::new(DryRun::None)).await;
        ctx.metrics.pruned(pruned.deleted.len() as u64);
        let not_yet = pruned.error.clone().or_else(|| {
            (!pruned.terminating.is_empty())
                .then(|| format!("still being deleted, held by finalizers: {}", pruned.terminating.join(", ")))
        });
        if let Some(message) = not_yet {
            ctx.event(&applyset, true, reason::DELETE_FAILED, "Delete", message.clone()).await;
            return Err(ReconcileError::Cleanup(format!("deleting the objects of {key}: {message}")));
        }
        if !pruned.deleted.is_empty() {
            ctx.event(
                &applyset,
                false,
                "Pruned",
                "Delete",
                format!("deleted with the ApplySet: {}", pruned.deleted.join(", ")),
            )
            .await;
        }
        let skipped: Vec<String> = pruned.skipped.iter().map(describe_skipped).collect();
        if !skipped.is_empty() {
            ctx.event(&applyset, true, "PruneSkipped", "Delete", format!("left in place: {}", skipped.join("; ")))
                .await;
        }
    }
    if let Err(error) = ctx.git.purge(&CacheKey::new(&namespace, applyset.name())).await {
        tracing::warn!(applyset = %key, %error, "cannot remove the git cache");
    }
    ctx.metrics.forget(&key);
    ctx.forget(&key);
    for part in REDACT_PARTS {
        redact::forget(&redact_owner(&applyset, part));
    }
    Ok(Action::await_change())
}
