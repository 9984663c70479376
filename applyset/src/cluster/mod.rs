//! The only door to the API server: a kube client behind a rate limiter, with the per-run
//! caches kubectl keeps (discovery, OpenAPI v3 per group-version, OpenAPI v2). Everything that
//! talks to the cluster — the apply path's raw requests, prune and the ApplySet parent through
//! [`Cluster::client`] — goes through one [`Cluster`], so one limiter bounds the load and every
//! server warning reaches the user.
//!
//! Every request of the apply path is raw HTTP so that bodies are read with the merge engine's
//! Go-exact JSON parser ([`Value`]), content types and query parameters are exactly kubectl's,
//! and errors keep the apiserver's `Status` ([`ApiStatus`]), typed by [`ErrorCategory`].
//!
//! - `cache`: what a watch cache answers in place of the apiserver (the controller's);
//! - `config`: the kubeconfig and kubectl's global flags (`--server`, `--token`, `--as`…);
//! - `door`: the rate limiter and the capture of `Warning` headers;
//! - `wire`: per request, `--request-timeout`, the `-v` request log and the warning count;
//! - `error`: typed failures and their categories;
//! - `discovery`: GVK → resource and scope;
//! - `openapi`: the OpenAPI caches;
//! - `request`: paths, write parameters and body decoding;
//! - `resource_arg`: a command line's resource argument (`deploy`, `deployments.apps`) → resource.

pub mod budget;
pub mod cache;
pub mod config;
mod discovery;
mod door;
mod error;
pub mod list;
pub mod mapper;
mod openapi;
pub mod remote;
mod request;
pub mod resource_arg;
mod wire;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use applyset_merge::Value;
use tokio::sync::RwLock;

pub use config::{ConfigError, ConfigOverrides};
use discovery::DiscoveryMap;
pub use discovery::Mapping;
use door::Door;
pub use door::{RateLimiter, collecting_warnings, warnings_to_log};
pub use error::{ApiStatus, Error, ErrorCategory, Result, is_unreachable};
use openapi::OpenApiCache;
pub use request::DryRun;
pub(crate) use request::percent_encode;
pub use request::{PatchType, WriteParams, object_path};
use request::{json_request, parse_body};

use crate::causes::Chain;
pub use wire::{HEADERS_TARGET, REQUEST_TARGET, RequestTimedOut, count_warnings, fail_on_warnings};

/// How to reach the cluster.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// Kubeconfig file; default `$KUBECONFIG`, else `~/.kube/config`, else in-cluster.
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// kubectl's global flags laid over the kubeconfig (`--server`, `--token`, `--as`…).
    pub overrides: ConfigOverrides,
    /// Requests per second (token bucket); `<= 0` disables the limiter.
    pub qps: f64,
    pub burst: u32,
    /// kubectl's `--match-server-version`: refuse a server that is not a 1.33.
    pub match_server_version: bool,
    /// kubectl's `--warnings-as-errors`: count the server's warnings ([`fail_on_warnings`]).
    pub warnings_as_errors: bool,
}

/// Default request budget. kubectl is not held back by its limiter (it sends one request at a
/// time); we send many at once, so the budget is what bounds the load: 1,000 objects are
/// created in about 2.5 s.
pub const DEFAULT_QPS: f64 = 300.0;
pub const DEFAULT_BURST: u32 = 600;
/// The controller's ceiling (`--qps`): its rate adapts to the apiserver below it
/// ([`budget`]), so the ceiling only caps the controller's share of an apiserver that would
/// take more; a local apiserver takes about 850 creates a second of a mixed set.
pub const DEFAULT_CONTROLLER_QPS: f64 = 2000.0;

/// Everything the apply flow knows about the cluster: the client, the discovery cache
/// (GVK → resource and scope), the OpenAPI caches and the rate limiter. Shared by reference
/// across the concurrent per-object tasks of a run.
pub struct Cluster {
    client: kube::Client,
    server: String,
    /// A digest of the CA certificates the client trusts (16 hex digits), when it was built
    /// from a config that names some: with the server, which cluster this is.
    ca_digest: Option<String>,
    default_namespace: String,
    /// Shared with the client's door layer: every request waits for it.
    limiter: Arc<RateLimiter>,
    discovery: RwLock<Option<Arc<DiscoveryMap>>>,
    openapi: OpenApiCache,
}

/// Which cluster a client talks to: the server URL and a digest of the CA certificates it
/// trusts (two clusters behind one address, a load balancer moved, tell apart by their CA).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterIdentity {
    /// The API server's URL.
    pub server: String,
    /// 16 hex digits of a SHA-256 of the CA certificates trusted; unset when none is
    /// configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_digest: Option<String>,
}

