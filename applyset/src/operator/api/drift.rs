//! `spec.drift`: what a run does with live objects that differ from git, and what it ignores.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftSpec {
    /// `Correct` (default): re-apply drifted objects. `Report`: only report them.
    #[serde(default)]
    pub mode: DriftMode,
    /// Fields owned by other controllers (e.g. an HPA's replicas): never drift, never reverted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<DriftIgnoreRule>,
    /// Fields an earlier applied revision set that git and the last-applied annotation no
    /// longer have, yet are live (a `kubectl rollout undo` brought them back): kubectl's
    /// apply never deletes them. `Report` (default) lists them with `reason: Stale`;
    /// `Remove` has the apply delete them; `Ignore` does not look for them (as kubectl).
    #[serde(default)]
    pub stale_fields: StaleFields,
    /// Fields git does not set that another field manager wrote (`kubectl edit`, `kubectl set
    /// env`): `Ignore` (default, as kubectl), `Report` (`reason: Foreign`), or `Remove` (git is
    /// the whole truth, except the managers of `ignore[].managers` and the cluster's own).
    #[serde(default)]
    pub foreign_fields: ForeignFields,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum StaleFields {
    Ignore,
    #[default]
    Report,
    Remove,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ForeignFields {
    #[default]
    Ignore,
    Report,
    Remove,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DriftMode {
    #[default]
    Correct,
    Report,
}

/// Paths to ignore in the objects matched by `target` (every object when absent).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftIgnoreRule {
    /// JSON pointers (RFC 6901), e.g. `/spec/replicas`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Field managers (`metadata.managedFields[].manager`) whose fields are never drift,
    /// stale or foreign, e.g. an autoscaler that writes `replicas`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managers: Vec<String>,
    /// The objects the rule applies to (every field given must match); absent: every object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<DriftTarget>,
}

/// Selects objects; every field given must match.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftTarget {
    /// The API group of the objects' apiVersion (`apps`; `""` for the core group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The objects' kind (`Deployment`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The object's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The objects' namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// A label selector in kubectl's syntax (`app=web,tier!=db`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
}
