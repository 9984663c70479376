//! Redirects of HTTP(S) remotes.
//!
//! libgit2 follows a redirect of the first request anywhere by default, and
//! even with `RemoteRedirect::None` it still follows one to the same host on
//! another port, or from http to https: a server (or a path on it) could
//! switch the ApplySet to another repository, whose objects would be applied
//! and the original's pruned, and credentials could be sent there. So before
//! libgit2 connects, the ref listing (`GET <url>/info/refs?service=
//! git-upload-pack`, the request git sends first) is made here, with the
//! same credentials and trusted CAs, and only its status line and `Location`
//! are read. A redirect within the same scheme, host and port is followed
//! (libgit2 is then handed the new repository URL); any other is refused.
//! Failures of this check itself (connection refused, TLS, a silent server)
//! are left to libgit2, which reports them with their proper category.
//!
//! The check's answer, when it is the ref advertisement itself, is kept (see
//! [`super::advertisement`]): a listing that finds nothing new needs no second request.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use openssl::ssl::{SslConnector, SslMethod};

use super::advertisement::{self, Advertisement};
use super::tls::CaBundle;
use super::url::scrub_url;

/// Redirects followed before giving up (git's own default is 20; a git
/// server that needs more than a few is misconfigured).
const MAX_REDIRECTS: usize = 5;

/// Bytes of response head read at most.
const MAX_HEAD: usize = 16 * 1024;

/// Bytes of ref advertisement read at most (about 10,000 refs); a larger one is left to
/// libgit2, which reads it again.
const MAX_ADVERTISEMENT: usize = 1024 * 1024;

/// Where an HTTP(S) URL points: scheme, host and port; what a redirect must
/// keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    pub(crate) scheme: String,
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.scheme, self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
        }
    }
}

/// An absolute http(s) URL split into `scheme://authority` (userinfo kept),
/// its origin and the rest (path and query).
#[derive(Clone, Debug)]
pub(crate) struct HttpUrl<'a> {
    pub(crate) prefix: &'a str,
    pub(crate) origin: Origin,
    pub(crate) path: &'a str,
}

impl<'a> HttpUrl<'a> {
    pub(crate) fn parse(url: &'a str) -> Option<HttpUrl<'a>> {
        let (scheme, rest) = url.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => return None,
        };
        let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..authority_len];
        let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (host, after) = v6.split_once(']')?;
            (host, after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        let port = match port {
            Some(p) if !p.is_empty() => p.parse().ok()?,
            _ => default_port,
        };
        if host.is_empty() {
            return None;
        }
        let prefix_len = url.len() - rest.len() + authority_len;
        Some(HttpUrl {
            prefix: &url[..prefix_len],
            origin: Origin { scheme, host: host.to_ascii_lowercase(), port },
            path: &url[prefix_len..],
        })
    }

    /// `host[:port]` for the `Host` header (without userinfo).
    fn host_header(&self) -> String {
        let default = if self.origin.scheme == "https" { 443 } else { 80 };
        let host =
            if self.origin.host.contains(':') { format!("[{}]", self.origin.host) } else { self.origin.host.clone() };
        if self.origin.port == default { host } else { format!("{host}:{}", self.origin.port) }
    }

    /// The repository path without query or fragment, no trailing '/'.
    fn repo_path(&self) -> &str {
        let end = self.path.find(['?', '#']).unwrap_or(self.path.len());
        self.path[..end].trim_end_matches('/')
    }
}

/// What the check found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Use this URL (the one given, or where same-origin redirects led), and the ref
    /// advertisement it answered with, when it was one this check could read whole.
    Use { url: String, advertisement: Option<Advertisement> },
    /// A redirect to another scheme, host or port: `from` (scrubbed)
    /// redirected to `to` (scrubbed).
    Refused { from: String, to: String },
    /// More than [`MAX_REDIRECTS`] redirects.
    TooMany { from: String },
}

/// How to make the request: the same trust and credentials as the git
/// transport.
pub(crate) struct Request<'a> {
    pub(crate) ca: Option<&'a CaBundle>,
    /// `Authorization` header value, if any (Bearer, or Basic of the
    /// secret's or the URL's credentials).
    pub(crate) authorization: Option<String>,
    /// Connect, read and write timeout.
    pub(crate) timeout: Duration,
    pub(crate) cancel: &'a AtomicBool,
}

