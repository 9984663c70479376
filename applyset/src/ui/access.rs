//! The access token of a UI served beyond loopback (`--allow-remote-access`): every request
//! must carry it, first in the URL the server printed at start, then in a cookie the browser
//! keeps (`Secure`, `HttpOnly`, `SameSite=Strict`), so that the token leaves the address bar
//! after the first page and no other site's page can send it.

use axum::http::{HeaderMap, Uri, header};

use super::server::constant_time_eq;

/// The cookie that carries the token.
pub(super) const COOKIE: &str = "applyset-ui-access";

/// What a request's token says.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Access {
    /// The cookie carries the token.
    Granted,
    /// The URL carries the token: set the cookie and send the browser to `location`, the same
    /// page without the token in its address.
    Grant {
        set_cookie: String,
        location: String,
    },
    Denied,
}

/// A new random token (32 bytes, hex).
pub(super) fn new_token() -> Result<String, openssl::error::ErrorStack> {
    let mut bytes = [0u8; 32];
    openssl::rand::rand_bytes(&mut bytes)?;
    Ok(crate::digest::hex(&bytes))
}

/// Whether the request carries `token`, in its cookie or in its URL's `token` parameter.
pub(super) fn check(token: &str, headers: &HeaderMap, uri: &Uri) -> Access {
    let matches = |given: &str| constant_time_eq(given.as_bytes(), token.as_bytes());
    let cookies = headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok());
    let mut pairs = cookies.flat_map(|line| line.split(';')).filter_map(|pair| pair.trim().split_once('='));
    if pairs.any(|(name, value)| name == COOKIE && matches(value)) {
        return Access::Granted;
    }
    let query = uri.query().unwrap_or_default();
    let (given, rest): (Vec<&str>, Vec<&str>) =
        query.split('&').filter(|p| !p.is_empty()).partition(|p| p.starts_with("token="));
    if !given.iter().any(|pair| matches(&pair["token=".len()..])) {
        return Access::Denied;
    }
    let location = if rest.is_empty() { uri.path().to_owned() } else { format!("{}?{}", uri.path(), rest.join("&")) };
    let set_cookie = format!("{COOKIE}={token}; Path=/; HttpOnly; Secure; SameSite=Strict");
    Access::Grant { set_cookie, location }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    const TOKEN: &str = "0f1e2d3c";

    fn cookie(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn the_cookie_grants_and_nothing_else_does() {
        let uri: Uri = "/applysets/a/b".parse().unwrap();
        assert_eq!(check(TOKEN, &cookie("theme=dark; applyset-ui-access=0f1e2d3c"), &uri), Access::Granted);
        assert_eq!(check(TOKEN, &cookie("applyset-ui-access=0f1e2d3d"), &uri), Access::Denied);
        assert_eq!(check(TOKEN, &cookie("applyset-ui-access="), &uri), Access::Denied);
        assert_eq!(check(TOKEN, &cookie("other=0f1e2d3c"), &uri), Access::Denied);
        assert_eq!(check(TOKEN, &HeaderMap::new(), &uri), Access::Denied);
        let wrong: Uri = "/?token=0f1e2d3".parse().unwrap();
        assert_eq!(check(TOKEN, &HeaderMap::new(), &wrong), Access::Denied);
    }

    #[test]
    fn the_url_token_becomes_a_strict_cookie_and_leaves_the_address() {
        let uri: Uri = "/?notice=3&token=0f1e2d3c".parse().unwrap();
        let Access::Grant { set_cookie, location } = check(TOKEN, &HeaderMap::new(), &uri) else {
            panic!("the token in the URL grants")
        };
        assert_eq!(location, "/?notice=3");
        assert_eq!(set_cookie, "applyset-ui-access=0f1e2d3c; Path=/; HttpOnly; Secure; SameSite=Strict");
        let first: Uri = "/applysets/a/b?token=0f1e2d3c".parse().unwrap();
        assert!(
            matches!(check(TOKEN, &HeaderMap::new(), &first), Access::Grant { location, .. } if location == "/applysets/a/b")
        );
    }

    #[test]
    fn tokens_are_random_and_long() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
