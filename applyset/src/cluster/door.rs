//! The layer every request to the apiserver passes: the run's rate limiter, and the capture of
//! the server's `Warning` headers so that they are printed with the object they concern.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::budget::{Budget, Signal};

/// A token bucket: `burst` requests at once, then `qps` per second; or, for the controller,
/// `qps` is the ceiling of a rate that adapts to the apiserver ([`super::budget`]).
#[derive(Debug)]
pub struct RateLimiter {
    qps: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
    granted: std::sync::atomic::AtomicU64,
    budget: Option<Mutex<Budget>>,
}

impl RateLimiter {
    pub fn new(qps: f64, burst: u32) -> RateLimiter {
        let burst = f64::from(burst.max(1));
        RateLimiter {
            qps,
            burst,
            state: Mutex::new((burst, Instant::now())),
            granted: Default::default(),
            budget: None,
        }
    }

    /// A limiter whose rate follows the apiserver (429s, `Retry-After`, write latency) up to
    /// `ceiling` requests per second; `ceiling <= 0` is no limit at all, as with [`RateLimiter::new`].
    pub fn adaptive(ceiling: f64, burst: u32) -> RateLimiter {
        let mut limiter = RateLimiter::new(ceiling, burst);
        if ceiling > 0.0 {
            limiter.budget = Some(Mutex::new(Budget::new(ceiling, Instant::now())));
        }
        limiter
    }

