//! The layer around kube's client stack (inside the rate limiter's door, so once per request
//! sent, retries included): kubectl's `--request-timeout` (a deadline per request, and the
//! `timeout` query parameter kubectl sends with it), the request log `-v` asks for (as
//! kubectl's `round_trippers` lines), and the count of server warnings `--warnings-as-errors`
//! needs.

use std::collections::HashSet;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Request, Response};
use kube::client::Body;

use crate::causes::Chain;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The tracing target of the request log: one `Response` line per request (verb, URL, status,
/// milliseconds), at TRACE so that the controller's `applyset=debug` leaves it out.
pub const REQUEST_TARGET: &str = "applyset::request";
/// The tracing target of each request's headers (a `Request` line before it is sent).
pub const HEADERS_TARGET: &str = "applyset::request::headers";

/// Adds the [`Wire`] service around a client stack.
#[derive(Clone)]
pub(super) struct WireLayer {
    server: Arc<str>,
    timeout: Option<Duration>,
}

impl WireLayer {
    /// `server`: the URL prefixed to the request paths in the log.
    pub(super) fn new(server: &str, timeout: Option<Duration>) -> WireLayer {
        WireLayer { server: server.trim_end_matches('/').into(), timeout }
    }
}

impl<S> tower_layer::Layer<S> for WireLayer {
    type Service = Wire<S>;

    fn layer(&self, inner: S) -> Wire<S> {
        Wire { inner, server: self.server.clone(), timeout: self.timeout }
    }
}

/// See the module docs.
pub(super) struct Wire<S> {
    inner: S,
    server: Arc<str>,
    timeout: Option<Duration>,
}

/// A request not done within `--request-timeout`, in Go's words for it.
#[derive(Debug, thiserror::Error)]
pub enum RequestTimedOut {
    /// No response came in time.
    #[error("{verb} {url:?}: request canceled (Client.Timeout exceeded while awaiting headers)")]
    AwaitingHeaders {
        /// As Go's `url.Error` writes the method: `Get`, `Patch`.
        verb: String,
        url: String,
    },
    /// The response's body did not arrive in time.
    #[error("request canceled (Client.Timeout or context cancellation while reading body)")]
    ReadingBody,
}

/// The error a request that ran out of time ends with: an I/O timeout, so that it reads as the
/// transport's failure ([`super::is_unreachable`]).
fn timed_out(reason: RequestTimedOut) -> BoxError {
    Box::new(std::io::Error::new(std::io::ErrorKind::TimedOut, reason))
}

/// A response body read under the request's deadline (Go's `http.Client.Timeout` covers the
/// body too).
pub(super) struct TimedBody<B> {
    inner: B,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<B> http_body::Body for TimedBody<B>
where
    B: http_body::Body + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if let Some(deadline) = this.deadline.as_mut()
            && deadline.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Some(Err(timed_out(RequestTimedOut::ReadingBody))));
        }
        Pin::new(&mut this.inner).poll_frame(cx).map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl<S, B> tower_service::Service<Request<Body>> for Wire<S>
where
    S: tower_service::Service<Request<Body>, Response = Response<B>, Error = BoxError>,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<TimedBody<B>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        let timeout = self.timeout;
        if let Some(limit) = timeout {
            add_timeout_parameter(&mut request, limit);
        }
        let verb = request.method().as_str().to_owned();
        let path = request.uri().path_and_query().map_or("", |p| p.as_str());
        let url = format!("{}{path}", self.server);
        tracing::trace!(target: HEADERS_TARGET, verb = ?verb, url = ?url, headers = ?headers_text(&request), "Request");
        let started = Instant::now();
        let deadline = timeout.map(|limit| tokio::time::Instant::from_std(started + limit));
        let response = self.inner.call(request);
        Box::pin(async move {
            let result = match deadline {
                None => response.await,
                Some(deadline) => tokio::time::timeout_at(deadline, response).await.unwrap_or_else(|_| {
                    let go_verb = verb[..1].to_owned() + &verb[1..].to_ascii_lowercase();
                    Err(timed_out(RequestTimedOut::AwaitingHeaders { verb: go_verb, url: url.clone() }))
                }),
            };
            let milliseconds = started.elapsed().as_millis() as u64;
            match &result {
                Ok(response) => {
                    note_warnings(response.headers());
                    let status = response.status().to_string();
                    tracing::trace!(target: REQUEST_TARGET, verb = ?verb, url = ?url, status = ?status, milliseconds, "Response");
                }
                Err(error) => {
                    tracing::trace!(target: REQUEST_TARGET, verb = ?verb, url = ?url, error = %Chain(&**error), milliseconds, "Response");
                }
            }
            let deadline = deadline.map(|at| Box::pin(tokio::time::sleep_until(at)));
            result.map(|response| response.map(|inner| TimedBody { inner, deadline }))
        })
    }
}

