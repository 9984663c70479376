//! The apply path's only door to the API server: a kube client behind a rate limiter, with the
//! per-run caches kubectl keeps (discovery, OpenAPI v3 per group-version, OpenAPI v2).
//!
//! Every request is raw HTTP so that bodies are read with the merge engine's Go-exact JSON
//! parser ([`Value`]), content types and query parameters are exactly kubectl's, and errors keep
//! the apiserver's `Status`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use applyset_merge::Value;
use applyset_merge::openapi::OpenApi;
use kube::core::{ApiResource, GroupVersionKind};

use crate::applyset::ApiIndex;
use tokio::sync::{OnceCell, RwLock};

/// A `metav1.Status` failure answered by the apiserver.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiStatus {
    pub code: u16,
    pub reason: String,
    pub message: String,
    /// `details.kind`, `details.name` and `details.causes` (field, message), when given.
    pub details_kind: String,
    pub details_name: String,
    pub causes: Vec<(String, String)>,
}

impl ApiStatus {
    fn from_body(code: u16, body: &[u8]) -> ApiStatus {
        let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
        let Some(status) = parsed.filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some("Status")) else {
            let text = String::from_utf8_lossy(body).trim().to_owned();
            return ApiStatus {
                code,
                reason: String::new(),
                message: if text.is_empty() { format!("the server responded with HTTP status {code}") } else { text },
                details_kind: String::new(),
                details_name: String::new(),
                causes: Vec::new(),
            };
        };
        let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).unwrap_or("").to_owned();
        let details = status.get("details");
        let causes = details
            .and_then(|d| d.get("causes"))
            .and_then(|c| c.as_array())
            .map(|causes| causes.iter().map(|c| (text(c.get("field")), text(c.get("message")))).collect())
            .unwrap_or_default();
        ApiStatus {
            code: status.get("code").and_then(|c| c.as_u64()).map_or(code, |c| c as u16),
            reason: text(status.get("reason")),
            message: text(status.get("message")),
            details_kind: text(details.and_then(|d| d.get("kind"))),
            details_name: text(details.and_then(|d| d.get("name"))),
            causes,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.code == 404
    }

    pub fn is_conflict(&self) -> bool {
        self.code == 409 && self.reason != "AlreadyExists"
    }

    pub fn is_already_exists(&self) -> bool {
        self.code == 409 && self.reason == "AlreadyExists"
    }

    pub fn is_invalid(&self) -> bool {
        self.code == 422 || self.reason == "Invalid"
    }
}

/// What can go wrong talking to the cluster.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The apiserver answered with a failure status.
    #[error("{}", .0.message)]
    Api(Box<ApiStatus>),
    /// No request reached the apiserver (connection refused, TLS, DNS, timeout…).
    #[error("cannot reach the Kubernetes API server at {server}: {reason}")]
    Unreachable { server: String, reason: String },
    /// The REST mapper knows no resource for the kind (`meta.NoKindMatchError`).
    #[error("no matches for kind \"{kind}\" in version \"{api_version}\"")]
    NoMatch { kind: String, api_version: String },
    /// Kubeconfig, response decoding and every other failure.
    #[error("{0}")]
    Other(String),
}

