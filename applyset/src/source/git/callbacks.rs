//! What libgit2 calls back while it talks to the remote: credentials, the server's certificate
//! or host key, transfer progress. Every callback stops when the sync is cancelled, and one that
//! refuses records why in the [`CallbackState`], which [`Job::remote_error`] reads to
//! categorise the failure.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};

use git2::cert::Cert;
use git2::{CertificateCheckStatus, Cred, CredentialType, ErrorClass, ErrorCode, RemoteCallbacks};

use super::Job;
use crate::source::known_hosts::HostKeyCheck;
use crate::source::redirect::{HttpUrl, Origin};

/// State shared by the libgit2 callbacks of one sync; inspected afterwards to
/// classify errors.
pub(super) struct CallbackState<'a> {
    pub(super) cancel: &'a AtomicBool,
    max_fetch_bytes: u64,
    pub(super) too_large: Cell<Option<u64>>,
    pub(super) auth_failure: RefCell<Option<String>>,
    pub(super) untrusted: RefCell<Option<String>>,
    secret_attempts: Cell<u32>,
    /// Where an http(s) remote must stay (after same-origin redirects).
    pub(super) origin: RefCell<Option<Origin>>,
    /// libgit2 was sent to another origin: what happened.
    pub(super) redirected: RefCell<Option<String>>,
}

impl<'a> CallbackState<'a> {
    pub(super) fn new(cancel: &'a AtomicBool, max_fetch_bytes: u64) -> Self {
        CallbackState {
            cancel,
            max_fetch_bytes,
            too_large: Cell::new(None),
            auth_failure: RefCell::new(None),
            untrusted: RefCell::new(None),
            secret_attempts: Cell::new(0),
            origin: RefCell::new(None),
            redirected: RefCell::new(None),
        }
    }
}

impl CallbackState<'_> {
    pub(super) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    fn auth_failed(&self, why: &str) -> git2::Error {
        *self.auth_failure.borrow_mut() = Some(why.to_string());
        git2::Error::new(ErrorCode::Auth, ErrorClass::Callback, why)
    }

    fn untrusted_host_key(&self, why: String) -> git2::Error {
        *self.untrusted.borrow_mut() = Some(why.clone());
        git2::Error::new(ErrorCode::Certificate, ErrorClass::Ssh, why)
    }

    /// Counts a secret handed to the server; the second means it rejected the first.
    fn second_secret_attempt(&self) -> bool {
        self.secret_attempts.set(self.secret_attempts.get() + 1);
        self.secret_attempts.get() > 1
    }

    /// Transfer progress: go on unless cancelled or over the fetch limit.
    fn within_fetch_limit(&self, received: u64) -> bool {
        if self.cancelled() {
            return false;
        }
        if received > self.max_fetch_bytes {
            self.too_large.set(Some(received));
            return false;
        }
        true
    }
}

