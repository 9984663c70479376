//! An in-process apiserver for the reconcile: a tower `Service` that a `kube::Client` (and so
//! a `Cluster`) is built on, with an in-memory object store. It serves aggregated discovery,
//! the OpenAPI v3 documents of the built-in kinds it knows, GET/LIST (label selector, `limit`
//! and `continue`), POST, PATCH (strategic merge with the crate's own engine, JSON merge,
//! server-side apply as a merge), DELETE (preconditions, finalizers) and the `status`
//! subresource; it refuses every SelfSubjectAccessReview, so the watch cache never watches and
//! runs read from here. Every request is recorded, and a test can make one fail.

mod api;
mod store;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll};

use applyset_merge::openapi::OpenApi;
use http::{Method, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};

use api::Resource;
use store::{Key, Refusal, Store};

/// One request as the fake received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: Method,
    pub path: String,
    /// Decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    pub content_type: Option<String>,
    /// The body, when it was JSON.
    pub body: Option<Value>,
}

impl Recorded {
    pub fn query(&self, key: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// A write (POST, PATCH, DELETE) other than an access review, which reads.
    pub fn is_write(&self) -> bool {
        self.method != Method::GET && !self.path.ends_with("/selfsubjectaccessreviews")
    }
}

impl std::fmt::Display for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.path)
    }
}

struct Failure {
    method: Method,
    path: String,
    refusal: Refusal,
}

#[derive(Default)]
struct State {
    store: Store,
    requests: Vec<Recorded>,
    failures: Vec<Failure>,
    /// (method, path): answered only after this long.
    delays: Vec<(Method, String, std::time::Duration)>,
}

#[derive(Clone, Default)]
pub struct FakeApiServer {
    state: Arc<Mutex<State>>,
}

impl FakeApiServer {
    pub fn new() -> FakeApiServer {
        FakeApiServer::default()
    }