impl Error {
    pub fn status(&self) -> Option<&ApiStatus> {
        match self {
            Error::Api(status) => Some(&**status),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.status().is_some_and(ApiStatus::is_not_found)
    }

    pub fn is_conflict(&self) -> bool {
        self.status().is_some_and(ApiStatus::is_conflict)
    }

    pub fn is_invalid(&self) -> bool {
        self.status().is_some_and(ApiStatus::is_invalid)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How to reach the cluster.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// Kubeconfig file; default `$KUBECONFIG`, else `~/.kube/config`, else in-cluster.
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// Requests per second (token bucket); `<= 0` disables the limiter.
    pub qps: f64,
    pub burst: u32,
}

/// Default request budget. kubectl is not held back by its limiter (it sends one request at a
/// time); we send many at once, so the budget is what bounds the load: 1,000 objects are
/// created in about 2.5 s.
pub const DEFAULT_QPS: f64 = 300.0;
pub const DEFAULT_BURST: u32 = 600;

/// A token bucket: `burst` requests at once, then `qps` per second.
#[derive(Debug)]
pub struct RateLimiter {
    qps: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
    granted: std::sync::atomic::AtomicU64,
}

impl RateLimiter {
    pub fn new(qps: f64, burst: u32) -> RateLimiter {
        let burst = f64::from(burst.max(1));
        RateLimiter { qps, burst, state: Mutex::new((burst, Instant::now())), granted: Default::default() }
    }

    /// How many requests [`RateLimiter::acquire`] let through.
    pub fn granted(&self) -> u64 {
        self.granted.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits for a token. Tokens are reserved under the lock (the count may go negative), so
    /// concurrent callers queue fairly without holding the lock while sleeping.
    pub async fn acquire(&self) {
        self.granted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.qps <= 0.0 {
            return;
        }
        let wait = {
            let mut state = self.state.lock().expect("rate limiter lock");
            let now = Instant::now();
            let refill = now.duration_since(state.1).as_secs_f64() * self.qps;
            state.0 = (state.0 + refill).min(self.burst);
            state.1 = now;
            state.0 -= 1.0;
            if state.0 >= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-state.0 / self.qps) }
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// The mapping of one kind: its REST resource and scope.
#[derive(Debug, Clone)]
pub struct Mapping {
    pub resource: ApiResource,
    pub namespaced: bool,
}

type GvkKey = (String, String, String);

#[derive(Debug, Default)]
struct DiscoveryMap {
    kinds: HashMap<GvkKey, Mapping>,
    /// The same discovery with kubectl's resource-matching rules (the ApplySet parent's REST
    /// mapper), built from the same response: one discovery per cluster, not one per user.
    index: Arc<ApiIndex>,
}

/// Everything the apply flow knows about the cluster: the client, the discovery cache
/// (GVK → resource and scope), the OpenAPI caches and the rate limiter. Shared by reference
/// across the concurrent per-object tasks of a run.
pub struct Cluster {
    client: kube::Client,
    server: String,
    default_namespace: String,
    /// Shared with the client's [`Door`]: every request waits for it.
    limiter: Arc<RateLimiter>,
    discovery: RwLock<Option<Arc<DiscoveryMap>>>,
    openapi_v3_index: OnceCell<Option<HashMap<String, String>>>,
    openapi_v3_docs: Mutex<HashMap<String, Arc<OnceCell<Option<OpenApi>>>>>,
    openapi_v2: OnceCell<Option<OpenApi>>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("server", &self.server).finish_non_exhaustive()
    }
}

impl Cluster {
    /// Loads the kubeconfig and builds a client. Nothing is sent to the server yet.
    pub async fn connect(options: &ConnectOptions) -> Result<Cluster> {
        let config = Cluster::load_config(options).await?;
        Cluster::from_config(config, options.qps, options.burst)
    }

    /// A cluster for a ready-made config (the controller's, possibly impersonating a
    /// ServiceAccount, with the ApplySet's namespace as the default).
    pub fn from_config(config: kube::Config, qps: f64, burst: u32) -> Result<Cluster> {
        let server = config.cluster_url.to_string().trim_end_matches('/').to_owned();
        let default_namespace = config.default_namespace.clone();
        let client = kube::Client::try_from(config)
            .map_err(|e| Error::Other(format!("cannot build a client for {server}: {e}")))?;
        Ok(Cluster::from_client(client, server, default_namespace, qps, burst))
    }

    /// The kubeconfig (or in-cluster config) with the apply path's timeouts.
    pub async fn load_config(options: &ConnectOptions) -> Result<kube::Config> {
        use kube::config::{KubeConfigOptions, Kubeconfig};
        let kube_options = KubeConfigOptions { context: options.context.clone(), ..Default::default() };
        let mut config = match &options.kubeconfig {
            Some(path) => {
                let file = Kubeconfig::read_from(path)
                    .map_err(|e| Error::Other(format!("cannot read kubeconfig {}: {e}", path.display())))?;
                kube::Config::from_custom_kubeconfig(file, &kube_options)
                    .await
                    .map_err(|e| Error::Other(format!("invalid kubeconfig {}: {e}", path.display())))?
            }
            None => match kube::Config::from_kubeconfig(&kube_options).await {
                Ok(config) => config,
                Err(kubeconfig_error) => match (&options.context, kube::Config::incluster()) {
                    (None, Ok(config)) => config,
                    _ => return Err(Error::Other(format!("cannot load a kubeconfig: {kubeconfig_error}"))),
                },
            },
        };
        // kube leaves reads unbounded; a hung apiserver must not hang a run forever.
        config.read_timeout = Some(Duration::from_secs(120));
        config.connect_timeout = Some(Duration::from_secs(10));
        Ok(config)
    }

    /// A cluster around an existing client (tests use a mock service). The client is wrapped
    /// so that the server's `Warning` headers reach the user for every request made through
    /// [`Cluster::client`] too (prune, ApplySet parent).
    pub fn from_client(
        client: kube::Client,
        server: String,
        default_namespace: String,
        qps: f64,
        burst: u32,
    ) -> Cluster {
        let limiter = Arc::new(RateLimiter::new(qps, burst));
        let door = Door { inner: client, limiter: limiter.clone() };
        let client = kube::Client::new(door, default_namespace.clone());
        Cluster {
            client,
            server,
            default_namespace,
            limiter,
            discovery: RwLock::new(None),
            openapi_v3_index: OnceCell::new(),
            openapi_v3_docs: Mutex::new(HashMap::new()),
            openapi_v2: OnceCell::new(),
        }
    }

    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The server URL, as the kubeconfig names it.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The kubeconfig context's namespace, else `default`.
    pub fn default_namespace(&self) -> &str {
        &self.default_namespace
    }

    // ----------------------------------------------------------------------------------------
    // Raw requests

    /// Sends one request (rate-limited by the client's [`Door`]); a failure status becomes
    /// [`Error::Api`], a transport failure [`Error::Unreachable`].
    pub async fn send(&self, request: http::Request<Vec<u8>>) -> Result<Vec<u8>> {
        let response = self.client.send(request.map(kube::client::Body::from)).await.map_err(|e| self.transport(e))?;
        let status = response.status();
        let body = response.into_body().collect_bytes().await.map_err(|e| self.transport(e))?;
        if status.is_client_error() || status.is_server_error() {
            return Err(Error::Api(Box::new(ApiStatus::from_body(status.as_u16(), &body))));
        }
        Ok(body.to_vec())
    }

    fn transport(&self, error: kube::Error) -> Error {
        let mut reason = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !reason.contains(&text) {
                reason = format!("{reason}: {text}");
            }
            source = cause.source();
        }
        Error::Unreachable { server: self.server.clone(), reason }
    }

    async fn get_json(&self, path: &str) -> Result<Value> {
        let request = http::Request::get(path)
            .header(http::header::ACCEPT, "application/json")
            .body(Vec::new())
            .map_err(|e| Error::Other(e.to_string()))?;
        let body = self.send(request).await?;
        parse_body(&body)
    }

    /// GET one object.
    pub async fn get(&self, mapping: &Mapping, namespace: Option<&str>, name: &str) -> Result<Value> {
        self.get_json(&object_path(mapping, namespace, Some(name), &[])).await
    }

    /// LIST every object of a resource in a namespace (or cluster-wide), paginated. Items get
    /// the `apiVersion` and `kind` a GET would show (typed lists leave them out).
    pub async fn list(
        &self,
        mapping: &Mapping,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<Value>> {
        let mut items = Vec::new();
        let mut continue_token: Option<String> = None;
        loop {
            let mut query: Vec<(&str, &str)> = vec![("limit", "500")];
            if let Some(selector) = label_selector {
                query.push(("labelSelector", selector));
            }
            if let Some(token) = &continue_token {
                query.push(("continue", token));
            }
            let list = self.get_json(&object_path(mapping, namespace, None, &query)).await?;
            let Value::Object(mut list) = list else {
                return Err(Error::Other("the server's list response is not an object".into()));
            };
            if let Some(Value::Array(page)) = list.remove("items") {
                for mut item in page {
                    if let Value::Object(map) = &mut item {
                        map.insert("apiVersion".into(), Value::String(mapping.resource.api_version.clone()));
                        map.insert("kind".into(), Value::String(mapping.resource.kind.clone()));
                    }
                    items.push(item);
                }
            }
            continue_token = list
                .get("metadata")
                .and_then(|m| m.as_object())
                .and_then(|m| m.get("continue"))
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_owned);
            if continue_token.is_none() {
                return Ok(items);
            }
        }
    }

    /// POST an object.
    pub async fn create(
        &self,
        mapping: &Mapping,
        namespace: Option<&str>,
        body: &Value,
        params: &WriteParams,
    ) -> Result<Value> {
        let query = params.query();
        let query: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let request = http::Request::post(object_path(mapping, namespace, None, &query))
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.to_json_string().into_bytes())
            .map_err(|e| Error::Other(e.to_string()))?;
        parse_body(&self.send(request).await?)
    }

    /// PATCH an object with a strategic merge patch or a JSON merge patch.
    pub async fn patch(
        &self,
        mapping: &Mapping,
        namespace: Option<&str>,
        name: &str,
        patch_type: PatchType,
        patch: &Value,
        params: &WriteParams,
    ) -> Result<Value> {
        let query = params.query();
        let query: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let request = http::Request::patch(object_path(mapping, namespace, Some(name), &query))
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::CONTENT_TYPE, patch_type.content_type())
            .body(patch.to_json_string().into_bytes())
            .map_err(|e| Error::Other(e.to_string()))?;
        parse_body(&self.send(request).await?)
    }

