//! The blocking part of a sync: everything that calls libgit2.

use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::fs;
use std::os::raw::c_char;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use git2::{
    AutotagOption, Binding, CertificateCheckStatus, Cred, CredentialType, ErrorClass, ErrorCode, FetchOptions, Oid,
    ProxyOptions, Remote, RemoteCallbacks, RemoteRedirect, Repository,
};

use super::checkout::{self, Budget, CheckoutError, PathError};
use super::credentials::Credentials;
use super::error::{ErrorCategory, ErrorContext, SourceError};
use super::known_hosts::{HostKeyCheck, KnownHosts};
use super::redirect::{self, HttpUrl, Origin};
use super::spec::{RefRequest, SourceSpec};
use super::tls::CaBundle;
use super::url::{GitUrl, Transport, percent_decode, scrub_url, url_secrets};
use super::{Ancestry, Artifact, Counters, Limits, RevisionChange};

/// libgit2's "fetch everything, undoing a shallow clone" depth.
const DEPTH_UNSHALLOW: i32 = i32::MAX;

/// Depth of a fetch when the ref moved from a previous commit: enough
/// history to tell a fast-forward from a rewrite in the usual case, bounded
/// so that a rewrite of a long history does not download all of it.
const DEPTH_FOR_ANCESTRY: i32 = 64;

/// Commits walked at most to decide ancestry.
const MAX_ANCESTRY_WALK: usize = 20_000;

#[allow(unsafe_code)]
pub(crate) fn set_global_timeouts(connect_ms: i32, io_ms: i32) {
    // SAFETY: these only set libgit2 globals; they are not tied to any
    // object's lifetime. Failure leaves libgit2's defaults in place.
    unsafe {
        let _ = git2::opts::set_server_connect_timeout_in_milliseconds(connect_ms);
        let _ = git2::opts::set_server_timeout_in_milliseconds(io_ms);
    }
}

/// A validated sync request, ready to run on a blocking thread.
pub(crate) struct Job {
    pub(crate) ctx: ErrorContext,
    dir: PathBuf,
    url: GitUrl,
    reference: RefRequest,
    path: PathBuf,
    path_display: String,
    creds: Option<Credentials>,
    known_hosts: Option<KnownHosts>,
    ca: Option<CaBundle>,
    limits: Limits,
    /// The limit of the whole sync (for messages; the caller enforces it).
    timeout: Duration,
    /// The revision applied before, to relate the new one to.
    previous: Option<Previous>,
}

/// A previous revision: `<name>@sha1:<hex>` or `sha1:<hex>`.
struct Previous {
    revision: String,
    name: Option<String>,
    oid: Oid,
}

impl Previous {
    fn parse(revision: &str) -> Option<Previous> {
        let (name, hex) = match revision.rsplit_once("@sha1:") {
            Some((name, hex)) => (Some(name.to_string()), hex),
            None => (None, revision.strip_prefix("sha1:")?),
        };
        Some(Previous {
            revision: revision.to_string(),
            name,
            oid: Oid::from_str(hex).ok().filter(|_| hex.len() == 40)?,
        })
    }
}

/// State shared by the libgit2 callbacks of one sync; inspected afterwards to
/// classify errors.
struct CallbackState<'a> {
    cancel: &'a AtomicBool,
    max_fetch_bytes: u64,
    too_large: Cell<Option<u64>>,
    auth_failure: RefCell<Option<String>>,
    untrusted: RefCell<Option<String>>,
    secret_attempts: Cell<u32>,
    /// Where an http(s) remote must stay (after same-origin redirects).
    origin: RefCell<Option<Origin>>,
    /// libgit2 was sent to another origin: what happened.
    redirected: RefCell<Option<String>>,
}

impl CallbackState<'_> {
    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    fn auth_failed(&self, why: &str) -> git2::Error {
        *self.auth_failure.borrow_mut() = Some(why.to_string());
        git2::Error::new(ErrorCode::Auth, ErrorClass::Callback, why)
    }
}

/// One advertised ref.
struct RemoteRef {
    name: String,
    oid: Oid,
}