/// Follow same-origin redirects of `url`'s ref listing; refuse others.
pub(crate) fn check(url: &str, req: &Request<'_>) -> Outcome {
    let mut current = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        if req.cancel.load(Ordering::Relaxed) {
            return Outcome::Use { url: current, advertisement: None };
        }
        let Some(parsed) = HttpUrl::parse(&current) else {
            return Outcome::Use { url: current, advertisement: None };
        };
        let location = match probe(&parsed, req) {
            Ok(Answer::Redirect(location)) => location,
            Ok(Answer::Advertisement(advertisement)) => {
                return Outcome::Use { url: current, advertisement: Some(advertisement) };
            }
            Ok(Answer::Other) | Err(_) => return Outcome::Use { url: current, advertisement: None },
        };
        match follow(&parsed, &location) {
            Some(next) => current = next,
            None => {
                return Outcome::Refused { from: scrub_url(&current), to: scrub_url(&location) };
            }
        }
    }
    Outcome::TooMany { from: scrub_url(url) }
}

/// The repository URL a redirect of `base`'s ref listing to `location`
/// leads to, if it stays on the same scheme, host and port; `None` when it
/// does not.
pub(crate) fn follow(base: &HttpUrl<'_>, location: &str) -> Option<String> {
    let target_path = if location.contains("://") {
        let target = HttpUrl::parse(location)?;
        if target.origin != base.origin {
            return None;
        }
        target.path.to_string()
    } else if location.starts_with("//") {
        let target = format!("{}:{location}", base.origin.scheme);
        let t = HttpUrl::parse(&target)?;
        if t.origin != base.origin {
            return None;
        }
        t.path.to_string()
    } else if location.starts_with('/') {
        location.to_string()
    } else {
        // Relative to the ref listing's directory (`<repo>/info/`).
        format!("{}/info/{location}", base.repo_path())
    };
    let end = target_path.find(['?', '#']).unwrap_or(target_path.len());
    let path = &target_path[..end];
    let repo = path.strip_suffix("/info/refs").unwrap_or(path);
    Some(format!("{}{}", base.prefix, repo))
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

/// `GET <repo>/info/refs?service=git-upload-pack`.
fn probe(url: &HttpUrl<'_>, req: &Request<'_>) -> std::io::Result<Answer> {
    let addrs = (url.origin.host.as_str(), url.origin.port).to_socket_addrs()?;
    let mut last = std::io::Error::other("no address");
    let mut tcp = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, req.timeout) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last = e,
        }
    }
    let tcp = tcp.ok_or(last)?;
    tcp.set_read_timeout(Some(req.timeout))?;
    tcp.set_write_timeout(Some(req.timeout))?;
    let mut head = format!(
        "GET {}/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: {}\r\nUser-Agent: git/2.0 (applyset)\r\nAccept: */*\r\nPragma: no-cache\r\nConnection: close\r\n",
        url.repo_path(),
        url.host_header()
    );
    if let Some(auth) = &req.authorization {
        head.push_str(&format!("Authorization: {auth}\r\n"));
    }
    head.push_str("\r\n");
    let response = if url.origin.scheme == "https" {
        let mut builder = SslConnector::builder(SslMethod::tls_client()).map_err(std::io::Error::other)?;
        for ca in req.ca.map(CaBundle::certs).unwrap_or_default() {
            builder.cert_store_mut().add_cert(ca.clone()).map_err(std::io::Error::other)?;
        }
        let mut tls = builder.build().connect(&url.origin.host, tcp).map_err(std::io::Error::other)?;
        exchange(&mut tls, head.as_bytes())?
    } else {
        let mut tcp = tcp;
        exchange(&mut tcp, head.as_bytes())?
    };
    Ok(response)
}

fn exchange<S: Read + Write>(stream: &mut S, request: &[u8]) -> std::io::Result<Answer> {
    stream.write_all(request)?;
    stream.flush()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 || buf.len() >= MAX_HEAD {
            return Ok(Answer::Other);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    if let Some(location) = location_of_redirect(&head) {
        return Ok(Answer::Redirect(location));
    }
    let Some(framing) = advertisement_framing(&head) else {
        return Ok(Answer::Other);
    };
    // The body, to its end (the request asked the server to close), bounded.
    let mut body = buf.split_off(head_end);
    loop {
        if body.len() > MAX_ADVERTISEMENT + MAX_HEAD {
            return Ok(Answer::Other);
        }
        if matches!(framing, Framing::Length(n) if body.len() >= n) {
            break;
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body = match framing {
        Framing::Length(n) if body.len() == n => body,
        Framing::Length(_) => return Ok(Answer::Other),
        Framing::Chunked => match dechunk(&body) {
            Some(body) => body,
            None => return Ok(Answer::Other),
        },
        Framing::UntilClose => body,
    };
    Ok(advertisement::parse(&body).map_or(Answer::Other, Answer::Advertisement))
}

/// How the body of an answer ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Length(usize),
    Chunked,
    UntilClose,
}

/// For a `200` with a smart advertisement, uncompressed: how its body is framed.
fn advertisement_framing(head: &str) -> Option<Framing> {
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    if status != 200 {
        return None;
    }
    let (mut smart, mut framing) = (false, Framing::UntilClose);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { continue };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-type") {
            smart = value.eq_ignore_ascii_case("application/x-git-upload-pack-advertisement");
        } else if name.eq_ignore_ascii_case("content-encoding") && !value.eq_ignore_ascii_case("identity") {
            return None;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return None;
            }
            framing = Framing::Chunked;
        } else if name.eq_ignore_ascii_case("content-length") && framing != Framing::Chunked {
            framing = Framing::Length(value.parse().ok()?);
        }
    }
    smart.then_some(framing)
}

