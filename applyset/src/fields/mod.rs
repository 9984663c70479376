//! Fields kubectl's apply leaves behind, found and (when asked) removed. Pure functions over
//! JSON values; the apply path calls them through [`FieldPolicy`].
//!
//! kubectl deletes a field only when its last-applied annotation has it. Two kinds of field
//! escape that:
//! * **stale**: an earlier revision applied it, the manifest and the annotation no longer have
//!   it, and it is live (a `kubectl rollout undo` brought it back under a newer annotation);
//! * **foreign**: the manifest does not set it and another field manager wrote it
//!   (`kubectl edit`, `kubectl set env`, a `kubectl rollout restart` annotation).
//!
//! Both are removed the way kubectl would have removed them had its annotation held them: the
//! three-way patch is computed from an original that is the annotation plus those fields.

pub mod managed;
pub mod path;
pub mod server_side;

use std::collections::BTreeSet;
use std::fmt;

use applyset_merge::Value;

pub use path::{FieldPath, Segment};

use crate::keys::LAST_APPLIED_ANNOTATION;

/// Field managers whose fields never count as stale or foreign: the cluster's own controllers
/// (their writes are status, bookkeeping such as `deployment.kubernetes.io/revision`, and the
/// `replicas` an HorizontalPodAutoscaler sets through the scale subresource).
pub const SYSTEM_MANAGERS: [&str; 4] = ["kube-controller-manager", "kube-scheduler", "kubelet", "kube-apiserver"];

/// Why a field is listed in the drift report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// Git sets it and the live value differs.
    Changed,
    /// An earlier applied revision set it; nothing will delete it.
    Stale,
    /// Git does not set it; another manager wrote it.
    Foreign,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Changed => "Changed",
            Reason::Stale => "Stale",
            Reason::Foreign => "Foreign",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stale or foreign field of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub path: FieldPath,
    pub reason: Reason,
    /// Who last wrote it (managedFields).
    pub manager: Option<String>,
    /// Stale fields: the newest earlier revision that applied it.
    pub applied_in: Option<String>,
    /// The patch sent (or, in a dry run, computed) deletes it.
    pub removed: bool,
}

/// The patch engine of the object (strategic merge with its schema, or JSON merge).
pub trait Merger {
    /// `patch` merged into `doc`.
    fn merge(&self, doc: &Value, patch: &Value) -> applyset_merge::Result<Value>;
    /// What a three-way patch from `original` to `modified` deletes.
    fn deletions(&self, original: &Value, modified: &Value) -> applyset_merge::Result<Value>;
    /// Whether lists are merged by key (strategic merge); JSON merge replaces lists whole.
    fn merges_lists(&self) -> bool;
}

/// One earlier revision's manifest of an object.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub revision: String,
    pub manifest: Value,
}

/// What no finding may touch, and what the user asked to leave alone.
#[derive(Debug, Clone, Default)]
pub struct Guard<'a> {
    /// Managers whose fields are never stale or foreign ([`SYSTEM_MANAGERS`] and the ignore list).
    pub ignored_managers: Vec<&'a str>,
    /// `spec.drift.ignore` pointers that apply to the object.
    pub pointers: Vec<&'a [String]>,
}

impl Guard<'_> {
    /// Whether a field must be kept whatever it is: the apiserver's and other controllers'
    /// metadata, status, an ignored manager's field, a path the ignore rules name.
    pub fn keeps(&self, path: &FieldPath, manager: Option<&str>) -> bool {
        is_protected(path)
            || manager.is_some_and(|m| self.ignored_managers.contains(&m))
            || self.pointers.iter().any(|pointer| path.covered_by_pointer(pointer))
    }
}

/// Metadata the apiserver or other controllers own, and status.
const PROTECTED_METADATA: [&str; 13] = [
    "name",
    "namespace",
    "generateName",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "ownerReferences",
    "finalizers",
];

pub fn is_protected(path: &FieldPath) -> bool {
    matches!(path.root(), None | Some("status" | "apiVersion" | "kind"))
        || PROTECTED_METADATA.iter().any(|key| path.starts_with(&["metadata", key]))
        || path.starts_with(&["metadata", "annotations", LAST_APPLIED_ANNOTATION])
        // Set on every Namespace by the apiserver.
        || path.starts_with(&["metadata", "labels", crate::keys::NAMESPACE_NAME_LABEL])
}

/// The stale fields of an object: what merging its earlier revisions' manifests (oldest first)
/// under the annotation would make a three-way patch delete, beyond what the annotation alone
/// deletes, that is still live. `modified` is the manifest as applied (with its annotation).
pub fn stale_fields(
    history: &[Version],
    annotation: &Value,
    modified: &Value,
    live: &Value,
    merger: &dyn Merger,
    guard: &Guard<'_>,
) -> applyset_merge::Result<Vec<Finding>> {
    if history.is_empty() {
        return Ok(Vec::new());
    }
    let union = applied_union(history, merger)?;
    let with_history = merger.merge(&union, annotation)?;
    let kubectl_deletes: BTreeSet<FieldPath> =
        path::patch_fields(&merger.deletions(annotation, modified)?).into_iter().collect();
    let entries = managed::entries(live);
    let mut found = Vec::new();
    for field in path::patch_fields(&merger.deletions(&with_history, modified)?) {
        if kubectl_deletes.contains(&field) || field.lookup(annotation).is_some() || field.lookup(live).is_none() {
            continue;
        }
        let manager = managed::manager_of(&entries, &field);
        if guard.keeps(&field, manager.as_deref()) {
            continue;
        }
        let applied_in = history.iter().rev().find(|v| field.lookup(&v.manifest).is_some()).map(|v| v.revision.clone());
        found.push(Finding { path: field, reason: Reason::Stale, manager, applied_in, removed: false });
    }
    Ok(found)
}