    /// DELETE an object with `propagationPolicy` (and `dryRun=All` when asked).
    pub async fn delete(
        &self,
        mapping: &Mapping,
        namespace: Option<&str>,
        name: &str,
        propagation: &str,
        server_dry_run: bool,
    ) -> Result<()> {
        let mut body = format!(r#"{{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"{propagation}""#);
        if server_dry_run {
            body.push_str(r#","dryRun":["All"]"#);
        }
        body.push('}');
        let query: &[(&str, &str)] = if server_dry_run { &[("dryRun", "All")] } else { &[] };
        let request = http::Request::delete(object_path(mapping, namespace, Some(name), query))
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.into_bytes())
            .map_err(|e| Error::Other(e.to_string()))?;
        self.send(request).await.map(|_| ())
    }

    // ----------------------------------------------------------------------------------------
    // Discovery

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
        const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        let fetch = |path: &'static str| async move {
            let request = http::Request::get(path)
                .header(http::header::ACCEPT, AGGREGATED)
                .body(Vec::new())
                .map_err(|e| Error::Other(e.to_string()))?;
            let body = self.send(request).await?;
            serde_json::from_slice::<serde_json::Value>(&body)
                .map_err(|e| Error::Other(format!("cannot decode discovery from {path}: {e}")))
        };
        let (core, groups) = futures::try_join!(fetch("/api"), fetch("/apis"))?;
        let aggregated =
            |v: &serde_json::Value| v.get("kind").and_then(|k| k.as_str()) == Some("APIGroupDiscoveryList");
        let mut map = DiscoveryMap::default();
        if aggregated(&core) && aggregated(&groups) {
            for list in [&core, &groups] {
                add_aggregated(&mut map, list);
            }
            map.index = Arc::new(ApiIndex::from_aggregated(&[&core, &groups]));
            return Ok(map);
        }
        map.index = Arc::new(ApiIndex::load(&self.client).await.map_err(Error::Other)?);
        let discovery = kube::Discovery::new(self.client.clone())
            .run()
            .await
            .map_err(|e| Error::Other(format!("discovery failed: {e}")))?;
        for group in discovery.groups() {
            for version in group.versions() {
                for (resource, capabilities) in group.versioned_resources(version) {
                    let key = (resource.group.clone(), resource.version.clone(), resource.kind.clone());
                    let namespaced = capabilities.scope == kube::discovery::Scope::Namespaced;
                    map.kinds.entry(key).or_insert(Mapping { resource, namespaced });
                }
            }
        }
        Ok(map)
    }

    // ----------------------------------------------------------------------------------------
    // OpenAPI

    /// The OpenAPI v3 document of a group-version (`api/v1`, `apis/apps/v1`), fetched once per
    /// run. `None` when the server does not serve it or it cannot be read (kubectl then skips
    /// v3 silently).
    pub async fn openapi_v3(&self, group: &str, version: &str) -> Option<OpenApi> {
        let index = self
            .openapi_v3_index
            .get_or_init(|| async {
                let root = self.get_json("/openapi/v3").await.ok()?;
                let paths = root.as_object()?.get("paths")?.as_object()?;
                let mut index = HashMap::new();
                for (gv, entry) in paths {
                    if let Some(url) =
                        entry.as_object().and_then(|e| e.get("serverRelativeURL")).and_then(Value::as_str)
                    {
                        index.insert(gv.clone(), url.to_owned());
                    }
                }
                Some(index)
            })
            .await
            .as_ref()?;
        let gv_path = if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") };
        let url = index.get(&gv_path)?.clone();
        let cell = self.openapi_v3_docs.lock().expect("openapi cache lock").entry(gv_path).or_default().clone();
        cell.get_or_init(|| async move {
            let document = self.get_json(&url).await.ok()?;
            OpenApi::from_document(document).ok()
        })
        .await
        .clone()
    }

    /// The OpenAPI v2 document (`/openapi/v2`), fetched at most once per run.
    pub async fn openapi_v2(&self) -> Option<OpenApi> {
        self.openapi_v2
            .get_or_init(|| async {
                let document = self.get_json("/openapi/v2").await.ok()?;
                OpenApi::from_document(document).ok()
            })
            .await
            .clone()
    }
}

