//! `spec.kubeConfig`: the cluster an ApplySet applies to when it is not the controller's own
//! (Flux's field and key conventions).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The keys read, in order, when `secretRef.key` is not set (Flux's).
pub const DEFAULT_KUBECONFIG_KEYS: [&str; 2] = ["value", "value.yaml"];

/// `spec.kubeConfig`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfigReference {
    /// A Secret of the ApplySet's namespace holding the kubeconfig of the cluster to apply to.
    pub secret_ref: KubeConfigSecretRef,
}

/// `spec.kubeConfig.secretRef`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfigSecretRef {
    /// The Secret's name, in the ApplySet's namespace.
    pub name: String,
    /// The key holding the kubeconfig; unset: `value`, else `value.yaml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}
