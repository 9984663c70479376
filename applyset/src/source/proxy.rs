//! Which proxy an HTTPS git remote is reached through, decided once for both the ref listing
//! ([`super::listing`]) and libgit2: `spec.source.proxySecretRef` (Flux's GitRepository keys
//! `address`, `username`, `password`) when set, else the standard environment as curl reads
//! it (`HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`, upper or lower case). The remote is reached
//! through a `CONNECT` tunnel, its certificate checked end to end.
//!
//! Plain `http://` remotes are never proxied: libgit2 (1.9) writes a proxy's absolute-form
//! request but opens its connection to the remote itself, so a fetch through a proxy cannot
//! work; `proxySecretRef` on such a URL is refused ([`route`]'s caller), and `HTTP_PROXY` does
//! not apply. SSH and local remotes never go through one either.

use std::collections::BTreeMap;
use std::fmt;

use hyper_util::client::proxy::matcher::Matcher;

use super::credentials::Secret;
use super::error::SourceError;
use super::url::{GitUrl, Transport};

/// `spec.source.proxySecretRef`'s content.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxySettings {
    /// `http://proxy.example:3128` (a URL; `http://` is assumed without a scheme).
    pub address: String,
    pub username: Option<String>,
    pub password: Option<Secret>,
}

impl fmt::Debug for ProxySettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxySettings")
            .field("address", &super::url::scrub_one_url(&self.address))
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl ProxySettings {
    /// From a Secret's `data`: `address` (required), `username`, `password`.
    pub fn from_secret_data(data: &BTreeMap<String, Vec<u8>>) -> Result<ProxySettings, SourceError> {
        let text = |key: &str| -> Result<Option<String>, SourceError> {
            data.get(key)
                .map(|v| {
                    std::str::from_utf8(v)
                        .map(|s| s.trim_end_matches(['\n', '\r']).to_owned())
                        .map_err(|_| SourceError::invalid(format!("proxy secret key {key:?} is not UTF-8")))
                })
                .transpose()
        };
        let address = text("address")?.filter(|a| !a.is_empty());
        let Some(address) = address else {
            return Err(SourceError::invalid("the proxy secret has no `address` key (e.g. http://proxy.example:3128)"));
        };
        let address = if address.contains("://") { address } else { format!("http://{address}") };
        if ProxyUrl::parse(&address).is_none() {
            return Err(SourceError::invalid(format!(
                "the proxy secret's address {:?} is not an http(s) URL with a host",
                super::url::scrub_one_url(&address)
            )));
        }
        let password = text("password")?.map(|p| Secret::new(p.into_bytes()));
        Ok(ProxySettings { address, username: text("username")?.filter(|u| !u.is_empty()), password })
    }

    /// What identifies this proxy in the ids of shared sources.
    pub(crate) fn digest_parts(&self) -> [&[u8]; 3] {
        [
            self.address.as_bytes(),
            self.username.as_deref().unwrap_or_default().as_bytes(),
            self.password.as_ref().map(Secret::expose).unwrap_or_default(),
        ]
    }
}

/// A proxy chosen for a remote: where it is, and who to say we are.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ProxyUrl {
    /// `scheme://host:port`, without credentials.
    pub(crate) address: String,
    pub(crate) username: Option<String>,
    pub(crate) password: Option<Secret>,
}

impl fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyUrl").field("address", &self.address).field("username", &self.username).finish()
    }
}

impl ProxyUrl {
    /// An `http(s)://[user[:password]@]host[:port][/]` URL, split.
    fn parse(url: &str) -> Option<ProxyUrl> {
        let parsed = super::redirect::HttpUrl::parse(url)?;
        if !matches!(parsed.path, "" | "/") {
            return None;
        }
        let authority = parsed.prefix.split_once("://")?.1;
        let (username, password) = match authority.rsplit_once('@') {
            Some((userinfo, _)) => {
                let (user, password) = userinfo.split_once(':').map_or((userinfo, None), |(u, p)| (u, Some(p)));
                let decode = |s: &str| super::url::percent_decode(s);
                (Some(decode(user)), password.map(|p| Secret::new(decode(p).into_bytes())))
            }
            None => (None, None),
        };
        Some(ProxyUrl { address: parsed.origin.to_string(), username, password })
    }

    /// The URL libgit2 is given: credentials percent-encoded in its user info (libgit2 answers
    /// a proxy's 407 with them).
    pub(crate) fn for_libgit2(&self) -> String {
        let Some(user) = &self.username else { return self.address.clone() };
        let (scheme, rest) = self.address.split_once("://").unwrap_or(("http", &self.address));
        let password = self.password.as_ref().and_then(Secret::expose_str).unwrap_or_default();
        format!(
            "{scheme}://{}:{}@{rest}",
            crate::cluster::percent_encode(user),
            crate::cluster::percent_encode(password)
        )
    }
}

