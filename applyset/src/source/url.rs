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
        f.debug_struct("GitUrl")
            .field("url", &scrub_url(&self.raw))
            .field("transport", &self.transport)
            .finish()
    }
}

impl GitUrl {
    /// Parse and classify `url`. Accepts `https://`, `http://`, `ssh://`,
    /// scp-like `[user@]host:path`, `file://` and plain local paths.
    pub fn parse(url: &str) -> Result<GitUrl, SourceError> {
        let bad = |why: &str| SourceError::invalid(format!("url {:?}: {why}", scrub_url(url)));
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
                    return Err(bad(&format!(
                        "unsupported scheme {other:?} (use https, ssh, http or file)"
                    )));
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
            let (host, port) =
                split_host_port(hostport).ok_or_else(|| bad("invalid host or port"))?;
            if host.is_empty() {
                return Err(bad("no host"));
            }
            if transport == Transport::Ssh && userinfo.is_some_and(|u| u.contains(':')) {
                return Err(bad(
                    "ssh URLs must not contain a password; use the secret's identity",
                ));
            }
            return Ok(GitUrl {
                raw: url.to_string(),
                transport,
                username,
                host: Some(host),
                port,
            });
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
        Ok(GitUrl {
            raw: url.to_string(),
            transport: Transport::Local,
            username: None,
            host: None,
            port: None,
        })
    }

    /// The URL exactly as given (may contain a password: never display it).
    pub(crate) fn raw(&self) -> &str {
        &self.raw
    }

    /// The URL with any password replaced by `***`.
    pub fn scrubbed(&self) -> String {
        scrub_url(&self.raw)
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

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Replace the password of every `scheme://user:password@host` occurring in
/// `text` with `***` (the user name stays, as git does). Text without such
/// URLs is returned unchanged.
pub fn scrub_url(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(idx) = rest.find("://") {
        let (before, after) = rest.split_at(idx + 3);
        out.push_str(before);
        // The authority ends at the first '/', whitespace, quote or bracket
        // that closes a message; '@' may occur in the password, so take the
        // last '@' before that end.
        let end = after
            .find(|c: char| {
                c == '/'
                    || c == '?'
                    || c == '#'
                    || c.is_whitespace()
                    || c == '"'
                    || c == '\''
                    || c == '>'
                    || c == ')'
            })
            .unwrap_or(after.len());
        let authority = &after[..end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.split_once(':') {
                    Some((user, _password)) => {
                        out.push_str(user);
                        out.push_str(":***");
                    }
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_passwords() {
        assert_eq!(
            scrub_url("https://user:pa%40ss@example.com/org/repo.git"),
            "https://user:***@example.com/org/repo.git"
        );
        assert_eq!(
            scrub_url("failed for 'https://u:p@w:rd@h:8443/x' and http://a:b@c"),
            "failed for 'https://u:***@h:8443/x' and http://a:***@c"
        );
        assert_eq!(scrub_url("https://token@h/x"), "https://token@h/x");
        assert_eq!(scrub_url("no url here"), "no url here");
        assert_eq!(scrub_url("ssh://git@h:22/x"), "ssh://git@h:22/x");
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

        assert_eq!(
            GitUrl::parse("file:///srv/repo.git").unwrap().transport(),
            Transport::Local
        );
        assert_eq!(
            GitUrl::parse("/srv/repo.git").unwrap().transport(),
            Transport::Local
        );
        assert_eq!(
            GitUrl::parse("./repo").unwrap().transport(),
            Transport::Local
        );

        for bad in [
            "",
            " https://x/y",
            "ftp://h/x",
            "https:///x",
            "https://h:notaport/x",
            "ssh://u:p@h/x",
        ] {
            let err = GitUrl::parse(bad).unwrap_err();
            assert_eq!(
                err.category(),
                super::super::ErrorCategory::InvalidSpec,
                "{bad}"
            );
        }
    }
}