/// The headers set on the request at this point, one `Name: value` per line as kubectl logs
/// them (credentials and impersonation are added further in, by kube, and never logged).
fn headers_text(request: &Request<Body>) -> String {
    let lines =
        request.headers().iter().map(|(name, value)| format!("{name}: {}", value.to_str().unwrap_or("<binary>")));
    lines.collect::<Vec<_>>().join("\n")
}

/// kubectl sends its request timeout to the server too (`?timeout=32s`), so the apiserver
/// gives up when the client does.
fn add_timeout_parameter(request: &mut Request<Body>, limit: Duration) {
    let uri = request.uri();
    if uri.query().is_some_and(|q| q.split('&').any(|p| p.starts_with("timeout="))) {
        return;
    }
    let nanos = i64::try_from(limit.as_nanos()).unwrap_or(i64::MAX);
    // `µs` is the one non-ASCII thing Go's Duration.String writes: escaped as Go's url.Values does.
    let value = crate::duration::format_go(nanos).replace('µ', "%C2%B5");
    let path_and_query = match uri.query() {
        Some(query) => format!("{}?{query}&timeout={value}", uri.path()),
        None => format!("{}?timeout={value}", uri.path()),
    };
    let mut parts = uri.clone().into_parts();
    let Ok(path_and_query) = path_and_query.parse() else { return };
    parts.path_and_query = Some(path_and_query);
    if let Ok(uri) = http::Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
}

/// The distinct warning texts received, once [`count_warnings`] asked for them (kubectl
/// prints each text once and counts what it printed).
static WARNINGS: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// From now on, count the server's warnings (`--warnings-as-errors`; [`fail_on_warnings`]).
pub fn count_warnings() {
    WARNINGS.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(HashSet::new);
}

fn note_warnings(headers: &http::HeaderMap) {
    let mut counted = WARNINGS.lock().unwrap_or_else(|p| p.into_inner());
    let Some(counted) = counted.as_mut() else { return };
    for header in headers.get_all("warning") {
        if let Some(text) = header.to_str().ok().and_then(super::door::warning_text) {
            counted.insert(text);
        }
    }
}

/// kubectl's `--warnings-as-errors`, applied to a finished command's exit code: a command that
/// succeeded fails (exit 1, `error: N warning(s) received`) when the server sent warnings; one
/// that failed keeps its code, as kubectl's check runs only after a command succeeded.
pub fn fail_on_warnings(code: ExitCode) -> ExitCode {
    let received = WARNINGS.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map_or(0, HashSet::len);
    if code != ExitCode::SUCCESS || received == 0 {
        return code;
    }
    eprintln!("error: {received} warning{} received", if received == 1 { "" } else { "s" });
    ExitCode::from(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(uri: &str) -> Request<Body> {
        Request::get(uri).body(Body::empty()).unwrap()
    }

    #[test]
    fn the_timeout_parameter_is_kubectls() {
        let mut plain = request("/api/v1/namespaces/a/configmaps/b");
        add_timeout_parameter(&mut plain, Duration::from_secs(5));
        assert_eq!(plain.uri().to_string(), "/api/v1/namespaces/a/configmaps/b?timeout=5s");
        let mut with_query = request("/api/v1/namespaces/a/configmaps?fieldManager=x");
        add_timeout_parameter(&mut with_query, Duration::from_secs(90));
        assert_eq!(with_query.uri().to_string(), "/api/v1/namespaces/a/configmaps?fieldManager=x&timeout=1m30s");
        let mut micro = request("/version");
        add_timeout_parameter(&mut micro, Duration::from_micros(3));
        assert_eq!(micro.uri().to_string(), "/version?timeout=3%C2%B5s");
        let mut given = request("/version?timeout=1s");
        add_timeout_parameter(&mut given, Duration::from_secs(5));
        assert_eq!(given.uri().to_string(), "/version?timeout=1s");
    }

    #[test]
    fn a_timed_out_request_reads_as_gos() {
        let error = RequestTimedOut::AwaitingHeaders { verb: "Get".into(), url: "https://h/api?timeout=1s".into() };
        assert_eq!(
            error.to_string(),
            r#"Get "https://h/api?timeout=1s": request canceled (Client.Timeout exceeded while awaiting headers)"#
        );
    }
}
