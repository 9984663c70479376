//! Status computation (pure): condition reasons, kstatus conditions, failure categories, and
//! the inventory summary.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::api::{ApplySetStatus, InventoryObject, InventoryStatus};
use super::reconcile::StepError;

pub const READY: &str = "Ready";
pub const RECONCILING: &str = "Reconciling";
pub const STALLED: &str = "Stalled";
pub const DRIFTED: &str = "Drifted";

/// Condition reasons (constants, so users and alerts can match on them).
pub mod reason {
    pub const SUCCEEDED: &str = "Succeeded";
    pub const PROGRESSING: &str = "Progressing";
    pub const SUSPENDED: &str = "Suspended";
    pub const INVALID_SPEC: &str = "InvalidSpec";
    pub const FETCH_FAILED: &str = "FetchFailed";
    pub const LOAD_FAILED: &str = "LoadFailed";
    pub const BUILD_FAILED: &str = "BuildFailed";
    pub const APPLY_FAILED: &str = "ApplyFailed";
    pub const PRUNE_FAILED: &str = "PruneFailed";
    pub const PRUNE_GUARDED: &str = "PruneGuarded";
    pub const DELETE_FAILED: &str = "DeleteFailed";
    pub const DRIFT_DETECTED: &str = "DriftDetected";
    pub const DRIFT_CORRECTED: &str = "DriftCorrected";
    pub const NO_DRIFT: &str = "NoDrift";
    pub const OWNERSHIP_CONFLICT: &str = "OwnershipConflict";
    pub const HEALTH_CHECK_FAILED: &str = "HealthCheckFailed";
    pub const DEPENDENCY_NOT_READY: &str = "DependencyNotReady";
    pub const DEPENDENCY_CYCLE: &str = "DependencyCycle";
    /// A reference into another namespace, refused by `--no-cross-namespace-refs` (Flux's
    /// reason for the same refusal).
    pub const ACCESS_DENIED: &str = "AccessDenied";
    pub const INVENTORY_TOO_LARGE: &str = "InventoryTooLarge";
}

/// `Healthy`: what the ApplySet waits for is up (only when it waits: `spec.wait` or
/// `spec.healthChecks`).
pub const HEALTHY: &str = "Healthy";

/// Conditions are capped by the apiserver at 32 KiB per message; keep ours readable.
pub const MAX_MESSAGE: usize = 4000;
/// An Event's note may not exceed 1 KiB.
pub const MAX_EVENT_NOTE: usize = 1000;
/// A failure message per object in `status.inventory.objects`.
pub const MAX_OBJECT_MESSAGE: usize = 300;

/// Cuts `message` on a char boundary so that, with the `… (N more bytes)` it then ends with,
/// it is at most `max_bytes` long.
pub fn truncate(message: &str, max_bytes: usize) -> String {
    if message.len() <= max_bytes {
        return message.to_owned();
    }
    // Room for the suffix: "…" is 3 bytes, " (N more bytes)" at most 32.
    let mut end = max_bytes.saturating_sub(35);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &message[..end], message.len() - end)
}

/// Sets a condition, keeping `lastTransitionTime` when the status did not change.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: &Time,
) {
    let message = truncate(message, MAX_MESSAGE);
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => {
            if existing.status != status {
                existing.last_transition_time = now.clone();
            }
            existing.status = status.to_owned();
            existing.reason = reason.to_owned();
            existing.message = message;
            existing.observed_generation = generation;
        }
        None => conditions.push(Condition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message,
            observed_generation: generation,
            last_transition_time: now.clone(),
        }),
    }
}

pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) {
    conditions.retain(|c| c.type_ != type_);
}

pub fn condition<'a>(status: &'a ApplySetStatus, type_: &str) -> Option<&'a Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// kstatus "in progress": Reconciling=True, Ready=Unknown.
pub fn mark_progressing(status: &mut ApplySetStatus, message: &str, generation: Option<i64>, now: &Time) {
    set_condition(&mut status.conditions, RECONCILING, "True", reason::PROGRESSING, message, generation, now);
    set_condition(&mut status.conditions, READY, "Unknown", reason::PROGRESSING, message, generation, now);
    remove_condition(&mut status.conditions, STALLED);
}

/// kstatus "current": Ready=True, no Reconciling or Stalled.
pub fn mark_ready(status: &mut ApplySetStatus, message: &str, generation: Option<i64>, now: &Time) {
    set_condition(&mut status.conditions, READY, "True", reason::SUCCEEDED, message, generation, now);
    remove_condition(&mut status.conditions, RECONCILING);
    remove_condition(&mut status.conditions, STALLED);
    status.observed_generation = generation;
}

