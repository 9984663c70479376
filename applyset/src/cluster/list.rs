//! Listing objects for prune: the LIST (metadata only, paginated, by label) reduced to what
//! a prune decides on, the single GET for printing, and how a client error reads.

use applyset_merge::Value;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::ApiResource;

use crate::keys::{LAST_APPLIED_ANNOTATION, PruneMark};

/// How many LIST requests run at once.
pub const LIST_CONCURRENCY: usize = 4;
/// Page size of LIST requests.
pub const LIST_PAGE_SIZE: u32 = 500;

/// An object a LIST returned, reduced to what pruning needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listed {
    pub name: String,
    pub namespace: Option<String>,
    pub uid: String,
    pub has_last_applied: bool,
    /// `metadata.deletionTimestamp` is set: it is being deleted (held by `finalizers`).
    pub deleting: bool,
    pub finalizers: Vec<String>,
    /// Carries a do-not-prune mark (the controller keeps such objects when they leave git;
    /// kubectl's prune does not look).
    pub prune_mark: Option<PruneMark>,
    /// Known from a watch cache at this resourceVersion: the DELETE requires it (and the uid),
    /// so that an object changed since the cache saw it (relabelled, replaced) is not deleted
    /// on a stale view. `None` from a LIST, deleted as kubectl deletes.
    pub cached_version: Option<String>,
}

/// The API of `api_resource` in `namespace` (`None`: cluster-scoped).
pub fn dynamic_api(client: &Client, api_resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, api_resource),
        None => Api::all_with(client.clone(), api_resource),
    }
}

/// LISTs `api_resource` in `namespace` (all namespaces' worth of nothing: `None` is a
/// cluster-scoped LIST) with `selector`, following `continue` tokens.
pub async fn list_all(
    client: &Client,
    api_resource: &ApiResource,
    namespace: Option<&str>,
    selector: &str,
) -> Result<Vec<Listed>, kube::Error> {
    let api = dynamic_api(client, api_resource, namespace);
    let mut params = ListParams::default().limit(LIST_PAGE_SIZE);
    if !selector.is_empty() {
        params = params.labels(selector);
    }
    let mut listed = Vec::new();
    loop {
        let page = api.list_metadata(&params).await?;
        for item in page.items {
            let meta = item.metadata;
            listed.push(Listed {
                name: meta.name.unwrap_or_default(),
                namespace: meta.namespace,
                uid: meta.uid.unwrap_or_default(),
                has_last_applied: meta.annotations.as_ref().is_some_and(|a| a.contains_key(LAST_APPLIED_ANNOTATION)),
                deleting: meta.deletion_timestamp.is_some(),
                finalizers: meta.finalizers.unwrap_or_default(),
                prune_mark: PruneMark::find(|key| meta.annotations.as_ref()?.get(key).map(String::as_str)),
                cached_version: None,
            });
        }
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(listed),
        }
    }
}

/// The object as the apiserver returns it (a GET), or `None` if it could not be read: only
/// printing needs it, and kubectl ignores errors in printing pruned objects too.
pub async fn fetch_object(
    client: &Client,
    api_resource: &ApiResource,
    namespace: Option<&str>,
    name: &str,
) -> Option<Value> {
    use kube::Resource;
    let url = DynamicObject::url_path(api_resource, namespace);
    let request = kube::core::Request::new(url).get(name, &kube::api::GetParams::default()).ok()?;
    let text = client.request_text(request).await.ok()?;
    Value::from_json_str(&text).ok()
}

/// The text kubectl shows for a client error: an API status's message, else the error.
pub fn error_text(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

/// Whether the apiserver answered with this status code.
pub fn is_status(error: &kube::Error, code: u16) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == code)
}
