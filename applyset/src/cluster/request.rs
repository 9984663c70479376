//! The shape of the raw requests: write query parameters, patch content types, REST paths and
//! the decoding of response bodies, each exactly as kubectl sends and reads them.

use applyset_merge::Value;

use super::discovery::Mapping;
use super::error::{Error, Result};

use crate::causes::with_causes;

/// Query parameters of writes.
#[derive(Debug, Clone)]
pub struct WriteParams {
    pub field_manager: String,
    /// `Strict`, `Warn` or `Ignore`.
    pub field_validation: String,
    pub server_dry_run: bool,
    /// Server-side apply: take the fields other managers own (`force=true`).
    pub force: bool,
}

impl WriteParams {
    /// The parameters in kubectl's order (`dryRun`, `fieldManager`, `fieldValidation`), the
    /// empty ones left out.
    pub(super) fn query(&self) -> Vec<(&'static str, String)> {
        let mut query = Vec::new();
        if self.server_dry_run {
            query.push(("dryRun", "All".to_owned()));
        }
        if !self.field_manager.is_empty() {
            query.push(("fieldManager", self.field_manager.clone()));
        }
        if !self.field_validation.is_empty() {
            query.push(("fieldValidation", self.field_validation.clone()));
        }
        if self.force {
            query.push(("force", "true".to_owned()));
        }
        query
    }
}

/// The two patch formats of client-side apply, and server-side apply's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Strategic,
    JsonMerge,
    /// Server-side apply (the controller's fallback for objects too large for the annotation).
    Apply,
}

impl PatchType {
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Strategic => "application/strategic-merge-patch+json",
            PatchType::JsonMerge => "application/merge-patch+json",
            // JSON is YAML: the body is sent as JSON.
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}

/// `/api/v1/namespaces/ns/configmaps/name?query` and friends.
pub fn object_path(mapping: &Mapping, namespace: Option<&str>, name: Option<&str>, query: &[(&str, &str)]) -> String {
    let resource = &mapping.resource;
    let mut path = if resource.group.is_empty() {
        format!("/api/{}", resource.version)
    } else {
        format!("/apis/{}/{}", resource.group, resource.version)
    };
    if mapping.namespaced
        && let Some(namespace) = namespace
    {
        path.push_str("/namespaces/");
        path.push_str(&percent_encode(namespace));
    }
    path.push('/');
    path.push_str(&resource.plural);
    if let Some(name) = name {
        path.push('/');
        path.push_str(&percent_encode(name));
    }
    for (i, (key, value)) in query.iter().enumerate() {
        path.push(if i == 0 { '?' } else { '&' });
        path.push_str(key);
        path.push('=');
        path.push_str(&percent_encode(value));
    }
    path
}

/// Percent-encoding of everything but RFC 3986 unreserved characters (query values here, a
/// proxy's user info in the git source).
pub(crate) fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A response body read with the merge engine's Go-exact JSON parser, so that numbers and key
/// order survive exactly as the apiserver sent them.
pub(super) fn parse_body(body: &[u8]) -> Result<Value> {
    Value::from_json_slice(body).map_err(|e| Error::Other(format!("cannot decode the server's response: {}", e.0)))
}

/// A request with `Accept: application/json` and, when given, a JSON body of `content_type`.
pub(super) fn json_request(
    method: http::Method,
    path: String,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> Result<http::Request<Vec<u8>>> {
    let mut request =
        http::Request::builder().method(method).uri(path).header(http::header::ACCEPT, "application/json");
    if let Some(content_type) = content_type {
        request = request.header(http::header::CONTENT_TYPE, content_type);
    }
    request.body(body).map_err(|e| Error::Other(with_causes(&e)))
}

/// `--dry-run`: nothing sent (client), sent with `dryRun=All` (server), or for real.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DryRun {
    #[default]
    None,
    Client,
    Server,
}

impl DryRun {
    /// The suffix kubectl appends to each output line.
    pub fn suffix(self) -> &'static str {
        match self {
            DryRun::None => "",
            DryRun::Client => " (dry run)",
            DryRun::Server => " (server dry run)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::{ApiResource, GroupVersionKind};

    fn mapping(group: &str, namespaced: bool) -> Mapping {
        let gvk = GroupVersionKind::gvk(group, "v1", "Thing");
        Mapping { resource: ApiResource::from_gvk_with_plural(&gvk, "things"), namespaced }
    }

    #[test]
    fn paths() {
        assert_eq!(object_path(&mapping("", true), Some("ns"), Some("a"), &[]), "/api/v1/namespaces/ns/things/a");
        assert_eq!(
            object_path(&mapping("example.com", false), Some("ns"), None, &[("labelSelector", "a=b,c in (d)")]),
            "/apis/example.com/v1/things?labelSelector=a%3Db%2Cc%20in%20%28d%29"
        );
    }

    #[test]
    fn write_query() {
        let params = WriteParams {
            field_manager: "m".into(),
            field_validation: "Strict".into(),
            server_dry_run: true,
            force: false,
        };
        let query = params.query();
        let keys: Vec<&str> = query.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["dryRun", "fieldManager", "fieldValidation"]);
    }
}