/// The layer every request of a [`Cluster`]'s client passes, whoever makes it (the apply
/// path's raw requests, `kube::Api` calls for prune and the ApplySet parent, discovery): it
/// waits for the rate limiter, and hands each `Warning` response header to [`record_warning`].
#[derive(Clone)]
struct Door {
    inner: kube::Client,
    limiter: Arc<RateLimiter>,
}

impl Cluster {
    /// Requests sent through this cluster's client so far (all of them pass the limiter).
    pub fn requests_sent(&self) -> u64 {
        self.limiter.granted()
    }
}

impl tower_service::Service<http::Request<kube::client::Body>> for Door {
    type Response = http::Response<kube::client::Body>;
    type Error = kube::Error;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let inner = self.inner.clone();
        let limiter = self.limiter.clone();
        Box::pin(async move {
            limiter.acquire().await;
            let response = inner.send(request).await?;
            for header in response.headers().get_all("warning") {
                if let Some(text) = header.to_str().ok().and_then(warning_text) {
                    record_warning(format!("Warning: {text}"));
                }
            }
            Ok(response)
        })
    }
}

tokio::task_local! {
    /// Where the server's `Warning` headers go while an object is applied, so that they are
    /// printed with that object, in input order.
    static WARNINGS: std::cell::RefCell<Vec<String>>;
}

