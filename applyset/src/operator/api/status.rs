//! `status`: what the controller reports of an ApplySet (conditions, revisions, the inventory
//! and its record of members, drift).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the controller observed; written only when it changes.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplySetStatus {
    /// The `metadata.generation` the conditions describe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`, `Reconciling`, `Stalled` (kstatus) and `Drifted`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The revision (`<branch>@sha1:<commit>`) whose objects are all applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_revision: Option<String>,
    /// A digest of the spec fields that shape what is applied (source URL and path, prune,
    /// allowEmpty, drift.ignore) at the last successful apply: with the same revision and
    /// digest, any difference found is drift (other spec changes, such as the interval, do
    /// not make a Report-mode run apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_spec_digest: Option<String>,
    /// The generation whose spec the last full run handled (fetched, built, applied, pruned,
    /// checked): a new commit that changes nothing the ApplySet reads is recorded without a
    /// run only at this generation, so any spec change (a new identity, health checks, waits)
    /// is run in full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_generation: Option<i64>,
    /// A digest of what the ApplySet read from git at the last successful apply: the tree of
    /// its path and every file and directory its kustomizations reach. A new commit with the
    /// same digest (and the same spec digest) is recorded without a checkout, build or apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_inputs: Option<String>,
    /// The revision of the last attempt, successful or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_revision: Option<String>,
    /// Where the controller's webhook receiver takes this ApplySet's pushes (`spec.webhook`):
    /// `/hook/` and a digest of the token, the name and the namespace (Flux's Receiver path).
    /// Computed when the token is read: a new generation, a requested run, or none yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_path: Option<String>,
    /// The `applyset.dev/reconcile-requested-at` value last handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// What the ApplySet manages, as of the last run that applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<InventoryStatus>,
    /// The drift the last check found; unset when it found none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftStatus>,
    /// Objects the last prune left in place on purpose, each with the reason in `state`
    /// (`NotInInventory`, `OwnNamespace`, `NamespaceNotEmpty`) and a message; at most a fixed
    /// number.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prune_skipped: Vec<InventoryObject>,
    /// Objects the last prune left in place that `pruneSkipped` does not list.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prune_skipped_omitted: u64,
    /// Objects this ApplySet applied to the cluster it applied to before `spec.kubeConfig`
    /// changed, while they are not pruned there: pending (the new cluster's apply comes
    /// first), or left there, and why (the old cluster unreachable, its kubeconfig no longer
    /// known to the controller, `prune` off). Removed once they are pruned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_cluster: Option<PreviousCluster>,
    /// The revisions this ApplySet applied in full, newest first (at most a fixed number): the
    /// history stale fields are found from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied_revisions: Vec<AppliedRevision>,
}

/// `status.previousCluster`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviousCluster {
    /// The server the objects are on.
    pub server: String,
    /// How many objects the record held there.
    pub objects: u64,
    /// `Pending` (the controller prunes them after a successful apply to the new cluster) or
    /// `Left` (it will not: the message says why; delete them there by hand).
    pub state: String,
    /// What happened there, and what to do.
    pub message: String,
}

/// One revision applied in full.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedRevision {
    /// `<ref>@sha1:<hex>`.
    pub revision: String,
    /// `spec.source.path` when it was applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// When it was applied in full (the run that made it current; a later run at the same
    /// revision keeps this time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_at: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
}

/// What the ApplySet manages.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InventoryStatus {
    /// How many objects the ApplySet manages.
    pub count: u64,
    /// Object counts by state (`Applied`, `Drifted`, `Failed`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub states: BTreeMap<String, u64>,
    /// `Kind[.group]`, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group_kinds: Vec<String>,
    /// The namespaces of its namespaced objects, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// The objects worth a look (failed, then drifted, then applied server-side or not yet
    /// healthy), at most a fixed number. An object simply applied is counted in `states`, not
    /// listed (`applyset tree` lists every member).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<InventoryObject>,
    /// Objects left out of `objects` (those simply applied included).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u64,
    /// Every object this ApplySet applied and has not pruned yet, with the UID it applied:
    /// prune deletes only these. An object that merely carries the ApplySet's `part-of` label
    /// (anyone who may patch it can add one) is reported in `pruneSkipped`, never deleted.
    /// Written as this plain list by versions before `record.inline`; read as it is, and
    /// written again as `record` (`applyset tree` lists the members).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<InventoryMember>>,
    /// The cluster the members live in (its server and a digest of its CA): a run that applies
    /// to another one (`spec.kubeConfig` changed) deals with them there first (see
    /// `previousCluster`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<crate::cluster::ClusterIdentity>,
    /// The record of members, compressed: in the status while small (`inline`), otherwise in
    /// `ApplySetRecord` objects (`parts`), so that the status stays small whatever the set's
    /// size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<super::MemberRecordRef>,
}

/// An object the ApplySet applied.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InventoryMember {
    /// `Kind[.group]`.
    pub kind: String,
    /// Unset for a cluster-scoped object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// The UID of the object applied: prune deletes the object only while it has this UID.
    pub uid: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InventoryObject {
    /// `Kind[.group]`.
    pub kind: String,
    /// Unset for a cluster-scoped object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// `Applied`, `Drifted` or `Failed`.
    pub state: String,
    /// Why it failed, drifted or was left in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The object's health (kstatus: `Current`, `InProgress`, `Failed`, `Terminating`,
    /// `Unknown`) when the ApplySet waits for it, and why when not `Current`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<String>,
    /// Why the object is not `Current`, as its status says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_message: Option<String>,
    /// `ServerSide` for an object applied with server-side apply (its last-applied annotation
    /// would exceed the apiserver's limit; `message` says by how much); unset: client-side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// Objects whose live state differs from what apply would produce.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftStatus {
    /// How many objects drifted.
    pub count: u64,
    /// `Correct` or `Report`, as configured when the drift was found.
    pub mode: String,
    /// Drifted fields by reason (`Changed`, `Stale`, `Foreign`), over all objects.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reasons: BTreeMap<String, u64>,
    /// The first drifted objects, at most a fixed number, each with at most a fixed number of
    /// fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<DriftedObject>,
    /// Stale and foreign fields the last run removed (`staleFields`/`foreignFields: Remove`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<DriftedObject>,
}

/// An object with drifted fields.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftedObject {
    /// `Kind[.group]`.
    pub kind: String,
    /// Unset for a cluster-scoped object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// Its drifted fields, at most a fixed number.
    pub fields: Vec<DriftedField>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftedField {
    /// Field path as kubectl's errors print it (`spec.template.spec.containers[name=app].image`).
    pub path: String,
    /// The field manager (from `metadata.managedFields`) that last wrote the field, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    /// `Changed` (git sets it, the live value differs), `Stale` (an earlier revision set it,
    /// nothing deletes it) or `Foreign` (git does not set it, another manager wrote it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// For a stale field: the newest earlier revision that applied it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_in: Option<String>,
}
