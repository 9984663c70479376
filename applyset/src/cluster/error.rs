//! What can go wrong talking to the cluster, typed so that callers decide by [`ErrorCategory`]
//! (or the `is_*` predicates), never by an error's text: messages are kubectl's and may change
//! with the apiserver's wording, the categories do not.

use std::fmt;

/// The bounded set of cluster failure kinds. [`ErrorCategory::as_str`] is stable and meant for
/// metric labels and condition reasons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCategory {
    /// No answer from the apiserver: connection refused, DNS, TLS handshake, timeout.
    Unreachable,
    /// The credentials were refused (401) or could not be obtained (exec plugin, token file).
    Unauthorized,
    /// RBAC said no (403).
    Forbidden,
    /// The object (or the resource) does not exist (404).
    NotFound,
    /// A create found the object already there (409 `AlreadyExists`).
    AlreadyExists,
    /// A write lost a race (409 other than `AlreadyExists`): retrying on fresh state may work.
    Conflict,
    /// The apiserver rejected the object's content (422 or reason `Invalid`).
    Invalid,
    /// Any other 4xx: a request the apiserver will not take as sent.
    Rejected,
    /// 5xx or 429: the apiserver (or what it fronts) is overloaded or failing; transient.
    Unavailable,
    /// Discovery knows no resource for the kind.
    NoMatch,
    /// No usable kubeconfig or client.
    Config,
    /// Anything else (an undecodable response, a request that could not be built).
    Other,
}

impl ErrorCategory {
    /// Every category, in declaration order (for pre-registering metrics).
    pub const ALL: [ErrorCategory; 12] = [
        ErrorCategory::Unreachable,
        ErrorCategory::Unauthorized,
        ErrorCategory::Forbidden,
        ErrorCategory::NotFound,
        ErrorCategory::AlreadyExists,
        ErrorCategory::Conflict,
        ErrorCategory::Invalid,
        ErrorCategory::Rejected,
        ErrorCategory::Unavailable,
        ErrorCategory::NoMatch,
        ErrorCategory::Config,
        ErrorCategory::Other,
    ];

    /// A CamelCase name usable as a condition reason and a metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::Unreachable => "Unreachable",
            ErrorCategory::Unauthorized => "Unauthorized",
            ErrorCategory::Forbidden => "Forbidden",
            ErrorCategory::NotFound => "NotFound",
            ErrorCategory::AlreadyExists => "AlreadyExists",
            ErrorCategory::Conflict => "Conflict",
            ErrorCategory::Invalid => "Invalid",
            ErrorCategory::Rejected => "Rejected",
            ErrorCategory::Unavailable => "Unavailable",
            ErrorCategory::NoMatch => "NoMatch",
            ErrorCategory::Config => "Config",
            ErrorCategory::Other => "Other",
        }
    }

    /// Whether the same request may succeed later without anything changing on our side.
    pub fn is_transient(self) -> bool {
        matches!(self, ErrorCategory::Unreachable | ErrorCategory::Unavailable | ErrorCategory::Conflict)
    }
}

impl fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `metav1.Status` failure answered by the apiserver.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiStatus {
    pub code: u16,
    pub reason: String,
    pub message: String,
    /// `details.kind`, `details.name` and `details.causes` (field, message), when given.
    pub details_kind: String,
    pub details_name: String,
    pub causes: Vec<(String, String)>,
}

