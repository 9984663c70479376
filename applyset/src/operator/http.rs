//! The controller's small HTTP servers: Prometheus metrics and the kubelet's health probes
//! (this module's routes), and the webhook receiver (`super::webhook`), which brings its own
//! [`Router`].
//!
//! They are served by axum, as the web UI is: one HTTP server stack in the binary. What
//! `axum::serve` does not do itself is done here: the deadline for a request's headers (see
//! `connection`) and a bounded drain at shutdown.
//!
//! - `GET /metrics`: the Prometheus text exposition (only when given `Metrics`).
//! - `GET /healthz`: liveness, 200 "ok" as long as the process serves requests.
//! - `GET /readyz`: readiness, 200 "ok" once `Health::set_ready(true)`, else 503 "not ready".
//!
//! `HEAD` is answered like `GET` (without the body); other methods on these paths get 405, and
//! any other path 404.

mod connection;

use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use http::StatusCode;
use http::header::{ALLOW, CONTENT_TYPE};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

use super::metrics::Metrics;

/// The content type of the Prometheus text exposition format.
const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
const TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// How long shutdown waits for requests in flight before dropping their connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// What the probes report.
#[derive(Debug, Default)]
pub struct Health {
    ready: AtomicBool,
}

impl Health {
    /// Not ready until `set_ready(true)`.
    pub fn new() -> Arc<Health> {
        Arc::new(Health::default())
    }

    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }
}

/// Binds `addr` and serves the routes until `shutdown` resolves. A binding error (address in
/// use, no permission) is returned before anything is served and names the address.
pub async fn serve(
    addr: SocketAddr,
    metrics: Option<Arc<Metrics>>,
    health: Arc<Health>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    bind(addr, metrics, health).await?.run(shutdown).await;
    Ok(())
}

/// Binds `addr` now, so that a caller learns of binding errors (and, for port 0, of the port the
/// system chose) before it starts serving with [`Server::run`].
pub async fn bind(addr: SocketAddr, metrics: Option<Arc<Metrics>>, health: Arc<Health>) -> anyhow::Result<Server> {
    bind_router(addr, routes(metrics, health)).await
}

/// [`bind`] with any routes.
pub async fn bind_router(addr: SocketAddr, router: Router) -> anyhow::Result<Server> {
    let listener = TcpListener::bind(addr).await.with_context(|| format!("could not listen on {addr}"))?;
    let local_addr = listener.local_addr().with_context(|| format!("could not read the address bound for {addr}"))?;
    Ok(Server { listener, local_addr, router })
}

/// A bound, not yet serving, server.
pub struct Server {
    listener: TcpListener,
    local_addr: SocketAddr,
    router: Router,
}

impl Server {
    /// The address actually bound (differs from the requested one for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves until `shutdown` resolves, then stops accepting, lets requests in flight finish
    /// (for a few seconds at most) and returns.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) {
        let Server { listener, local_addr, router } = self;
        tracing::info!(address = %local_addr, "serving HTTP");

        // axum drains without a bound; the connections still open when the grace ends are
        // ended by dropping `abandon`, which each of them watches.
        let (abandon, abandoned) = watch::channel(());
        let (stopping, stop_begun) = oneshot::channel();
        let serving = axum::serve(connection::Listener::new(listener, abandoned), router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                let _ = stopping.send(());
            })
            .into_future();
        let grace_over = async {
            // The sender goes away without sending only when serving has ended anyway.
            if stop_begun.await.is_ok() {
                tokio::time::sleep(SHUTDOWN_GRACE).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            // Serving with a graceful shutdown ends only when it is done, without an error.
            _ = serving => {}
            () = grace_over => {
                tracing::debug!(address = %local_addr, "dropping HTTP connections still open after shutdown");
            }
        }
        drop(abandon);
    }
}

