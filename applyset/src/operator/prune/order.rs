//! The order of deletion: the reverse of the apply's stages. Custom resources and every other
//! object first, then CustomResourceDefinitions, then Namespaces; each stage is gone (or the
//! deadline passed) before the next starts, so a CRD never goes before its custom resources'
//! finalizers ran, and a Namespace never before its contents.

use std::time::{Duration, Instant};

use kube::Client;

use crate::applyset::Candidate;
use crate::cluster::list::{dynamic_api, is_status};

/// How many stages [`stage_of`] has.
pub const STAGES: usize = 3;

/// How often objects being deleted are checked while a stage waits for them.
const POLL: Duration = Duration::from_secs(1);

/// 0: namespaced objects and cluster-scoped ones other than the two below; 1: CRDs;
/// 2: Namespaces.
pub fn stage_of(candidate: &Candidate) -> usize {
    let resource = &candidate.kind.api_resource;
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => 1,
        ("", "Namespace") => 2,
        _ => 0,
    }
}

/// Waits until every object of `held` is gone (or was replaced: another uid), checking once a
/// second, until `deadline`. Returns those still there, each with its current finalizers.
pub async fn wait_gone(client: &Client, mut held: Vec<Candidate>, deadline: Instant) -> Vec<Candidate> {
    loop {
        let mut still = Vec::new();
        for mut candidate in held {
            let resource = &candidate.kind.api_resource;
            let api = dynamic_api(client, resource, candidate.listed.namespace.as_deref());
            match api.get_metadata(&candidate.listed.name).await {
                Ok(object) if object.metadata.uid.as_deref() == Some(candidate.listed.uid.as_str()) => {
                    candidate.listed.finalizers = object.metadata.finalizers.unwrap_or_default();
                    still.push(candidate);
                }
                Ok(_) => {}
                Err(error) if is_status(&error, 404) => {}
                // Cannot tell: count it as still there (the next run looks again).
                Err(_) => still.push(candidate),
            }
        }
        if still.is_empty() || Instant::now() + POLL > deadline {
            return still;
        }
        held = still;
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::applyset::RecordedKind;
    use crate::cluster::list::Listed;
    use kube::core::{ApiResource, GroupVersionKind};

    fn candidate(group: &str, kind: &str) -> Candidate {
        let gvk = GroupVersionKind::gvk(group, "v1", kind);
        let kind = RecordedKind { api_resource: ApiResource::from_gvk(&gvk), namespaced: true };
        Candidate { kind, listed: Listed::default() }
    }

    #[test]
    fn contents_go_before_definitions_and_namespaces_last() {
        assert_eq!(stage_of(&candidate("example.com", "Widget")), 0);
        assert_eq!(stage_of(&candidate("", "ConfigMap")), 0);
        assert_eq!(stage_of(&candidate("rbac.authorization.k8s.io", "ClusterRole")), 0);
        assert_eq!(stage_of(&candidate("apiextensions.k8s.io", "CustomResourceDefinition")), 1);
        assert_eq!(stage_of(&candidate("", "Namespace")), 2);
        assert_eq!(stage_of(&candidate("example.com", "Namespace")), 0, "a custom kind named Namespace is content");
    }
}