/// The data of a chunked body; `None` unless it is complete (ends with the last chunk).
fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&body[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        let (data, rest) = body.split_at_checked(size)?;
        out.extend_from_slice(data);
        body = rest.strip_prefix(b"\r\n")?;
    }
}

/// The `Location` of a 3xx response head, as libgit2 treats them (301, 302,
/// 303, 307, 308).
pub(crate) fn location_of_redirect(head: &str) -> Option<String> {
    let head = head.split("\r\n\r\n").next().unwrap_or_default();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    if !matches!(status, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    lines.find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim().eq_ignore_ascii_case("location").then(|| value.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(url: &str) -> HttpUrl<'_> {
        HttpUrl::parse(url).unwrap()
    }

    #[test]
    fn same_origin_redirects_are_followed_others_not() {
        let b = base("https://u:p@git.example/old.git");
        assert_eq!(b.origin.port, 443);
        let ok = |loc: &str| follow(&b, loc);
        assert_eq!(
            ok("/new.git/info/refs?service=git-upload-pack").as_deref(),
            Some("https://u:p@git.example/new.git")
        );
        assert_eq!(
            ok("https://GIT.example:443/a/new.git/info/refs?service=git-upload-pack").as_deref(),
            Some("https://u:p@git.example/a/new.git")
        );
        assert_eq!(ok("//git.example/x.git/info/refs").as_deref(), Some("https://u:p@git.example/x.git"));
        for refused in [
            "https://git.example:8443/old.git/info/refs",
            "http://git.example/old.git/info/refs",
            "https://other.example/old.git/info/refs",
            "//other.example/old.git/info/refs",
            "ssh://git.example/old.git",
        ] {
            assert_eq!(ok(refused), None, "{refused}");
        }
        let h = base("http://127.0.0.1:8080/r.git");
        assert_eq!(follow(&h, "https://127.0.0.1:8080/r.git/info/refs"), None, "no upgrade either");
        assert_eq!(follow(&h, "http://127.0.0.1:8080/s.git/info/refs").as_deref(), Some("http://127.0.0.1:8080/s.git"));
    }

    #[test]
    fn reads_redirect_locations() {
        assert_eq!(
            location_of_redirect("HTTP/1.1 301 Moved\r\nContent-Length: 0\r\nlocation: /x.git/info/refs\r\n\r\nbody")
                .as_deref(),
            Some("/x.git/info/refs")
        );
        assert_eq!(location_of_redirect("HTTP/1.1 200 OK\r\nLocation: /x\r\n\r\n"), None);
        assert_eq!(location_of_redirect("HTTP/1.1 304 Not Modified\r\nLocation: /x\r\n\r\n"), None);
        assert_eq!(location_of_redirect("garbage"), None);
    }

    #[test]
    fn frames_advertisement_bodies() {
        let ad = "Content-Type: application/x-git-upload-pack-advertisement";
        let frame = |h: &str| advertisement_framing(&format!("HTTP/1.1 200 OK\r\n{h}\r\n\r\n"));
        assert_eq!(frame(&format!("{ad}\r\nContent-Length: 12")), Some(Framing::Length(12)));
        assert_eq!(frame(&format!("{ad}\r\nTransfer-Encoding: chunked")), Some(Framing::Chunked));
        assert_eq!(frame(ad), Some(Framing::UntilClose));
        assert_eq!(frame(&format!("{ad}\r\nContent-Encoding: gzip")), None);
        assert_eq!(frame("Content-Type: text/plain"), None, "a dumb server");
        assert_eq!(advertisement_framing(&format!("HTTP/1.1 401 No\r\n{ad}\r\n\r\n")), None);
        assert_eq!(dechunk(b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n").as_deref(), Some(&b"abcde"[..]));
        assert_eq!(dechunk(b"3\r\nabc\r\n"), None, "no last chunk");
        assert_eq!(dechunk(b"5\r\nabc\r\n0\r\n\r\n"), None);
    }

    #[test]
    fn parses_origins() {
        let u = base("http://[::1]:9000/r.git?x=1");
        assert_eq!((u.origin.host.as_str(), u.origin.port), ("::1", 9000));
        assert_eq!(u.repo_path(), "/r.git");
        assert_eq!(u.host_header(), "[::1]:9000");
        assert_eq!(base("https://h").repo_path(), "");
        assert!(HttpUrl::parse("ssh://h/x").is_none());
    }
}