    /// How many requests [`RateLimiter::acquire`] let through.
    pub fn granted(&self) -> u64 {
        self.granted.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The rate allowed now (the fixed one, or the adaptive budget's); 0 is no limit.
    pub fn rate(&self) -> f64 {
        self.budget.as_ref().map_or(self.qps, |b| b.lock().unwrap_or_else(|p| p.into_inner()).rate())
    }

    /// Requests the apiserver refused with 429 (counted by an adaptive limiter).
    pub fn throttled(&self) -> u64 {
        self.budget.as_ref().map_or(0, |b| b.lock().unwrap_or_else(|p| p.into_inner()).throttled())
    }

    /// Tells an adaptive limiter what the apiserver answered.
    pub fn observe(&self, signal: Signal) {
        if let Some(budget) = &self.budget {
            budget.lock().unwrap_or_else(|p| p.into_inner()).observe(signal, Instant::now());
        }
    }

    /// Waits for a token (and, when the apiserver asked for it, until its `Retry-After` has
    /// passed). Tokens are reserved under the lock (the count may go negative), so concurrent
    /// callers queue fairly without holding the lock while sleeping.
    pub async fn acquire(&self) {
        self.granted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let rate = match &self.budget {
            Some(budget) => {
                let (rate, hold) = {
                    let budget = budget.lock().unwrap_or_else(|p| p.into_inner());
                    (budget.rate(), budget.hold_until(Instant::now()))
                };
                if let Some(until) = hold {
                    tokio::time::sleep_until(until).await;
                }
                rate
            }
            None => self.qps,
        };
        if rate <= 0.0 {
            return;
        }
        let wait = {
            let mut state = self.state.lock().expect("rate limiter lock");
            let now = Instant::now();
            let refill = now.duration_since(state.1).as_secs_f64() * rate;
            state.0 = (state.0 + refill).min(self.burst);
            state.1 = now;
            state.0 -= 1.0;
            if state.0 >= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-state.0 / rate) }
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// How many times a request refused with 429 is sent again (client-go's limit): API Priority
/// and Fairness refuses before doing anything, so sending again is safe for every verb.
const THROTTLED_RETRIES: u32 = 10;

/// The `Retry-After` of a response, in seconds (the only form the apiserver sends).
fn retry_after(response: &http::Response<kube::client::Body>) -> Option<Duration> {
    let value = response.headers().get(http::header::RETRY_AFTER)?.to_str().ok()?;
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// The layer every request of a [`super::Cluster`]'s client passes, whoever makes it (the apply
/// path's raw requests, `kube::Api` calls for prune and the ApplySet parent, discovery): it
/// waits for the rate limiter, and hands each `Warning` response header to [`record_warning`].
#[derive(Clone)]
pub(super) struct Door {
    pub(super) inner: kube::Client,
    pub(super) limiter: Arc<RateLimiter>,
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
            let (parts, body) = request.into_parts();
            // Kept to send again after a 429 (bodies are small: one object at most).
            let body = http_body_util::BodyExt::collect(body).await?.to_bytes();
            let write = !matches!(parts.method, http::Method::GET | http::Method::HEAD);
            let mut attempts = 0;
            let response = loop {
                limiter.acquire().await;
                let sent = tokio::time::Instant::now();
                let request = http::Request::from_parts(parts.clone(), kube::client::Body::from(body.clone()));
                let response = inner.send(request).await?;
                if response.status() == http::StatusCode::TOO_MANY_REQUESTS {
                    let wait = retry_after(&response);
                    limiter.observe(Signal::Throttled { retry_after: wait });
                    attempts += 1;
                    if attempts <= THROTTLED_RETRIES {
                        // As client-go does (an adaptive limiter also holds every other request).
                        tokio::time::sleep(wait.unwrap_or(Duration::from_secs(1)).min(Duration::from_secs(30))).await;
                        continue;
                    }
                } else if write && response.status().is_success() {
                    limiter.observe(Signal::Write { latency: sent.elapsed() });
                }
                break response;
            };
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

/// Where warnings outside [`collecting_warnings`] go: stderr (the CLI, as kubectl prints
/// them) until [`warnings_to_log`] is called.
static WARNINGS_TO_LOG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on, server warnings outside [`collecting_warnings`] go to the log (the controller:
/// its log lines are structured and redacted; plain stderr would bypass both).
pub fn warnings_to_log() {
    WARNINGS_TO_LOG.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Outside [`collecting_warnings`] a warning goes to stderr, as kubectl prints it, or to the log.
fn record_warning(line: String) {
    if WARNINGS.try_with(|w| w.borrow_mut().push(line.clone())).is_err() {
        if WARNINGS_TO_LOG.load(std::sync::atomic::Ordering::Relaxed) {
            tracing::warn!(target: "applyset::apiserver", "{line}");
        } else {
            eprintln!("{line}");
        }
    }
}

/// The text of an RFC 7234 warning header as the apiserver sends it (`299 - "text"`).
pub(super) fn warning_text(header: &str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_headers() {
        assert_eq!(warning_text(r#"299 - "unknown field \"spec.x\"""#).as_deref(), Some(r#"unknown field "spec.x""#));
        assert_eq!(warning_text("299 - no quotes"), None);
    }

    /// Answers 429 (Retry-After: 0) to the first `refusals` requests, then 201 echoing the body.
    #[derive(Clone)]
    struct Crowded {
        refusals: usize,
        seen: Arc<Mutex<Vec<Vec<u8>>>>,
    }

    impl tower_service::Service<http::Request<kube::client::Body>> for Crowded {
        type Response = http::Response<kube::client::Body>;
        type Error = std::convert::Infallible;
        type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

        fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
            let this = self.clone();
            Box::pin(async move {
                let body = request.into_body().collect_bytes().await.map(|b| b.to_vec()).unwrap_or_default();
                let count = {
                    let mut seen = this.seen.lock().unwrap();
                    seen.push(body.clone());
                    seen.len()
                };
                let builder = http::Response::builder().header(http::header::CONTENT_TYPE, "application/json");
                let response = if count <= this.refusals {
                    let status = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}"#;
                    builder.status(429).header(http::header::RETRY_AFTER, "0").body(status.as_bytes().to_vec().into())
                } else {
                    builder.status(201).body(body.into())
                };
                Ok(response.unwrap())
            })
        }
    }

    #[tokio::test]
    async fn a_429_is_sent_again_after_its_retry_after_and_halves_an_adaptive_budget() {
        let crowded = Crowded { refusals: 2, seen: Default::default() };
        let limiter = Arc::new(RateLimiter::adaptive(1000.0, 10));
        let door = Door { inner: kube::Client::new(crowded.clone(), "default"), limiter: limiter.clone() };
        let client = kube::Client::new(door, "default");
        let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#.to_vec();
        let request = http::Request::post("/api/v1/namespaces/default/configmaps").body(body.clone()).unwrap();
        let created: serde_json::Value = client.request(request).await.expect("created on the third try");
        assert_eq!(created["metadata"]["name"], "a");
        assert_eq!(*crowded.seen.lock().unwrap(), vec![body.clone(); 3], "the same body each time");
        assert_eq!(limiter.throttled(), 2);
        assert_eq!(limiter.rate(), 500.0, "two 429s at once are one signal");

        // Past client-go's 10 retries, the 429 is the answer.
        let refusing = Crowded { refusals: usize::MAX, seen: Default::default() };
        let door =
            Door { inner: kube::Client::new(refusing.clone(), "default"), limiter: Arc::new(RateLimiter::new(0.0, 1)) };
        let client = kube::Client::new(door, "default");
        let request = http::Request::post("/api/v1/namespaces/default/configmaps").body(body).unwrap();
        let refused = client.request::<serde_json::Value>(request).await.expect_err("refused");
        assert!(matches!(&refused, kube::Error::Api(status) if status.code == 429), "{refused:?}");
        assert_eq!(refusing.seen.lock().unwrap().len(), 11);
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