/// Runs `future` collecting the server warnings its requests receive.
pub async fn collecting_warnings<F: std::future::Future>(future: F) -> (F::Output, Vec<String>) {
    WARNINGS
        .scope(std::cell::RefCell::new(Vec::new()), async move {
            let output = future.await;
            let warnings = WARNINGS.with(|w| std::mem::take(&mut *w.borrow_mut()));
            (output, warnings)
        })
        .await
}

fn record_warning(line: String) {
    if WARNINGS.try_with(|w| w.borrow_mut().push(line.clone())).is_err() {
        eprintln!("{line}");
    }
}

/// The text of an RFC 7234 warning header as the apiserver sends it (`299 - "text"`).
fn warning_text(header: &str) -> Option<String> {
    let start = header.find('"')?;
    let mut text = String::new();
    let mut chars = header[start + 1..].chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => text.push(chars.next()?),
            '"' => return Some(text),
            c => text.push(c),
        }
    }
    None
}

fn add_aggregated(map: &mut DiscoveryMap, list: &serde_json::Value) {
    let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).unwrap_or("").to_owned();
    for group in list.get("items").and_then(|i| i.as_array()).into_iter().flatten() {
        let group_name = text(group.get("metadata").and_then(|m| m.get("name")));
        for version in group.get("versions").and_then(|v| v.as_array()).into_iter().flatten() {
            let version_name = text(version.get("version"));
            for resource in version.get("resources").and_then(|r| r.as_array()).into_iter().flatten() {
                let plural = text(resource.get("resource"));
                let kind = text(resource.get("responseKind").and_then(|k| k.get("kind")));
                if plural.is_empty() || kind.is_empty() {
                    continue;
                }
                let api_version =
                    if group_name.is_empty() { version_name.clone() } else { format!("{group_name}/{version_name}") };
                let namespaced = text(resource.get("scope")) == "Namespaced";
                let key = (group_name.clone(), version_name.clone(), kind.clone());
                map.kinds.entry(key).or_insert(Mapping {
                    resource: ApiResource {
                        group: group_name.clone(),
                        version: version_name.clone(),
                        api_version,
                        kind,
                        plural,
                    },
                    namespaced,
                });
            }
        }
    }
}