/// 16 hex digits of a SHA-256 over the config's CA certificates (DER, in order).
fn ca_digest(config: &kube::Config) -> Option<String> {
    let certs = config.root_cert.as_ref().filter(|certs| !certs.is_empty())?;
    let mut framed = crate::digest::Framed::default();
    for cert in certs {
        framed.value(cert);
    }
    Some(crate::digest::hex(&framed.finish()[..8]))
}

/// A client for `config` whose requests pass `limiter` and whose server warnings are recorded
/// as a [`Cluster`]'s are: the controller's own client (ApplySets, status, Events, watches),
/// on the same rate budget as every apply identity.
pub fn rate_limited_client(config: kube::Config, limiter: Arc<RateLimiter>) -> Result<kube::Client> {
    let default_namespace = config.default_namespace.clone();
    let inner = wired_client(config, None)?;
    Ok(kube::Client::new(Door { inner, limiter }, default_namespace))
}

/// kube's client for `config` inside the [`wire`] layer (`request_timeout` per request).
fn wired_client(config: kube::Config, request_timeout: Option<Duration>) -> Result<kube::Client> {
    let server = config.cluster_url.to_string();
    let builder = kube::client::ClientBuilder::try_from(config)
        .map_err(|e| Error::Config(format!("cannot build a client for {server}: {e}", e = Chain(&e))))?;
    Ok(builder.with_layer(&wire::WireLayer::new(&server, request_timeout)).build())
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("server", &self.server).finish_non_exhaustive()
    }
}

impl Cluster {
    /// Loads the kubeconfig and builds a client. Nothing is sent to the server yet, unless
    /// `match_server_version` asks for the server's version first.
    pub async fn connect(options: &ConnectOptions) -> Result<Cluster> {
        let loaded =
            config::load(options.kubeconfig.as_deref(), options.context.as_deref(), &options.overrides).await?;
        if options.warnings_as_errors {
            count_warnings();
        }
        let server = loaded.config.cluster_url.to_string().trim_end_matches('/').to_owned();
        let default_namespace = loaded.config.default_namespace.clone();
        let ca_digest = ca_digest(&loaded.config);
        let client = wired_client(loaded.config, loaded.request_timeout)?;
        let limiter = Arc::new(RateLimiter::new(options.qps, options.burst));
        let mut cluster = Cluster::from_client_sharing(client, server, default_namespace, limiter);
        cluster.ca_digest = ca_digest;
        if options.match_server_version {
            let version = cluster.send(json_request(http::Method::GET, "/version".into(), None, Vec::new())?).await?;
            let version: serde_json::Value = serde_json::from_slice(&version)
                .map_err(|e| Error::Other(format!("the server's /version is not JSON: {e}", e = Chain(&e))))?;
            config::check_server_version(&version)?;
        }
        Ok(cluster)
    }

    /// A cluster for a ready-made config with a rate limiter of its own.
    pub fn from_config(config: kube::Config, qps: f64, burst: u32) -> Result<Cluster> {
        Cluster::from_config_sharing(config, Arc::new(RateLimiter::new(qps, burst)))
    }

    /// A cluster for a ready-made config (the controller's, possibly impersonating a
    /// ServiceAccount, with the ApplySet's namespace as the default) whose requests take their
    /// turn at `limiter`, shared with every other identity of the process: one rate budget.
    pub fn from_config_sharing(config: kube::Config, limiter: Arc<RateLimiter>) -> Result<Cluster> {
        let server = config.cluster_url.to_string().trim_end_matches('/').to_owned();
        let default_namespace = config.default_namespace.clone();
        let ca_digest = ca_digest(&config);
        let client = wired_client(config, None)?;
        let mut cluster = Cluster::from_client_sharing(client, server, default_namespace, limiter);
        cluster.ca_digest = ca_digest;
        Ok(cluster)
    }

    /// The kubeconfig (or in-cluster config) with kubectl's global flags over it and the apply
    /// path's timeouts (see [`config`]).
    pub async fn load_config(options: &ConnectOptions) -> Result<kube::Config> {
        let loaded =
            config::load(options.kubeconfig.as_deref(), options.context.as_deref(), &options.overrides).await?;
        Ok(loaded.config)
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
        Cluster::from_client_sharing(client, server, default_namespace, Arc::new(RateLimiter::new(qps, burst)))
    }

