//! `applyset plan`: the checkout built as a run builds it, applied with the controller's
//! options under a client dry run (GETs and LISTs only: the patch is computed and applied
//! locally), and the controller's prune decision on what the new build no longer has.
//!
//! A plan is of the checkout as a new revision: the run it previews applies for real (a
//! `spec.drift.mode: Report` ApplySet too, whose steady runs only report), so it prunes when
//! `spec.prune` is on. Stale fields (which need earlier revisions' manifests from git) are not
//! looked for.

use std::sync::Arc;

use applyset_merge::Value;

use super::render::{self, Variables};
use super::report::{self, Planned};
use super::{PreviewError, target};
use crate::apply::last_applied::{self, HASH_PREFIX, LastAppliedCodec, LastAppliedCodecRef, is_secret};
use crate::apply::object::LAST_APPLIED;
use crate::apply::{self, DryRun, ErrorCategory, Keep, PatchFilter, predicted_mappings};
use crate::applyset::{ParentWrites, Run};
use crate::cli::PlanArgs;
use crate::cluster::Cluster;
use crate::commands::apply::connect;
use crate::operator::api::{APPROVE_PRUNE, ApplySet, InventoryMember, SecretsMode};
use crate::operator::drift::IgnoreRules;
use crate::operator::history::HistoryIndex;
use crate::operator::members::MemberRecords;
use crate::operator::reconcile::{ApplyRules, controller_apply_options, parent_for};
use crate::operator::schedule::Intervals;
use crate::operator::status::{Stage, StepError};
use crate::operator::{controller, inventory, prune};

/// How a plan ended: what its exit code says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Outcome {
    /// Something would be created, configured or pruned.
    pub(super) changes: bool,
    /// An object would fail (the run would fail), or the prune could not be decided.
    pub(super) failed: bool,
}

impl Outcome {
    /// `kubectl diff`'s: 0 nothing would change, 1 something would, 2 an error.
    pub(super) fn exit_code(self) -> u8 {
        if self.failed {
            2
        } else if self.changes {
            1
        } else {
            0
        }
    }
}

pub(super) async fn run(args: PlanArgs) -> Result<Outcome, PreviewError> {
    let cluster = connect(&args.cluster).await?;
    let namespace = args.namespace.namespace.clone().unwrap_or_else(|| cluster.default_namespace().to_owned());
    let applyset = target::applyset_from_cluster(&cluster, &namespace, &args.name).await?;
    if applyset.spec.suspend {
        eprintln!("note: ApplySet {} is suspended: no run applies this until it is resumed", applyset.key());
    }
    let checkout = target::locate(&args.checkout.path, applyset.spec.source.path.as_deref())?;
    for note in &checkout.notes {
        eprintln!("{note}");
    }
    let substitute = render::variables(&applyset, Variables::Cluster(&cluster)).await?;
    let decryption = render::decryption(&applyset, &args.checkout, Some(&cluster)).await?;
    let mut loaded = render::build(&applyset, &checkout, &args.checkout, substitute, &decryption).await?;
    let recorded = recorded_members(&cluster, &applyset).await?;
    let own_namespace = applyset.namespace_or_default();
    inventory::check_fits(recorded.as_deref(), &loaded, &own_namespace, inventory::RECORD_LIMIT)?;
    let ignore = IgnoreRules::new(&applyset.spec.drift.ignore)
        .map(Arc::new)
        .map_err(|e| StepError::of(Stage::InvalidSpec, e))?;
    let timeout =
        Intervals::of(&applyset, std::time::Duration::ZERO).map_err(|e| StepError::of(Stage::InvalidSpec, e))?.timeout;

    // The parent as the run makes it: the kinds and namespaces its annotations and status record.
    let index = cluster.api_index().await?;
    let labels = applyset.metadata.labels.clone().unwrap_or_default();
    let annotations = applyset.metadata.annotations.clone().unwrap_or_default();
    let (parent, _) = parent_for(&applyset, recorded.as_deref().unwrap_or_default(), &index, &labels, &annotations)?;
    let set_id = parent.id().to_owned();

    // As the controller: hashed under spec.secrets: Hashed, and always under spec.decryption.
    if applyset.spec.secrets == Some(SecretsMode::Hashed) || applyset.spec.decryption.is_some() {
        for object in &mut loaded {
            last_applied::fold_string_data(&mut object.object);
        }
    }
    let rules = ApplyRules {
        field_manager: controller::FIELD_MANAGER,
        concurrency: args.cluster.concurrency as usize,
        set_id: &set_id,
        ignore: &ignore,
        history: Arc::new(HistoryIndex::default()),
        steady: false,
        report_only: false,
        last_applied: Some(LastAppliedCodecRef(Arc::new(UnkeyedHashes))),
        timeout,
        cache: None,
    };
    let mut options = controller_apply_options(&applyset, rules);
    options.dry_run = DryRun::Client;
    options.keep_results = Keep::Everything;
    options.patch_filter = Some(keeping_hashed_annotations(options.patch_filter.take()));

    // Kinds that only a CRD of this build defines cannot have objects yet: created.
    let predicted = predicted_mappings(&loaded);
    let by_crd: Vec<(bool, Option<String>)> =
        loaded.iter().map(|o| defined_by_build(&o.object, &predicted, &own_namespace)).collect();
    let plan = apply::plan(&cluster, loaded, &options).await?;
    let report = apply::execute(&cluster, plan, &options).await;

    let run = Run::new(&cluster, parent, ParentWrites::Kubectl, DryRun::Client);
    let applied_all = report.objects.iter().zip(&by_crd).all(|(object, (by_crd, _))| match &object.result {
        Ok(_) => true,
        Err(error) => *by_crd && error.category == ErrorCategory::NoMatch,
    });
    let decision = if applied_all && applyset.spec.prune {
        let members = inventory::with_applied(recorded.as_deref(), &report.visited);
        let approval = annotations.get(APPROVE_PRUNE).map(String::as_str);
        let scope = prune::Scope {
            members: &members,
            had_record: recorded.is_some(),
            own_namespace: &own_namespace,
            prune_non_empty_namespaces: applyset.spec.prune_non_empty_namespaces,
            guard: applyset.spec.prune_guard.as_ref().map(|limits| prune::GuardCheck {
                limits,
                approval,
                revision: &checkout.revision,
            }),
            deadline: std::time::Instant::now() + timeout,
        };
        Some(prune::decide(&run, &index, &report.visited, &scope).await)
    } else {
        None
    };
    let planned =
        Planned { report: &report, created_with_crd: &by_crd, prune: applyset.spec.prune, decision: decision.as_ref() };
    let printed = report::render(&planned);
    eprint!("{}", crate::redact::redact(&printed.stderr));
    print!("{}", crate::redact::redact(&printed.stdout));
    Ok(printed.outcome)
}

