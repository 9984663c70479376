//! apply: the KEP-3659 run over the ApplySet itself as the parent, then every object applied
//! as `kubectl apply` does (plus the controller's rules: ownership, drift ignore rules, stale
//! and foreign fields, hashed Secrets, server-side fallback), within the timeout.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::super::run::Mode;
use super::super::{Reconciliation, api_resource};
use super::dry_run::{UnkeyedHashes, keeping_hashed_annotations};
use crate::apply::last_applied::{self, LastAppliedCodecRef};
use crate::apply::{
    self, ApplyOptions, ApplyReport, Fatal, FieldPolicyRef, Keep, Ownership, PatchFilter, UnusableLastApplied,
};
use crate::applyset::{Parent, ParentWrites, Run};
use crate::cluster::cache::CacheRef;
use crate::cluster::mapper::ApiIndex;
use crate::cluster::{Cluster, DryRun};
use crate::keys::FINALIZER;
use crate::manifest::LoadedObject;
use crate::operator::api::{ApplySet, InventoryMember, SecretsMode};
use crate::operator::drift::IgnoreRules;
use crate::operator::history::HistoryIndex;
use crate::operator::leftover::LeftoverPolicy;
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;

/// The field manager of the server-side apply of objects too large for client-side apply.
pub const SERVER_SIDE_MANAGER: &str = "applyset";

/// `spec.drift.ignore`, compiled (an invalid rule is `InvalidSpec`): for the run and for
/// `applyset plan`.
pub fn ignore_rules(applyset: &ApplySet) -> Result<Arc<IgnoreRules>, StepError> {
    IgnoreRules::new(&applyset.spec.drift.ignore).map(Arc::new).map_err(|e| StepError::of(Stage::InvalidSpec, e))
}

/// What the apply step applies, and the rules it applies them with.
pub(in crate::operator::reconcile) struct ApplyInput {
    pub(in crate::operator::reconcile) loaded: Vec<LoadedObject>,
    pub(in crate::operator::reconcile) ignore: Arc<IgnoreRules>,
    pub(in crate::operator::reconcile) history: Arc<HistoryIndex>,
    pub(in crate::operator::reconcile) mode: Mode,
    /// The revision, for messages.
    pub(in crate::operator::reconcile) revision: String,
}

