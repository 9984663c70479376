//! The controller's small HTTP servers: Prometheus metrics and the kubelet's health probes
//! (this module's routes), and the webhook receiver (`super::webhook`), which plugs in its own
//! [`Handler`].
//!
//! A few fixed routes do not need a web framework; this is plain hyper over tokio.
//!
//! - `GET /metrics`: the Prometheus text exposition (only when given `Metrics`).
//! - `GET /healthz`: liveness, 200 "ok" as long as the process serves requests.
//! - `GET /readyz`: readiness, 200 "ok" once `Health::set_ready(true)`, else 503 "not ready".
//!
//! `HEAD` is answered like `GET` (without the body); other methods on these paths get 405, and
//! any other path 404.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::metrics::Metrics;

/// The content type of the Prometheus text exposition format.
const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
const TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// A client that opens a connection and sends nothing (or trickles headers) would otherwise hold
/// a task and a file descriptor forever.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long shutdown waits for requests in flight before dropping their connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Pause after a failed accept: the usual cause is running out of file descriptors, and retrying
/// at once would spin.
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(100);

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

/// A response, as every route builds it.
pub type Reply = Response<Full<Bytes>>;

/// What answers a server's requests.
pub trait Handler: Send + Sync + 'static {
    fn handle(self: Arc<Self>, request: Request<Incoming>) -> Pin<Box<dyn Future<Output = Reply> + Send>>;
}

/// Binds `addr` now, so that a caller learns of binding errors (and, for port 0, of the port the
/// system chose) before it starts serving with [`Server::run`].
pub async fn bind(addr: SocketAddr, metrics: Option<Arc<Metrics>>, health: Arc<Health>) -> anyhow::Result<Server> {
    bind_handler(addr, Arc::new(Routes { metrics, health })).await
}

/// [`bind`] with any [`Handler`].
pub async fn bind_handler(addr: SocketAddr, handler: Arc<dyn Handler>) -> anyhow::Result<Server> {
    let listener = TcpListener::bind(addr).await.with_context(|| format!("could not listen on {addr}"))?;
    let local_addr = listener.local_addr().with_context(|| format!("could not read the address bound for {addr}"))?;
    Ok(Server { listener, local_addr, routes: handler })
}

/// A bound, not yet serving, server.
pub struct Server {
    listener: TcpListener,
    local_addr: SocketAddr,
    routes: Arc<dyn Handler>,
}

impl Server {
    /// The address actually bound (differs from the requested one for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves until `shutdown` resolves, then stops accepting, lets requests in flight finish
    /// (for a few seconds at most) and returns.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) {
        let Server { listener, local_addr, routes } = self;
        tracing::info!(address = %local_addr, "serving HTTP");

        let (stop_connections, connections_stopped) = watch::channel(false);
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _peer)) => {
                        connections.spawn(serve_connection(
                            stream,
                            Arc::clone(&routes),
                            connections_stopped.clone(),
                        ));
                    }
                    Err(error) => {
                        tracing::warn!(address = %local_addr, %error, "could not accept an HTTP connection");
                        tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                    }
                },
                // Reap finished connections as we go, so the set does not grow without bound.
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }

        drop(listener);
        // Receivers only ever see the latest value, so nobody can miss this.
        let _ = stop_connections.send(true);
        let drained =
            tokio::time::timeout(SHUTDOWN_GRACE, async { while connections.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            tracing::debug!(address = %local_addr, "dropping HTTP connections still open after shutdown");
        }
        // Dropping the set aborts whatever is left.
    }
}

/// Serves one connection (keep-alive included) until the client closes it or shutdown begins.
async fn serve_connection(stream: tokio::net::TcpStream, routes: Arc<dyn Handler>, mut stopped: watch::Receiver<bool>) {
    let service = hyper::service::service_fn(move |request| {
        let routes = Arc::clone(&routes);
        async move { Ok::<_, Infallible>(routes.handle(request).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    // The sender going away also means shutdown.
    let stopping = async move {
        let _ = stopped.wait_for(|stopped| *stopped).await;
    };

    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = stopping => {
            // Finish the request in flight, if any, then close instead of keeping alive.
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = result {
        // Clients that disconnect mid-request or never send one are routine, not warnings.
        tracing::debug!(%error, "HTTP connection ended with an error");
    }
}

struct Routes {
    metrics: Option<Arc<Metrics>>,
    health: Arc<Health>,
}

impl Handler for Routes {
    fn handle(self: Arc<Self>, request: Request<Incoming>) -> Pin<Box<dyn Future<Output = Reply> + Send>> {
        Box::pin(async move { self.respond(&request) })
    }
}

impl Routes {
    fn respond(&self, request: &Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path();
        let is_known_path = match path {
            "/metrics" => self.metrics.is_some(),
            "/healthz" | "/readyz" => true,
            _ => false,
        };
        if !is_known_path {
            return text(StatusCode::NOT_FOUND, "not found\n");
        }
        if request.method() != Method::GET && request.method() != Method::HEAD {
            let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
            response.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        match (path, &self.metrics) {
            ("/metrics", Some(metrics)) => {
                let mut response = Response::new(Full::new(Bytes::from(metrics.render())));
                response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(METRICS_CONTENT_TYPE));
                response
            }
            ("/readyz", _) if !self.health.is_ready() => text(StatusCode::SERVICE_UNAVAILABLE, "not ready\n"),
            _ => text(StatusCode::OK, "ok\n"),
        }
    }
}

pub(crate) fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(TEXT_CONTENT_TYPE));
    response
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
