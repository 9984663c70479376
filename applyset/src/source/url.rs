//! Repository URLs: classification, host/port extraction for host-key
//! checks, and scrubbing of passwords out of anything that is displayed.

use super::error::SourceError;

/// How a repository is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// `https://`.
    Https,
    /// `http://` (accepted for local test servers; production should use
    /// https with `ca.crt` when the CA is private).
    Http,
    /// `ssh://` or the scp-like `user@host:path`.
    Ssh,
    /// `file://` or a plain local path.
    Local,
}

/// A parsed repository URL. The original string is handed to libgit2
/// unchanged; the parsed parts are used for credentials and host-key checks.
#[derive(Clone, PartialEq, Eq)]
pub struct GitUrl {
    raw: String,
    transport: Transport,
    username: Option<String>,
    host: Option<String>,
    port: Option<u16>,
}

impl std::fmt::Debug for GitUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitUrl").field("url", &self.scrubbed()).field("transport", &self.transport).finish()
    }
}

impl GitUrl {
    /// Parse and classify `url`. Accepts `https://`, `http://`, `ssh://`,
    /// scp-like `[user@]host:path`, `file://` and plain local paths.
    pub fn parse(url: &str) -> Result<GitUrl, SourceError> {
        let bad = |why: &str| SourceError::invalid(format!("url {:?}: {why}", scrub_one_url(url)));
        if url.trim().is_empty() {
            return Err(bad("empty"));
        }
        if url.trim() != url || url.chars().any(|c| c.is_control()) {
            return Err(bad("contains whitespace or control characters"));
        }
        if let Some((scheme, rest)) = url.split_once("://") {
            let transport = match scheme.to_ascii_lowercase().as_str() {
                "https" => Transport::Https,
                "http" => Transport::Http,
                "ssh" => Transport::Ssh,
                "file" => {
                    return Ok(GitUrl {
                        raw: url.to_string(),
                        transport: Transport::Local,
                        username: None,
                        host: None,
                        port: None,
                    });
                }
                other => {
                    return Err(bad(&format!("unsupported scheme {other:?} (use https, ssh, http or file)")));
                }
            };
            let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
            let (userinfo, hostport) = match authority.rsplit_once('@') {
                Some((u, h)) => (Some(u), h),
                None => (None, authority),
            };
            let username = userinfo
                .map(|u| u.split_once(':').map_or(u, |(user, _)| user))
                .filter(|u| !u.is_empty())
                .map(percent_decode);
            let (host, port) = split_host_port(hostport).ok_or_else(|| bad("invalid host or port"))?;
            if host.is_empty() {
                return Err(bad("no host"));
            }
            if transport == Transport::Ssh && userinfo.is_some_and(|u| u.contains(':')) {
                return Err(bad("ssh URLs must not contain a password; use the secret's identity"));
            }
            return Ok(GitUrl { raw: url.to_string(), transport, username, host: Some(host), port });
        }
        // git's rule: a colon before the first slash makes it scp-like.
        if let Some(colon) = url.find(':') {
            let slash = url.find('/').unwrap_or(usize::MAX);
            if colon < slash {
                let (userhost, path) = url.split_at(colon);
                let path = &path[1..];
                let (username, host) = match userhost.rsplit_once('@') {
                    Some((u, h)) => (Some(u.to_string()), h),
                    None => (None, userhost),
                };
                let host = host.trim_start_matches('[').trim_end_matches(']');
                if host.is_empty() || path.is_empty() {
                    return Err(bad("scp-like URL needs host:path"));
                }
                return Ok(GitUrl {
                    raw: url.to_string(),
                    transport: Transport::Ssh,
                    username,
                    host: Some(host.to_string()),
                    port: None,
                });
            }
        }
        Ok(GitUrl { raw: url.to_string(), transport: Transport::Local, username: None, host: None, port: None })
    }

    /// The URL exactly as given (may contain a password: never display it).
    pub(crate) fn raw(&self) -> &str {
        &self.raw
    }

    /// The URL without credentials (see [`scrub_url`]).
    pub fn scrubbed(&self) -> String {
        match self.transport {
            // A local path cannot carry credentials; its '@' are path characters.
            Transport::Local => self.raw.clone(),
            _ => scrub_one_url(&self.raw),
        }
    }

    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The user name written in the URL, if any.
    pub fn username(&self) -> Option<&str> {
        self.username.as_deref()
    }

