//! record: drift and the inventory from what apply did (or, in Report mode, would do); an
//! object that failed fails the run here, before anything is pruned.

use std::collections::BTreeMap;

use kube::Api;

use super::super::Reconciliation;
use super::super::run::Mode;
use crate::apply::ApplyReport;
use crate::fields::Reason;
use crate::operator::api::{ApplySet, DriftMode, DriftStatus, DriftedObject};
use crate::operator::context::Context;
use crate::operator::inventory;
use crate::operator::outcome::{Classified, Done, classify};
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;
use crate::operator::status;
use crate::source::Artifact;

impl Reconciliation<'_> {
    /// drift and inventory, from what apply did (or, in Report mode, would do); a failed object
    /// fails the run here, before anything is pruned.
    pub(in crate::operator::reconcile) async fn record(
        &mut self,
        report: &ApplyReport,
        mode: Mode,
        artifact: &Artifact,
    ) -> Result<Done, StepError> {
        let (applyset, ctx, previous) = (self.applyset, self.ctx, self.previous);
        let status = &mut self.status;
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
                crate::keys::LAST_APPLIED_ANNOTATION,
                discarded.join(", ")
            );
            ctx.event(applyset, true, "LastAppliedDiscarded", "Apply", note).await;
        }
        let Classified { mut done, inventory, errors } =
            classify(report, &artifact.revision, mode.steady, mode.report_only);
        done.history = artifact.change.clone();
        // After a change of cluster the record starts anew: the old members are the move's.
        let previous_members =
            previous.inventory.as_ref().and_then(|i| i.members.as_deref()).filter(|_| !self.record_starts_empty);
        // The record grows with every object applied, even by a failed run, so that a later run
        // can prune it; a Report-mode dry run applies nothing.
        let members = if mode.report_only {
            previous_members.map(<[_]>::to_vec)
        } else {
            Some(inventory::with_applied(previous_members, &report.visited))
        };
        status.inventory = Some(crate::operator::api::InventoryStatus {
            cluster: self.cluster.clone(),
            ..status::inventory(inventory, status::INVENTORY_LIMIT)
        });
        // The estimate before the apply keeps this rare (names the kustomize build changed): the
        // record that does not fit is not written, the earlier one stays, nothing is pruned.
        let too_large = members.as_deref().map(|m| (m.len(), inventory::record_bytes(m)));
        let limit = ctx.settings.record_limit;
        if let Some((count, bytes)) = too_large.filter(|(_, bytes)| *bytes > limit) {
            if let Some(inventory) = &mut status.inventory {
                inventory.members = previous_members.map(<[_]>::to_vec);
            }
            return Err(inventory::too_large(count, bytes, limit, "applied, but not recorded: nothing was pruned"));
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
        Err(StepError::new(stage, message))
    }
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

/// `namespace/name` of the ApplySets with these IDs (the parent ID label), or the ID itself
/// when no ApplySet of this controller has it (a kubectl ApplySet, or one the controller
/// cannot read).
async fn name_applysets(ctx: &Context, ids: &[&str]) -> String {
    let api: Api<ApplySet> = Api::all(ctx.client.clone());
    let mut names = std::collections::BTreeSet::new();
    for id in ids.iter().collect::<std::collections::BTreeSet<_>>() {
        let selector = format!("{}={id}", crate::keys::PARENT_ID_LABEL);
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
