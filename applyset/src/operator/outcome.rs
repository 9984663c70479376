//! What a run did, from the apply report (pure): the objects created, configured and
//! drifted, the inventory entries and the failures; and how drift is described in the
//! Drifted condition and Events.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::api::{ApplySetStatus, DriftedField, DriftedObject, InventoryObject};
use super::drift;
use super::status::{self, DRIFTED, reason};
use crate::apply::{ApplyReport, Identity, ObjectReport, Verb};
use crate::cluster::mapper::{GroupKind, printed_kind_name};
use crate::fields::Reason;

/// One object a run created, configured or deleted, as a value; shown as kubectl names it
/// (`deployment.apps/web`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    /// `Kind[.group]`, as `status.inventory` names kinds.
    pub kind: String,
    /// Unset for a cluster-scoped object.
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// The prune candidate deleted (or about to be).
    pub fn of_candidate(candidate: &crate::applyset::Candidate) -> ObjectRef {
        let resource = &candidate.kind.api_resource;
        ObjectRef {
            kind: GroupKind::of(resource).to_string(),
            namespace: candidate.listed.namespace.clone(),
            name: candidate.listed.name.clone(),
        }
    }
}

impl std::fmt::Display for ObjectRef {
    /// kubectl's `kind.group/name`: the kind lowercased, the group as it is.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let GroupKind { group, kind } = GroupKind::parse(&self.kind);
        f.write_str(&printed_kind_name(&group, &kind, &self.name))
    }
}

/// What a successful pipeline run did, for the Ready message, Events and metrics.
#[derive(Debug, Default)]
pub struct Done {
    pub revision: String,
    pub created: Vec<ObjectRef>,
    pub configured: Vec<ObjectRef>,
    pub pruned: Vec<ObjectRef>,
    /// Objects prune left in place, not on purpose (not in the record, another owner's, …).
    pub prune_skipped: Vec<InventoryObject>,
    /// What prune could not look at (lists the identity may not make).
    pub prune_warnings: Vec<String>,
    pub drifted: Vec<DriftedObject>,
    /// Drift was corrected (Correct mode) rather than only reported.
    pub corrected: bool,
    /// Stale and foreign fields reported and left in place.
    pub left_behind: Vec<DriftedObject>,
    /// Stale and foreign fields this run removed.
    pub removed: Vec<DriftedObject>,
    /// The reported stale and foreign fields differ from the previous run's (Events are
    /// published only then, so that a steady report writes nothing).
    pub left_behind_changed: bool,
    /// Warnings for the user (earlier revisions that could not be read).
    pub warnings: Vec<String>,
    /// Left git with `applyset.dev/prune: disabled` and kept (newly, since the last run).
    pub orphaned: Vec<InventoryObject>,
    /// What was applied: the spec fields that shape the apply, and the post-build variables
    /// (`status.lastAppliedSpecDigest`).
    pub applied_digest: String,
    /// What the ApplySet read from git (`status.lastAppliedInputs`), when it can be told.
    pub inputs: Option<String>,
    /// Set when this run only recorded a new commit whose inputs are those of the revision
    /// applied before (this one): nothing was checked out, built or applied.
    pub inputs_unchanged_since: Option<String>,
    pub counts: ObjectCounts,
    /// The revision moved since the last applied one: from what, and how.
    pub history: Option<crate::source::RevisionChange>,
    /// What the health step found, when the ApplySet waits for health.
    pub health: Option<super::waiting::Verdict>,
    /// A plan's run (a dry run): what it would do, in place of all of the above.
    pub planned: Option<Box<Planned>>,
}

/// The objects of a run by state (`applyset_objects`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ObjectCounts {
    pub applied: u64,
    pub drifted: u64,
    pub failed: u64,
}

/// What a plan's run would do: the apply's report (in the build's order), the kinds the
/// build's CRDs define, and the prune decision (none when an object would fail, or without
/// `spec.prune`).
#[derive(Debug, Default)]
pub struct Planned {
    pub report: ApplyReport,
    pub crd_kinds: crate::apply::CrdKinds,
    pub decision: Option<super::prune::Decision>,
}

/// `status.inventory.objects[].method` of an object applied server-side.
pub const METHOD_SERVER_SIDE: &str = "ServerSide";

/// [`classify`]'s result.
#[derive(Debug, Default)]
pub struct Classified {
    pub done: Done,
    pub inventory: Vec<InventoryObject>,
    /// One line per failed object: its source and kubectl's error.
    pub errors: Vec<String>,
}