/// kstatus "failed": Ready=False with the stage's reason; Stalled=True only when retrying
/// cannot help.
/// Sets `Healthy` (kept only while the ApplySet waits for health).
pub fn mark_healthy(
    status: &mut ApplySetStatus,
    value: &str,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: &Time,
) {
    set_condition(&mut status.conditions, HEALTHY, value, reason, message, generation, now);
}

pub fn mark_failed(status: &mut ApplySetStatus, failure: &StepError, generation: Option<i64>, now: &Time) {
    let reason = failure.stage.reason();
    set_condition(&mut status.conditions, READY, "False", reason, &failure.message, generation, now);
    remove_condition(&mut status.conditions, RECONCILING);
    if failure.stage.stalls() {
        set_condition(&mut status.conditions, STALLED, "True", reason, &failure.message, generation, now);
    } else {
        remove_condition(&mut status.conditions, STALLED);
    }
    status.observed_generation = generation;
}

/// Suspended: the Ready status stays what it was (Unknown if never known), with the reason.
pub fn mark_suspended(status: &mut ApplySetStatus, generation: Option<i64>, now: &Time) {
    let ready = condition(status, READY).map_or("Unknown".to_owned(), |c| c.status.clone());
    set_condition(
        &mut status.conditions,
        READY,
        &ready,
        reason::SUSPENDED,
        "Reconciliation is suspended",
        generation,
        now,
    );
    remove_condition(&mut status.conditions, RECONCILING);
    remove_condition(&mut status.conditions, STALLED);
    status.observed_generation = generation;
}

/// Two statuses equal except for condition timestamps: nothing to write.
pub fn same_ignoring_time(a: &ApplySetStatus, b: &ApplySetStatus) -> bool {
    let strip = |s: &ApplySetStatus| {
        let mut s = s.clone();
        for c in &mut s.conditions {
            c.last_transition_time = Time(Default::default());
        }
        s
    };
    strip(a) == strip(b)
}

/// Redacts every message of the status (conditions, inventory objects) in place.
pub fn redact(status: &mut ApplySetStatus) {
    for condition in &mut status.conditions {
        condition.message = crate::redact::redact(&condition.message);
    }
    if let Some(inventory) = &mut status.inventory {
        for object in &mut inventory.objects {
            if let Some(message) = &mut object.message {
                *message = crate::redact::redact(message);
            }
        }
    }
}

/// The JSON merge patch (RFC 7386) that turns `written` into `next`: changed keys set, removed
/// keys `null`.
pub fn merge_patch(written: &ApplySetStatus, next: &ApplySetStatus) -> serde_json::Value {
    let as_value = |status: &ApplySetStatus| {
        let json = serde_json::to_string(status).expect("a status serializes");
        applyset_merge::Value::from_json_str(&json).expect("serde_json output parses")
    };
    let patch = applyset_merge::json_merge::create_merge_patch(&as_value(written), &as_value(next))
        .expect("two objects always have a merge patch");
    serde_json::from_str(&patch.to_json_string()).expect("the engine's output parses")
}

/// How many objects `status.inventory.objects` lists at most.
pub const INVENTORY_LIMIT: usize = 50;
/// How many objects `status.pruneSkipped` lists at most.
pub const PRUNE_SKIPPED_LIMIT: usize = 50;
/// How many drifted objects `status.drift.objects` lists at most.
pub const DRIFT_LIMIT: usize = 10;
/// How many fields each drifted object lists at most.
pub const DRIFT_FIELD_LIMIT: usize = 20;

pub const STATE_APPLIED: &str = "Applied";
pub const STATE_DRIFTED: &str = "Drifted";
pub const STATE_FAILED: &str = "Failed";
/// The health (kstatus) of an object that needs nothing more.
pub const HEALTH_CURRENT: &str = crate::health::Status::Current.as_str();

/// Whether `object` says more than the counts do, and so is listed: failed, drifted, applied
/// server-side, or not (yet) healthy. An object simply applied is counted in `states` and named
/// by the record of members (`applyset tree`): listing 50 of them cost the apiserver more than
/// the rest of the status (measured: a status write of an ApplySet of 100 objects, 24.2 ms of
/// kube-apiserver CPU with them, 11.1 without; `scripts/bench-applyset-writes`).
pub fn worth_listing(object: &InventoryObject) -> bool {
    object.state != STATE_APPLIED
        || object.method.is_some()
        || object.health.as_deref().is_some_and(|health| health != HEALTH_CURRENT)
}