/// What to fetch and what it should give.
struct Target {
    /// Name for the revision (`main`, `v1.2.3`); `None` for a bare commit pin.
    revision_name: Option<String>,
    /// The commit we expect (known from ls-remote), if known before fetching.
    commit: Option<Oid>,
    /// Refspecs to fetch when the commit is not cached.
    refspecs: Vec<String>,
    /// Local ref that the fetch updates and that points at the commit (for
    /// branch/tag/semver).
    local_ref: Option<String>,
    /// Whether depth 1 gives the commit.
    shallow_ok: bool,
}

impl Job {
    pub(crate) fn prepare(
        dir: PathBuf,
        spec: &SourceSpec,
        creds: Option<Credentials>,
        limits: Limits,
        timeout: Duration,
        previous: Option<&str>,
    ) -> Result<Job, SourceError> {
        let url = GitUrl::parse(&spec.url)?;
        let reference = RefRequest::from_spec(spec.reference.as_ref())?;
        let ctx = ErrorContext { url: url.scrubbed(), reference: reference.describe() };
        let path_display = spec.path.clone().unwrap_or_default();
        let path = checkout::normalise_path(spec.path.as_deref()).map_err(|why| SourceError::PathEscapes {
            ctx: ctx.clone(),
            path: path_display.clone(),
            cause: why,
        })?;
        let invalid = |m: String| SourceError::new(ErrorCategory::InvalidSpec, &ctx, m);
        let known_hosts = match (url.transport(), creds.as_ref().and_then(|c| c.known_hosts.as_deref())) {
            (Transport::Ssh, Some(text)) => Some(KnownHosts::parse(text).map_err(invalid)?),
            (Transport::Ssh, None) => {
                return Err(invalid(
                    "ssh sources need a secret with known_hosts (the host key is always verified)".to_string(),
                ));
            }
            _ => None,
        };
        let ca = match creds.as_ref().and_then(|c| c.ca_cert.as_deref()) {
            Some(pem) => Some(CaBundle::parse(pem).map_err(invalid)?),
            None => None,
        };
        if let Some(c) = &creds {
            if url.transport() == Transport::Ssh && c.identity.is_none() {
                return Err(invalid("ssh sources need a secret with identity (the private key)".to_string()));
            }
            if let Some(token) = &c.bearer_token {
                let ok = token.expose_str().is_some_and(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()));
                if !ok {
                    return Err(invalid("bearerToken must be printable ASCII without spaces".to_string()));
                }
            }
        }
        Ok(Job {
            ctx,
            dir,
            url,
            reference,
            path,
            path_display,
            creds,
            known_hosts,
            ca,
            limits,
            timeout,
            previous: previous.and_then(Previous::parse),
        })
    }

    fn err(&self, category: ErrorCategory, cause: impl AsRef<str>) -> SourceError {
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

    fn io(&self, what: &str, e: impl std::fmt::Display) -> SourceError {
        self.err(ErrorCategory::Io, format!("{what}: {e}"))
    }

    /// Turn a libgit2 error from talking to the remote into a categorised
    /// error, using what the callbacks recorded.
    fn remote_error(&self, st: &CallbackState<'_>, e: &git2::Error) -> SourceError {
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
        let category = match (e.code(), e.class()) {
            (ErrorCode::Auth, _) => ErrorCategory::AuthFailed,
            (ErrorCode::Certificate, _) => ErrorCategory::UntrustedHost,
            (_, ErrorClass::Ssl) if e.message().to_ascii_lowercase().contains("certificate") => {
                ErrorCategory::UntrustedHost
            }
            _ => ErrorCategory::Unreachable,
        };
        self.err(category, e.message())
    }

    fn timed_out(&self) -> SourceError {
        SourceError::timeout(&self.ctx, self.timeout, "")
    }

    fn callbacks<'a>(&'a self, st: &'a CallbackState<'a>) -> RemoteCallbacks<'a> {
        let mut cbs = RemoteCallbacks::new();
        cbs.credentials(move |url, user_from_url, allowed| {
            // libgit2 still follows a redirect to the same host on another
            // port: never hand the credentials to another origin.
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
            self.credentials(st, user_from_url, allowed)
        });
        cbs.certificate_check(move |cert, host| {
            if st.cancelled() {
                return Err(git2::Error::from_str("cancelled"));
            }
            if let Some(hk) = cert.as_hostkey() {
                let Some(kh) = &self.known_hosts else {
                    let why = "no known_hosts to verify the ssh host key".to_string();
                    *st.untrusted.borrow_mut() = Some(why.clone());
                    return Err(git2::Error::new(ErrorCode::Certificate, ErrorClass::Ssh, why));
                };
                let port = self.url.port().unwrap_or(22);
                return match kh.check(host, port, hk.hostkey(), hk.hash_sha256()) {
                    HostKeyCheck::Trusted => Ok(CertificateCheckStatus::CertificateOk),
                    HostKeyCheck::Rejected(why) => {
                        *st.untrusted.borrow_mut() = Some(why.clone());
                        Err(git2::Error::new(ErrorCode::Certificate, ErrorClass::Ssh, why))
                    }
                };
            }
            if let (Some(x509), Some(ca)) = (cert.as_x509(), &self.ca)
                && ca.verifies(x509.data(), host).is_ok()
            {
                return Ok(CertificateCheckStatus::CertificateOk);
            }
            // libgit2's own verification (system roots, host name) decides.
            Ok(CertificateCheckStatus::CertificatePassthrough)
        });
        cbs.transfer_progress(move |p| {
            if st.cancelled() {
                return false;
            }
            let received = p.received_bytes() as u64;
            if received > st.max_fetch_bytes {
                st.too_large.set(Some(received));
                return false;
            }
            true
        });
        cbs.sideband_progress(move |_| !st.cancelled());
        cbs
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
        let creds = self.creds.as_ref();
        let user = creds.and_then(|c| c.username.as_deref()).or(user_from_url).or(self.url.username());
        if allowed.contains(CredentialType::USERNAME)
            && !allowed.intersects(CredentialType::SSH_KEY | CredentialType::SSH_MEMORY)
        {
            return Cred::username(user.unwrap_or("git"));
        }
        if allowed.intersects(CredentialType::SSH_KEY | CredentialType::SSH_MEMORY) {
            let Some(identity) = creds.and_then(|c| c.identity.as_ref()) else {
                return Err(st.auth_failed("the server requires an ssh key but the secret has no identity"));
            };
            st.secret_attempts.set(st.secret_attempts.get() + 1);
            if st.secret_attempts.get() > 1 {
                return Err(st.auth_failed("the server rejected the ssh identity"));
            }
            let key =
                identity.expose_str().ok_or_else(|| st.auth_failed("the identity is not a PEM or OpenSSH text key"))?;
            let passphrase = creds.and_then(|c| c.password.as_ref()).and_then(|p| p.expose_str());
            let public = creds.and_then(|c| c.identity_pub.as_deref());
            return Cred::ssh_key_from_memory(user.unwrap_or("git"), public, key, passphrase)
                .map_err(|e| st.auth_failed(&format!("cannot load the ssh identity: {}", e.message())));
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
            if creds.is_some_and(|c| c.bearer_token.is_some()) {
                return Err(st.auth_failed("the server rejected the bearer token"));
            }
            let Some(password) = creds.and_then(|c| c.password.as_ref()) else {
                return Err(st.auth_failed("the server requires authentication but no credentials were given"));
            };
            st.secret_attempts.set(st.secret_attempts.get() + 1);
            if st.secret_attempts.get() > 1 {
                return Err(st.auth_failed("the server rejected the username/password"));
            }
            let password = password.expose_str().ok_or_else(|| st.auth_failed("the password is not UTF-8"))?;
            return Cred::userpass_plaintext(user.unwrap_or(""), password);
        }
        Err(st.auth_failed("the server asked for an unsupported kind of credentials"))
    }

    fn headers(&self) -> Vec<CString> {
        self.creds
            .as_ref()
            .and_then(|c| c.bearer_token.as_ref())
            .and_then(|t| t.expose_str())
            .filter(|_| matches!(self.url.transport(), Transport::Https | Transport::Http))
            .and_then(|t| CString::new(format!("Authorization: Bearer {t}")).ok())
            .into_iter()
            .collect()
    }

    /// Open the cache repository, recreating it when it is unreadable or was
    /// made for another URL.
    fn open_repo(&self) -> Result<Repository, SourceError> {
        fs::create_dir_all(&self.dir).map_err(|e| self.io("create cache directory", e))?;
        let repo_dir = self.dir.join("repo");
        let id_file = self.dir.join("source-id");
        let id = hex(&openssl::sha::sha256(self.url.raw().as_bytes()));
        let same_source = fs::read_to_string(&id_file).is_ok_and(|s| s.trim() == id);
        // libgit2 cannot repack: every fetch adds a pack. Past a bound the
        // cache is simply rebuilt by the next fetch.
        if same_source
            && pack_count(&repo_dir) <= MAX_PACKS
            && let Ok(repo) = Repository::open_bare(&repo_dir)
        {
            return Ok(repo);
        }
        match fs::remove_dir_all(&repo_dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.io("remove stale cache repository", e)),
        }
        let repo = Repository::init_bare(&repo_dir).map_err(|e| self.io("create cache repository", e.message()))?;
        fs::write(&id_file, id).map_err(|e| self.io("write cache id", e))?;
        Ok(repo)
    }

    pub(crate) fn run(self, cancel: &AtomicBool, counters: &Counters) -> Result<Artifact, SourceError> {
        let repo = self.open_repo()?;
        let st = CallbackState {
            cancel,
            max_fetch_bytes: self.limits.max_fetch_bytes,
            too_large: Cell::new(None),
            auth_failure: RefCell::new(None),
            untrusted: RefCell::new(None),
            secret_attempts: Cell::new(0),
            origin: RefCell::new(None),
            redirected: RefCell::new(None),
        };
        let (commit, revision_name, fetched) = self.resolve_and_fetch(&repo, &st, counters)?;
        if st.cancelled() {
            return Err(self.timed_out());
        }
        let change = self.previous.as_ref().filter(|p| p.oid != commit).map(|p| RevisionChange {
            previous: p.revision.clone(),
            ancestry: if p.name.is_none()
                || p.name != revision_name
                || matches!(self.reference, RefRequest::Commit { .. })
            {
                Ancestry::NotCompared
            } else {
                ancestry(&repo, commit, p.oid)
            },
        });
        let hex = commit.to_string();
        let checkout_dir = self.materialise(&repo, commit, &st, counters)?;
        let dir = checkout::resolve_dir(&checkout_dir, &self.path).map_err(|e| match e {
            PathError::Escapes(cause) => {
                SourceError::PathEscapes { ctx: self.ctx.clone(), path: self.path_display.clone(), cause }
            }
            PathError::NotFound(cause) => SourceError::PathNotFound {
                ctx: self.ctx.clone(),
                path: self.path_display.clone(),
                cause: format!("{cause} (commit {hex})"),
            },
            PathError::Io(cause) => self.err(ErrorCategory::Io, cause),
        })?;
        let revision = match revision_name {
            Some(name) => format!("{name}@sha1:{hex}"),
            None => format!("sha1:{hex}"),
        };
        Ok(Artifact { revision, commit: hex, dir, checkout: checkout_dir, fetched, change })
    }

    /// Resolve the ref (ls-remote), fetch if the commit is not cached, and
    /// return the commit, the revision name and whether a fetch happened.
    fn resolve_and_fetch(
        &self,
        repo: &Repository,
        st: &CallbackState<'_>,
        counters: &Counters,
    ) -> Result<(Oid, Option<String>, bool), SourceError> {
        // A bare commit pin that is already cached needs no network at all.
        if let RefRequest::Commit { sha, branch: None } = &self.reference {
            let oid = Oid::from_str(sha).map_err(|e| self.err(ErrorCategory::InvalidSpec, e.message()))?;
            if repo.find_commit(oid).is_ok() {
                return Ok((oid, None, false));
            }
        }

        let url = self.follow_redirects(st)?;
        let mut remote = repo.remote_anonymous(&url).map_err(|e| self.err(ErrorCategory::InvalidSpec, e.message()))?;
        let headers = self.headers();
        // The connect callbacks must outlive the connection: declared before
        // any use, disconnected explicitly below.
        let connect_cbs = self.callbacks(st);
        counters.connects.fetch_add(1, Ordering::Relaxed);
        connect(&mut remote, &connect_cbs, &headers).map_err(|e| self.remote_error(st, &e))?;
        let result = self.plan_and_fetch(repo, &mut remote, st, counters, &headers);
        let _ = remote.disconnect();
        drop(remote);
        drop(connect_cbs);
        result
    }

    /// For http(s): the repository URL after same-origin redirects of the
    /// ref listing; a redirect elsewhere is refused (see [`redirect`]).
    fn follow_redirects(&self, st: &CallbackState<'_>) -> Result<String, SourceError> {
        let raw = self.url.raw();
        if !matches!(self.url.transport(), Transport::Http | Transport::Https) {
            return Ok(raw.to_string());
        }
        let request = redirect::Request {
            ca: self.ca.as_ref(),
            authorization: self.authorization(),
            timeout: self.timeout.min(Duration::from_millis(super::SERVER_IO_TIMEOUT_MS as u64)),
            cancel: st.cancel,
        };
        let url = match redirect::check(raw, &request) {
            redirect::Outcome::Use(url) => url,
            redirect::Outcome::Refused { from, to } => {
                return Err(self.err(
                    ErrorCategory::RedirectRefused,
                    format!(
                        "{from} redirects to {to}; redirects to another scheme, host or port are refused (set spec.source.url to the new location if the move is intended)"
                    ),
                ));
            }
            redirect::Outcome::TooMany { from } => {
                return Err(self.err(ErrorCategory::Unreachable, format!("{from}: too many redirects")));
            }
        };
        if st.cancelled() {
            return Err(self.timed_out());
        }
        *st.origin.borrow_mut() = HttpUrl::parse(&url).map(|u| u.origin);
        if url != raw {
            tracing::debug!(from = %self.ctx.url, to = %scrub_url(&url), "git source follows a same-origin redirect");
        }
        Ok(url)
    }

    /// The `Authorization` the git transport would send: the bearer token,
    /// else Basic with the secret's or the URL's user and password.
    fn authorization(&self) -> Option<String> {
        let creds = self.creds.as_ref();
        if let Some(token) = creds.and_then(|c| c.bearer_token.as_ref()).and_then(|t| t.expose_str()) {
            return Some(format!("Bearer {token}"));
        }
        let pair = match creds.and_then(|c| c.password.as_ref()) {
            Some(password) => {
                let mut pair = format!(
                    "{}:",
                    creds.and_then(|c| c.username.as_deref()).or(self.url.username()).unwrap_or_default()
                )
                .into_bytes();
                pair.extend_from_slice(password.expose());
                pair
            }
            None => {
                // Credentials in the URL: libgit2 sends them (decoded) first.
                let url = HttpUrl::parse(self.url.raw())?;
                let authority = url.prefix.split_once("://")?.1;
                let (userinfo, _) = authority.rsplit_once('@')?;
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                format!("{}:{}", percent_decode(user), percent_decode(password)).into_bytes()
            }
        };
        Some(format!("Basic {}", openssl::base64::encode_block(&pair)))
    }

    fn plan_and_fetch(
        &self,
        repo: &Repository,
        remote: &mut Remote<'_>,
        st: &CallbackState<'_>,
        counters: &Counters,
        headers: &[CString],
    ) -> Result<(Oid, Option<String>, bool), SourceError> {
        let refs: Vec<RemoteRef> = remote
            .list()
            .map_err(|e| self.remote_error(st, &e))?
            .iter()
            .map(|h| RemoteRef { name: h.name().to_string(), oid: h.oid() })
            .collect();
        let find = |name: &str| refs.iter().find(|r| r.name == name).map(|r| r.oid);
        let peeled_tag =
            |tag: &str| find(&format!("refs/tags/{tag}^{{}}")).or_else(|| find(&format!("refs/tags/{tag}")));
        let not_found = |m: String| self.err(ErrorCategory::RefNotFound, m);
        let branch_target = |b: &str| -> Result<Target, SourceError> {
            let oid = find(&format!("refs/heads/{b}"))
                .ok_or_else(|| not_found(format!("branch {b} does not exist on the remote")))?;
            Ok(Target {
                revision_name: Some(b.to_string()),
                commit: Some(oid),
                refspecs: vec![format!("+refs/heads/{b}:refs/remotes/origin/{b}")],
                local_ref: Some(format!("refs/remotes/origin/{b}")),
                shallow_ok: true,
            })
        };
        let tag_target = |t: &str| -> Result<Target, SourceError> {
            let oid = peeled_tag(t).ok_or_else(|| not_found(format!("tag {t} does not exist on the remote")))?;
            Ok(Target {
                revision_name: Some(t.to_string()),
                commit: Some(oid),
                refspecs: vec![format!("+refs/tags/{t}:refs/tags/{t}")],
                local_ref: Some(format!("refs/tags/{t}")),
                shallow_ok: true,
            })
        };
        let target = match &self.reference {
            RefRequest::DefaultBranch => {
                let head = remote
                    .default_branch()
                    .map_err(|e| not_found(format!("the remote has no default branch (HEAD): {}", e.message())))?;
                let head = head.as_str().unwrap_or_default().to_string();
                let b = head
                    .strip_prefix("refs/heads/")
                    .ok_or_else(|| not_found(format!("the remote HEAD {head:?} is not a branch")))?;
                branch_target(b)?
            }
            RefRequest::Branch(b) => branch_target(b)?,
            RefRequest::Tag(t) => tag_target(t)?,
            RefRequest::Semver { range, req } => {
                let tags =
                    refs.iter().filter_map(|r| r.name.strip_prefix("refs/tags/")).filter(|n| !n.ends_with("^{}"));
                let tag = super::semver_ref::pick(req, tags)
                    .ok_or_else(|| not_found(format!("no tag matches the semver range {range:?}")))?
                    .to_string();
                tag_target(&tag)?
            }
            RefRequest::Commit { sha, branch } => {
                let oid = Oid::from_str(sha).map_err(|e| self.err(ErrorCategory::InvalidSpec, e.message()))?;
                match branch {
                    Some(b) => {
                        let tip = find(&format!("refs/heads/{b}"))
                            .ok_or_else(|| not_found(format!("branch {b} does not exist on the remote")))?;
                        if repo.find_commit(oid).is_ok() && (tip == oid || is_ancestor(repo, oid, tip)) {
                            return Ok((oid, Some(b.clone()), false));
                        }
                        Target {
                            revision_name: Some(b.clone()),
                            commit: Some(oid),
                            refspecs: vec![format!("+refs/heads/{b}:refs/remotes/origin/{b}")],
                            local_ref: None,
                            shallow_ok: tip == oid,
                        }
                    }
                    None => Target {
                        revision_name: None,
                        commit: Some(oid),
                        refspecs: vec![
                            "+refs/heads/*:refs/remotes/origin/*".to_string(),
                            "+refs/tags/*:refs/tags/*".to_string(),
                        ],
                        local_ref: None,
                        shallow_ok: false,
                    },
                }
            }
        };

        let cached = target.commit.is_some_and(|oid| repo.find_commit(oid).is_ok());
        if !cached {
            self.fetch(repo, remote, st, counters, headers, &target)?;
        }

        let commit = match (&self.reference, &target.local_ref) {
            (RefRequest::Commit { sha, branch }, _) => {
                let oid = target.commit.expect("commit targets know their commit");
                if repo.find_commit(oid).is_err() {
                    let place = match branch {
                        Some(b) => format!("on branch {b}"),
                        None => "in any branch or tag".to_string(),
                    };
                    return Err(not_found(format!("commit {sha} not found {place}")));
                }
                if let Some(b) = branch {
                    let tip = repo
                        .find_reference(&format!("refs/remotes/origin/{b}"))
                        .and_then(|r| r.peel_to_commit())
                        .map(|c| c.id())
                        .ok();
                    if tip.is_none_or(|tip| tip != oid && !is_ancestor(repo, oid, tip)) {
                        return Err(not_found(format!("commit {sha} is not on branch {b}")));
                    }
                }
                oid
            }
            (_, Some(local)) if !cached => {
                repo.find_reference(local).and_then(|r| r.peel_to_commit()).map(|c| c.id()).map_err(|e| {
                    self.err(ErrorCategory::Io, format!("fetched {local} but cannot read it: {}", e.message()))
                })?
            }
            _ => target.commit.expect("branch and tag targets know their commit"),
        };
        Ok((commit, target.revision_name, !cached))
    }

    fn fetch(
        &self,
        repo: &Repository,
        remote: &mut Remote<'_>,
        st: &CallbackState<'_>,
        counters: &Counters,
        headers: &[CString],
        target: &Target,
    ) -> Result<(), SourceError> {
        // The ref moved from the commit applied before: fetch enough history
        // to tell a fast-forward from a rewrite (see `ancestry`).
        let moved = self
            .previous
            .as_ref()
            .is_some_and(|p| p.name.is_some() && p.name == target.revision_name && Some(p.oid) != target.commit);
        let depth = if self.url.transport() == Transport::Local {
            // libgit2's local transport cannot fetch shallow.
            0
        } else if target.shallow_ok && moved {
            DEPTH_FOR_ANCESTRY
        } else if target.shallow_ok {
            1
        } else if repo.is_shallow() {
            DEPTH_UNSHALLOW
        } else {
            0
        };
        let header_strs: Vec<&str> = headers.iter().filter_map(|h| h.to_str().ok()).collect();
        let mut fo = FetchOptions::new();
        fo.remote_callbacks(self.callbacks(st))
            .proxy_options(ProxyOptions::new())
            .download_tags(AutotagOption::None)
            .update_fetchhead(false)
            .depth(depth)
            .follow_redirects(RemoteRedirect::None)
            .custom_headers(&header_strs);
        counters.fetches.fetch_add(1, Ordering::Relaxed);
        remote.fetch(&target.refspecs, Some(&mut fo), None).map_err(|e| self.remote_error(st, &e))
    }

    /// Write the commit's tree to `checkouts/<sha>` (reused if present) and
    /// remove other checkouts of this key.
    fn materialise(
        &self,
        repo: &Repository,
        commit: Oid,
        st: &CallbackState<'_>,
        counters: &Counters,
    ) -> Result<PathBuf, SourceError> {
        let hex = commit.to_string();
        let checkouts = self.dir.join("checkouts");
        fs::create_dir_all(&checkouts).map_err(|e| self.io("create checkouts directory", e))?;
        let final_dir = checkouts.join(&hex);
        if !final_dir.is_dir() {
            let tree = repo
                .find_commit(commit)
                .and_then(|c| c.tree())
                .map_err(|e| self.err(ErrorCategory::Io, format!("read commit {hex}: {}", e.message())))?;
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            let tmp = checkouts.join(format!(".tmp-{hex}-{}-{nanos}", std::process::id()));
            let cancelled = || st.cancelled();
            let mut budget = Budget {
                max_bytes: self.limits.max_checkout_bytes,
                max_files: self.limits.max_checkout_files,
                max_file_bytes: self.limits.max_checkout_file_bytes,
                root: &tmp,
                used_bytes: 0,
                used_files: 0,
                cancelled: &cancelled,
            };
            let written = checkout::write_tree(repo, &tree, &tmp, &mut budget);
            if let Err(e) = written {
                let _ = fs::remove_dir_all(&tmp);
                return Err(match e {
                    CheckoutError::TooLarge(m) => self.err(ErrorCategory::TooLarge, m),
                    CheckoutError::Invalid(m) => self.err(ErrorCategory::PathEscapes, m),
                    CheckoutError::Io(m) => self.err(ErrorCategory::Io, m),
                    CheckoutError::Cancelled => self.timed_out(),
                });
            }
            fs::rename(&tmp, &final_dir).map_err(|e| {
                let _ = fs::remove_dir_all(&tmp);
                self.io("rename checkout", e)
            })?;
            counters.checkouts.fetch_add(1, Ordering::Relaxed);
        }
        remove_other_checkouts(&checkouts, &hex);
        Ok(final_dir)
    }
}