/// The ApplySet's record of its members as a run reads it (from its status, or from the
/// `ApplySetRecord` parts it names); `None` without one, or when it is lost (said on stderr:
/// the run then prunes nothing it would have named).
pub(super) async fn recorded_members(
    cluster: &Cluster,
    applyset: &ApplySet,
) -> Result<Option<Vec<InventoryMember>>, PreviewError> {
    let mut status = applyset.status.clone().unwrap_or_default();
    match MemberRecords::default().read_into(cluster.client(), applyset, &mut status).await {
        Ok(()) => Ok(status.inventory.and_then(|i| i.members)),
        Err(error) if error.is_lost() => {
            eprintln!("warning: {}: a run goes on without it, and prunes nothing it recorded", error.describe());
            Ok(None)
        }
        Err(source) => Err(PreviewError::Record { key: applyset.key(), source: Box::new(source) }),
    }
}

/// Whether the object's kind is one that a CRD of the build defines (and so, when the cluster
/// does not serve it yet, none of its objects exists), and then the namespace it goes to.
fn defined_by_build(
    object: &Value,
    predicted: &crate::apply::Predicted,
    own_namespace: &str,
) -> (bool, Option<String>) {
    let text = |field: &str| object.as_object().and_then(|o| o.get(field)).and_then(Value::as_str).unwrap_or("");
    let api_version = text("apiVersion");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let key = (group.to_owned(), version.to_owned(), text("kind").to_owned());
    match predicted.get(&key) {
        Some(mapping) if mapping.namespaced => {
            let namespace = crate::apply::object::meta_str(object, "namespace").filter(|ns| !ns.is_empty());
            (true, Some(namespace.unwrap_or(own_namespace).to_owned()))
        }
        Some(_) => (true, None),
        None => (false, None),
    }
}

/// Secrets whose annotation holds hashes (`spec.secrets: Hashed`) under the controller's key,
/// which a plan does not have: a recorded hash is read back as the manifest's value (unchanged
/// since the last apply), so the patch sends the values that differ from the live Secret's.
struct UnkeyedHashes;

impl LastAppliedCodec for UnkeyedHashes {
    fn encode(&self, _configuration: &Value) -> Option<Value> {
        None
    }