/// The proxy `url` is reached through: `explicit` (the ApplySet's) for an https remote, else
/// what `environment` (a [`Matcher`] of the process's variables) says; none for other remotes.
pub(crate) fn route(url: &GitUrl, explicit: Option<&ProxySettings>, environment: &Matcher) -> Option<ProxyUrl> {
    if url.transport() != Transport::Https {
        return None;
    }
    if let Some(settings) = explicit {
        let mut proxy = ProxyUrl::parse(&settings.address)?;
        if settings.username.is_some() {
            proxy.username.clone_from(&settings.username);
            proxy.password.clone_from(&settings.password);
        }
        return Some(proxy);
    }
    let target: http::Uri =
        super::redirect::HttpUrl::parse(url.raw()).and_then(|u| format!("{}/", u.origin).parse().ok())?;
    let intercept = environment.intercept(&target)?;
    let mut proxy = ProxyUrl::parse(&intercept.uri().to_string())?;
    // The matcher keeps the variable's credentials as a Basic header: read them back.
    if let Some(basic) = intercept.basic_auth().and_then(|v| v.to_str().ok()?.strip_prefix("Basic ").map(str::to_owned))
    {
        let decoded = openssl::base64::decode_block(&basic).ok().and_then(|b| String::from_utf8(b).ok());
        if let Some((user, password)) = decoded.as_deref().and_then(|d| d.split_once(':')) {
            proxy.username = Some(user.to_owned());
            proxy.password = Some(Secret::new(password.as_bytes().to_vec()));
        }
    }
    Some(proxy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<ProxySettings, SourceError> {
        ProxySettings::from_secret_data(&pairs.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect())
    }

    fn git(url: &str) -> GitUrl {
        GitUrl::parse(url).expect("a git URL")
    }

    fn env(pairs: &[(&str, &str)]) -> Matcher {
        let mut builder = Matcher::builder();
        for (key, value) in pairs {
            builder = match *key {
                "HTTPS_PROXY" => builder.https(*value),
                "HTTP_PROXY" => builder.http(*value),
                "NO_PROXY" => builder.no(*value),
                _ => builder.all(*value),
            };
        }
        builder.build()
    }

    #[test]
    fn the_secret_gives_address_and_credentials() {
        let s = settings(&[("address", "proxy.example:3128\n"), ("username", "u"), ("password", "p@ss")]).unwrap();
        assert_eq!(s.address, "http://proxy.example:3128");
        let proxy = route(&git("https://git.example/r.git"), Some(&s), &env(&[])).expect("proxied");
        assert_eq!(proxy.address, "http://proxy.example:3128");
        assert_eq!(proxy.for_libgit2(), "http://u:p%40ss@proxy.example:3128");
        assert!(settings(&[("username", "u")]).is_err(), "no address");
        assert!(settings(&[("address", "http://proxy.example:3128/path")]).is_err(), "a path is not a proxy");
        let debug = format!("{s:?}");
        assert!(!debug.contains("p@ss"), "{debug}");
    }

    #[test]
    fn the_environment_is_read_as_curl_reads_it() {
        let matcher = env(&[("HTTPS_PROXY", "http://a:b@proxy.example:8080"), ("NO_PROXY", "internal.example,.corp")]);
        let proxy = route(&git("https://github.example/r.git"), None, &matcher).expect("proxied");
        assert_eq!(proxy.for_libgit2(), "http://a:b@proxy.example:8080");
        assert!(route(&git("https://internal.example/r.git"), None, &matcher).is_none(), "NO_PROXY host");
        assert!(route(&git("https://git.corp/r.git"), None, &matcher).is_none(), "NO_PROXY domain");
        assert!(route(&git("http://github.example/r.git"), None, &matcher).is_none(), "HTTPS_PROXY is for https");
        assert!(route(&git("ssh://git@github.example/r.git"), None, &env(&[("ALL", "http://p:1")])).is_none());
        // libgit2 cannot fetch a plain-http remote through a proxy: none is chosen for one.
        let plain = route(&git("http://h.example/r.git"), None, &env(&[("HTTP_PROXY", "http://p.example:3128")]));
        assert!(plain.is_none());
        let all = route(&git("https://h.example/r.git"), None, &env(&[("ALL", "http://p.example:3128")]));
        assert_eq!(all.map(|p| p.for_libgit2()).as_deref(), Some("http://p.example:3128"));
    }
}
