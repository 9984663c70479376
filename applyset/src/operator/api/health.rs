//! The spec fields that make `Ready` mean "running": waiting for health (`wait`,
//! `healthChecks`, `healthTimeout`, `healthCheckExprs`, as Flux's Kustomization has them) and
//! ordering between ApplySets (`dependsOn`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An object whose health `Ready` waits for (`spec.healthChecks`).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheckReference {
    /// `apps/v1`, `v1`, `example.com/v1alpha1`.
    pub api_version: String,
    /// The object's kind (`Deployment`).
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// Default: the ApplySet's namespace (ignored for cluster-scoped kinds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// How the health of one kind of custom resource is judged (`spec.healthCheckExprs`): CEL
/// expressions over the object (its fields `metadata`, `spec`, `status` … are the variables),
/// as in Flux 2.5. When `status.observedGeneration` differs from `metadata.generation` the
/// object is in progress; otherwise `inProgress`, `failed` and `current` are evaluated in that
/// order and the first that is true decides; none true: in progress. An expression that cannot
/// be evaluated (a missing field) fails the health check: guard with `has(…)`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheckExpression {
    /// The apiVersion of the objects judged (`example.com/v1alpha1`).
    pub api_version: String,
    /// The kind of the objects judged.
    pub kind: String,
    /// True when the object is what its spec asks for.
    pub current: String,
    /// True when the object is still on its way (evaluated first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_progress: Option<String>,
    /// True when the object failed and waiting will not help.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// An ApplySet this one waits for (`spec.dependsOn`).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependencyReference {
    /// The ApplySet's name.
    pub name: String,
    /// Default: this ApplySet's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}