impl ApiStatus {
    /// The status of a failed response: its `Status` body, else the body's text (proxies and
    /// aggregated apiservers answer with plain text), else the bare HTTP code.
    pub(super) fn from_body(code: u16, body: &[u8]) -> ApiStatus {
        let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
        let Some(status) = parsed.filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some("Status")) else {
            let text = String::from_utf8_lossy(body).trim().to_owned();
            return ApiStatus {
                code,
                reason: String::new(),
                message: if text.is_empty() { format!("the server responded with HTTP status {code}") } else { text },
                details_kind: String::new(),
                details_name: String::new(),
                causes: Vec::new(),
            };
        };
        let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).unwrap_or("").to_owned();
        let details = status.get("details");
        let causes = details
            .and_then(|d| d.get("causes"))
            .and_then(|c| c.as_array())
            .map(|causes| causes.iter().map(|c| (text(c.get("field")), text(c.get("message")))).collect())
            .unwrap_or_default();
        ApiStatus {
            code: status.get("code").and_then(|c| c.as_u64()).map_or(code, |c| c as u16),
            reason: text(status.get("reason")),
            message: text(status.get("message")),
            details_kind: text(details.and_then(|d| d.get("kind"))),
            details_name: text(details.and_then(|d| d.get("name"))),
            causes,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.code == 404
    }

    pub fn is_conflict(&self) -> bool {
        self.code == 409 && self.reason != "AlreadyExists"
    }

    pub fn is_already_exists(&self) -> bool {
        self.code == 409 && self.reason == "AlreadyExists"
    }

    pub fn is_invalid(&self) -> bool {
        self.code == 422 || self.reason == "Invalid"
    }

    pub fn is_unauthorized(&self) -> bool {
        self.code == 401 || self.reason == "Unauthorized"
    }

    /// The category of the status, from its code and reason (as apimachinery's `errors.Is*`).
    pub fn category(&self) -> ErrorCategory {
        if self.is_unauthorized() {
            ErrorCategory::Unauthorized
        } else if self.code == 403 {
            ErrorCategory::Forbidden
        } else if self.is_not_found() {
            ErrorCategory::NotFound
        } else if self.is_already_exists() {
            ErrorCategory::AlreadyExists
        } else if self.is_conflict() {
            ErrorCategory::Conflict
        } else if self.is_invalid() {
            ErrorCategory::Invalid
        } else if self.code == 429 || self.code >= 500 {
            ErrorCategory::Unavailable
        } else if self.code >= 400 {
            ErrorCategory::Rejected
        } else {
            ErrorCategory::Other
        }
    }
}