impl Reconciliation<'_> {
    /// `spec.drift.ignore`, compiled ([`ignore_rules`]).
    pub(in crate::operator::reconcile) fn ignore_rules(&self) -> Result<Arc<IgnoreRules>, StepError> {
        ignore_rules(self.applyset)
    }

    /// The KEP-3659 run over the ApplySet itself as the parent, its metadata written with the
    /// controller's identity (it is our own object).
    pub(in crate::operator::reconcile) async fn begin_run<'c>(
        &self,
        cluster: &'c Cluster,
    ) -> Result<Run<'c>, StepError> {
        let (applyset, ctx) = (self.applyset, self.ctx);
        let index = ctx.api_index(cluster, false).await.map_err(|e| StepError::of(Stage::Apply, e))?;
        let labels = applyset.metadata.labels.clone().unwrap_or_default();
        let annotations = applyset.metadata.annotations.clone().unwrap_or_default();
        let members = self.previous.inventory.as_ref().and_then(|i| i.members.as_deref()).unwrap_or_default();
        let (mut parent, mut restored) = parent_for(applyset, members, &index, &labels, &annotations)?;
        if !parent.warnings.is_empty() {
            // A kind recorded on the parent may be newer than the cached discovery (a CRD the
            // last run created): look again before treating it as gone.
            let index = ctx.api_index(cluster, true).await.map_err(|e| StepError::of(Stage::Apply, e))?;
            (parent, restored) = parent_for(applyset, members, &index, &labels, &annotations)?;
            for warning in parent.warnings.drain(..) {
                tracing::warn!(applyset = %applyset.key(), "{warning}");
            }
        }
        if !self.mode.writes() {
            // A plan writes nothing: not the parent's metadata either.
            return Ok(Run::new(cluster, parent, ParentWrites::Kubectl, DryRun::Client));
        }
        if !restored.is_empty() {
            let note = format!(
                "the ApplySet's {} / {} annotations lacked what its record of members holds ({}); its members there are still considered for prune and the annotations are written again",
                crate::keys::GROUP_KINDS_ANNOTATION,
                crate::keys::ADDITIONAL_NAMESPACES_ANNOTATION,
                restored.join(", ")
            );
            tracing::warn!(applyset = %applyset.key(), "{note}");
            ctx.event(applyset, true, "ParentAnnotationsRestored", "Prune", note).await;
        }
        let writes = owned_writes(ctx, applyset, labels, annotations);
        Ok(Run::new(cluster, parent, writes, DryRun::None).with_cache(self.object_cache()))
    }

    /// Plans, records the members' kinds on the parent (not in Report mode), applies within
    /// the timeout. An empty source applies nothing.
    pub(in crate::operator::reconcile) async fn apply(
        &self,
        cluster: &Cluster,
        run: &mut Run<'_>,
        input: ApplyInput,
    ) -> Result<ApplyReport, StepError> {
        if input.loaded.is_empty() {
            return Ok(ApplyReport::default());
        }
        let (loaded, last_applied) = self.hashed_secrets(input.loaded).await?;
        let options = self.apply_options(run.parent().id(), &input.ignore, input.history, input.mode, last_applied);
        let plan = plan(cluster, loaded, &options).await?;
        if !input.mode.report_only && self.mode.writes() {
            // Every kind is recorded before anything is applied, so a failed run can still be
            // pruned later (KEP-3659's superset update).
            let begun = run.begin(&plan).await;
            self.ctx.written.note(&self.applyset.key(), run.parent().written_version());
            begun.map_err(|e| StepError::of(Stage::Apply, e))?;
        }
        let timeout = self.intervals.timeout;
        tokio::time::timeout(timeout, apply::execute(cluster, plan, &options)).await.map_err(|_| {
            StepError::new(
                Stage::Apply,
                format!("applying {} timed out after {timeout:?}; nothing was pruned", input.revision),
            )
        })
    }

    /// How the controller applies: kubectl's client-side apply with the ApplySet's rules.
    fn apply_options(
        &self,
        set_id: &str,
        ignore: &Arc<IgnoreRules>,
        history: Arc<HistoryIndex>,
        mode: Mode,
        last_applied: Option<LastAppliedCodecRef>,
    ) -> ApplyOptions {
        let (applyset, ctx) = (self.applyset, self.ctx);
        let rules = ApplyRules {
            field_manager: &ctx.settings.field_manager,
            concurrency: ctx.settings.apply_concurrency,
            set_id,
            ignore,
            history,
            steady: mode.steady,
            report_only: mode.report_only,
            last_applied,
            timeout: self.intervals.timeout,
            cache: self.mode.writes().then(|| CacheRef {
                cache: self.object_cache(),
                trust_unlabelled: ctx.service_account_for(applyset).is_none(),
            }),
        };
        let mut options = controller_apply_options(applyset, rules);
        if !self.mode.writes() {
            // A plan: computed and applied locally (GETs only), every result kept for its report.
            options.dry_run = DryRun::Client;
            options.keep_results = Keep::Everything;
            options.patch_filter = Some(keeping_hashed_annotations(options.patch_filter.take()));
        }
        options
    }

    /// `spec.secrets: Hashed`: Secrets' `stringData` folded into `data` (a live Secret has
    /// none, so it would be sent again at every run) and their annotations recorded as hashes.
    async fn hashed_secrets(
        &self,
        mut loaded: Vec<LoadedObject>,
    ) -> Result<(Vec<LoadedObject>, Option<LastAppliedCodecRef>), StepError> {
        let hashed = self.ctx.secrets_mode(self.applyset) == SecretsMode::Hashed;
        if hashed {
            for object in &mut loaded {
                last_applied::fold_string_data(&mut object.object);
            }
        }
        if !self.mode.writes() {
            // A plan has not the controller's key: hashes recorded are compared by value.
            return Ok((loaded, Some(LastAppliedCodecRef(Arc::new(UnkeyedHashes)))));
        }
        if !hashed {
            return Ok((loaded, None));
        }
        let codec = self.ctx.hashed_secrets().await.map_err(|e| StepError::of(Stage::Apply, e))?;
        Ok((loaded, Some(LastAppliedCodecRef(codec))))
    }
}

/// What shapes the controller's apply of one ApplySet besides its spec.
pub(crate) struct ApplyRules<'a> {
    /// The controller's field manager ([`crate::operator::controller::FIELD_MANAGER`]).
    pub(crate) field_manager: &'a str,
    pub(crate) concurrency: usize,
    /// The ApplySet's KEP-3659 id (the `part-of` label of every object).
    pub(crate) set_id: &'a str,
    /// `spec.drift.ignore`, compiled.
    pub(crate) ignore: &'a Arc<IgnoreRules>,
    /// Earlier revisions' manifests, for stale fields.
    pub(crate) history: Arc<HistoryIndex>,
    /// The run re-applies a revision it applied before (any change is drift).
    pub(crate) steady: bool,
    /// `spec.drift.mode: Report` on a steady run: only a server dry run.
    pub(crate) report_only: bool,
    /// `spec.secrets: Hashed`'s codec.
    pub(crate) last_applied: Option<LastAppliedCodecRef>,
    /// `spec.timeout`.
    pub(crate) timeout: std::time::Duration,
    /// The watch cache live objects are read from (the controller's).
    pub(crate) cache: Option<CacheRef>,
}