impl Job {
    pub(super) fn callbacks<'a>(&'a self, st: &'a CallbackState<'a>) -> RemoteCallbacks<'a> {
        let mut cbs = RemoteCallbacks::new();
        cbs.credentials(move |url, user_from_url, allowed| {
            same_origin(st, url)?;
            self.credentials(st, user_from_url, allowed)
        });
        cbs.certificate_check(move |cert, host| self.check_certificate(st, cert, host));
        cbs.transfer_progress(move |p| st.within_fetch_limit(p.received_bytes() as u64));
        cbs.sideband_progress(move |_| !st.cancelled());
        cbs
    }

    /// ssh: the host key must be in `known_hosts`. TLS: a certificate `ca.crt` verifies is
    /// trusted, any other is left to libgit2's own verification (system roots, host name).
    fn check_certificate(
        &self,
        st: &CallbackState<'_>,
        cert: &Cert<'_>,
        host: &str,
    ) -> Result<CertificateCheckStatus, git2::Error> {
        if st.cancelled() {
            return Err(git2::Error::from_str("cancelled"));
        }
        if let Some(hk) = cert.as_hostkey() {
            let Some(kh) = &self.known_hosts else {
                return Err(st.untrusted_host_key("no known_hosts to verify the ssh host key".to_string()));
            };
            let port = self.url.port().unwrap_or(22);
            return match kh.check(host, port, hk.hostkey(), hk.hash_sha256()) {
                HostKeyCheck::Trusted => Ok(CertificateCheckStatus::CertificateOk),
                HostKeyCheck::Rejected(why) => Err(st.untrusted_host_key(why)),
            };
        }
        if let (Some(x509), Some(ca)) = (cert.as_x509(), &self.ca)
            && ca.verifies(x509.data(), host).is_ok()
        {
            return Ok(CertificateCheckStatus::CertificateOk);
        }
        // libgit2's own verification (system roots, host name) decides.
        Ok(CertificateCheckStatus::CertificatePassthrough)
    }

    fn credentials(
        &self,
        st: &CallbackState<'_>,
        user_from_url: Option<&str>,
        allowed: CredentialType,
    ) -> Result<Cred, git2::Error> {
        if st.cancelled() {
            return Err(git2::Error::from_str("cancelled"));
        }
        let user = self.creds.as_ref().and_then(|c| c.username.as_deref()).or(user_from_url).or(self.url.username());
        let ssh_key = CredentialType::SSH_KEY | CredentialType::SSH_MEMORY;
        if allowed.contains(CredentialType::USERNAME) && !allowed.intersects(ssh_key) {
            return Cred::username(user.unwrap_or("git"));
        }
        if allowed.intersects(ssh_key) {
            return self.ssh_key(st, user);
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
            return self.user_password(st, user);
        }
        Err(st.auth_failed("the server asked for an unsupported kind of credentials"))
    }

    /// The secret's `identity` (and `password` as its passphrase), offered once.
    fn ssh_key(&self, st: &CallbackState<'_>, user: Option<&str>) -> Result<Cred, git2::Error> {
        let creds = self.creds.as_ref();
        let Some(identity) = creds.and_then(|c| c.identity.as_ref()) else {
            return Err(st.auth_failed("the server requires an ssh key but the secret has no identity"));
        };
        if st.second_secret_attempt() {
            return Err(st.auth_failed("the server rejected the ssh identity"));
        }
        let key =
            identity.expose_str().ok_or_else(|| st.auth_failed("the identity is not a PEM or OpenSSH text key"))?;
        let passphrase = creds.and_then(|c| c.password.as_ref()).and_then(|p| p.expose_str());
        let public = creds.and_then(|c| c.identity_pub.as_deref());
        Cred::ssh_key_from_memory(user.unwrap_or("git"), public, key, passphrase)
            .map_err(|e| st.auth_failed(&format!("cannot load the ssh identity: {}", e.message())))
    }

    /// The secret's `password` (with the user name), offered once. A bearer token went in a
    /// header: being asked for a password means it was rejected.
    fn user_password(&self, st: &CallbackState<'_>, user: Option<&str>) -> Result<Cred, git2::Error> {
        let creds = self.creds.as_ref();
        if creds.is_some_and(|c| c.bearer_token.is_some()) {
            return Err(st.auth_failed("the server rejected the bearer token"));
        }
        let Some(password) = creds.and_then(|c| c.password.as_ref()) else {
            return Err(st.auth_failed("the server requires authentication but no credentials were given"));
        };
        if st.second_secret_attempt() {
            return Err(st.auth_failed("the server rejected the username/password"));
        }
        let password = password.expose_str().ok_or_else(|| st.auth_failed("the password is not UTF-8"))?;
        Cred::userpass_plaintext(user.unwrap_or(""), password)
    }
}

/// libgit2 still follows a redirect to the same host on another port: never hand the
/// credentials to another origin.
fn same_origin(st: &CallbackState<'_>, url: &str) -> Result<(), git2::Error> {
    if let (Some(expected), Some(asked)) = (st.origin.borrow().as_ref(), HttpUrl::parse(url))
        && asked.origin != *expected
    {
        let why = format!(
            "the server sent the git client from {expected} to {}; credentials are only sent to the configured server and redirects to another scheme, host or port are refused",
            asked.origin
        );
        *st.redirected.borrow_mut() = Some(why.clone());
        return Err(git2::Error::new(ErrorCode::Auth, ErrorClass::Http, why));
    }
    Ok(())
}