/// Sorts an apply report into what a run did. With `steady` (this revision and spec were
/// applied before) every change is drift: corrected, or with `report_only` only reported.
pub fn classify(report: &ApplyReport, revision: &str, steady: bool, report_only: bool) -> Classified {
    let mut done = Done { revision: revision.to_owned(), corrected: !report_only, ..Done::default() };
    let mut inventory = Vec::new();
    let mut errors = Vec::new();
    for object in &report.objects {
        let (kind, object_name, object_namespace) = identity(object);
        let mut entry = InventoryObject {
            kind: kind.clone(),
            namespace: object_namespace.clone(),
            name: object_name.clone(),
            state: status::STATE_APPLIED.into(),
            message: None,
            method: None,
            ..InventoryObject::default()
        };
        if let Some(why) = object.details.as_ref().and_then(|d| d.server_side.as_ref()) {
            entry.method = Some(METHOD_SERVER_SIDE.into());
            entry.message = Some(status::truncate(&format!("applied server-side: {why}"), status::MAX_OBJECT_MESSAGE));
        }
        match &object.result {
            Err(error) => {
                entry.state = status::STATE_FAILED.into();
                // Without the quoted bodies: a refused Secret's patch holds its values.
                // (An unusable last-applied annotation never fails an object here: the controller
                // treats it as absent, see `UnusableLastApplied::TreatAsAbsent`.)
                let rendered = error.render_without_bodies();
                entry.message = Some(status::truncate(&rendered, status::MAX_OBJECT_MESSAGE));
                errors.push(format!("{}: {}", object.source, rendered.trim_start_matches("error: ")));
            }
            // A patch the apiserver found nothing to change with (git's `1000m` for a stored `1`).
            Ok(Verb::Configured)
                if object.details.as_ref().is_some_and(|d| {
                    matches!((&d.live, &d.result), (Some(live), Some(result)) if !drift::server_changed(live, result))
                }) => {}
            Ok(verb) if steady && *verb != Verb::Unchanged => {
                let fields = changed_fields(object, *verb);
                if report_only {
                    entry.state = status::STATE_DRIFTED.into();
                }
                // A patch that only removed stale or foreign fields is not drift of git's fields.
                if !fields.is_empty() {
                    done.drifted.push(DriftedObject {
                        kind: kind.clone(),
                        namespace: object_namespace.clone(),
                        name: object_name.clone(),
                        fields,
                    });
                }
            }
            Ok(Verb::Created) => done.created.push(entry_ref(&entry)),
            Ok(Verb::Configured) => done.configured.push(entry_ref(&entry)),
            Ok(Verb::Unchanged) => {}
        }
        let (removed, reported) = left_behind_fields(object);
        let drifted_object = |fields| DriftedObject {
            kind: kind.clone(),
            namespace: object_namespace.clone(),
            name: object_name.clone(),
            fields,
        };
        if !reported.is_empty() {
            entry.state = status::STATE_DRIFTED.into();
            done.left_behind.push(drifted_object(reported));
        }
        if !removed.is_empty() {
            done.removed.push(drifted_object(removed));
        }
        inventory.push(entry);
    }
    let failed = inventory.iter().filter(|o| o.state == status::STATE_FAILED).count() as u64;
    let drifted = inventory.iter().filter(|o| o.state == status::STATE_DRIFTED).count() as u64;
    done.counts = ObjectCounts { applied: inventory.len() as u64 - failed - drifted, drifted, failed };
    Classified { done, inventory, errors }
}

/// The fields git sets that a steady run's patch changed (less the stale and foreign fields it
/// removed); a re-created object is one entry.
fn changed_fields(object: &ObjectReport, verb: Verb) -> Vec<DriftedField> {
    let Some(details) = &object.details else { return Vec::new() };
    if verb == Verb::Created {
        return vec![DriftedField {
            path: "(object deleted)".into(),
            reason: Reason::Changed.as_str().into(),
            ..DriftedField::default()
        }];
    }
    let fields = match (&details.patch, &details.live, &details.result) {
        (Some(patch), Some(live), Some(result)) => drift::changed_fields_in(patch, live, result),
        (Some(patch), Some(live), None) => drift::changed_fields(patch, live),
        _ => Vec::new(),
    };
    let removed: Vec<String> = details.fields.iter().filter(|f| f.removed).map(|f| f.path.to_string()).collect();
    fields.into_iter().filter(|f| !removed.contains(&f.path)).collect()
}

/// An object's stale and foreign fields: (removed, reported).
fn left_behind_fields(object: &ObjectReport) -> (Vec<DriftedField>, Vec<DriftedField>) {
    let Some(details) = &object.details else { return (Vec::new(), Vec::new()) };
    let (removed, reported): (Vec<_>, Vec<_>) = details.fields.iter().partition(|f| f.removed);
    (removed.into_iter().map(drift::finding_field).collect(), reported.into_iter().map(drift::finding_field).collect())
}

