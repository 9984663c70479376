//! One error type for the git source, with a bounded category for metric
//! labels and condition reasons.

use std::fmt;
use std::time::Duration;

use super::checkout::UnsafePath;
use super::git::CredentialsUnusable;
use super::known_hosts::KnownHostsError;
use super::tls::CaError;

/// The bounded set of failure categories. `as_str` is stable and meant for
/// metric labels and `status.conditions[].reason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCategory {
    /// The spec itself is wrong (bad URL, conflicting refs, bad semver range,
    /// bad secret content). Retrying will not help until the spec changes.
    InvalidSpec,
    /// The remote could not be reached or did not speak git (DNS, TCP, TLS
    /// handshake, HTTP errors other than auth, repository not found).
    Unreachable,
    /// The remote rejected the credentials (or required some and none were
    /// given).
    AuthFailed,
    /// The server's identity could not be verified: SSH host key not in
    /// `known_hosts`, or a TLS certificate trusted neither by the system nor by
    /// `ca.crt`.
    UntrustedHost,
    /// The branch, tag, semver range or commit does not exist on the remote.
    RefNotFound,
    /// The whole operation took longer than the timeout.
    Timeout,
    /// An HTTP(S) server redirected to another scheme, host or port (or
    /// libgit2 was sent there): refused, so that another repository is never
    /// applied and credentials never leave the configured server.
    RedirectRefused,
    /// The fetch or the checkout exceeded a size limit.
    TooLarge,
    /// `path` (or a symlink under it) points outside the checkout.
    PathEscapes,
    /// `path` does not exist in the commit, or is not a directory.
    PathNotFound,
    /// A local failure: cache directory, disk, object database.
    Io,
}

impl ErrorCategory {
    /// Whether only a remote gives this failure: the source step was then a network
    /// operation (a listing or a fetch that failed), not a local one.
    pub fn is_remote(self) -> bool {
        matches!(
            self,
            ErrorCategory::Unreachable
                | ErrorCategory::AuthFailed
                | ErrorCategory::UntrustedHost
                | ErrorCategory::RefNotFound
                | ErrorCategory::Timeout
                | ErrorCategory::RedirectRefused
        )
    }

    /// Every category, in declaration order (for pre-registering metrics).
    pub const ALL: [ErrorCategory; 11] = [
        ErrorCategory::InvalidSpec,
        ErrorCategory::Unreachable,
        ErrorCategory::AuthFailed,
        ErrorCategory::UntrustedHost,
        ErrorCategory::RefNotFound,
        ErrorCategory::Timeout,
        ErrorCategory::RedirectRefused,
        ErrorCategory::TooLarge,
        ErrorCategory::PathEscapes,
        ErrorCategory::PathNotFound,
        ErrorCategory::Io,
    ];

    /// A CamelCase name usable as a condition reason and a metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::InvalidSpec => "InvalidSpec",
            ErrorCategory::Unreachable => "Unreachable",
            ErrorCategory::AuthFailed => "AuthFailed",
            ErrorCategory::UntrustedHost => "UntrustedHost",
            ErrorCategory::RefNotFound => "RefNotFound",
            ErrorCategory::Timeout => "Timeout",
            ErrorCategory::RedirectRefused => "RedirectRefused",
            ErrorCategory::TooLarge => "TooLarge",
            ErrorCategory::PathEscapes => "PathEscapes",
            ErrorCategory::PathNotFound => "PathNotFound",
            ErrorCategory::Io => "Io",
        }
    }

    /// Whether retrying later (with the same spec) may succeed.
    pub fn is_transient(self) -> bool {
        matches!(self, ErrorCategory::Unreachable | ErrorCategory::Timeout | ErrorCategory::Io)
    }
}

impl fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an error happened: the (scrubbed) URL and the ref, so that every
/// message names both.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ErrorContext {
    /// The repository URL with any password replaced by `***`.
    pub url: String,
    /// The ref as the user wrote it, e.g. `branch main`, `semver >=1.2.0 <2`.
    pub reference: String,
}

impl fmt::Display for ErrorContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "git source {} ({})", self.url, self.reference)
    }
}