/// The metrics and probe routes.
fn routes(metrics: Option<Arc<Metrics>>, health: Arc<Health>) -> Router {
    let liveness = || async { text(StatusCode::OK, "ok\n") };
    let readiness = move || async move {
        match health.is_ready() {
            true => text(StatusCode::OK, "ok\n"),
            false => text(StatusCode::SERVICE_UNAVAILABLE, "not ready\n"),
        }
    };
    let mut router =
        Router::new().route("/healthz", read_only(get(liveness))).route("/readyz", read_only(get(readiness)));
    if let Some(metrics) = metrics {
        let exposition = move || async move { ([(CONTENT_TYPE, METRICS_CONTENT_TYPE)], metrics.render()) };
        router = router.route("/metrics", read_only(get(exposition)));
    }
    router.fallback(|| async { text(StatusCode::NOT_FOUND, "not found\n") })
}

/// `route` (GET, and HEAD through it), answering other methods with 405 and `Allow: GET, HEAD`.
fn read_only(route: MethodRouter) -> MethodRouter {
    route.fallback(|| async { method_not_allowed("GET, HEAD") })
}

/// A 405 naming the methods allowed.
pub(crate) fn method_not_allowed(allowed: &'static str) -> Response {
    let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    response.headers_mut().insert(ALLOW, http::HeaderValue::from_static(allowed));
    response
}