/// `Kind[.group]`, name and namespace of a reported object: from the object itself when the
/// report holds it, else from kubectl's display name (`deployment.apps/web`).
fn identity(report: &ObjectReport) -> (String, String, Option<String>) {
    let details = report.details.as_ref();
    let object = details.and_then(|d| d.result.as_ref().or(d.live.as_ref())).map(Identity::of);
    if let Some(Identity { api_version, kind, name, namespace }) = object.or_else(|| details?.identity.clone()) {
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        return (GroupKind::new(group, &kind).to_string(), name, namespace);
    }
    let (kind, name) = split_display(&report.name);
    (kind, name, None)
}

fn entry_ref(entry: &InventoryObject) -> ObjectRef {
    ObjectRef { kind: entry.kind.clone(), namespace: entry.namespace.clone(), name: entry.name.clone() }
}

/// `deployment.apps/web` → (`deployment.apps`, `web`).
fn split_display(display: &str) -> (String, String) {
    match display.split_once('/') {
        Some((kind, name)) => (kind.to_owned(), name.to_owned()),
        None => (String::new(), display.to_owned()),
    }
}

pub fn set_drift_condition(status: &mut ApplySetStatus, done: &Done, generation: Option<i64>, now: &Time) {
    let mut problems = Vec::new();
    if !done.corrected && !done.drifted.is_empty() {
        problems.push(format!(
            "{} object(s) differ from the source: {}",
            done.drifted.len(),
            describe_drift(&done.drifted)
        ));
    }
    if !done.left_behind.is_empty() {
        problems.push(format!(
            "{} object(s) hold fields apply leaves behind: {}",
            done.left_behind.len(),
            describe_drift(&done.left_behind)
        ));
    }
    let (value, why, message) = if !problems.is_empty() {
        ("True", reason::DRIFT_DETECTED, problems.join("; "))
    } else if !done.drifted.is_empty() {
        let n = done.drifted.len();
        (
            "False",
            reason::DRIFT_CORRECTED,
            format!("Corrected drift in {n} object(s): {}", describe_drift(&done.drifted)),
        )
    } else {
        ("False", reason::NO_DRIFT, "No drift from the source".to_owned())
    };
    status::set_condition(&mut status.conditions, DRIFTED, value, why, &message, generation, now);
}

