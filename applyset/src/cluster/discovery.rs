//! The run's discovery cache: GVK → REST resource and scope, plus the same discovery with
//! kubectl's resource-matching rules for the ApplySet parent ([`ApiIndex`]). One aggregated
//! request pair (`/api`, `/apis`) per run; refreshed only when CRDs of the input were
//! established.

use std::collections::HashMap;
use std::sync::Arc;

use kube::core::{ApiResource, GroupVersionKind};

use super::Cluster;
use super::error::{Error, Result};
use super::mapper::ApiIndex;

use crate::causes::{Chain, with_causes};

/// The mapping of one kind: its REST resource and scope.
#[derive(Debug, Clone)]
pub struct Mapping {
    pub resource: ApiResource,
    pub namespaced: bool,
}

type GvkKey = (String, String, String);

#[derive(Debug, Default)]
pub(super) struct DiscoveryMap {
    kinds: HashMap<GvkKey, Mapping>,
    /// The same discovery with kubectl's resource-matching rules (the ApplySet parent's REST
    /// mapper), built from the same response: one discovery per cluster, not one per user.
    index: Arc<ApiIndex>,
}

/// What kubectl asks `/api` and `/apis` for: aggregated discovery (v2, then v2beta1), else the
/// plain group list.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

impl Cluster {
    /// The resource and scope of a kind, from the run's discovery cache (fetched on first use).
    pub async fn resolve(&self, gvk: &GroupVersionKind) -> Result<(ApiResource, bool)> {
        let mapping = self.mapping(gvk).await?;
        Ok((mapping.resource, mapping.namespaced))
    }

    /// [`Cluster::resolve`] as a [`Mapping`].
    pub async fn mapping(&self, gvk: &GroupVersionKind) -> Result<Mapping> {
        let discovery = self.discovery().await?;
        let key = (gvk.group.clone(), gvk.version.clone(), gvk.kind.clone());
        discovery
            .kinds
            .get(&key)
            .cloned()
            .ok_or_else(|| Error::NoMatch { kind: gvk.kind.clone(), api_version: gvk.api_version() })
    }

    /// The ApplySet parent's REST mapper, from the cached discovery (fetched if needed).
    pub async fn api_index(&self) -> Result<Arc<ApiIndex>> {
        Ok(self.discovery().await?.index.clone())
    }

    /// Whether the discovery cache knows the kind (without fetching).
    pub async fn knows(&self, gvk: &GroupVersionKind) -> Result<bool> {
        Ok(self.mapping(gvk).await.is_ok())
    }

    /// Drops the discovery cache and fetches it again (after CRDs were established).
    pub async fn refresh_discovery(&self) -> Result<()> {
        let fresh = Arc::new(self.fetch_discovery().await?);
        *self.discovery.write().await = Some(fresh);
        Ok(())
    }

    /// The cached discovery; the first caller fetches it while the others wait.
    async fn discovery(&self) -> Result<Arc<DiscoveryMap>> {
        if let Some(cached) = self.discovery.read().await.as_ref() {
            return Ok(cached.clone());
        }
        let mut slot = self.discovery.write().await;
        if let Some(cached) = slot.as_ref() {
            return Ok(cached.clone());
        }
        let fresh = Arc::new(self.fetch_discovery().await?);
        *slot = Some(fresh.clone());
        Ok(fresh)
    }

    /// Aggregated discovery (`/api` and `/apis`, two requests); servers without it get the
    /// per-group-version walk.
    async fn fetch_discovery(&self) -> Result<DiscoveryMap> {
        let fetch = |path: &'static str| async move {
            let request = http::Request::get(path)
                .header(http::header::ACCEPT, AGGREGATED)
                .body(Vec::new())
                .map_err(|e| Error::Other(with_causes(&e)))?;
            let body = self.send(request).await?;
            serde_json::from_slice::<serde_json::Value>(&body)
                .map_err(|e| Error::Other(format!("cannot decode discovery from {path}: {e}", e = Chain(&e))))
        };
        let (core, groups) = futures::try_join!(fetch("/api"), fetch("/apis"))?;
        let aggregated =
            |v: &serde_json::Value| v.get("kind").and_then(|k| k.as_str()) == Some("APIGroupDiscoveryList");
        if aggregated(&core) && aggregated(&groups) {
            return Ok(DiscoveryMap::of(ApiIndex::from_aggregated(&[&core, &groups])));
        }
        self.walk_discovery().await
    }

    /// Discovery of servers without the aggregated endpoint: one request per group-version.
    async fn walk_discovery(&self) -> Result<DiscoveryMap> {
        Ok(DiscoveryMap::of(ApiIndex::load(&self.client).await?))
    }
}

impl DiscoveryMap {
    /// The apply path's kind → resource map, from the one parsed index: the first entry of a
    /// kind wins, as the apiserver lists preferred versions first.
    fn of(index: ApiIndex) -> DiscoveryMap {
        let mut kinds = HashMap::new();
        for entry in index.entries().iter().filter(|e| !e.api_resource.kind.is_empty()) {
            let resource = &entry.api_resource;
            let key = (resource.group.clone(), resource.version.clone(), resource.kind.clone());
            kinds.entry(key).or_insert_with(|| Mapping { resource: resource.clone(), namespaced: entry.namespaced });
        }
        DiscoveryMap { kinds, index: Arc::new(index) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_kinds() {
        let list = serde_json::json!({"kind": "APIGroupDiscoveryList", "items": [
            {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "resources": [
                {"resource": "deployments", "responseKind": {"kind": "Deployment"}, "scope": "Namespaced"},
                {"resource": "deployments/scale", "responseKind": {}, "scope": "Namespaced"}
            ]}]}
        ]});
        let map = DiscoveryMap::of(ApiIndex::from_aggregated(&[&list]));
        let key = ("apps".to_owned(), "v1".to_owned(), "Deployment".to_owned());
        let mapping = &map.kinds[&key];
        assert_eq!((mapping.resource.plural.as_str(), mapping.namespaced), ("deployments", true));
        assert_eq!(mapping.resource.api_version, "apps/v1");
        assert_eq!(map.kinds.len(), 1);
    }
}
