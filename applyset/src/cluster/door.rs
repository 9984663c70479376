//! The layer every request to the apiserver passes: the run's rate limiter, and the capture of
//! the server's `Warning` headers so that they are printed with the object they concern.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_headers() {
        assert_eq!(warning_text(r#"299 - "unknown field \"spec.x\"""#).as_deref(), Some(r#"unknown field "spec.x""#));
        assert_eq!(warning_text("299 - no quotes"), None);
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