/// `Kind/name [field (by manager), …]; …`, stale and foreign fields with their reason.
pub fn describe_drift(objects: &[DriftedObject]) -> String {
    objects
        .iter()
        .take(status::DRIFT_LIMIT)
        .map(|o| {
            let fields: Vec<String> = o.fields.iter().map(describe_field).collect();
            format!("{}/{} [{}]", o.kind, o.name, fields.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn describe_field(field: &DriftedField) -> String {
    let mut notes = Vec::new();
    if !field.reason.is_empty() && field.reason != Reason::Changed.as_str() {
        notes.push(field.reason.to_lowercase());
    }
    if let Some(revision) = &field.applied_in {
        notes.push(format!("applied in {revision}"));
    }
    if let Some(manager) = &field.manager {
        notes.push(format!("by {manager}"));
    }
    if notes.is_empty() { field.path.clone() } else { format!("{} ({})", field.path, notes.join(", ")) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{Details, ObjectError};
    use crate::manifest::Source;
    use applyset_merge::Value;

    fn json(text: &str) -> Value {
        Value::from_json_str(text).unwrap()
    }

    fn config_map(name: &str, value: &str, manager: &str) -> Value {
        json(&format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"shop","managedFields":[{{"manager":"{manager}","operation":"Update","fieldsV1":{{"f:data":{{"f:value":{{}}}}}}}}]}},"data":{{"value":"{value}"}}}}"#
        ))
    }

    fn report(name: &str, result: Result<Verb, ObjectError>, details: Option<Details>) -> ObjectReport {
        ObjectReport {
            source: Source { path: format!("app/{name}.yaml").into(), document: 1, line: 1 },
            name: format!("configmap/{name}"),
            result,
            warnings: Vec::new(),
            details: details.map(Box::new),
        }
    }

    /// `a` edited by hand (patched back to git's value), `b` unchanged, `c` refused.
    fn sample() -> ApplyReport {
        let edited = Details {
            live: Some(config_map("a", "edited", "kubectl-edit")),
            patch: Some(json(r#"{"data":{"value":"git"}}"#)),
            patch_type: None,
            result: Some(config_map("a", "git", "applyset-controller")),
            ..Details::default()
        };
        let unchanged = Details {
            live: Some(config_map("b", "git", "x")),
            result: Some(config_map("b", "git", "x")),
            ..Details::default()
        };
        let refused =
            ObjectError { message: "error when creating \"app/c.yaml\": forbidden".into(), ..ObjectError::default() };
        ApplyReport {
            objects: vec![
                report("a", Ok(Verb::Configured), Some(edited)),
                report("b", Ok(Verb::Unchanged), Some(unchanged)),
                report("c", Err(refused), None),
            ],
            ..ApplyReport::default()
        }
    }

    #[test]
    fn a_new_revision_is_applied_not_drift() {
        let classified = classify(&sample(), "main@sha1:1", false, false);
        let configured: Vec<String> = classified.done.configured.iter().map(ToString::to_string).collect();
        assert_eq!(configured, ["configmap/a"]);
        assert_eq!(classified.done.configured[0].kind, "ConfigMap", "a value, shown as kubectl names it");
        assert!(classified.done.drifted.is_empty());
        assert_eq!(classified.done.counts, ObjectCounts { applied: 2, drifted: 0, failed: 1 });
        assert_eq!(
            classified.errors,
            ["app/c.yaml: document 1 (line 1): error when creating \"app/c.yaml\": forbidden"]
        );
        let states: Vec<(&str, &str)> =
            classified.inventory.iter().map(|o| (o.name.as_str(), o.state.as_str())).collect();
        assert_eq!(states, [("a", "Applied"), ("b", "Applied"), ("c", "Failed")]);
        assert_eq!(classified.inventory[0].kind, "ConfigMap");
        assert_eq!(classified.inventory[2].kind, "configmap", "without the object, kubectl's display name");
    }

    #[test]
    fn at_the_same_revision_a_change_is_drift_corrected_or_reported() {
        let corrected = classify(&sample(), "main@sha1:1", true, false);
        assert!(corrected.done.corrected);
        assert!(corrected.done.configured.is_empty());
        let fields = &corrected.done.drifted[0].fields;
        assert_eq!((fields[0].path.as_str(), fields[0].manager.as_deref()), ("data.value", Some("kubectl-edit")));
        assert_eq!(corrected.done.counts, ObjectCounts { applied: 2, drifted: 0, failed: 1 });

        let reported = classify(&sample(), "main@sha1:1", true, true);
        assert!(!reported.done.corrected);
        assert_eq!(reported.done.counts, ObjectCounts { applied: 1, drifted: 1, failed: 1 });
        assert_eq!(reported.inventory[0].state, "Drifted");
        let mut status = ApplySetStatus::default();
        set_drift_condition(&mut status, &reported.done, Some(3), &Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        let condition = status::condition(&status, DRIFTED).unwrap();
        assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("True", reason::DRIFT_DETECTED));
        assert_eq!(condition.message, "1 object(s) differ from the source: ConfigMap/a [data.value (by kubectl-edit)]");
    }

    #[test]
    fn a_patch_the_apiserver_turns_into_nothing_is_not_drift() {
        let canonicalized = Details {
            live: Some(config_map("a", "1", "x")),
            patch: Some(json(r#"{"data":{"value":"1"}}"#)),
            patch_type: None,
            result: Some(config_map("a", "1", "x")),
            ..Details::default()
        };
        let report = ApplyReport {
            objects: vec![report("a", Ok(Verb::Configured), Some(canonicalized))],
            ..ApplyReport::default()
        };
        let classified = classify(&report, "main@sha1:1", true, true);
        assert!(classified.done.drifted.is_empty());
        assert_eq!(classified.done.counts, ObjectCounts { applied: 1, drifted: 0, failed: 0 });
    }

    #[test]
    fn display_names_split_into_kind_and_name() {
        assert_eq!(split_display("deployment.apps/web"), ("deployment.apps".into(), "web".into()));
        assert_eq!(split_display("configmap/a"), ("configmap".into(), "a".into()));
    }

    #[test]
    fn objects_are_shown_as_kubectl_names_them() {
        let object =
            |kind: &str, name: &str| ObjectRef { kind: kind.into(), namespace: Some("shop".into()), name: name.into() };
        assert_eq!(object("ConfigMap", "a").to_string(), "configmap/a");
        assert_eq!(object("Deployment.apps", "web").to_string(), "deployment.apps/web");
        assert_eq!(
            object("CronTab.Stable.Example.com", "x").to_string(),
            "crontab.Stable.Example.com/x",
            "the group as it is"
        );
    }
}
