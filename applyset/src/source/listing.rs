//! The ref listing of an HTTP(S) remote (`GET <repo>/info/refs?service=git-upload-pack`, the
//! request git sends first), made before libgit2 connects, with reqwest (hyper underneath):
//!
//! - **Redirects** are followed here, within the same scheme, host and port only (libgit2 is
//!   then handed the new repository URL); any other is refused (see [`super::redirect`]).
//! - **Credentials** go only where libgit2 would send them: a password (the Secret's or the
//!   URL's) only after the server answered 401 with a Basic challenge, and only to the origin
//!   the request went to; a bearer token on every request, as libgit2 sends it (an extra
//!   header, there is no challenge for it).
//! - **One deadline** bounds the whole exchange, redirects, challenge and body included: a
//!   server that sends a byte at a time cannot hold the blocking thread past it.
//! - **Proxies**: the one [`super::proxy::route`] chose (CONNECT for https), the same one
//!   libgit2 is given.
//! - **Trust**: OpenSSL's default paths (as libgit2 reads them) and the Secret's `ca.crt`.
//!
//! The answer, when it is the ref advertisement itself, is kept ([`super::advertisement`]): a
//! listing that finds nothing new needs no second request. Failures of the check (a refused
//! connection, TLS) are left to libgit2, which reports them with their category; a deadline
//! passed is a timeout.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE, LOCATION, WWW_AUTHENTICATE};
use reqwest::{Client, StatusCode};

use super::advertisement::{self, Advertisement};
use super::proxy::ProxyUrl;
use super::redirect::{HttpUrl, follow};
use super::tls::CaBundle;
use super::url::scrub_url;

/// Redirects followed before giving up (git's own default is 20; a git server that needs more
/// than a few is misconfigured).
const MAX_REDIRECTS: usize = 5;

/// Bytes of ref advertisement read at most (about 10,000 refs); a larger one is left to
/// libgit2, which reads it again.
const MAX_ADVERTISEMENT: usize = 1024 * 1024;

/// How often a listing looks at the run's cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(100);

/// What the check found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Use this URL (the one given, or where same-origin redirects led), and the ref
    /// advertisement it answered with, when it was one this check could read whole.
    Use { url: String, advertisement: Option<Advertisement> },
    /// A redirect to another scheme, host or port: `from` (scrubbed) redirected to `to`
    /// (scrubbed).
    Refused { from: String, to: String },
    /// More than [`MAX_REDIRECTS`] redirects.
    TooMany { from: String },
    /// The deadline passed (or the run was cancelled) before the listing ended.
    TimedOut,
}

/// How to make the request: the same trust, credentials and proxy as the git transport.
pub(crate) struct Request<'a> {
    pub(crate) ca: Option<&'a CaBundle>,
    /// The bearer token, sent on every request (as libgit2 sends it).
    pub(crate) bearer: Option<String>,
    /// User and password, sent as Basic after a 401 that asks for it.
    pub(crate) basic: Option<(String, Vec<u8>)>,
    pub(crate) proxy: Option<&'a ProxyUrl>,
    /// The whole exchange's deadline.
    pub(crate) deadline: Duration,
    pub(crate) cancel: &'a AtomicBool,
}

/// Lists `url`'s refs following same-origin redirects; refuses others. Blocking: called from
/// the git source's blocking thread, it runs on the controller's runtime (a runtime of its own
/// when there is none).
pub(crate) fn check(url: &str, request: &Request<'_>) -> Outcome {
    let listing = async {
        tokio::select! {
            outcome = tokio::time::timeout(request.deadline, check_async(url, request)) => {
                outcome.unwrap_or(Outcome::TimedOut)
            }
            () = cancelled(request.cancel) => Outcome::TimedOut,
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.block_on(listing),
        Err(_) => match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime.block_on(listing),
            Err(_) => Outcome::Use { url: url.to_owned(), advertisement: None },
        },
    }
}

async fn cancelled(cancel: &AtomicBool) {
    while !cancel.load(Ordering::Relaxed) {
        tokio::time::sleep(CANCEL_POLL).await;
    }
}

async fn check_async(url: &str, request: &Request<'_>) -> Outcome {
    let Some(client) = client(request) else { return Outcome::Use { url: url.to_owned(), advertisement: None } };
    let mut current = url.to_owned();
    for _ in 0..=MAX_REDIRECTS {
        let Some(parsed) = HttpUrl::parse(&current) else {
            return Outcome::Use { url: current, advertisement: None };
        };
        let location = match probe(&client, &parsed, request).await {
            Ok(Answer::Redirect(location)) => location,
            Ok(Answer::Advertisement(advertisement)) => {
                return Outcome::Use { url: current, advertisement: Some(advertisement) };
            }
            Ok(Answer::Other) => return Outcome::Use { url: current, advertisement: None },
            Err(error) if error.is_timeout() => return Outcome::TimedOut,
            Err(_) => return Outcome::Use { url: current, advertisement: None },
        };
        match follow(&parsed, &location) {
            Some(next) => current = next,
            None => return Outcome::Refused { from: scrub_url(&current), to: scrub_url(&location) },
        }
    }
    Outcome::TooMany { from: scrub_url(url) }
}