/// The inventory summary: counts, kinds, namespaces, and the objects worth listing
/// ([`worth_listing`]: failed, then drifted, then applied server-side, then not yet healthy; by
/// kind, namespace and name within each), `limit` at most.
pub fn inventory(mut objects: Vec<InventoryObject>, limit: usize) -> InventoryStatus {
    // Applied server-side before applied: the exception is worth seeing.
    let rank = |object: &InventoryObject| match object.state.as_str() {
        STATE_FAILED => 0,
        STATE_DRIFTED => 1,
        _ if object.method.is_some() => 2,
        _ => 3,
    };
    let mut states = BTreeMap::new();
    let mut kinds = BTreeSet::new();
    let mut namespaces = BTreeSet::new();
    for object in &objects {
        *states.entry(object.state.clone()).or_insert(0u64) += 1;
        kinds.insert(object.kind.clone());
        if let Some(ns) = &object.namespace {
            namespaces.insert(ns.clone());
        }
    }
    let count = objects.len() as u64;
    objects.retain(worth_listing);
    objects.sort_by(|a, b| (rank(a), &a.kind, &a.namespace, &a.name).cmp(&(rank(b), &b.kind, &b.namespace, &b.name)));
    objects.truncate(limit);
    InventoryStatus {
        count,
        states,
        group_kinds: kinds.into_iter().collect(),
        namespaces: namespaces.into_iter().collect(),
        omitted: count - objects.len() as u64,
        objects,
        members: None,
        record: None,
        cluster: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::reconcile::Stage;

    /// `Stage::ALL` holds every stage once: a stage added to the enum without it would have no
    /// `applyset_reconcile_total` series until it first happens (and its alert would miss it).
    #[test]
    fn every_stage_is_in_all_once() {
        // Exhaustive: a new variant does not compile here until it has a place.
        let place = |stage: Stage| match stage {
            Stage::InvalidSpec => 0,
            Stage::Fetch => 1,
            Stage::Build => 2,
            Stage::Load => 3,
            Stage::Apply => 4,
            Stage::OwnershipConflict => 5,
            Stage::Prune => 6,
            Stage::PruneGuarded => 7,
            Stage::Delete => 8,
            Stage::HealthCheck => 9,
            Stage::DependencyNotReady => 10,
            Stage::DependencyCycle => 11,
            Stage::AccessDenied => 12,
            Stage::InventoryTooLarge => 13,
        };
        let mut places: Vec<usize> = Stage::ALL.iter().map(|s| place(*s)).collect();
        places.sort_unstable();
        assert_eq!(places, (0..Stage::ALL.len()).collect::<Vec<_>>());
    }

    fn at(seconds: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(seconds).unwrap())
    }

    fn object(kind: &str, name: &str, state: &str) -> InventoryObject {
        InventoryObject {
            kind: kind.into(),
            namespace: Some("shop".into()),
            name: name.into(),
            state: state.into(),
            ..InventoryObject::default()
        }
    }

    #[test]
    fn transition_time_moves_only_when_the_status_changes() {
        let mut conditions = Vec::new();
        set_condition(&mut conditions, READY, "False", reason::FETCH_FAILED, "a", Some(1), &at(10));
        set_condition(&mut conditions, READY, "False", reason::LOAD_FAILED, "b", Some(2), &at(20));
        assert_eq!(conditions[0].last_transition_time, at(10));
        assert_eq!(conditions[0].reason, reason::LOAD_FAILED);
        set_condition(&mut conditions, READY, "True", reason::SUCCEEDED, "c", Some(2), &at(30));
        assert_eq!(conditions[0].last_transition_time, at(30));
        assert_eq!(conditions.len(), 1);
    }

    #[test]
    fn kstatus_shapes() {
        let mut status = ApplySetStatus::default();
        mark_progressing(&mut status, "Reconciling", Some(1), &at(1));
        assert_eq!(condition(&status, READY).unwrap().status, "Unknown");
        assert_eq!(condition(&status, RECONCILING).unwrap().status, "True");
        mark_failed(&mut status, &StepError::new(Stage::InvalidSpec, "bad interval"), Some(1), &at(2));
        assert_eq!(condition(&status, READY).unwrap().reason, reason::INVALID_SPEC);
        assert_eq!(condition(&status, STALLED).unwrap().status, "True");
        assert!(condition(&status, RECONCILING).is_none());
        mark_failed(&mut status, &StepError::new(Stage::Fetch, "unreachable"), Some(2), &at(3));
        assert!(condition(&status, STALLED).is_none());
        mark_ready(&mut status, "Applied revision main@sha1:abc", Some(2), &at(4));
        assert_eq!(condition(&status, READY).unwrap().status, "True");
        assert_eq!(status.observed_generation, Some(2));
        mark_suspended(&mut status, Some(3), &at(5));
        let ready = condition(&status, READY).unwrap();
        assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("True", reason::SUSPENDED));
    }

    #[test]
    fn unchanged_status_is_not_rewritten() {
        let mut a = ApplySetStatus::default();
        mark_ready(&mut a, "ok", Some(1), &at(1));
        let mut b = ApplySetStatus::default();
        mark_ready(&mut b, "ok", Some(1), &at(99));
        assert!(same_ignoring_time(&a, &b));
        mark_ready(&mut b, "other", Some(1), &at(99));
        assert!(!same_ignoring_time(&a, &b));
    }

    #[test]
    fn the_status_patch_removes_keys_that_disappeared() {
        let failed = ApplySetStatus {
            inventory: Some(inventory(
                vec![object("ConfigMap", "a", STATE_APPLIED), object("Service", "web", STATE_FAILED)],
                10,
            )),
            ..ApplySetStatus::default()
        };
        let healed = ApplySetStatus {
            inventory: Some(inventory(
                vec![object("ConfigMap", "a", STATE_APPLIED), object("Service", "web", STATE_APPLIED)],
                10,
            )),
            ..ApplySetStatus::default()
        };
        let patch = merge_patch(&failed, &healed);
        assert_eq!(patch["inventory"]["states"], serde_json::json!({"Applied": 2, "Failed": null}));
        // Applied to what the server held, the patch gives exactly the new status.
        let server = serde_json::to_value(&failed).unwrap();
        let merged = applyset_merge::json_merge::merge_patch(
            &applyset_merge::Value::from_json_str(&server.to_string()).unwrap(),
            &applyset_merge::Value::from_json_str(&patch.to_string()).unwrap(),
        )
        .unwrap();
        let merged: ApplySetStatus = serde_json::from_str(&merged.to_json_string()).unwrap();
        assert_eq!(merged, healed);
        assert_eq!(merge_patch(&healed, &healed), serde_json::json!({}));
    }

    fn applied_server_side(name: &str) -> InventoryObject {
        InventoryObject {
            method: Some(crate::operator::outcome::METHOD_SERVER_SIDE.into()),
            ..object("ConfigMap", name, STATE_APPLIED)
        }
    }

    #[test]
    fn inventory_lists_failures_first_and_counts_everything() {
        let summary = inventory(
            vec![
                object("ConfigMap", "b", STATE_APPLIED),
                applied_server_side("big"),
                object("Deployment.apps", "web", STATE_DRIFTED),
                object("ConfigMap", "a", STATE_APPLIED),
                object("Service", "web", STATE_FAILED),
            ],
            2,
        );
        assert_eq!(summary.count, 5);
        assert_eq!(summary.omitted, 3);
        let names: Vec<&str> = summary.objects.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["web", "web"]);
        assert_eq!(summary.states.get(STATE_APPLIED), Some(&3));
        assert_eq!(summary.group_kinds, ["ConfigMap", "Deployment.apps", "Service"]);
        assert_eq!(summary.namespaces, ["shop"]);
    }

    #[test]
    fn objects_simply_applied_are_counted_not_listed() {
        let healthy =
            InventoryObject { health: Some(HEALTH_CURRENT.into()), ..object("Deployment.apps", "api", STATE_APPLIED) };
        let rolling =
            InventoryObject { health: Some("InProgress".into()), ..object("Deployment.apps", "web", STATE_APPLIED) };
        let summary = inventory(
            vec![
                object("ConfigMap", "a", STATE_APPLIED),
                healthy,
                rolling,
                applied_server_side("big"),
                object("Service", "web", STATE_FAILED),
            ],
            INVENTORY_LIMIT,
        );
        let names: Vec<&str> = summary.objects.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["web", "big", "web"], "{summary:?}");
        assert_eq!((summary.count, summary.omitted), (5, 2));
        assert_eq!(summary.states.get(STATE_APPLIED), Some(&4));
        let all_applied = inventory(vec![object("ConfigMap", "a", STATE_APPLIED)], INVENTORY_LIMIT);
        assert!(all_applied.objects.is_empty(), "{all_applied:?}");
        assert_eq!((all_applied.count, all_applied.omitted), (1, 1));
    }

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let message = "é".repeat(3000);
        for max in [MAX_MESSAGE, MAX_EVENT_NOTE, MAX_OBJECT_MESSAGE] {
            let cut = truncate(&message, max);
            assert!(cut.len() <= max, "{} > {max}", cut.len());
            assert!(cut.ends_with("more bytes)"));
        }
        assert_eq!(truncate("short", MAX_OBJECT_MESSAGE), "short");
    }
}
