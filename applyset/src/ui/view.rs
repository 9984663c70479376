//! What the pages show, as plain values built from the ApplySet, its record of members and its
//! Events: pure, so the pages are tested without a cluster or a browser.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use crate::commands::fleet::events::last_seen;
use crate::commands::fleet::history::{self, Entry as RevisionEntry};
use crate::commands::fleet::summary::Summary;
use crate::commands::fleet::table::age;
use crate::commands::fleet::tree::{self, Entry as ObjectEntry};
use crate::operator::api::{ApplySet, ApplySetStatus, DriftedObject, InventoryObject};
use crate::operator::status::{DRIFTED, HEALTHY, READY, condition, reason};

/// A condition's state as the pages colour it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tone {
    /// Ready False, a failed object, a Warning: listed first.
    Bad,
    /// Unknown, in progress, drift reported.
    Pending,
    Good,
    /// Suspended, no such condition.
    Neutral,
}

/// A condition's status and reason, for a badge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Badge {
    pub text: String,
    pub tone: Tone,
    /// The condition's message (a tooltip).
    pub title: String,
}

/// One row of the list page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub namespace: String,
    pub name: String,
    pub ready: Badge,
    pub healthy: Badge,
    pub drifted: Badge,
    pub suspended: bool,
    pub revision: String,
    /// When Ready last changed (its age, and the time for a tooltip).
    pub changed: Option<(String, String)>,
    pub message: String,
}

/// The list page: failures first, then the rest by namespace and name.
pub fn rows(applysets: &[ApplySet], now: Timestamp) -> Vec<Row> {
    let mut rows: Vec<Row> = applysets.iter().map(|a| row(&Summary::of(a), now)).collect();
    rows.sort_by(|a, b| (a.ready.tone, &a.namespace, &a.name).cmp(&(b.ready.tone, &b.namespace, &b.name)));
    rows
}

fn row(applyset: &Summary, now: Timestamp) -> Row {
    let ready = applyset.ready.as_ref();
    Row {
        namespace: applyset.namespace.clone(),
        name: applyset.name.clone(),
        ready: ready_badge(applyset.suspended, ready),
        healthy: condition_badge(applyset.healthy.as_ref(), HEALTHY, false),
        drifted: condition_badge(applyset.drifted.as_ref(), DRIFTED, true),
        suspended: applyset.suspended,
        revision: applyset.revision.as_deref().map(short_revision).unwrap_or_else(|| "-".into()),
        changed: ready.map(|c| when(&c.last_transition_time, now)),
        message: ready.map(|c| list_message(c, applyset.revision.as_deref())).unwrap_or_default(),
    }
}

/// The Ready message for the list: what a Ready one adds to "Applied revision: <the revision
/// the row shows>" (`1 object(s) drifted`), else all of it.
fn list_message(ready: &Condition, revision: Option<&str>) -> String {
    let Some(revision) = revision.filter(|_| ready.status == "True") else { return ready.message.clone() };
    match ready.message.strip_prefix(&format!("Applied revision: {revision}")) {
        Some(rest) => {
            let rest = rest.trim();
            rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')).unwrap_or(rest).to_owned()
        }
        None => ready.message.clone(),
    }
}

/// `main@sha1:0123456789…` as `main@0123456` (the full one is on the ApplySet's page).
pub fn short_revision(revision: &str) -> String {
    match revision.split_once("@sha1:") {
        Some((reference, sha)) => format!("{reference}@{}", &sha[..sha.len().min(7)]),
        None => revision.to_owned(),
    }
}

/// An age and the RFC 3339 time.
fn when(time: &Time, now: Timestamp) -> (String, String) {
    (age(Some(time), now), time.0.to_string())
}

/// Ready: its status and reason (`True Succeeded`), Suspended when the spec says so.
fn ready_badge(suspended: bool, ready: Option<&Condition>) -> Badge {
    if suspended {
        return Badge { text: "Suspended".into(), tone: Tone::Neutral, title: "spec.suspend is true".into() };
    }
    match ready {
        Some(c) => Badge {
            text: format!("{} {}", c.status, c.reason),
            tone: match c.status.as_str() {
                "True" => Tone::Good,
                "False" => Tone::Bad,
                _ => Tone::Pending,
            },
            title: c.message.clone(),
        },
        None => Badge { text: "Unknown".into(), tone: Tone::Pending, title: "not reconciled yet".into() },
    }
}

/// A condition's status (`type_` names it when there is none); for `Drifted` (where True is the
/// bad news) the tones are reversed.
fn condition_badge(found: Option<&Condition>, type_: &str, true_is_bad: bool) -> Badge {
    match found {
        Some(c) => {
            let tone = match (c.status.as_str(), true_is_bad) {
                ("True", false) | ("False", true) => Tone::Good,
                ("False", false) => Tone::Bad,
                _ => Tone::Pending,
            };
            Badge { text: c.status.clone(), tone, title: format!("{}: {}", c.reason, c.message) }
        }
        None => Badge { text: "-".into(), tone: Tone::Neutral, title: format!("no {type_} condition") },
    }
}