/// Query parameters of writes.
#[derive(Debug, Clone)]
pub struct WriteParams {
    pub field_manager: String,
    /// `Strict`, `Warn` or `Ignore`.
    pub field_validation: String,
    pub server_dry_run: bool,
}

impl WriteParams {
    fn query(&self) -> Vec<(&'static str, String)> {
        let mut query = Vec::new();
        if self.server_dry_run {
            query.push(("dryRun", "All".to_owned()));
        }
        if !self.field_manager.is_empty() {
            query.push(("fieldManager", self.field_manager.clone()));
        }
        if !self.field_validation.is_empty() {
            query.push(("fieldValidation", self.field_validation.clone()));
        }
        query
    }
}

/// The two patch formats of client-side apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Strategic,
    JsonMerge,
}

impl PatchType {
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Strategic => "application/strategic-merge-patch+json",
            PatchType::JsonMerge => "application/merge-patch+json",
        }
    }
}

/// `/api/v1/namespaces/ns/configmaps/name?query` and friends.
pub fn object_path(mapping: &Mapping, namespace: Option<&str>, name: Option<&str>, query: &[(&str, &str)]) -> String {
    let resource = &mapping.resource;
    let mut path = if resource.group.is_empty() {
        format!("/api/{}", resource.version)
    } else {
        format!("/apis/{}/{}", resource.group, resource.version)
    };
    if mapping.namespaced
        && let Some(namespace) = namespace
    {
        path.push_str("/namespaces/");
        path.push_str(&encode(namespace));
    }
    path.push('/');
    path.push_str(&resource.plural);
    if let Some(name) = name {
        path.push('/');
        path.push_str(&encode(name));
    }
    for (i, (key, value)) in query.iter().enumerate() {
        path.push(if i == 0 { '?' } else { '&' });
        path.push_str(key);
        path.push('=');
        path.push_str(&encode(value));
    }
    path
}

/// Percent-encoding of everything but RFC 3986 unreserved characters.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn parse_body(body: &[u8]) -> Result<Value> {
    Value::from_json_slice(body).map_err(|e| Error::Other(format!("cannot decode the server's response: {}", e.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(group: &str, namespaced: bool) -> Mapping {
        let gvk = GroupVersionKind::gvk(group, "v1", "Thing");
        Mapping { resource: ApiResource::from_gvk_with_plural(&gvk, "things"), namespaced }
    }

    #[test]
    fn paths() {
        assert_eq!(object_path(&mapping("", true), Some("ns"), Some("a"), &[]), "/api/v1/namespaces/ns/things/a");
        assert_eq!(
            object_path(&mapping("example.com", false), Some("ns"), None, &[("labelSelector", "a=b,c in (d)")]),
            "/apis/example.com/v1/things?labelSelector=a%3Db%2Cc%20in%20%28d%29"
        );
    }

    #[test]
    fn warning_headers() {
        assert_eq!(warning_text(r#"299 - "unknown field \"spec.x\"""#).as_deref(), Some(r#"unknown field "spec.x""#));
        assert_eq!(warning_text("299 - no quotes"), None);
    }

    #[test]
    fn status_parsing() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Deployment.apps \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0","reason":"Invalid","details":{"name":"web","group":"apps","kind":"Deployment","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: -1: must be greater than or equal to 0","field":"spec.replicas"}]},"code":422}"#;
        let status = ApiStatus::from_body(422, body);
        assert!(status.is_invalid());
        assert_eq!(status.details_kind, "Deployment");
        assert_eq!(
            status.causes,
            vec![("spec.replicas".to_owned(), "Invalid value: -1: must be greater than or equal to 0".to_owned())]
        );
        let plain = ApiStatus::from_body(503, b"no endpoints");
        assert_eq!(plain.message, "no endpoints");
    }

    #[tokio::test]
    async fn limiter_bounds_rate() {
        let limiter = RateLimiter::new(100.0, 2);
        let start = Instant::now();
        for _ in 0..12 {
            limiter.acquire().await;
        }
        // 2 free, then 10 at 100/s.
        assert!(start.elapsed() >= Duration::from_millis(95), "{:?}", start.elapsed());
        assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    }
}