/// How the controller applies an ApplySet's objects: kubectl's client-side apply with the
/// ApplySet's rules (its namespace as the default, its `part-of` label, ownership, drift ignore
/// rules, stale and foreign fields, the server-side fallback). `applyset plan` applies with
/// these options under a client dry run, so that what it shows is what a run would do.
pub(crate) fn controller_apply_options(applyset: &ApplySet, rules: ApplyRules<'_>) -> ApplyOptions {
    let ApplyRules {
        field_manager,
        concurrency,
        set_id,
        ignore,
        history,
        steady,
        report_only,
        last_applied,
        timeout,
        cache,
    } = rules;
    let policy = LeftoverPolicy::new(&applyset.spec.drift, !report_only, field_manager, ignore.clone(), history);
    ApplyOptions {
        // Report mode asks the apiserver what the apply would do (as `kubectl diff` does),
        // so that values it canonicalizes are not reported as drift.
        dry_run: if report_only { DryRun::Server } else { DryRun::None },
        force: applyset.spec.force,
        default_namespace: Some(applyset.namespace_or_default()),
        field_manager: field_manager.to_owned(),
        concurrency,
        applyset_label: Some(set_id.to_owned()),
        crd_timeout: timeout,
        keep_results: crate::apply::Keep::Changed,
        ownership: Ownership::RefuseOtherSets,
        // Beyond kubectl: whoever may patch one object must not be able to fail the run
        // (and so hold back the whole set's prune) by writing garbage into its annotation.
        unusable_last_applied: UnusableLastApplied::TreatAsAbsent,
        patch_filter: (!ignore.is_empty()).then(|| {
            let ignore = ignore.clone();
            PatchFilter(Arc::new(move |object, live, patch| ignore.filter_patch(object, live, patch)))
        }),
        field_policy: (!policy.is_idle()).then(|| FieldPolicyRef(Arc::new(policy))),
        last_applied,
        server_side_fallback: Some(SERVER_SIDE_MANAGER.into()),
        server_side_force: steady,
        cache,
        ..ApplyOptions::default()
    }
}

/// Plans the apply; a kind unknown to a cached discovery (a CRD someone installed since) has
/// discovery read again first. (Not planned twice: that would keep a copy of every object.)
async fn plan(cluster: &Cluster, loaded: Vec<LoadedObject>, options: &ApplyOptions) -> Result<apply::Plan, StepError> {
    let to_failure = |e: Fatal| match e {
        Fatal::Duplicates(_) | Fatal::NoObjects => StepError::of(Stage::Load, e),
        Fatal::Cluster(e) => StepError::of(Stage::Apply, e),
    };
    let kinds: std::collections::BTreeSet<(String, String)> =
        loaded.iter().filter_map(|o| type_of(&o.object)).collect();
    for (api_version, kind) in kinds {
        let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
        let gvk = kube::core::GroupVersionKind::gvk(group, version, &kind);
        if !cluster.knows(&gvk).await.unwrap_or(true) {
            cluster.refresh_discovery().await.map_err(|e| StepError::of(Stage::Apply, e))?;
            break;
        }
    }
    apply::plan(cluster, loaded, options).await.map_err(to_failure)
}

/// `(apiVersion, kind)` of a manifest.
fn type_of(object: &applyset_merge::Value) -> Option<(String, String)> {
    let map = object.as_object()?;
    let text = |field: &str| map.get(field).and_then(applyset_merge::Value::as_str).map(str::to_owned);
    Some((text("apiVersion")?, text("kind")?))
}

/// How the controller writes its ApplySet as the KEP-3659 parent: with its own identity, the
/// metadata as last seen, and its finalizer in every write.
pub(in crate::operator::reconcile) fn owned_writes(
    ctx: &crate::operator::context::Context,
    applyset: &ApplySet,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
) -> ParentWrites {
    let finalizers = applyset.metadata.finalizers.clone().unwrap_or_default();
    ParentWrites::Owned { client: ctx.client.clone(), labels, annotations, finalizers, finalizer: Some(FINALIZER) }
}

/// The ApplySet as the KEP-3659 parent: the kinds and namespaces its annotations record, plus
/// those of `members`, its record of members as read (inline or from its parts): an edited
/// annotation cannot hide a member from prune. Returns what the annotations lacked.
pub(crate) fn parent_for(
    applyset: &ApplySet,
    members: &[InventoryMember],
    index: &ApiIndex,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Result<(Parent, Vec<String>), StepError> {
    let mut parent = Parent::from_existing(
        index.clone(),
        api_resource(),
        &applyset.name(),
        &applyset.namespace_or_default(),
        labels,
        annotations,
    )
    .map_err(|e| StepError::of(Stage::Apply, e))?;
    let restored = parent.include_recorded(members.iter().map(|m| (m.kind.as_str(), m.namespace.as_deref())));
    Ok((parent, restored))
}
