//! Redirects of HTTP(S) remotes: where a redirect of the ref listing may lead.
//!
//! libgit2 follows a redirect of the first request anywhere by default, and
//! even with `RemoteRedirect::None` it still follows one to the same host on
//! another port, or from http to https: a server (or a path on it) could
//! switch the ApplySet to another repository, whose objects would be applied
//! and the original's pruned, and credentials could be sent there. So before
//! libgit2 connects, the ref listing is made by [`super::listing`], which
//! follows a redirect within the same scheme, host and port ([`follow`]:
//! libgit2 is then handed the new repository URL) and refuses any other.

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
    pub(crate) fn host_header(&self) -> String {
        let default = if self.origin.scheme == "https" { 443 } else { 80 };
        let host =
            if self.origin.host.contains(':') { format!("[{}]", self.origin.host) } else { self.origin.host.clone() };
        if self.origin.port == default { host } else { format!("{host}:{}", self.origin.port) }
    }

    /// The repository path without query or fragment, no trailing '/'.
    pub(crate) fn repo_path(&self) -> &str {
        let end = self.path.find(['?', '#']).unwrap_or(self.path.len());
        self.path[..end].trim_end_matches('/')
    }
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
    fn parses_origins() {
        let u = base("http://[::1]:9000/r.git?x=1");
        assert_eq!((u.origin.host.as_str(), u.origin.port), ("::1", 9000));
        assert_eq!(u.repo_path(), "/r.git");
        assert_eq!(u.host_header(), "[::1]:9000");
        assert_eq!(base("https://h").repo_path(), "");
        assert!(HttpUrl::parse("ssh://h/x").is_none());
    }
}
