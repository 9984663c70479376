//! The webhook receiver (what Flux's notification-controller `Receiver` does): a git host posts
//! to `POST /hook/<digest>` when something is pushed, and the ApplySet is fetched at once
//! instead of at its next interval.
//!
//! The path cannot be guessed: its digest is Flux's, the hex SHA-256 of the token, the
//! ApplySet's name and its namespace ([`hook_path`]). The controller computes it when it reads
//! the token (a new generation, a requested run, or none published yet) and publishes it in
//! `status.webhookPath`; the receiver finds the ApplySet by that field.
//!
//! A request is accepted only for an ApplySet with `spec.webhook.secretRef`, and only signed
//! with that Secret's `token`: GitHub's `X-Hub-Signature-256` (HMAC-SHA256 of the body), GitLab's
//! `X-Gitlab-Token` (the token itself), or a generic `X-Signature: sha256=<hex>` (HMAC-SHA256),
//! compared in constant time. Bodies are capped before they are read. An unknown path and a
//! refused signature get the same answer (404) after the same work (the body read, a signature
//! checked, against a random key when there is no token), so the receiver's answers tell no one
//! which ApplySets exist. A push to another ref than the ApplySet follows is acknowledged and
//! ignored.
//!
//! An accepted push sets the ApplySet's `applyset.dev/reconcile-requested-at` annotation, as
//! Flux's receiver sets `reconcile.fluxcd.io/requestedAt`: the controller runs it now, and its
//! status records the request it handled. Pushes in quick succession coalesce into one such
//! write per ApplySet and [`COALESCE`] window, the last push always covered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::response::Response;
use http::header::{CONTENT_LENGTH, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Limited};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::Store;

use super::api::ApplySet;
use super::http::{method_not_allowed, text};
use super::lock;
use super::metrics::Metrics;
use crate::causes::Chain;
use crate::keys::RECONCILE_REQUESTED_AT;
use crate::source::GitRef;

/// The largest body read (GitHub caps its payloads at 25 MiB, but a push event is a few KiB).
pub const MAX_BODY: usize = 1 << 20;
/// How long a body may take to arrive once the headers have.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// At most one annotation write per ApplySet in this window; pushes inside it share it.
pub const COALESCE: Duration = Duration::from_secs(1);
/// How long a token read from its Secret is reused (a flood of bad requests must not become a
/// flood of Secret reads).
const TOKEN_TTL: Duration = Duration::from_secs(10);

/// What a request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A push for this ApplySet: a run was requested.
    Accepted,
    /// Signed, but not a push for this ApplySet's ref (a ping, another branch, another event).
    Ignored,
    Unauthorized,
    NotFound,
    TooLarge,
    BadRequest,
    MethodNotAllowed,
}

impl Outcome {
    /// Every outcome (for exporting each from the start).
    pub const ALL: [Outcome; 7] = [
        Outcome::Accepted,
        Outcome::Ignored,
        Outcome::Unauthorized,
        Outcome::NotFound,
        Outcome::TooLarge,
        Outcome::BadRequest,
        Outcome::MethodNotAllowed,
    ];

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Ignored => "ignored",
            Outcome::Unauthorized => "unauthorized",
            Outcome::NotFound => "not_found",
            Outcome::TooLarge => "too_large",
            Outcome::BadRequest => "bad_request",
            Outcome::MethodNotAllowed => "method_not_allowed",
        }
    }

    /// The answer: a refused signature is answered as an unknown path is (the metric label
    /// still tells them apart, for the operator).
    fn reply(self) -> Response {
        match self {
            Outcome::Accepted => text(StatusCode::OK, "accepted\n"),
            Outcome::Ignored => text(StatusCode::OK, "ignored\n"),
            Outcome::Unauthorized | Outcome::NotFound => text(StatusCode::NOT_FOUND, "not found\n"),
            Outcome::TooLarge => text(StatusCode::PAYLOAD_TOO_LARGE, "payload too large\n"),
            Outcome::BadRequest => text(StatusCode::BAD_REQUEST, "bad request\n"),
            Outcome::MethodNotAllowed => method_not_allowed("POST"),
        }
    }
}