/// The page of one ApplySet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detail {
    pub namespace: String,
    pub name: String,
    pub ready: Badge,
    pub source: String,
    pub revision: Option<String>,
    pub suspended: bool,
    pub conditions: Vec<ConditionRow>,
    /// Namespace (`None`: cluster-scoped) → kind → objects.
    pub objects: BTreeMap<Option<String>, BTreeMap<String, Vec<ObjectEntry>>>,
    pub object_count: u64,
    pub drift: Drift,
    pub revisions: Vec<RevisionEntry>,
    pub prune: Prune,
    pub events: Vec<EventRow>,
    /// The revision the prune guard holds back (an approve button when set).
    pub guarded_revision: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionRow {
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub changed: (String, String),
    pub tone: Tone,
}

/// The drift the last run found (or removed).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Drift {
    /// `Correct` or `Report`; empty when nothing drifted.
    pub mode: String,
    pub count: u64,
    pub objects: Vec<DriftedObject>,
    /// Stale and foreign fields the last run removed.
    pub removed: Vec<DriftedObject>,
}

/// The last prune: what it deleted (its Event), what it kept and why, and the guard's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Prune {
    pub pruned: Option<(String, String)>,
    pub skipped: Vec<InventoryObject>,
    pub skipped_omitted: u64,
    pub guarded: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    pub last_seen: String,
    pub type_: String,
    pub reason: String,
    pub message: String,
    pub count: i32,
}

/// Builds the page of `applyset`, whose `status` has its record of members read in.
pub fn detail(applyset: &ApplySet, status: &ApplySetStatus, events: &[Event], now: Timestamp) -> Detail {
    let mut objects: BTreeMap<Option<String>, BTreeMap<String, Vec<ObjectEntry>>> = BTreeMap::new();
    let entries = tree::entries(status);
    // What the tree shows (the record of members: a guarded prune keeps objects the last
    // revision did not apply), else what the status counted.
    let object_count =
        if entries.is_empty() { status.inventory.as_ref().map_or(0, |i| i.count) } else { entries.len() as u64 };
    for entry in entries {
        objects.entry(entry.namespace.clone()).or_default().entry(entry.kind.clone()).or_default().push(entry);
    }
    let source = &applyset.spec.source;
    let source = match &source.path {
        Some(path) => format!("{} ({path})", source.url),
        None => source.url.clone(),
    };
    let guarded = guarded(status);
    let mut events: Vec<&Event> = events.iter().collect();
    events.sort_by_key(|e| std::cmp::Reverse(last_seen(e)));
    let pruned = events
        .iter()
        .find(|e| e.reason.as_deref() == Some("Pruned"))
        .map(|e| (age(last_seen(e).as_ref(), now), e.message.clone().unwrap_or_default()));
    Detail {
        namespace: applyset.metadata.namespace.clone().unwrap_or_default(),
        name: applyset.metadata.name.clone().unwrap_or_default(),
        ready: ready_badge(applyset.spec.suspend, condition(status, READY)),
        source,
        revision: status.last_applied_revision.clone(),
        suspended: applyset.spec.suspend,
        conditions: status.conditions.iter().map(|c| condition_row(c, now)).collect(),
        objects,
        object_count,
        drift: status
            .drift
            .as_ref()
            .map(|d| Drift {
                mode: d.mode.clone(),
                count: d.count,
                objects: d.objects.clone(),
                removed: d.removed.clone(),
            })
            .unwrap_or_default(),
        revisions: history::entries(status),
        prune: Prune {
            pruned,
            skipped: status.prune_skipped.clone(),
            skipped_omitted: status.prune_skipped_omitted,
            guarded: guarded.map(|c| c.message.clone()),
        },
        events: events
            .iter()
            .map(|e| EventRow {
                last_seen: age(last_seen(e).as_ref(), now),
                type_: e.type_.clone().unwrap_or_default(),
                reason: e.reason.clone().unwrap_or_default(),
                message: e.message.clone().unwrap_or_default(),
                count: e.series.as_ref().map_or(e.count.unwrap_or(1), |s| s.count.unwrap_or(1)),
            })
            .collect(),
        guarded_revision: guarded_revision(status),
    }
}

/// The Ready condition when the prune guard holds a revision back.
fn guarded(status: &ApplySetStatus) -> Option<&Condition> {
    condition(status, READY).filter(|c| c.status == "False" && c.reason == reason::PRUNE_GUARDED)
}

/// The revision the prune guard holds back, which `applyset.dev/approve-prune` lets through.
pub fn guarded_revision(status: &ApplySetStatus) -> Option<String> {
    guarded(status).and(status.last_attempted_revision.clone())
}

fn condition_row(c: &Condition, now: Timestamp) -> ConditionRow {
    let bad = match c.type_.as_str() {
        DRIFTED => c.status == "True",
        _ => c.status == "False" || (c.type_ == "Stalled" && c.status == "True"),
    };
    ConditionRow {
        type_: c.type_.clone(),
        status: c.status.clone(),
        reason: c.reason.clone(),
        message: c.message.clone(),
        changed: when(&c.last_transition_time, now),
        tone: if bad {
            Tone::Bad
        } else if c.status == "Unknown" || (c.type_ == "Reconciling" && c.status == "True") {
            Tone::Pending
        } else {
            Tone::Good
        },
    }
}
