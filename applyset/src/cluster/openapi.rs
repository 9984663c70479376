//! The run's OpenAPI caches, as kubectl keeps them: the v3 index (`/openapi/v3`), each v3
//! group-version document fetched at most once, and the v2 document. A document the server
//! does not serve, or that cannot be read, is cached as absent: kubectl then falls back
//! silently, and so do we. A fetch that failed for a passing reason (the apiserver unreachable
//! or unavailable) is not cached: a long-lived cluster (the controller's) asks again next time
//! instead of keeping "no patch metadata" for good.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use applyset_merge::Value;
use applyset_merge::openapi::OpenApi;
use tokio::sync::OnceCell;

use super::Cluster;

/// The per-run OpenAPI documents of one cluster.
#[derive(Default)]
pub(super) struct OpenApiCache {
    /// Group-version path (`apis/apps/v1`) → its document's server-relative URL.
    v3_index: OnceCell<Option<HashMap<String, String>>>,
    /// One cell per group-version, so concurrent objects of a kind fetch it once.
    v3_docs: Mutex<HashMap<String, Arc<OnceCell<Option<OpenApi>>>>>,
    v2: OnceCell<Option<OpenApi>>,
}

impl Cluster {
    /// The OpenAPI v3 document of a group-version (`api/v1`, `apis/apps/v1`), fetched once per
    /// run. `None` when the server does not serve it or it cannot be read (kubectl then skips
    /// v3 silently).
    pub async fn openapi_v3(&self, group: &str, version: &str) -> Option<OpenApi> {
        let index = self.openapi.v3_index.get_or_try_init(|| self.fetch_v3_index()).await.ok()?.as_ref()?;
        let gv_path = if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") };
        let url = index.get(&gv_path)?.clone();
        let cell = self.openapi.v3_docs.lock().expect("openapi cache lock").entry(gv_path).or_default().clone();
        cell.get_or_try_init(|| self.fetch_document(&url)).await.ok()?.clone()
    }

    /// `Ok(None)`: not served or unreadable (cached); `Err`: ask again next time.
    async fn fetch_document(&self, url: &str) -> Result<Option<OpenApi>, Passing> {
        Ok(definitive(self.get_json(url).await)?.and_then(|document| OpenApi::from_document(document).ok()))
    }

    async fn fetch_v3_index(&self) -> Result<Option<HashMap<String, String>>, Passing> {
        let Some(root) = definitive(self.get_json("/openapi/v3").await)? else { return Ok(None) };
        let Some(paths) = root.as_object().and_then(|r| r.get("paths")).and_then(Value::as_object) else {
            return Ok(None);
        };
        let mut index = HashMap::new();
        for (gv, entry) in paths {
            if let Some(url) = entry.as_object().and_then(|e| e.get("serverRelativeURL")).and_then(Value::as_str) {
                index.insert(gv.clone(), url.to_owned());
            }
        }
        Ok(Some(index))
    }

    /// The OpenAPI v2 document (`/openapi/v2`), fetched at most once per run.
    pub async fn openapi_v2(&self) -> Option<OpenApi> {
        self.openapi.v2.get_or_try_init(|| self.fetch_document("/openapi/v2")).await.ok()?.clone()
    }
}

/// A fetch that failed for a passing reason.
struct Passing;

/// The document, `None` when the answer is final (not served, forbidden, …), `Err` when the
/// failure may pass (unreachable, unavailable).
fn definitive(fetched: super::Result<Value>) -> Result<Option<Value>, Passing> {
    match fetched {
        Ok(document) => Ok(Some(document)),
        Err(error) if error.category().is_transient() => Err(Passing),
        Err(_) => Ok(None),
    }
}