    pub fn host(&self) -> Option<&str> {
        self.host.as_deref()
    }

    pub fn port(&self) -> Option<u16> {
        self.port
    }
}

fn split_host_port(hostport: &str) -> Option<(String, Option<u16>)> {
    if let Some(rest) = hostport.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) if !p.is_empty() => Some(p.parse().ok()?),
            Some(_) => None,
            None if after.is_empty() => None,
            None => return None,
        };
        return Some((host.to_string(), port));
    }
    match hostport.rsplit_once(':') {
        Some((host, p)) if !p.is_empty() => Some((host.to_string(), Some(p.parse().ok()?))),
        Some((host, _)) => Some((host.to_string(), None)),
        None => Some((hostport.to_string(), None)),
    }
}

pub(crate) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        // Bytes, not `&s[..]`: a '%' before a multibyte character must not split it.
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex_value(bytes[i + 1]), hex_value(bytes[i + 2]))
        {
            out.push(hi << 4 | lo);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Characters that end the authority of a URL quoted in a message (besides
/// `/ ? #` and whitespace). Raw, they may also occur in a password: that case
/// is caught because an '@' then follows in the same token.
const CLOSERS: &[char] = &['"', '\'', '`', '<', '>', '(', ')', '{', '}', ',', ';'];

fn ends_authority(c: char) -> bool {
    matches!(c, '/' | '?' | '#') || c.is_whitespace() || CLOSERS.contains(&c)
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`: what may follow the userinfo.
fn host_like(s: &str) -> bool {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        match rest.split_once(']') {
            Some((v6, after))
                if !v6.is_empty() && v6.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.') =>
            {
                match after.strip_prefix(':') {
                    Some(port) => {
                        return port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
                    }
                    None => return after.is_empty(),
                }
            }
            _ => return false,
        }
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    !host.is_empty()
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'~' | b'%'))
        && port.is_none_or(|p| p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether the '@' at `at` of `region` is followed by a host (and a delimiter).
fn at_before_host(region: &str, at: usize) -> bool {
    let after = &region[at + 1..];
    let end = after.find(ends_authority).unwrap_or(after.len());
    host_like(&after[..end])
}

/// Whether the '@' at `at` of `region` is followed by `host[:port]/`.
fn at_before_host_path(region: &str, at: usize) -> bool {
    let after = &region[at + 1..];
    after.find(ends_authority).is_some_and(|end| after[end..].starts_with('/') && host_like(&after[..end]))
}

/// A userinfo found in a text: `text[start..end]` (the '@' is at `end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Userinfo {
    start: usize,
    end: usize,
    /// The scheme is ssh's: the user name (`git`) is no secret.
    ssh: bool,
    /// Found by the fallback (the URL does not parse cleanly): the whole
    /// span is suspect, user name included.
    doubtful: bool,
}

/// Every userinfo of a `scheme://` URL in `text`. In `whole` mode `text` is
/// one URL (spaces and newlines are part of it); otherwise a URL ends at the
/// end of its line.
///
/// Passwords may hold raw `/ ? # @`, spaces, quotes or even `://`, which end
/// a naive parse of the authority early and leave the rest of the password
/// in view. So unless the authority parses cleanly (`[userinfo@]host[:port]`
/// with no other '@' in the same token), everything up to the last '@' of
/// the line that is followed by a host is taken as userinfo: when in doubt,
/// scrub more.
fn find_userinfos(text: &str, whole: bool) -> Vec<Userinfo> {
    let mut found = Vec::new();
    let mut pos = 0;
    while let Some(rel) = text[pos..].find("://") {
        let sep = pos + rel;
        let after = sep + 3;
        pos = after;
        let scheme_start = text[..sep]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let scheme = text[scheme_start..sep].to_ascii_lowercase();
        if !scheme.starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue;
        }
        let region_end =
            if whole { text.len() } else { text[after..].find(['\n', '\r']).map_or(text.len(), |i| after + i) };
        let region = &text[after..region_end];
        let Some(last_at) = region.rfind('@') else {
            continue; // no '@' on this line: no userinfo
        };
        let natural_end = region.find(ends_authority).unwrap_or(region.len());
        let authority = &region[..natural_end];
        let token_end = if whole { region.len() } else { region.find(char::is_whitespace).unwrap_or(region.len()) };
        // A password may also hold a space: an '@' later on the line (before any
        // other URL) that is followed by `host/` ends a userinfo too. An e-mail
        // address in the message is not followed by a path.
        let next_url = region[token_end..].find("://").map_or(region.len(), |i| token_end + i);
        let rest_clean = !region[natural_end..token_end.max(natural_end)].contains('@')
            && !region[token_end..next_url].match_indices('@').any(|(i, _)| at_before_host_path(region, token_end + i));
        let ssh = matches!(scheme.as_str(), "ssh" | "git+ssh" | "ssh+git");
        let clear = match authority.rfind('@') {
            Some(at) if host_like(&authority[at + 1..]) && rest_clean => Some(Some(at)),
            None if host_like(authority) && rest_clean => Some(None),
            // file:// never carries credentials; its paths may hold '@'.
            _ if scheme == "file" => Some(authority.rfind('@')),
            _ => None,
        };
        let (end, doubtful) = match clear {
            Some(None) => continue,
            Some(Some(at)) => (after + at, false),
            None => {
                let at =
                    region.match_indices('@').map(|(i, _)| i).rfind(|&i| at_before_host(region, i)).unwrap_or(last_at);
                (after + at, true)
            }
        };
        found.push(Userinfo { start: after, end, ssh, doubtful });
        pos = end + 1;
    }
    found
}

/// The userinfo of an scp-like `[user[:password]@]host:path` (no `://`).
fn scp_userinfo(url: &str) -> Option<Userinfo> {
    let end = url
        .match_indices('@')
        .map(|(i, _)| i)
        .rfind(|&i| url[i + 1..].split_once(':').is_some_and(|(host, _)| host_like(host)))?;
    Some(Userinfo { start: 0, end, ssh: true, doubtful: false })
}

/// What replaces a userinfo: `***` for http(s) and other schemes (a user
/// name there may be a token, as in `https://TOKEN@github.com/…`); for ssh
/// the user name stays (`git`) and only a password becomes `***`.
fn replacement(userinfo: &str, u: &Userinfo) -> String {
    if u.ssh && !u.doubtful {
        match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***"),
            None => userinfo.to_string(),
        }
    } else {
        "***".to_string()
    }
}

fn apply_scrub(text: &str, found: &[Userinfo]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for u in found {
        out.push_str(&text[copied..u.start]);
        out.push_str(&replacement(&text[u.start..u.end], u));
        copied = u.end;
    }
    out.push_str(&text[copied..]);
    out
}

/// Remove the credentials of every `scheme://user:password@host` occurring
/// in `text`: the whole userinfo of http(s) URLs becomes `***` (a token is
/// often the user name), ssh URLs keep their user name (`ssh://git@…`) but
/// not a password. Robust to passwords with raw reserved characters (see
/// `find_userinfos`). Text without such URLs is returned unchanged.
pub fn scrub_url(text: &str) -> String {
    let mut found = find_userinfos(text, false);
    found.extend(scp_passwords(text));
    found.sort_by_key(|u| u.start);
    found.dedup_by(|b, a| b.start < a.end.max(a.start + 1)); // overlaps: keep the first
    apply_scrub(text, &found)
}

/// scp-like `user:password@host:path` tokens of a message (git takes no
/// password there, but a spec may hold one): their userinfo.
fn scp_passwords(text: &str) -> Vec<Userinfo> {
    let mut found = Vec::new();
    let mut offset = 0;
    for token in text.split_inclusive(|c: char| c.is_whitespace()) {
        let start = offset;
        offset += token.len();
        let trimmed = token.trim_start_matches(|c: char| CLOSERS.contains(&c));
        let lead = token.len() - trimmed.len();
        if trimmed.contains("://") {
            continue;
        }
        if let Some(u) = scp_userinfo(trimmed)
            && trimmed[..u.end].contains(':')
            && trimmed.find(':') < trimmed.find('/').or(Some(usize::MAX))
        {
            found.push(Userinfo { start: start + lead, end: start + lead + u.end, ..u });
        }
    }
    found
}

/// [`scrub_url`] for a text that is exactly one repository URL (as in a
/// spec): spaces are then part of the URL, and scp-like `user:pass@host:path`
/// is understood.
pub(crate) fn scrub_one_url(url: &str) -> String {
    apply_scrub(url, &one_url_userinfos(url))
}

fn one_url_userinfos(url: &str) -> Vec<Userinfo> {
    if url.contains("://") {
        return find_userinfos(url, true);
    }
    // git's rule: a colon before the first slash makes it scp-like; else a local path.
    let scp = url.find(':').is_some_and(|colon| colon < url.find('/').unwrap_or(usize::MAX));
    if scp { scp_userinfo(url).into_iter().collect() } else { Vec::new() }
}

/// The secret strings a repository URL carries, for a redaction layer: the
/// parts of its userinfo (user name and password; for ssh only a password),
/// each raw and percent-decoded, plus the `user:password` pair as sent in a
/// Basic `Authorization` header (base64). Empty for URLs without userinfo.
/// Values may be short; a redactor decides what is too short to replace.
pub fn url_secrets(url: &str) -> Vec<String> {
    let found = one_url_userinfos(url);
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: String| {
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    };
    for u in found {
        let userinfo = &url[u.start..u.end];
        let (user, password) = match userinfo.split_once(':') {
            Some((user, password)) => (user, Some(password)),
            None => (userinfo, None),
        };
        if !u.ssh || u.doubtful {
            push(user.to_string());
            push(percent_decode(user));
            if u.doubtful {
                push(userinfo.to_string());
            }
        }
        if let Some(password) = password {
            push(password.to_string());
            push(percent_decode(password));
            if !u.ssh {
                let pair = format!("{}:{}", percent_decode(user), percent_decode(password));
                push(openssl::base64::encode_block(pair.as_bytes()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// URLs with credentials, the secret each must never show, and how the
    /// URL looks scrubbed.
    const CORPUS: &[(&str, &[&str], &str)] = &[
        // GitHub's own form: a token as the user name.
        (
            "https://ghp_Tok3nAsUser@github.com/org/repo.git",
            &["ghp_Tok3nAsUser"],
            "https://***@github.com/org/repo.git",
        ),
        ("https://x-access-token:ghs_S3cret@github.com/o/r", &["ghs_S3cret"], "https://***@github.com/o/r"),
        (
            "https://user:pass-w0rd@example.com:8443/org/repo.git",
            &["pass-w0rd"],
            "https://***@example.com:8443/org/repo.git",
        ),
        // Reserved characters percent-encoded ...
        ("https://user:pa%2Fss%23w%3Frd%20x%40y@host/repo", &["pa%2Fss%23w%3Frd%20x%40y"], "https://***@host/repo"),
        // ... and raw, which breaks a naive parse of the authority.
        ("https://user:pa/ss#w?rd x@host/repo", &["pa/ss#w?rd x", "ss#w", "rd x"], "https://***@host/repo"),
        ("https://user:p@ss@w:rd@host/repo", &["p@ss@w:rd"], "https://***@host/repo"),
        ("https://tok/en'q\"uo(te)s@host:443/r", &["tok/en'q\"uo(te)s", "en'q"], "https://***@host:443/r"),
        ("https://u:a://b@h/x", &["a://b"], "https://***@h/x"),
        ("https://ab/cd ef@github.com/x", &["ab/cd ef", "cd ef"], "https://***@github.com/x"),
        ("HTTP://u:Upper-Secret@[::1]:8080/r", &["Upper-Secret"], "HTTP://***@[::1]:8080/r"),
        // ssh keeps its user name; a password goes.
        ("ssh://git:ssh-Passw0rd@h:22/x", &["ssh-Passw0rd"], "ssh://git:***@h:22/x"),
        ("git:scp-Passw0rd@github.com:org/r.git", &["scp-Passw0rd"], "git:***@github.com:org/r.git"),
    ];

    #[test]
    fn scrubs_every_userinfo_shape() {
        for (url, secrets, scrubbed) in CORPUS {
            assert_eq!(&scrub_one_url(url), scrubbed, "{url}");
            // The same URL inside libgit2-style messages.
            for message in [
                format!("failed to connect to {url}: Connection refused"),
                format!("unexpected http status code: 404 for '{url}'"),
                format!("remote \"{url}\" (fetch)\nretrying"),
                url.to_string(),
            ] {
                let shown = scrub_url(&message);
                for secret in *secrets {
                    assert!(!shown.contains(secret), "{secret:?} shown in {shown:?}");
                }
                assert!(shown.contains("***"), "{shown}");
            }
            for secret in *secrets {
                let found = url_secrets(url);
                assert!(found.iter().any(|s| s.contains(secret)), "url_secrets({url:?}) = {found:?} misses {secret:?}");
            }
        }
    }

    #[test]
    fn scrubs_several_urls_and_leaves_other_text() {
        assert_eq!(
            scrub_url("failed for 'https://u:p@w:rd@h:8443/x' and http://a:b@c"),
            "failed for 'https://***@h:8443/x' and http://***@c"
        );
        assert_eq!(
            scrub_url("'https://tok1@a.example/x' -> \"https://u:p2@b.example/y\", then ssh://git@c/z"),
            "'https://***@a.example/x' -> \"https://***@b.example/y\", then ssh://git@c/z"
        );
        assert_eq!(scrub_url("https://token@h/x"), "https://***@h/x");
        assert_eq!(scrub_url("no url here"), "no url here");
        assert_eq!(scrub_url("ssh://git@h:22/x"), "ssh://git@h:22/x");
        // An '@' after the URL, past a space or on another line, is not userinfo.
        for text in [
            "fetching https://git.example/repo failed; ask admin@example.com",
            "https://git.example/repo\nadmin@example.com",
            "file:///srv/a@b/repo.git: not found",
            "",
        ] {
            assert_eq!(scrub_url(text), text);
        }
        // Only the token of a `scheme://` parse is looked at: plain paths stay.
        assert_eq!(GitUrl::parse("/srv/a@b:c/repo").unwrap().scrubbed(), "/srv/a@b:c/repo");
        assert_eq!(GitUrl::parse("git@github.com:org/repo.git").unwrap().scrubbed(), "git@github.com:org/repo.git");
    }

    #[test]
    fn url_secrets_lists_userinfo_parts() {
        let s = url_secrets("https://user:pa%2Fss@h/x");
        for expected in ["user", "pa%2Fss", "pa/ss"] {
            assert!(s.contains(&expected.to_string()), "{s:?}");
        }
        assert!(s.contains(&openssl::base64::encode_block(b"user:pa/ss")), "{s:?}");
        assert_eq!(url_secrets("https://TOKEN123@h/x"), ["TOKEN123"]);
        assert_eq!(url_secrets("ssh://git:pw@h/x"), ["pw"]);
        for none in ["https://h/x", "ssh://git@h/x", "git@github.com:org/r", "/tmp/a@b", "file:///srv/a@b/r"] {
            assert!(url_secrets(none).is_empty(), "{none}: {:?}", url_secrets(none));
        }
    }

    #[test]
    fn invalid_urls_do_not_show_their_password() {
        let err = GitUrl::parse("https://user:pa/ss#w?rd x@host:notaport/repo").unwrap_err();
        let shown = err.to_string();
        assert!(!shown.contains("pa/ss") && !shown.contains("rd x"), "{shown}");
        let u = GitUrl::parse("https://me:secret@example.com:8443/a/b.git").unwrap();
        assert_eq!(u.scrubbed(), "https://***@example.com:8443/a/b.git");
    }

    #[test]
    fn classifies() {
        let u = GitUrl::parse("https://me:secret@example.com:8443/a/b.git").unwrap();
        assert_eq!(u.transport(), Transport::Https);
        assert_eq!(u.username(), Some("me"));
        assert_eq!(u.host(), Some("example.com"));
        assert_eq!(u.port(), Some(8443));
        assert!(!format!("{u:?}").contains("secret"));

        let u = GitUrl::parse("git@github.com:org/repo.git").unwrap();
        assert_eq!(u.transport(), Transport::Ssh);
        assert_eq!(u.username(), Some("git"));
        assert_eq!(u.host(), Some("github.com"));
        assert_eq!(u.port(), None);

        let u = GitUrl::parse("ssh://git@[::1]:2222/srv/repo.git").unwrap();
        assert_eq!((u.host(), u.port()), (Some("::1"), Some(2222)));

        assert_eq!(GitUrl::parse("file:///srv/repo.git").unwrap().transport(), Transport::Local);
        assert_eq!(GitUrl::parse("/srv/repo.git").unwrap().transport(), Transport::Local);
        assert_eq!(GitUrl::parse("./repo").unwrap().transport(), Transport::Local);

        for bad in ["", " https://x/y", "ftp://h/x", "https:///x", "https://h:notaport/x", "ssh://u:p@h/x"] {
            let err = GitUrl::parse(bad).unwrap_err();
            assert_eq!(err.category(), super::super::ErrorCategory::InvalidSpec, "{bad}");
        }
    }
}