/// A client for one listing: no redirects of its own, no proxy but the one chosen, the
/// deadline on every request (the caller bounds them all together too).
fn client(request: &Request<'_>) -> Option<Client> {
    let mut builder = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(request.deadline)
        .user_agent("git/2.0 (applyset)");
    if let Some(proxy) = request.proxy {
        let mut via = reqwest::Proxy::all(proxy.address.as_str()).ok()?;
        if let Some(user) = &proxy.username {
            let password = proxy.password.as_ref().and_then(|p| p.expose_str()).unwrap_or_default();
            via = via.basic_auth(user, password);
        }
        builder = builder.proxy(via);
    }
    for ca in request.ca.map(CaBundle::certs).unwrap_or_default() {
        let der = ca.to_der().ok()?;
        builder = builder.tls_certs_merge([reqwest::Certificate::from_der(&der).ok()?]);
    }
    builder.build().ok()
}

/// What the ref listing answered.
enum Answer {
    /// A 3xx with this `Location`.
    Redirect(String),
    /// 200 with a smart ref advertisement this check could read whole.
    Advertisement(Advertisement),
    /// Anything else (an error status, a dumb server, an advertisement too large or not
    /// understood): libgit2 makes the request again and says what it finds.
    Other,
}

/// `GET <repo>/info/refs?service=git-upload-pack`, and once more with Basic credentials when
/// the server asks for them.
async fn probe(client: &Client, url: &HttpUrl<'_>, request: &Request<'_>) -> reqwest::Result<Answer> {
    // The URL without its user info: reqwest would send that as Basic at once.
    let target =
        format!("{}://{}{}/info/refs?service=git-upload-pack", url.origin.scheme, url.host_header(), url.repo_path());
    let send = |basic: Option<&(String, Vec<u8>)>| {
        let mut builder = client.get(&target).header("Accept", "*/*").header("Pragma", "no-cache");
        if let Some(token) = &request.bearer {
            builder = builder.header(AUTHORIZATION, format!("Bearer {token}"));
        } else if let Some((user, password)) = basic {
            let mut pair = format!("{user}:").into_bytes();
            pair.extend_from_slice(password);
            builder = builder.header(AUTHORIZATION, format!("Basic {}", openssl::base64::encode_block(&pair)));
        }
        builder.send()
    };
    let mut response = send(None).await?;
    if response.status() == StatusCode::UNAUTHORIZED
        && request.bearer.is_none()
        && request.basic.is_some()
        && asks_for_basic(response.headers())
    {
        response = send(request.basic.as_ref()).await?;
    }
    if response.status().is_redirection()
        && matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308)
        && let Some(location) = response.headers().get(LOCATION).and_then(|l| l.to_str().ok())
    {
        return Ok(Answer::Redirect(location.to_owned()));
    }
    if !is_advertisement(response.status(), response.headers()) {
        return Ok(Answer::Other);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_ADVERTISEMENT {
            return Ok(Answer::Other);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(advertisement::parse(&body).map_or(Answer::Other, Answer::Advertisement))
}

/// A 401's `WWW-Authenticate` offers Basic.
fn asks_for_basic(headers: &reqwest::header::HeaderMap) -> bool {
    headers.get_all(WWW_AUTHENTICATE).iter().filter_map(|v| v.to_str().ok()).any(|challenge| {
        challenge.split(',').any(|part| part.trim_start().get(..5).is_some_and(|s| s.eq_ignore_ascii_case("basic")))
    })
}

/// A `200` smart advertisement, uncompressed.
fn is_advertisement(status: StatusCode, headers: &reqwest::header::HeaderMap) -> bool {
    let text = |name| headers.get(name).and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok());
    status == StatusCode::OK
        && text(CONTENT_TYPE).is_some_and(|t| t.eq_ignore_ascii_case("application/x-git-upload-pack-advertisement"))
        && text(CONTENT_ENCODING).is_none_or(|e| e.eq_ignore_ascii_case("identity"))
}

#[cfg(test)]
mod tests {
    use reqwest::header::{HeaderMap, HeaderValue};

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn only_a_basic_challenge_is_answered_with_a_password() {
        assert!(asks_for_basic(&headers(&[("www-authenticate", "Basic realm=\"git\"")])));
        assert!(asks_for_basic(&headers(&[("www-authenticate", "Negotiate"), ("www-authenticate", "basic")])));
        assert!(!asks_for_basic(&headers(&[("www-authenticate", "Bearer realm=\"x\"")])));
        assert!(!asks_for_basic(&headers(&[])));
    }

    #[test]
    fn only_an_uncompressed_smart_answer_is_read() {
        let ad = ("content-type", "application/x-git-upload-pack-advertisement");
        assert!(is_advertisement(StatusCode::OK, &headers(&[ad])));
        assert!(is_advertisement(StatusCode::OK, &headers(&[ad, ("content-encoding", "identity")])));
        assert!(!is_advertisement(StatusCode::OK, &headers(&[ad, ("content-encoding", "gzip")])));
        assert!(!is_advertisement(StatusCode::OK, &headers(&[("content-type", "text/plain")])), "a dumb server");
        assert!(!is_advertisement(StatusCode::UNAUTHORIZED, &headers(&[ad])));
    }
}