    /// A client whose every request this fake answers.
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.clone(), "default")
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// From now on, `method path` (no query) is answered with this failure; an `Invalid` one
    /// names the object and a field, as the apiserver's do.
    pub fn fail(&self, method: Method, path: &str, code: u16, reason: &str) {
        let mut refusal = Refusal::new(code, reason, format!("{path} refused by the test: {reason}"));
        if let Ok(Route { resource, name: Some(name), .. }) = route(path)
            && reason == "Invalid"
        {
            let cause = "Invalid value: \"refused\": refused by the test";
            refusal.message = format!("{} {name:?} is invalid: data: {cause}", resource.kind);
            refusal.details = Some(json!({
                "name": name, "kind": resource.kind,
                "causes": [{ "reason": "FieldValueInvalid", "message": cause, "field": "data" }],
            }));
        }
        self.state().failures.push(Failure { method, path: path.to_owned(), refusal });
    }

    /// From now on, `method path` (no query) is answered only after `delay` (a slow apiserver).
    pub fn delay(&self, method: Method, path: &str, delay: std::time::Duration) {
        self.state().delays.push((method, path.to_owned(), delay));
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state().requests.clone()
    }

    /// Every write so far (see [`Recorded::is_write`]).
    pub fn writes(&self) -> Vec<Recorded> {
        self.requests().into_iter().filter(Recorded::is_write).collect()
    }

    /// Forgets the requests so far (to look at one run's).
    pub fn clear_requests(&self) {
        self.state().requests.clear();
    }

    /// The object at an API path (`/api/v1/namespaces/ns/configmaps/a`).
    pub fn object(&self, path: &str) -> Option<Value> {
        let route = route(path).ok()?;
        let key = route.key()?;
        self.state().store.get(&key).cloned()
    }

    /// Stores `object` as a test sets the scene (not a request): a new object gets a uid,
    /// an existing one is replaced; either gets a new resourceVersion.
    pub fn put(&self, mut object: Value) -> Value {
        let resource = api::by_kind(object["apiVersion"].as_str().unwrap_or(""), object["kind"].as_str().unwrap_or(""))
            .unwrap_or_else(|| panic!("the fake serves no {} {}", object["apiVersion"], object["kind"]));
        let name = object["metadata"]["name"].as_str().expect("metadata.name").to_owned();
        let namespace = object["metadata"]["namespace"].as_str().map(str::to_owned);
        let key = store::key(resource, namespace.as_deref(), &name);
        let mut state = self.state();
        if object["metadata"].get("uid").is_none() {
            object["metadata"]["uid"] = match state.store.get(&key) {
                Some(existing) => existing["metadata"]["uid"].clone(),
                None => state.store.new_uid().into(),
            };
        }
        state.store.put(key, object)
    }

    /// The Events (`events.k8s.io/v1`) recorded, in name order.
    pub fn events(&self) -> Vec<Value> {
        self.state().store.of_kind("events.k8s.io", "events")
    }

    /// The server's own patch metadata of a kind: the document it serves, compiled (small:
    /// compiled per patch).
    fn schema_for(&self, resource: &Resource) -> Option<applyset_merge::SchemaRef> {
        let gv =
            if resource.group.is_empty() { "api/v1".to_owned() } else { format!("apis/{}", resource.api_version()) };
        let document = api::openapi_document(&gv)?;
        let compiled =
            OpenApi::from_document(applyset_merge::Value::from_json_str(&document.to_string()).ok()?).ok()?;
        compiled.schema_for_gvk(resource.group, resource.version, resource.kind)
    }

    fn handle(&self, parts: &http::request::Parts, body: &[u8]) -> (StatusCode, Value) {
        let path = parts.uri.path().to_owned();
        let query = parse_query(parts.uri.query().unwrap_or(""));
        let header =
            |name: http::header::HeaderName| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let content_type = header(http::header::CONTENT_TYPE);
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        let recorded =
            Recorded { method: parts.method.clone(), path: path.clone(), query, content_type, body: parsed.clone() };
        let mut state = self.state();
        state.requests.push(recorded.clone());
        if let Some(failure) = state.failures.iter().find(|f| f.method == parts.method && f.path == path) {
            return refused(&failure.refusal);
        }
        let accept = header(http::header::ACCEPT).unwrap_or_default();
        let answer = match path.as_str() {
            "/api" | "/apis" if accept.contains("as=APIGroupDiscoveryList") => Ok(api::discovery(path == "/api")),
            "/openapi/v3" => Ok(api::openapi_index()),
            _ if path.starts_with("/openapi/v3/") => api::openapi_document(&path["/openapi/v3/".len()..])
                .ok_or_else(|| Refusal::new(404, "NotFound", "no such document")),
            _ => match route(&path) {
                Ok(route) => {
                    drop(state);
                    return self.resource(route, &recorded, parsed);
                }
                Err(refusal) => Err(refusal),
            },
        };
        match answer {
            Ok(body) => (StatusCode::OK, body),
            Err(refusal) => refused(&refusal),
        }
    }

    /// A request on a resource path.
    fn resource(&self, route: Route, request: &Recorded, body: Option<Value>) -> (StatusCode, Value) {
        let dry_run = request.query("dryRun") == Some("All");
        let resource = route.resource;
        let answer = match (&request.method, route.name.as_deref()) {
            (&Method::GET, Some(_)) => {
                let key = route.key().expect("named");
                self.state()
                    .store
                    .get(&key)
                    .cloned()
                    .ok_or_else(|| Refusal::not_found(&key))
                    .map(|o| (StatusCode::OK, o))
            }
            (&Method::GET, None) => Ok((StatusCode::OK, self.list(&route, request))),
            (&Method::POST, None) if resource.plural == "selfsubjectaccessreviews" => {
                let mut review = body.unwrap_or_else(|| json!({}));
                review["status"] = json!({ "allowed": false, "reason": "the fake apiserver allows no watches" });
                Ok((StatusCode::CREATED, review))
            }
            (&Method::POST, None) => {
                let object = body.unwrap_or(Value::Null);
                let mut state = self.state();
                state
                    .store
                    .create(resource, route.namespace.as_deref(), object, dry_run)
                    .map(|o| (StatusCode::CREATED, o))
            }
            (&Method::PATCH, Some(_)) => self.patch(&route, request, body).map(|o| (StatusCode::OK, o)),
            (&Method::DELETE, Some(_)) => {
                let key = route.key().expect("named");
                let options = body.unwrap_or_else(|| json!({}));
                self.state().store.delete(&key, &options, dry_run).map(|o| (StatusCode::OK, o))
            }
            _ => Err(Refusal::new(405, "MethodNotAllowed", format!("{} {}", request.method, request.path))),
        };
        answer.unwrap_or_else(|refusal| refused(&refusal))
    }

    /// LIST with `labelSelector`, `limit` and `continue` (the offset of the next page).
    fn list(&self, route: &Route, request: &Recorded) -> Value {
        let selector = request.query("labelSelector").unwrap_or("");
        let state = self.state();
        let items = state.store.list(route.resource, route.namespace.as_deref(), selector);
        let start: usize = request.query("continue").and_then(|c| c.parse().ok()).unwrap_or(0);
        let limit: usize = request.query("limit").and_then(|l| l.parse().ok()).filter(|l| *l > 0).unwrap_or(usize::MAX);
        let page: Vec<Value> = items.iter().skip(start).take(limit).cloned().collect();
        let next = start.saturating_add(limit);
        let mut metadata = json!({ "resourceVersion": state.store.revision() });
        if next < items.len() {
            metadata["continue"] = next.to_string().into();
        }
        let kind = format!("{}List", route.resource.kind);
        json!({ "kind": kind, "apiVersion": route.resource.api_version(), "metadata": metadata, "items": page })
    }

    /// PATCH by content type; a `metadata.resourceVersion` in the patch is a precondition.
    fn patch(&self, route: &Route, request: &Recorded, body: Option<Value>) -> Result<Value, Refusal> {
        let key = route.key().expect("named");
        let patch = body.ok_or_else(|| Refusal::new(400, "BadRequest", "the patch is not JSON"))?;
        let content_type = request.content_type.as_deref().unwrap_or("");
        let dry_run = request.query("dryRun") == Some("All");
        let current = self.state().store.get(&key).cloned();
        let Some(current) = current else {
            if content_type.starts_with("application/apply-patch") {
                return self.state().store.create(route.resource, route.namespace.as_deref(), patch, dry_run);
            }
            return Err(Refusal::not_found(&key));
        };
        if let Some(wanted) = patch["metadata"]["resourceVersion"].as_str()
            && current["metadata"]["resourceVersion"].as_str() != Some(wanted)
        {
            return Err(Refusal::new(
                409,
                "Conflict",
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        let merged = match content_type {
            "application/strategic-merge-patch+json" => {
                let schema = self.schema_for(route.resource).ok_or_else(|| {
                    Refusal::new(415, "UnsupportedMediaType", "strategic merge patch is not supported")
                })?;
                engine(&current, &patch, |c, p| applyset_merge::strategic_merge_patch(c, p, schema.as_ref()))?
            }
            "application/merge-patch+json" => engine(&current, &patch, applyset_merge::json_merge::merge_patch)?,
            // Server-side apply, for what the controller sends that way, is the merge of its body,
            // but `metadata.finalizers` is a set whose other entries other managers own: kept.
            "application/apply-patch+yaml" => {
                let mut merged = engine(&current, &patch, applyset_merge::json_merge::merge_patch)?;
                if let Some(held) = current["metadata"]["finalizers"].as_array() {
                    let mut finalizers = held.clone();
                    for added in patch["metadata"]["finalizers"].as_array().into_iter().flatten() {
                        if !finalizers.contains(added) {
                            finalizers.push(added.clone());
                        }
                    }
                    merged["metadata"]["finalizers"] = Value::Array(finalizers);
                }
                merged
            }
            "application/json-patch+json" => store::json_patch(current, &patch)?,
            other => return Err(Refusal::new(415, "UnsupportedMediaType", format!("the fake cannot apply {other}"))),
        };
        self.state().store.update(route.resource, &key, merged, route.status, dry_run)
    }
}

/// Runs a patch engine of the merge crate on `serde_json` values.
fn engine(
    current: &Value,
    patch: &Value,
    apply: impl Fn(&applyset_merge::Value, &applyset_merge::Value) -> applyset_merge::Result<applyset_merge::Value>,
) -> Result<Value, Refusal> {
    let convert = |v: &Value| applyset_merge::Value::from_json_str(&v.to_string());
    let invalid = |e: String| Refusal::new(422, "Invalid", e);
    let (current, patch) = (convert(current).map_err(|e| invalid(e.0))?, convert(patch).map_err(|e| invalid(e.0))?);
    let merged = apply(&current, &patch).map_err(|e| invalid(e.to_string()))?;
    serde_json::from_str(&merged.to_json_string()).map_err(|e| invalid(e.to_string()))
}

fn refused(refusal: &Refusal) -> (StatusCode, Value) {
    (StatusCode::from_u16(refusal.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), refusal.body())
}

/// A resource path: `/api/v1[/namespaces/{ns}]/{plural}[/{name}[/status]]`, or `/apis/{g}/{v}/…`.
struct Route {
    resource: &'static Resource,
    namespace: Option<String>,
    name: Option<String>,
    /// The `status` subresource.
    status: bool,
}

impl Route {
    fn key(&self) -> Option<Key> {
        Some(store::key(self.resource, self.namespace.as_deref(), self.name.as_deref()?))
    }
}

fn route(path: &str) -> Result<Route, Refusal> {
    let not_found =
        || Refusal::new(404, "NotFound", format!("the server could not find the requested resource ({path})"));
    let segments: Vec<String> = path.trim_start_matches('/').split('/').map(decode).collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(not_found()),
    };
    let (namespace, rest) = match rest {
        ["namespaces", namespace, plural, tail @ ..] if !matches!(*plural, "status" | "finalize") => {
            (Some((*namespace).to_owned()), [&[*plural][..], tail].concat())
        }
        _ => (None, rest.to_vec()),
    };
    let (plural, name, status) = match rest.as_slice() {
        [plural] => (*plural, None, false),
        [plural, name] => (*plural, Some((*name).to_owned()), false),
        [plural, name, "status"] => (*plural, Some((*name).to_owned()), true),
        _ => return Err(not_found()),
    };
    let resource = api::find(group, version, plural).ok_or_else(not_found)?;
    if resource.namespaced && name.is_some() && namespace.is_none() {
        return Err(not_found());
    }
    Ok(Route { resource, namespace, name, status })
}

/// Percent-decoding (and `+` as a space, as form encoding writes it).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(byte) => {
                        out.push(byte);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

impl tower_service::Service<http::Request<Body>> for FakeApiServer {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let fake = self.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let delay =
                fake.state().delays.iter().find(|(m, p, _)| *m == parts.method && *p == parts.uri.path()).map(|d| d.2);
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            let body = body.collect_bytes().await.map(|b| b.to_vec()).unwrap_or_default();
            let (status, answer) = fake.handle(&parts, &body);
            let response = http::Response::builder()
                .status(status)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Body::from(answer.to_string().into_bytes()))
                .expect("a valid response");
            Ok(response)
        })
    }
}