/// What can go wrong talking to the cluster.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The apiserver answered with a failure status.
    #[error("{}", .0.message)]
    Api(Box<ApiStatus>),
    /// No request reached the apiserver (connection refused, TLS, DNS, timeout…).
    #[error("cannot reach the Kubernetes API server at {server}: {reason}")]
    Unreachable { server: String, reason: String },
    /// The client could not authenticate before sending (exec plugin, token file): no request
    /// left either, so it reads as [`Error::Unreachable`] does, but retrying will not help.
    #[error("cannot reach the Kubernetes API server at {server}: {reason}")]
    Auth { server: String, reason: String },
    /// The REST mapper knows no resource for the kind (`meta.NoKindMatchError`).
    #[error("no matches for kind \"{kind}\" in version \"{api_version}\"")]
    NoMatch { kind: String, api_version: String },
    /// The kubeconfig (or in-cluster config) cannot be loaded, or no client built from it.
    #[error("{0}")]
    Config(String),
    /// The kubeconfig and kubectl's global flags make no usable configuration (kubectl's words).
    #[error(transparent)]
    Kubeconfig(#[from] super::config::ConfigError),
    /// Response decoding and every other failure.
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// A request that got no response, typed by what failed: the client's authentication, or
    /// the transport. `reason` is the whole cause chain, as kubectl prints it.
    pub(super) fn from_transport(server: &str, error: &kube::Error) -> Error {
        let reason = crate::causes::with_causes(error);
        let server = server.to_owned();
        match error {
            kube::Error::Auth(_) => Error::Auth { server, reason },
            _ => Error::Unreachable { server, reason },
        }
    }

    pub fn status(&self) -> Option<&ApiStatus> {
        match self {
            Error::Api(status) => Some(&**status),
            _ => None,
        }
    }

    /// The bounded kind of the failure.
    pub fn category(&self) -> ErrorCategory {
        match self {
            Error::Api(status) => status.category(),
            Error::Unreachable { .. } => ErrorCategory::Unreachable,
            Error::Auth { .. } => ErrorCategory::Unauthorized,
            Error::NoMatch { .. } => ErrorCategory::NoMatch,
            Error::Config(_) | Error::Kubeconfig(_) => ErrorCategory::Config,
            Error::Other(_) => ErrorCategory::Other,
        }
    }

    /// No response came back: the transport failed (decided by where the error arose, not by
    /// its text).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Error::Unreachable { .. })
    }

    pub fn is_not_found(&self) -> bool {
        self.status().is_some_and(ApiStatus::is_not_found)
    }

    pub fn is_already_exists(&self) -> bool {
        self.status().is_some_and(ApiStatus::is_already_exists)
    }

    pub fn is_conflict(&self) -> bool {
        self.status().is_some_and(ApiStatus::is_conflict)
    }

    pub fn is_invalid(&self) -> bool {
        self.status().is_some_and(ApiStatus::is_invalid)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Whether a `kube::Api` call failed in the transport (no response: connect, DNS, TLS, I/O,
/// timeout), decided from the error's type and its typed causes — for the callers that use
/// `kube::Api` on a [`super::Cluster`]'s client instead of its raw requests.
pub fn is_unreachable(error: &kube::Error) -> bool {
    match error {
        kube::Error::HyperError(_) => true,
        kube::Error::Service(cause) => {
            let this: &(dyn std::error::Error + 'static) = cause.as_ref();
            std::iter::once(this)
                .chain(crate::causes::causes(this))
                .find_map(|cause| {
                    if cause.is::<std::io::Error>() || cause.is::<hyper::Error>() || cause.is::<kube::Error>() {
                        Some(cause.downcast_ref::<kube::Error>().is_none_or(is_unreachable))
                    } else {
                        None
                    }
                })
                .unwrap_or(false)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_parsing() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Deployment.apps \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0","reason":"Invalid","details":{"name":"web","group":"apps","kind":"Deployment","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: -1: must be greater than or equal to 0","field":"spec.replicas"}]},"code":422}"#;
        let status = ApiStatus::from_body(422, body);
        assert!(status.is_invalid());
        assert_eq!(status.category(), ErrorCategory::Invalid);
        assert_eq!(status.details_kind, "Deployment");
        assert_eq!(
            status.causes,
            vec![("spec.replicas".to_owned(), "Invalid value: -1: must be greater than or equal to 0".to_owned())]
        );
        let plain = ApiStatus::from_body(503, b"no endpoints");
        assert_eq!(plain.message, "no endpoints");
        assert_eq!(plain.category(), ErrorCategory::Unavailable);
    }

    #[test]
    fn status_categories() {
        let status = |code: u16, reason: &str| ApiStatus {
            code,
            reason: reason.into(),
            message: String::new(),
            details_kind: String::new(),
            details_name: String::new(),
            causes: Vec::new(),
        };
        let cases = [
            (401, "Unauthorized", ErrorCategory::Unauthorized),
            (403, "Forbidden", ErrorCategory::Forbidden),
            (404, "NotFound", ErrorCategory::NotFound),
            (409, "AlreadyExists", ErrorCategory::AlreadyExists),
            (409, "Conflict", ErrorCategory::Conflict),
            (422, "Invalid", ErrorCategory::Invalid),
            (400, "Invalid", ErrorCategory::Invalid),
            (400, "BadRequest", ErrorCategory::Rejected),
            (429, "TooManyRequests", ErrorCategory::Unavailable),
            (504, "Timeout", ErrorCategory::Unavailable),
        ];
        for (code, reason, category) in cases {
            let error = Error::Api(Box::new(status(code, reason)));
            assert_eq!(error.category(), category, "{code} {reason}");
            assert!(!error.is_unreachable());
        }
    }

    #[test]
    fn transport_errors_are_typed() {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let service = kube::Error::Service(Box::new(refused));
        assert!(is_unreachable(&service));
        let error = Error::from_transport("https://127.0.0.1:1", &service);
        assert!(error.is_unreachable());
        assert_eq!(error.category(), ErrorCategory::Unreachable);
        assert!(error.to_string().starts_with("cannot reach the Kubernetes API server at https://127.0.0.1:1: "));
        // A service error that is not the transport's (a text-only cause) is not taken for one,
        // whatever its wording.
        let worded = kube::Error::Service("connection refused".into());
        assert!(!is_unreachable(&worded));
        let decode = kube::Error::SerdeError(serde_json::from_str::<u8>("x").unwrap_err());
        assert!(!is_unreachable(&decode));
    }
}
