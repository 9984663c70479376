//! Failures as [`SourceError`]s: categorised from what the callbacks recorded and from what
//! libgit2 reports, with URLs scrubbed and secret values removed from every message.

use git2::{ErrorClass, ErrorCode};

use super::Job;
use super::callbacks::CallbackState;
use crate::source::checkout::{CheckoutError, PathError};
use crate::source::error::{ErrorCategory, SourceError};
use crate::source::url::{scrub_url, url_secrets};

impl Job {
    pub(super) fn err(&self, category: ErrorCategory, cause: impl AsRef<str>) -> SourceError {
        SourceError::new(category, &self.ctx, self.clean(cause.as_ref()))
    }

    /// Scrub URLs and remove secret values from a message from libgit2 or a
    /// server.
    fn clean(&self, message: &str) -> String {
        let mut m = scrub_url(message);
        // The URL's own userinfo too, however a message quotes it.
        let mut secrets = url_secrets(self.url.raw());
        secrets.retain(|s| s.len() >= 3);
        if let Some(c) = &self.creds {
            secrets.extend(c.secret_strings());
        }
        // Longest first, so that no part of a longer secret is left behind.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        for s in secrets {
            m = m.replace(&s, "***");
        }
        m
    }

    pub(super) fn io(&self, what: &str, e: impl std::fmt::Display) -> SourceError {
        self.err(ErrorCategory::Io, format!("{what}: {e}"))
    }

    pub(super) fn timed_out(&self) -> SourceError {
        SourceError::timeout(&self.ctx, self.timeout, "")
    }

    /// Turn a libgit2 error from talking to the remote into a categorised
    /// error, using what the callbacks recorded.
    pub(super) fn remote_error(&self, st: &CallbackState<'_>, e: &git2::Error) -> SourceError {
        if st.cancelled() {
            return self.timed_out();
        }
        if let Some(why) = st.redirected.borrow().as_ref() {
            return self.err(ErrorCategory::RedirectRefused, why);
        }
        if let Some(bytes) = st.too_large.get() {
            return self.err(
                ErrorCategory::TooLarge,
                format!("fetch received {bytes} bytes, over the limit of {} bytes", self.limits.max_fetch_bytes),
            );
        }
        if let Some(why) = st.untrusted.borrow().as_ref() {
            return self.err(ErrorCategory::UntrustedHost, why);
        }
        if let Some(why) = st.auth_failure.borrow().as_ref() {
            return self.err(ErrorCategory::AuthFailed, format!("{why} ({})", e.message()));
        }
        self.err(libgit2_category(e), e.message())
    }

    /// A failed checkout of a commit's tree.
    pub(super) fn checkout_error(&self, e: CheckoutError) -> SourceError {
        match e {
            CheckoutError::TooLarge(m) => self.err(ErrorCategory::TooLarge, m),
            CheckoutError::Invalid(m) => self.err(ErrorCategory::PathEscapes, m),
            CheckoutError::Io(m) => self.err(ErrorCategory::Io, m),
            CheckoutError::Cancelled => self.timed_out(),
        }
    }

    /// `source.path` failed its checks in the checkout of `commit`.
    pub(super) fn path_error(&self, e: PathError, commit: &str) -> SourceError {
        match e {
            PathError::Escapes(cause) => {
                SourceError::PathEscapes { ctx: self.ctx.clone(), path: self.path_display.clone(), cause }
            }
            PathError::NotFound(cause) => SourceError::PathNotFound {
                ctx: self.ctx.clone(),
                path: self.path_display.clone(),
                cause: format!("{cause} (commit {commit})"),
            },
            PathError::Io(cause) => self.err(ErrorCategory::Io, cause),
        }
    }
}

/// The category of a libgit2 error the callbacks recorded nothing about.
fn libgit2_category(e: &git2::Error) -> ErrorCategory {
    match e.code() {
        ErrorCode::Auth => ErrorCategory::AuthFailed,
        ErrorCode::Certificate => ErrorCategory::UntrustedHost,
        _ if is_tls_certificate_rejection(e) => ErrorCategory::UntrustedHost,
        _ => ErrorCategory::Unreachable,
    }
}

/// Whether libgit2 refused the server's TLS certificate (not trusted by the system roots, or
/// not naming the host).
///
/// The message is the only signal left, which is why this is the one place that reads it.
/// libgit2's OpenSSL stream does report `GIT_ECERTIFICATE` (`ErrorCode::Certificate`), but
/// only to the certificate-check callback, which [`Job::callbacks`] always installs (for
/// `ca.crt` and for cancellation): when the callback defers to libgit2's verdict
/// (`CertificatePassthrough`), libgit2 (`check_certificate` in `transports/httpclient.c`)
/// returns a plain `-1` with the stream's error restored, so the code that reaches us is
/// `GenericError`, class `Ssl`, and message "the SSL certificate is invalid" or "hostname does
/// not match certificate". The callback cannot tell either: git2 drops libgit2's `valid`
/// argument. Other `Ssl` errors whose OpenSSL text names a certificate (a handshake alert such
/// as "bad certificate") are counted as untrusted as well.
fn is_tls_certificate_rejection(e: &git2::Error) -> bool {
    e.class() == ErrorClass::Ssl && e.message().to_ascii_lowercase().contains("certificate")
}