fn remove_other_checkouts(checkouts: &Path, keep: &str) {
    let Ok(entries) = fs::read_dir(checkouts) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_str() != Some(keep) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Packs a cache repository may hold before it is rebuilt.
const MAX_PACKS: usize = 64;

fn pack_count(repo_dir: &Path) -> usize {
    fs::read_dir(repo_dir.join("objects/pack"))
        .map(|entries| entries.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "pack")).count())
        .unwrap_or(0)
}

/// How `new` relates to `old` by what the cache holds: a walk of `new`'s
/// history. Finding `old` proves a fast-forward; a walk that ends at root
/// commits without meeting it proves a rewrite; a walk cut by a shallow
/// boundary, a missing commit or the walk limit, or an `old` the cache never
/// held (a restart, another URL), proves nothing: `Unknown`.
/// (`graph_descendant_of` cannot be used: on a shallow cache its "no" may
/// only mean "history cut here".)
fn ancestry(repo: &Repository, new: Oid, old: Oid) -> Ancestry {
    if repo.find_commit(old).is_err() {
        return Ancestry::Unknown;
    }
    let shallow: std::collections::HashSet<Oid> = fs::read_to_string(repo.path().join("shallow"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| Oid::from_str(l.trim()).ok())
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut queue = std::collections::VecDeque::from([new]);
    let mut cut = false;
    while let Some(oid) = queue.pop_front() {
        if oid == old {
            return Ancestry::Descendant;
        }
        if !seen.insert(oid) {
            continue;
        }
        if seen.len() > MAX_ANCESTRY_WALK || shallow.contains(&oid) {
            cut = true;
            continue;
        }
        match repo.find_commit(oid) {
            Ok(c) => queue.extend(c.parent_ids()),
            Err(_) => cut = true,
        }
    }
    if cut { Ancestry::Unknown } else { Ancestry::Rewritten }
}

fn is_ancestor(repo: &Repository, ancestor: Oid, tip: Oid) -> bool {
    repo.graph_descendant_of(tip, ancestor).unwrap_or(false)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// Not bound by libgit2-sys 0.18; part of libgit2's public API since 1.7 and
// linked in with it.
#[allow(unsafe_code)]
unsafe extern "C" {
    fn git_remote_connect_ext(
        remote: *mut libgit2_sys::git_remote,
        direction: libgit2_sys::git_direction,
        opts: *const libgit2_sys::git_remote_connect_options,
    ) -> std::os::raw::c_int;
}

/// `git_remote_connect_ext` with custom HTTP headers (git2's `connect_auth`
/// has no way to pass them, and a bearer token must be sent on the ref
/// listing too) and without following redirects to another host
/// (`git_remote_connect` would read `http.followRedirects`, default
/// "initial": anywhere). `cbs` must stay alive, unmoved, until the remote is
/// disconnected.
#[allow(unsafe_code)]
fn connect(remote: &mut Remote<'_>, cbs: &RemoteCallbacks<'_>, headers: &[CString]) -> Result<(), git2::Error> {
    let ptrs: Vec<*mut c_char> = headers.iter().map(|h| h.as_ptr() as *mut c_char).collect();
    let strarray = libgit2_sys::git_strarray { strings: ptrs.as_ptr() as *mut *mut c_char, count: ptrs.len() };
    let proxy = ProxyOptions::new();
    // SAFETY: `raw()` copies plain structs; the pointers inside them (the
    // callbacks' payload, the header strings) stay valid for the call, and
    // libgit2 copies the options (headers included) into the connection.
    // The callbacks' payload points at `cbs`, which the caller keeps alive
    // until it disconnects.
    let rc = unsafe {
        let opts = libgit2_sys::git_remote_connect_options {
            version: 1, // GIT_REMOTE_CONNECT_OPTIONS_VERSION
            callbacks: cbs.raw(),
            proxy_opts: proxy.raw(),
            follow_redirects: libgit2_sys::GIT_REMOTE_REDIRECT_NONE,
            custom_headers: strarray,
        };
        git_remote_connect_ext(remote.raw(), libgit2_sys::GIT_DIRECTION_FETCH, &opts)
    };
    if rc < 0 { Err(git2::Error::last_error(rc)) } else { Ok(()) }
}