pub(crate) fn text(status: StatusCode, body: &'static str) -> Response {
    (status, [(CONTENT_TYPE, TEXT_CONTENT_TYPE)], body).into_response()
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio::sync::oneshot;

    use super::*;

    /// A running server on a free local port, stopped when the test calls `stop`.
    struct TestServer {
        address: SocketAddr,
        stop: oneshot::Sender<()>,
        task: tokio::task::JoinHandle<()>,
    }

    impl TestServer {
        async fn start(metrics: Option<Arc<Metrics>>, health: Arc<Health>) -> TestServer {
            let server = bind(([127, 0, 0, 1], 0).into(), metrics, health).await.expect("binding port 0 on localhost");
            let address = server.local_addr();
            let (stop, stopped) = oneshot::channel::<()>();
            let task = tokio::spawn(server.run(async {
                let _ = stopped.await;
            }));
            TestServer { address, stop, task }
        }

        async fn stop(self) {
            let _ = self.stop.send(());
            tokio::time::timeout(Duration::from_secs(10), self.task)
                .await
                .expect("the server stops after shutdown")
                .expect("the server task does not panic");
        }
    }

    struct RawResponse {
        status: u16,
        headers: String,
        body: String,
    }

    /// Sends one raw HTTP/1.1 request asking the server to close, and reads the whole response.
    async fn request(address: SocketAddr, method: &str, path: &str) -> RawResponse {
        let mut stream = TcpStream::connect(address).await.expect("connecting");
        let request = format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("sending the request");
        let mut raw = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
            .await
            .expect("the server answers and closes")
            .expect("reading the response");
        let raw = String::from_utf8(raw).expect("a UTF-8 response");
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no end of headers in {raw:?}"));
        let (status_line, headers) = head.split_once("\r\n").unwrap_or((head, ""));
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|status| status.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        RawResponse { status, headers: headers.to_ascii_lowercase(), body: body.to_owned() }
    }

    #[tokio::test]
    async fn serves_metrics_and_probes() {
        let metrics = Arc::new(Metrics::new());
        metrics.pruned(3);
        let health = Health::new();
        let server = TestServer::start(Some(Arc::clone(&metrics)), Arc::clone(&health)).await;

        let response = request(server.address, "GET", "/metrics").await;
        assert_eq!(response.status, 200);
        assert!(response.headers.contains("content-type: text/plain; version=0.0.4"), "{}", response.headers);
        assert!(response.body.contains("\napplyset_pruned_objects_total 3\n"), "{}", response.body);
        // Each scrape renders anew.
        metrics.pruned(1);
        let response = request(server.address, "GET", "/metrics?ignored=1").await;
        assert!(response.body.contains("\napplyset_pruned_objects_total 4\n"), "{}", response.body);

        let response = request(server.address, "GET", "/healthz").await;
        assert_eq!((response.status, response.body.as_str()), (200, "ok\n"));

        let response = request(server.address, "GET", "/readyz").await;
        assert_eq!((response.status, response.body.as_str()), (503, "not ready\n"));
        health.set_ready(true);
        let response = request(server.address, "GET", "/readyz").await;
        assert_eq!((response.status, response.body.as_str()), (200, "ok\n"));
        health.set_ready(false);
        let response = request(server.address, "GET", "/readyz").await;
        assert_eq!(response.status, 503);
        // Liveness does not depend on readiness.
        let response = request(server.address, "GET", "/healthz").await;
        assert_eq!(response.status, 200);

        let response = request(server.address, "GET", "/").await;
        assert_eq!(response.status, 404);
        let response = request(server.address, "GET", "/metricsx").await;
        assert_eq!(response.status, 404);
        let response = request(server.address, "POST", "/metrics").await;
        assert_eq!(response.status, 405);
        assert!(response.headers.contains("allow: get, head"), "{}", response.headers);
        let response = request(server.address, "HEAD", "/healthz").await;
        assert_eq!((response.status, response.body.as_str()), (200, ""));

        server.stop().await;
    }

    #[tokio::test]
    async fn without_metrics_only_probes_are_served() {
        let health = Health::new();
        health.set_ready(true);
        let server = TestServer::start(None, health).await;

        assert_eq!(request(server.address, "GET", "/metrics").await.status, 404);
        assert_eq!(request(server.address, "GET", "/healthz").await.status, 200);
        assert_eq!(request(server.address, "GET", "/readyz").await.status, 200);

        server.stop().await;
    }

    #[tokio::test]
    async fn keeps_connections_alive_for_several_requests() {
        let server = TestServer::start(Some(Arc::new(Metrics::new())), Health::new()).await;

        let mut stream = TcpStream::connect(server.address).await.expect("connecting");
        let two_requests = format!(
            "GET /healthz HTTP/1.1\r\nHost: {0}\r\n\r\nGET /readyz HTTP/1.1\r\nHost: {0}\r\nConnection: close\r\n\r\n",
            server.address
        );
        stream.write_all(two_requests.as_bytes()).await.expect("sending the requests");
        let mut raw = String::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut raw))
            .await
            .expect("the server answers both and closes")
            .expect("reading the responses");
        assert!(raw.starts_with("HTTP/1.1 200 OK\r\n"), "{raw}");
        assert!(raw.contains("HTTP/1.1 503 Service Unavailable\r\n"), "{raw}");

        server.stop().await;
    }

    #[tokio::test]
    async fn shutdown_closes_idle_keep_alive_connections() {
        let server = TestServer::start(None, Health::new()).await;
        let address = server.address;

        // A client that keeps its connection open after a request.
        let mut stream = TcpStream::connect(address).await.expect("connecting");
        stream
            .write_all(format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\n\r\n").as_bytes())
            .await
            .expect("sending the request");
        let mut first = [0; 256];
        let read = stream.read(&mut first).await.expect("reading the response");
        assert!(first[..read].starts_with(b"HTTP/1.1 200 OK"));

        // `stop` waits for the server to return; an open idle connection must not hold it up
        // for the whole grace period.
        let started = std::time::Instant::now();
        server.stop().await;
        assert!(started.elapsed() < SHUTDOWN_GRACE, "{:?}", started.elapsed());
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
        assert!(closed.is_ok(), "the idle connection is closed");
        assert!(TcpStream::connect(address).await.is_err(), "no longer listening");
    }

    #[tokio::test]
    async fn a_client_that_never_completes_its_head_is_disconnected() {
        let server = TestServer::start(None, Health::new()).await;
        let mut stream = TcpStream::connect(server.address).await.expect("connecting");
        stream.write_all(b"GET /healthz HTTP/1.1\r\n").await.expect("sending half a head");
        let started = std::time::Instant::now();
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(connection::HEADER_READ_TIMEOUT * 2, stream.read_to_end(&mut rest)).await;
        assert!(closed.is_ok(), "the connection is closed");
        assert!(
            started.elapsed() >= connection::HEADER_READ_TIMEOUT - Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
        server.stop().await;
    }

    #[tokio::test]
    async fn binding_errors_name_the_address() {
        let taken = bind(([127, 0, 0, 1], 0).into(), None, Health::new()).await.expect("binding port 0 on localhost");
        let address = taken.local_addr();
        let error = match serve(address, None, Health::new(), std::future::pending()).await {
            Ok(()) => panic!("serving on a taken address succeeded"),
            Err(error) => format!("{error:#}"),
        };
        assert!(error.contains(&address.to_string()), "{error}");
    }
}