/// What of an earlier manifest can matter for stale fields: the fields `current` lacks. Maps
/// are compared key by key; a list that differs is kept whole (its items merge by key, so an
/// item `current` lacks can be stale); a scalar `current` also sets cannot be stale and goes.
/// `None` when nothing is left. Keeping only this makes the history cost what was removed, not
/// the whole manifest.
pub fn absent_from(earlier: &Value, current: &Value) -> Option<Value> {
    match (earlier, current) {
        (Value::Object(earlier), Value::Object(current)) => {
            let kept: applyset_merge::Map = earlier
                .iter()
                .filter_map(|(key, value)| match current.get(key) {
                    None => Some((key.clone(), value.clone())),
                    Some(now) => absent_from(value, now).map(|rest| (key.clone(), rest)),
                })
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        (Value::Array(_), Value::Array(_)) if earlier != current => Some(earlier.clone()),
        _ => None,
    }
}

/// The earlier revisions' manifests merged into one, oldest first (a later value wins).
pub fn applied_union(history: &[Version], merger: &dyn Merger) -> applyset_merge::Result<Value> {
    let mut versions = history.iter();
    let Some(first) = versions.next() else { return Ok(Value::Object(Default::default())) };
    versions.try_fold(first.manifest.clone(), |union, version| merger.merge(&union, &version.manifest))
}

/// The foreign fields of an object: fields of the live object that `modified` does not set
/// and the annotation does not hold, written by a manager other than `own_manager`.
pub fn foreign_fields(
    annotation: &Value,
    modified: &Value,
    live: &Value,
    own_manager: &str,
    merger: &dyn Merger,
    guard: &Guard<'_>,
) -> Vec<Finding> {
    let entries = managed::entries(live);
    let mut seen = BTreeSet::new();
    let mut found = Vec::new();
    for entry in &entries {
        if entry.manager == own_manager || entry.subresource == Some("status") {
            continue;
        }
        for field in managed::fields_absent_from(entry.fields, modified, live) {
            // Inside a list JSON merge replaces whole, a field git lacks is a changed list.
            let in_list = field.segments().iter().any(|s| !matches!(s, Segment::Key(_)));
            if (in_list && !merger.merges_lists()) || field.lookup(annotation).is_some() || !seen.insert(field.clone())
            {
                continue;
            }
            let manager = managed::manager_of(&entries, &field);
            if manager.as_deref() == Some(own_manager) || guard.keeps(&field, manager.as_deref()) {
                continue;
            }
            found.push(Finding { path: field, reason: Reason::Foreign, manager, applied_in: None, removed: false });
        }
    }
    found
}

/// The original a three-way patch needs to delete `fields` too: the annotation with each field
/// merged in from `source` (the earlier revisions for stale fields, the live object for foreign
/// ones).
pub fn original_with(
    annotation: &Value,
    fields: &[(&FieldPath, &Value)],
    merger: &dyn Merger,
) -> applyset_merge::Result<Value> {
    fields.iter().try_fold(annotation.clone(), |original, (field, source)| match field.extract(source) {
        Some(part) => merger.merge(&original, &part),
        None => Ok(original),
    })
}

/// What a [`FieldPolicy`] decided for one object.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    pub findings: Vec<Finding>,
    /// When set, the patch is computed from this original instead of the annotation.
    pub original: Option<Value>,
    pub warnings: Vec<String>,
}

/// The apply path's hook: given an object's manifest, its annotation (original), the manifest
/// as applied (modified) and the live object, find and choose what to remove.
pub trait FieldPolicy: Send + Sync {
    fn inspect(
        &self,
        manifest: &Value,
        annotation: &Value,
        modified: &Value,
        live: &Value,
        merger: &dyn Merger,
    ) -> Verdict;
}

/// The CLI's [`FieldPolicy`] (`applyset diff --show-left-behind`): names the fields apply
/// leaves behind (live, absent from the manifest and the annotation, written by another manager
/// than `own_manager`), removes nothing. Without history a CLI cannot tell stale from foreign:
/// every such field is reported as [`Reason::Foreign`].
#[derive(Debug, Clone)]
pub struct LeftBehind {
    pub own_manager: String,
}

impl FieldPolicy for LeftBehind {
    fn inspect(&self, _: &Value, annotation: &Value, modified: &Value, live: &Value, merger: &dyn Merger) -> Verdict {
        let guard = Guard { ignored_managers: SYSTEM_MANAGERS.to_vec(), pointers: Vec::new() };
        let findings = foreign_fields(annotation, modified, live, &self.own_manager, merger, &guard);
        Verdict { findings, ..Verdict::default() }
    }
}

#[cfg(test)]
mod tests;