    /// [`Cluster::from_client`] taking its turns at a shared `limiter`.
    pub fn from_client_sharing(
        client: kube::Client,
        server: String,
        default_namespace: String,
        limiter: Arc<RateLimiter>,
    ) -> Cluster {
        let door = Door { inner: client, limiter: limiter.clone() };
        let client = kube::Client::new(door, default_namespace.clone());
        Cluster {
            client,
            server,
            ca_digest: None,
            default_namespace,
            limiter,
            discovery: RwLock::new(None),
            openapi: OpenApiCache::default(),
        }
    }

    /// The rate-limited client, for `kube::Api` callers (prune, the ApplySet parent).
    ///
    /// (For a client without a [`Cluster`]'s caches, see [`rate_limited_client`].)
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The server URL, as the kubeconfig names it.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Which cluster this is: its server and the digest of the CAs its client trusts.
    pub fn identity(&self) -> ClusterIdentity {
        ClusterIdentity { server: self.server.clone(), ca_digest: self.ca_digest.clone() }
    }

    /// The kubeconfig context's namespace, else `default`.
    pub fn default_namespace(&self) -> &str {
        &self.default_namespace
    }

    /// Requests sent through this cluster's client so far (all of them pass the limiter).
    pub fn requests_sent(&self) -> u64 {
        self.limiter.granted()
    }

    // ----------------------------------------------------------------------------------------
    // Raw requests

    /// Sends one request (rate-limited by the client's door layer); a failure status becomes
    /// [`Error::Api`], a transport failure [`Error::Unreachable`].
    pub async fn send(&self, request: http::Request<Vec<u8>>) -> Result<Vec<u8>> {
        let transport = |e: kube::Error| Error::from_transport(&self.server, &e);
        let response = self.client.send(request.map(kube::client::Body::from)).await.map_err(transport)?;
        let status = response.status();
        let body = response.into_body().collect_bytes().await.map_err(transport)?;
        if status.is_client_error() || status.is_server_error() {
            return Err(Error::Api(Box::new(ApiStatus::from_body(status.as_u16(), &body))));
        }
        Ok(body.to_vec())
    }

    async fn get_json(&self, path: &str) -> Result<Value> {
        let body = self.send(json_request(http::Method::GET, path.to_owned(), None, Vec::new())?).await?;
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
        self.list_each(mapping, namespace, label_selector, |item| items.push(item)).await?;
        Ok(items)
    }

    /// [`Cluster::list`], handing each object to `each` as its page arrives (500 a page), so
    /// that a caller keeping less than the whole object never holds every one parsed at once.
    pub async fn list_each(
        &self,
        mapping: &Mapping,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        mut each: impl FnMut(Value),
    ) -> Result<()> {
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
            let Ok(mut list) = list.into_object() else {
                return Err(Error::Other("the server's list response is not an object".into()));
            };
            if let Some(Ok(page)) = list.remove("items").map(Value::into_array) {
                for mut item in page {
                    if let Value::Object(map) = &mut item {
                        map.insert("apiVersion".into(), Value::String(mapping.resource.api_version.clone()));
                        map.insert("kind".into(), Value::String(mapping.resource.kind.clone()));
                    }
                    each(item);
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
                return Ok(());
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
        let path = object_path(mapping, namespace, None, &query);
        let request = json_request(http::Method::POST, path, Some("application/json"), body.to_json_string().into())?;
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
        let path = object_path(mapping, namespace, Some(name), &query);
        let body = patch.to_json_string().into_bytes();
        let request = json_request(http::Method::PATCH, path, Some(patch_type.content_type()), body)?;
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
        let path = object_path(mapping, namespace, Some(name), query);
        let request = json_request(http::Method::DELETE, path, Some("application/json"), body.into_bytes())?;
        self.send(request).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refused connection is recognised from the error's type on both paths: the raw
    /// requests ([`Error::Unreachable`]) and `kube::Api` calls on [`Cluster::client`].
    #[tokio::test]
    async fn refused_connection_is_unreachable() {
        let config = kube::Config::new("https://127.0.0.1:1".parse().expect("url"));
        let cluster = Cluster::from_config(config, 0.0, 1).expect("client");
        let gvk = kube::core::GroupVersionKind::gvk("", "v1", "ConfigMap");
        let raw = cluster.mapping(&gvk).await.expect_err("nothing listens on port 1");
        assert!(raw.is_unreachable(), "{raw:?}");
        assert_eq!(raw.category(), ErrorCategory::Unreachable);
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(cluster.client().clone(), "default");
        let typed = api.list(&Default::default()).await.expect_err("nothing listens on port 1");
        assert!(is_unreachable(&typed), "{typed:?}");
        // Both went through the door (the discovery pair may stop at its first failure).
        assert!(cluster.requests_sent() >= 2, "{}", cluster.requests_sent());
    }
}