    fn decode(&self, mut recorded: Value, manifest: &Value) -> Value {
        if !is_secret(manifest) {
            return recorded;
        }
        for section in ["data", "stringData"] {
            let now = manifest.as_object().and_then(|m| m.get(section)).and_then(Value::as_object);
            let Some(Value::Object(values)) = recorded.as_object_mut().and_then(|r| r.get_mut(section)) else {
                continue;
            };
            for (name, value) in values.iter_mut() {
                let hashed = value.as_str().is_some_and(|v| v.starts_with(HASH_PREFIX));
                if let (true, Some(now)) = (hashed, now.and_then(|n| n.get(name))) {
                    *value = now.clone();
                }
            }
        }
        recorded
    }
}

/// The controller's patch filter, then: a Secret's hashed annotation is not rewritten (a plan
/// cannot make the controller's hashes; the values are compared instead).
fn keeping_hashed_annotations(filter: Option<PatchFilter>) -> PatchFilter {
    PatchFilter(Arc::new(move |object, live, patch| {
        if let Some(filter) = &filter {
            (filter.0)(object, live, patch);
        }
        let hashed = is_secret(live)
            && crate::apply::object::annotation(live, LAST_APPLIED).is_some_and(|text| text.contains(HASH_PREFIX));
        if hashed {
            drop_annotation(patch);
        }
    }))
}

/// Removes the last-applied annotation from a patch, and the maps it leaves empty.
fn drop_annotation(patch: &mut Value) {
    let Some(metadata) = patch.as_object_mut().and_then(|p| p.get_mut("metadata")).and_then(Value::as_object_mut)
    else {
        return;
    };
    if let Some(Value::Object(annotations)) = metadata.get_mut("annotations") {
        annotations.remove(LAST_APPLIED);
        if annotations.is_empty() {
            metadata.remove("annotations");
        }
    }
    if metadata.is_empty()
        && let Some(root) = patch.as_object_mut()
    {
        root.remove("metadata");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        Value::from_json_str(text).unwrap()
    }

    #[test]
    fn hashed_annotations_are_compared_by_value() {
        let manifest = json(r#"{"apiVersion":"v1","kind":"Secret","data":{"a":"bmV3","b":"c2FtZQ=="}}"#);
        let recorded = json(
            r#"{"apiVersion":"v1","kind":"Secret","data":{"a":"hmac-sha256:01","b":"hmac-sha256:02","gone":"hmac-sha256:03"}}"#,
        );
        let original = UnkeyedHashes.decode(recorded, &manifest);
        assert_eq!(
            original.to_json_string(),
            r#"{"apiVersion":"v1","data":{"a":"bmV3","b":"c2FtZQ==","gone":"hmac-sha256:03"},"kind":"Secret"}"#,
            "a key git dropped stays a hash, so the patch deletes it"
        );
        let config_map = json(r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"hmac-sha256:01"}}"#);
        assert_eq!(UnkeyedHashes.decode(config_map.clone(), &config_map), config_map);
        assert!(UnkeyedHashes.encode(&manifest).is_none(), "plain: its annotation is left out of the patch");
    }

    #[test]
    fn a_hashed_annotation_is_left_out_of_the_patch() {
        let filter = keeping_hashed_annotations(None);
        let live = json(&format!(
            r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"annotations":{{"{LAST_APPLIED}":"{{\"data\":{{\"a\":\"hmac-sha256:01\"}}}}"}}}}}}"#
        ));
        let mut patch =
            json(&format!(r#"{{"metadata":{{"annotations":{{"{LAST_APPLIED}":"x"}}}},"data":{{"a":"bmV3"}}}}"#));
        (filter.0)(&live, &live, &mut patch);
        assert_eq!(patch.to_json_string(), r#"{"data":{"a":"bmV3"}}"#);
        let mut only_annotation = json(&format!(r#"{{"metadata":{{"annotations":{{"{LAST_APPLIED}":"x"}}}}}}"#));
        (filter.0)(&live, &live, &mut only_annotation);
        assert_eq!(only_annotation.to_json_string(), "{}", "an emptied patch: unchanged");
        let plain = json(r#"{"apiVersion":"v1","kind":"Secret"}"#);
        let mut kept = json(&format!(r#"{{"metadata":{{"annotations":{{"{LAST_APPLIED}":"x"}}}}}}"#));
        (filter.0)(&plain, &plain, &mut kept);
        assert!(kept.to_json_string().contains(LAST_APPLIED), "a plain annotation is written as the run writes it");
    }
}