/// Who signed a request, by its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    GitHub,
    GitLab,
    Generic,
}

/// What the git host reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A push of `ref` (`refs/heads/main`); `None` when the sender does not say (generic).
    Push(Option<String>),
    /// Anything else (GitHub's `ping` when a hook is created, issues, …).
    Other,
}

/// The provider whose signature header is present and valid for `token`, if any. An empty
/// token verifies nothing: it would accept an empty `X-Gitlab-Token` (and an HMAC under an
/// empty key is anyone's to compute).
pub fn verify(headers: &HeaderMap, body: &[u8], token: &[u8]) -> Option<Provider> {
    if token.is_empty() {
        return None;
    }
    let header = |name: &str| headers.get(name).map(HeaderValue::as_bytes);
    if let Some(signature) = header("x-hub-signature-256") {
        return signed(signature, body, token).then_some(Provider::GitHub);
    }
    if let Some(given) = header("x-gitlab-token") {
        // Digests of both sides, so neither the token's bytes nor its length leak by timing.
        let digest = |bytes: &[u8]| openssl::sha::sha256(bytes);
        return openssl::memcmp::eq(&digest(given), &digest(token)).then_some(Provider::GitLab);
    }
    if let Some(signature) = header("x-signature") {
        return signed(signature, body, token).then_some(Provider::Generic);
    }
    None
}

/// The `X-Hub-Signature-256` (or generic `X-Signature`) value a sender computes for `body`:
/// `sha256=<hex of HMAC-SHA256(token, body)>`.
pub fn signature(token: &[u8], body: &[u8]) -> Option<String> {
    Some(format!("sha256={}", crate::digest::hex(&crate::digest::hmac_sha256(token, body)?)))
}

/// `sha256=<hex of HMAC-SHA256(token, body)>`, compared in constant time.
fn signed(signature: &[u8], body: &[u8], token: &[u8]) -> bool {
    let Some(given) = signature.strip_prefix(b"sha256=").and_then(decode_hex) else { return false };
    let Some(expected) = crate::digest::hmac_sha256(token, body) else { return false };
    given.len() == expected.len() && openssl::memcmp::eq(&given, &expected)
}

fn decode_hex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16);
    text.chunks(2).map(|pair| Some((digit(pair[0])? * 16 + digit(pair[1])?) as u8)).collect()
}

/// The event a verified request reports.
pub fn event(provider: Provider, headers: &HeaderMap, body: &[u8]) -> Event {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
    let pushed_ref = || {
        serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|payload| payload.get("ref").and_then(|r| r.as_str()).map(str::to_owned))
    };
    match provider {
        Provider::GitHub if header("x-github-event") == "push" => Event::Push(pushed_ref()),
        Provider::GitLab if matches!(header("x-gitlab-event"), "Push Hook" | "Tag Push Hook") => {
            Event::Push(pushed_ref())
        }
        Provider::Generic => Event::Push(None),
        _ => Event::Other,
    }
}

/// Whether a push of `pushed` (`refs/heads/x`, `refs/tags/y`; `None`: unknown) can change what
/// an ApplySet following `followed` applies.
pub fn push_concerns(followed: Option<&GitRef>, pushed: Option<&str>) -> bool {
    let Some(pushed) = pushed else { return true };
    let Some(followed) = followed else { return pushed.starts_with("refs/heads/") };
    if let Some(branch) = &followed.branch {
        return pushed == format!("refs/heads/{branch}");
    }
    if let Some(tag) = &followed.tag {
        return pushed == format!("refs/tags/{tag}");
    }
    if followed.semver.is_some() {
        return pushed.starts_with("refs/tags/");
    }
    // A pinned commit never moves.
    false
}