/// What the source Secret holds that the transport cannot use.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SecretUnusable {
    #[error(transparent)]
    KnownHosts(#[from] KnownHostsError),
    #[error(transparent)]
    Ca(#[from] CaError),
    #[error(transparent)]
    Credentials(#[from] CredentialsUnusable),
}

/// The error of every git source operation. Messages never contain
/// credentials: URLs are scrubbed and secret values are removed from causes
/// reported by libgit2 before the error is built.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SourceError {
    #[error("invalid git source: {message}")]
    InvalidSpec { message: String },
    /// The Secret's content cannot be used: an [`ErrorCategory::InvalidSpec`].
    #[error("invalid git source: {ctx}")]
    Secret {
        ctx: ErrorContext,
        #[source]
        cause: SecretUnusable,
    },
    #[error("{ctx}: remote unreachable: {cause}")]
    Unreachable { ctx: ErrorContext, cause: String },
    #[error("{ctx}: authentication failed: {cause}")]
    AuthFailed { ctx: ErrorContext, cause: String },
    #[error("{ctx}: untrusted host: {cause}")]
    UntrustedHost { ctx: ErrorContext, cause: String },
    #[error("{ctx}: ref not found: {cause}")]
    RefNotFound { ctx: ErrorContext, cause: String },
    /// `after` is the limit that expired (the spec's timeout); `cause` says
    /// more when there is more to say (an earlier fetch still running).
    #[error("{ctx}: timed out{}", timeout_detail(*after, cause))]
    Timeout { ctx: ErrorContext, after: Duration, cause: String },
    #[error("{ctx}: redirect refused: {cause}")]
    RedirectRefused { ctx: ErrorContext, cause: String },
    #[error("{ctx}: too large: {cause}")]
    TooLarge { ctx: ErrorContext, cause: String },
    #[error("{ctx}: path {path:?} escapes the checkout: {cause}")]
    PathEscapes { ctx: ErrorContext, path: String, cause: String },
    /// `source.path` refused before the disk is touched: an [`ErrorCategory::PathEscapes`].
    #[error("{ctx}: path {path:?} escapes the checkout")]
    UnsafePath {
        ctx: ErrorContext,
        path: String,
        #[source]
        cause: UnsafePath,
    },
    #[error("{ctx}: path {path:?} not found: {cause}")]
    PathNotFound { ctx: ErrorContext, path: String, cause: String },
    #[error("{ctx}: local I/O error: {cause}")]
    Io { ctx: ErrorContext, cause: String },
}

impl SourceError {
    /// The bounded category of this error.
    pub fn category(&self) -> ErrorCategory {
        match self {
            SourceError::InvalidSpec { .. } | SourceError::Secret { .. } => ErrorCategory::InvalidSpec,
            SourceError::Unreachable { .. } => ErrorCategory::Unreachable,
            SourceError::AuthFailed { .. } => ErrorCategory::AuthFailed,
            SourceError::UntrustedHost { .. } => ErrorCategory::UntrustedHost,
            SourceError::RefNotFound { .. } => ErrorCategory::RefNotFound,
            SourceError::Timeout { .. } => ErrorCategory::Timeout,
            SourceError::RedirectRefused { .. } => ErrorCategory::RedirectRefused,
            SourceError::TooLarge { .. } => ErrorCategory::TooLarge,
            SourceError::PathEscapes { .. } | SourceError::UnsafePath { .. } => ErrorCategory::PathEscapes,
            SourceError::PathNotFound { .. } => ErrorCategory::PathNotFound,
            SourceError::Io { .. } => ErrorCategory::Io,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        SourceError::InvalidSpec { message: message.into() }
    }

    /// An operation stopped by the limit `after`.
    pub(crate) fn timeout(ctx: &ErrorContext, after: Duration, cause: impl Into<String>) -> Self {
        SourceError::Timeout { ctx: ctx.clone(), after, cause: cause.into() }
    }

    /// Build an error of `category` (other than `InvalidSpec`, and the path
    /// categories, which carry more fields; a `Timeout` built here names no
    /// limit: use [`SourceError::timeout`]).
    pub(crate) fn new(category: ErrorCategory, ctx: &ErrorContext, cause: impl Into<String>) -> Self {
        let ctx = ctx.clone();
        let cause = cause.into();
        match category {
            ErrorCategory::InvalidSpec => SourceError::InvalidSpec { message: format!("{ctx}: {cause}") },
            ErrorCategory::Unreachable => SourceError::Unreachable { ctx, cause },
            ErrorCategory::AuthFailed => SourceError::AuthFailed { ctx, cause },
            ErrorCategory::UntrustedHost => SourceError::UntrustedHost { ctx, cause },
            ErrorCategory::RefNotFound => SourceError::RefNotFound { ctx, cause },
            ErrorCategory::Timeout => SourceError::Timeout { ctx, after: Duration::ZERO, cause },
            ErrorCategory::RedirectRefused => SourceError::RedirectRefused { ctx, cause },
            ErrorCategory::TooLarge => SourceError::TooLarge { ctx, cause },
            ErrorCategory::PathEscapes => SourceError::PathEscapes { ctx, path: String::new(), cause },
            ErrorCategory::PathNotFound => SourceError::PathNotFound { ctx, path: String::new(), cause },
            ErrorCategory::Io => SourceError::Io { ctx, cause },
        }
    }
}

/// `" after 3s: cause"`; a zero limit (none known) is not shown as "after 0ns".
fn timeout_detail(after: Duration, cause: &str) -> String {
    let mut out = String::new();
    if !after.is_zero() {
        out.push_str(&format!(" after {after:?}"));
    }
    if !cause.is_empty() {
        out.push_str(": ");
        out.push_str(cause);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_causes_keep_their_category_and_message() {
        let ctx = ErrorContext { url: "ssh://git@host/r".into(), reference: "branch main".into() };
        let secret = SourceError::Secret { ctx: ctx.clone(), cause: CredentialsUnusable::NoKnownHosts.into() };
        assert_eq!(secret.category(), ErrorCategory::InvalidSpec);
        assert_eq!(secret.to_string(), "invalid git source: git source ssh://git@host/r (branch main)");
        assert_eq!(
            crate::causes::with_causes(&secret),
            "invalid git source: git source ssh://git@host/r (branch main): ssh sources need a secret with known_hosts (the host key is always verified)"
        );
        assert!(std::error::Error::source(&secret).is_some());
        let path = SourceError::UnsafePath { ctx, path: "../x".into(), cause: UnsafePath::Parent };
        assert_eq!(path.category(), ErrorCategory::PathEscapes);
        assert_eq!(
            crate::causes::with_causes(&path),
            "git source ssh://git@host/r (branch main): path \"../x\" escapes the checkout: it contains `..`"
        );
        assert!(std::error::Error::source(&path).is_some());
    }
}
