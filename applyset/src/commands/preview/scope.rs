//! Whether a kind is namespaced, for a build without a cluster (`--applyset-file`): what a run
//! learns from discovery. Kinds the build's own CRDs define are known from those CRDs (as the
//! apply predicts them); the kinds Kubernetes 1.33 serves are in [`BUILT_IN`] (checked
//! against a live apiserver's discovery by the tests).

use kube::core::GroupVersionKind;

use crate::apply::Predicted;
use crate::cluster::Cluster;

/// `(group, kind, namespaced)` of every kind Kubernetes 1.33's apiserver serves that can be
/// applied, beta and alpha groups included (they may be turned on).
pub const BUILT_IN: &[(&str, &str, bool)] = &[
    ("", "ConfigMap", true),
    ("", "Endpoints", true),
    ("", "Event", true),
    ("", "LimitRange", true),
    ("", "Namespace", false),
    ("", "Node", false),
    ("", "PersistentVolume", false),
    ("", "PersistentVolumeClaim", true),
    ("", "Pod", true),
    ("", "PodTemplate", true),
    ("", "ReplicationController", true),
    ("", "ResourceQuota", true),
    ("", "Secret", true),
    ("", "Service", true),
    ("", "ServiceAccount", true),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy", false),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding", false),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration", false),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy", false),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding", false),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", false),
    ("apiextensions.k8s.io", "CustomResourceDefinition", false),
    ("apiregistration.k8s.io", "APIService", false),
    ("apps", "ControllerRevision", true),
    ("apps", "DaemonSet", true),
    ("apps", "Deployment", true),
    ("apps", "ReplicaSet", true),
    ("apps", "StatefulSet", true),
    ("autoscaling", "HorizontalPodAutoscaler", true),
    ("batch", "CronJob", true),
    ("batch", "Job", true),
    ("certificates.k8s.io", "CertificateSigningRequest", false),
    ("certificates.k8s.io", "ClusterTrustBundle", false),
    ("coordination.k8s.io", "Lease", true),
    ("coordination.k8s.io", "LeaseCandidate", true),
    ("discovery.k8s.io", "EndpointSlice", true),
    ("events.k8s.io", "Event", true),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema", false),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", false),
    ("internal.apiserver.k8s.io", "StorageVersion", false),
    ("networking.k8s.io", "IPAddress", false),
    ("networking.k8s.io", "Ingress", true),
    ("networking.k8s.io", "IngressClass", false),
    ("networking.k8s.io", "NetworkPolicy", true),
    ("networking.k8s.io", "ServiceCIDR", false),
    ("node.k8s.io", "RuntimeClass", false),
    ("policy", "PodDisruptionBudget", true),
    ("rbac.authorization.k8s.io", "ClusterRole", false),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding", false),
    ("rbac.authorization.k8s.io", "Role", true),
    ("rbac.authorization.k8s.io", "RoleBinding", true),
    ("resource.k8s.io", "DeviceClass", false),
    ("resource.k8s.io", "ResourceClaim", true),
    ("resource.k8s.io", "ResourceClaimTemplate", true),
    ("resource.k8s.io", "ResourceSlice", false),
    ("scheduling.k8s.io", "PriorityClass", false),
    ("storage.k8s.io", "CSIDriver", false),
    ("storage.k8s.io", "CSINode", false),
    ("storage.k8s.io", "CSIStorageCapacity", true),
    ("storage.k8s.io", "StorageClass", false),
    ("storage.k8s.io", "VolumeAttachment", false),
    ("storage.k8s.io", "VolumeAttributesClass", false),
    ("storagemigration.k8s.io", "StorageVersionMigration", false),
];

/// Where the scope of kinds comes from.
pub(super) enum Scopes<'a> {
    /// The cluster's discovery (what a run asks).
    Cluster(&'a Cluster),
    /// No cluster: [`BUILT_IN`].
    BuiltIn,
}

impl Scopes<'_> {
    /// Whether `gvk` is namespaced: from the source of scopes, else from a CRD of the build;
    /// `None` when neither knows the kind.
    pub(super) async fn namespaced(
        &self,
        gvk: &GroupVersionKind,
        predicted: &Predicted,
    ) -> Result<Option<bool>, crate::cluster::Error> {
        let known = match self {
            Scopes::Cluster(cluster) => match cluster.mapping(gvk).await {
                Ok(mapping) => Some(mapping.namespaced),
                Err(crate::cluster::Error::NoMatch { .. }) => None,
                Err(other) => return Err(other),
            },
            Scopes::BuiltIn => built_in(&gvk.group, &gvk.kind),
        };
        let key = (gvk.group.clone(), gvk.version.clone(), gvk.kind.clone());
        Ok(known.or_else(|| predicted.get(&key).map(|mapping| mapping.namespaced)))
    }
}

/// Whether a kind Kubernetes serves is namespaced (`None`: not one of them).
pub fn built_in(group: &str, kind: &str) -> Option<bool> {
    BUILT_IN.iter().find(|(g, k, _)| *g == group && *k == kind).map(|(_, _, namespaced)| *namespaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_kinds_have_their_scope_and_others_none() {
        assert_eq!(built_in("apps", "Deployment"), Some(true));
        assert_eq!(built_in("", "Namespace"), Some(false));
        assert_eq!(built_in("rbac.authorization.k8s.io", "ClusterRole"), Some(false));
        assert_eq!(built_in("", "Deployment"), None, "the group matters");
        assert_eq!(built_in("example.com", "Widget"), None);
        let mut seen = std::collections::HashSet::new();
        assert!(BUILT_IN.iter().all(|(g, k, _)| seen.insert((g, k))), "each kind once");
    }
}