/// The receiver's path of an ApplySet whose webhook token is `token`: `/hook/` and the hex
/// SHA-256 of the token, the name and the namespace, as Flux's notification-controller derives
/// a Receiver's path.
pub fn hook_path(token: &[u8], namespace: &str, name: &str) -> String {
    let mut input = Vec::with_capacity(token.len() + name.len() + namespace.len());
    input.extend_from_slice(token);
    input.extend_from_slice(name.as_bytes());
    input.extend_from_slice(namespace.as_bytes());
    format!("/hook/{}", crate::digest::hex(&openssl::sha::sha256(&input)))
}

/// Whether `path` has the shape of a receiver's path (`/hook/` and 64 lowercase hex digits).
fn is_hook_path(path: &str) -> bool {
    path.strip_prefix("/hook/")
        .is_some_and(|digest| digest.len() == 64 && digest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// A Secret, by namespace and name.
type SecretKey = (String, String);

/// A token as read (absent when the Secret or its `token` key is), and when.
type CachedToken = (Option<Vec<u8>>, Instant);

/// Per ApplySet: when its annotation was last written, and whether a write is on its way.
#[derive(Default)]
struct Pending {
    last: Option<Instant>,
    scheduled: bool,
}

/// The receiver: the controller's view of the ApplySets, and a client to read tokens and
/// request runs.
pub struct Receiver {
    client: kube::Client,
    /// What a signature is checked against when the path names no ApplySet or its token is
    /// missing: a random key of this process, so that such a request costs what a refused one
    /// does and no signature can match it.
    decoy: [u8; 32],
    applysets: Store<ApplySet>,
    metrics: Arc<Metrics>,
    tokens: Mutex<HashMap<SecretKey, CachedToken>>,
    pending: Mutex<HashMap<(String, String), Pending>>,
}

/// The receiver's routes: every path is the receiver's to judge (an unknown one is answered and
/// counted as a refused signature is, so no route of the router's may answer differently).
pub fn router(receiver: Arc<Receiver>) -> Router {
    Router::new().fallback(answer).with_state(receiver)
}

async fn answer(State(receiver): State<Arc<Receiver>>, request: Request) -> Response {
    let outcome = receiver.receive(request).await;
    receiver.metrics.webhook_request(outcome.label());
    outcome.reply()
}

impl Receiver {
    pub fn new(client: kube::Client, applysets: Store<ApplySet>, metrics: Arc<Metrics>) -> Arc<Receiver> {
        let mut decoy = [0; 32];
        openssl::rand::rand_bytes(&mut decoy).expect("the system's random source");
        Arc::new(Receiver {
            client,
            decoy,
            applysets,
            metrics,
            tokens: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
        })
    }

    async fn receive(self: &Arc<Self>, request: Request) -> Outcome {
        if !is_hook_path(request.uri().path()) {
            return Outcome::NotFound;
        }
        if request.method() != Method::POST {
            return Outcome::MethodNotAllowed;
        }
        let declared = request.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|length| length > MAX_BODY as u64) {
            return Outcome::TooLarge;
        }
        let path = request.uri().path().to_owned();
        // The body is read whether or not the path names an ApplySet: both cost the same.
        let (parts, body) = request.into_parts();
        let body = match tokio::time::timeout(BODY_TIMEOUT, Limited::new(body, MAX_BODY).collect()).await {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => return Outcome::TooLarge,
            _ => return Outcome::BadRequest,
        };
        let applyset = self.find(&path);
        let token = match applyset.as_ref().and_then(|a| Some((a, a.spec.webhook.as_ref()?))) {
            Some((applyset, webhook)) => {
                let token = self.token(&applyset.namespace_or_default(), &webhook.secret_ref.name).await;
                if token.is_none() {
                    tracing::warn!(applyset = %applyset.key(), secret = %webhook.secret_ref.name,
                        "webhook refused: the Secret or its token key is missing or empty");
                }
                token
            }
            None => None,
        };
        let provider = verify(&parts.headers, &body, token.as_deref().unwrap_or(&self.decoy));
        let (Some(applyset), Some(_), Some(provider)) = (applyset.as_ref(), token, provider) else {
            return if applyset.is_some() { Outcome::Unauthorized } else { Outcome::NotFound };
        };
        match event(provider, &parts.headers, &body) {
            Event::Push(pushed) if push_concerns(applyset.spec.source.reference.as_ref(), pushed.as_deref()) => {
                tracing::info!(applyset = %applyset.key(), ?provider, pushed = ?pushed, "webhook: push received");
                self.request_run(applyset.namespace_or_default(), applyset.name());
                Outcome::Accepted
            }
            _ => Outcome::Ignored,
        }
    }

    /// The hooked ApplySet whose `status.webhookPath` is `path`.
    fn find(&self, path: &str) -> Option<Arc<ApplySet>> {
        // Under the store's read lock, without a snapshot of every ApplySet per request.
        self.applysets.find(|applyset| {
            applyset.spec.webhook.is_some()
                && applyset.status.as_ref().and_then(|s| s.webhook_path.as_deref()) == Some(path)
        })
    }

    /// The Secret's `token`, read at most once per [`TOKEN_TTL`].
    async fn token(&self, namespace: &str, secret: &str) -> Option<Vec<u8>> {
        let key = (namespace.to_owned(), secret.to_owned());
        if let Some((token, read)) = lock(&self.tokens).get(&key)
            && read.elapsed() < TOKEN_TTL
        {
            return token.clone();
        }
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        let token = match secrets.get_opt(secret).await {
            // An empty token is no token: every request is refused.
            Ok(found) => found
                .and_then(|s| s.data)
                .and_then(|mut data| data.remove("token"))
                .map(|t| t.0)
                .filter(|t| !t.is_empty()),
            // An apiserver error is not cached: the next request tries again.
            Err(_) => return None,
        };
        lock(&self.tokens).insert(key, (token.clone(), Instant::now()));
        token
    }

    /// Sets the run-request annotation now, or once the [`COALESCE`] window since the last write
    /// has passed; a push while a write is scheduled is covered by that write.
    fn request_run(self: &Arc<Self>, namespace: String, name: String) {
        let key = (namespace, name);
        let delay = {
            let mut pending = lock(&self.pending);
            let entry = pending.entry(key.clone()).or_default();
            if entry.scheduled {
                return;
            }
            entry.scheduled = true;
            entry.last.map_or(Duration::ZERO, |last| COALESCE.saturating_sub(last.elapsed()))
        };
        let receiver = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(entry) = lock(&receiver.pending).get_mut(&key) {
                entry.scheduled = false;
                entry.last = Some(Instant::now());
            }
            let (namespace, name) = key;
            let api: Api<ApplySet> = Api::namespaced(receiver.client.clone(), &namespace);
            let requested = k8s_openapi::jiff::Timestamp::now().to_string();
            let patch = serde_json::json!({ "metadata": { "annotations": { RECONCILE_REQUESTED_AT: requested } } });
            if let Err(error) = api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                tracing::warn!(applyset = %format!("{namespace}/{name}"), error = %Chain(&error), "webhook: could not request a run");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY_KEY_EMPTY_BODY: &str = "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad";

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn signatures_are_checked_per_provider() {
        let body = br#"{"ref":"refs/heads/main"}"#;
        // RFC 4231 test case 2's key and message give a known HMAC-SHA256.
        assert_eq!(
            crate::digest::hex(&crate::digest::hmac_sha256(b"Jefe", b"what do ya want for nothing?").unwrap()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let good = signature(b"s3cret", body).unwrap();
        let bad = signature(b"other", body).unwrap();
        assert_eq!(verify(&headers(&[("x-hub-signature-256", &good)]), body, b"s3cret"), Some(Provider::GitHub));
        assert_eq!(verify(&headers(&[("x-hub-signature-256", &bad)]), body, b"s3cret"), None);
        assert_eq!(verify(&headers(&[("x-hub-signature-256", "sha256=zz")]), body, b"s3cret"), None);
        assert_eq!(verify(&headers(&[("x-hub-signature-256", &good)]), b"tampered", b"s3cret"), None);
        assert_eq!(verify(&headers(&[("x-signature", &good)]), body, b"s3cret"), Some(Provider::Generic));
        assert_eq!(verify(&headers(&[("x-gitlab-token", "s3cret")]), body, b"s3cret"), Some(Provider::GitLab));
        assert_eq!(verify(&headers(&[("x-gitlab-token", "s3cre")]), body, b"s3cret"), None);
        assert_eq!(verify(&headers(&[]), body, b"s3cret"), None);
        // An empty token accepts nothing, not even an empty token or an HMAC under the empty key
        // (HMAC-SHA256 of the empty message under the empty key, a published vector).
        let empty_key = format!("sha256={EMPTY_KEY_EMPTY_BODY}");
        assert_eq!(verify(&headers(&[("x-gitlab-token", "")]), body, b""), None);
        assert_eq!(verify(&headers(&[("x-hub-signature-256", &empty_key)]), b"", b""), None);
        assert_eq!(verify(&headers(&[("x-signature", &empty_key)]), b"", b""), None);
    }

    #[test]
    fn events_and_refs() {
        let push = br#"{"ref":"refs/heads/main"}"#;
        let github = |kind: &str| headers(&[("x-github-event", kind)]);
        assert_eq!(event(Provider::GitHub, &github("push"), push), Event::Push(Some("refs/heads/main".into())));
        assert_eq!(event(Provider::GitHub, &github("ping"), b"{}"), Event::Other);
        let gitlab = headers(&[("x-gitlab-event", "Push Hook")]);
        assert_eq!(event(Provider::GitLab, &gitlab, push), Event::Push(Some("refs/heads/main".into())));
        assert_eq!(event(Provider::Generic, &HeaderMap::new(), b""), Event::Push(None));

        let branch = GitRef { branch: Some("main".into()), ..GitRef::default() };
        assert!(push_concerns(Some(&branch), Some("refs/heads/main")));
        assert!(!push_concerns(Some(&branch), Some("refs/heads/dev")));
        assert!(push_concerns(None, Some("refs/heads/anything")));
        assert!(!push_concerns(None, Some("refs/tags/v1")));
        let semver = GitRef { semver: Some(">=1.0.0".into()), ..GitRef::default() };
        assert!(push_concerns(Some(&semver), Some("refs/tags/v1.2.0")));
        let commit = GitRef { commit: Some("abc".into()), ..GitRef::default() };
        assert!(!push_concerns(Some(&commit), Some("refs/heads/main")));
        assert!(push_concerns(Some(&commit), None));
    }

    #[test]
    fn paths() {
        // Flux's digest: sha256(token + name + namespace).
        let path = hook_path(b"s3cret", "apps", "shop");
        assert_eq!(path, format!("/hook/{}", crate::digest::hex(&openssl::sha::sha256(b"s3cretshopapps"))));
        assert!(is_hook_path(&path));
        assert_ne!(path, hook_path(b"other", "apps", "shop"), "the token is part of it");
        assert_ne!(path, hook_path(b"s3cret", "apps2", "shop"));
        let upper = path.to_uppercase().replace("/HOOK/", "/hook/");
        for bad in ["/hook/apps/shop", "/hook/", "/hook/abc", &format!("{path}/x"), &upper, "/other/x"] {
            assert!(!is_hook_path(bad), "{bad}");
        }
    }
}
