//! The blocking part of a sync: everything that calls libgit2.
//!
//! A [`Job`] is a validated sync request ([`Job::prepare`]); [`Job::run`] performs it on a
//! blocking thread:
//!
//! * [`remote`]: the redirect check, connecting with the transport's credentials, listing the
//!   remote's refs and fetching;
//! * [`plan`]: which refs to fetch for the spec's ref, and the commit they give;
//! * [`callbacks`]: what libgit2 calls back during a connection (credentials, the server's
//!   certificate or host key, progress) and what those callbacks record;
//! * [`cache`]: the cache repository, the checkout of a commit, how two commits relate;
//! * [`error`]: failures as [`SourceError`]s, categorised and without secrets;
//! * [`ffi`]: the libgit2 calls git2 binds as unsafe or not at all (the only unsafe code here).

mod cache;
mod callbacks;
mod error;
mod ffi;
mod inputs;
mod plan;
mod remote;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use git2::{Oid, Repository};

pub(crate) use ffi::set_global_timeouts;

use super::checkout;
use super::credentials::Credentials;
use super::error::{ErrorCategory, ErrorContext, SecretUnusable, SourceError};
use super::known_hosts::KnownHosts;
use super::spec::{RefRequest, SourceSpec};
use super::tls::CaBundle;
use super::url::{GitUrl, Transport};
use super::{Ancestry, Artifact, Counters, Limits, RevisionChange};
use callbacks::CallbackState;

/// A validated sync request, ready to run on a blocking thread.
pub(crate) struct Job {
    pub(crate) ctx: ErrorContext,
    /// The ApplySet's own directory (its checkouts lived there before they were shared: removed
    /// when found).
    dir: PathBuf,
    /// What names the source (see [`Job::prepare`]): the URL, the ref and the credentials'
    /// content; the listing of the remote is shared by it.
    pub(crate) source_id: String,
    /// The URL and the credentials' content: one repository holds every ref fetched with them
    /// (the refs of several ApplySets, the earlier commits history reads).
    pub(crate) repository_id: String,
    /// The shared repository (named by [`Job::repository_id`]), set by the caller.
    pub(crate) repo_dir: PathBuf,
    /// Its checkouts, one directory per commit, set by the caller.
    pub(crate) checkouts_dir: PathBuf,
    /// A listing of the remote made at or after this time is reused instead of connecting.
    pub(crate) listed_since: Option<std::time::SystemTime>,
    /// The inputs digest of the revision applied before: a new commit with the same one
    /// reuses that revision's checkout.
    pub(crate) applied_inputs: Option<String>,
    url: GitUrl,
    reference: RefRequest,
    path: PathBuf,
    path_display: String,
    creds: Option<Credentials>,
    /// The proxy the remote is reached through, for the listing and for libgit2 alike.
    proxy: Option<super::proxy::ProxyUrl>,
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
        let (name, hex) = super::parse_revision(revision)?;
        Some(Previous { revision: revision.to_string(), name: name.map(str::to_owned), oid: Oid::from_str(hex).ok()? })
    }
}

/// The last listing of each source's remote (by [`Job::source_id`]).
pub(crate) type Listings = std::sync::Mutex<std::collections::HashMap<String, Listing>>;

/// What a listing of the remote resolved the ref to, and when it started.
#[derive(Clone, Debug)]
pub(crate) struct Listing {
    commit: Oid,
    revision_name: Option<String>,
    at: std::time::SystemTime,
}

fn lock(listings: &Listings) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Listing>> {
    listings.lock().unwrap_or_else(|p| p.into_inner())
}

/// The commit the spec's ref resolved to.
struct Resolved {
    commit: Oid,
    /// Name for the revision (`main`, `v1.2.3`); `None` for a bare commit pin.
    revision_name: Option<String>,
    /// Whether this sync fetched from the remote.
    fetched: bool,
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
        let path = checkout::normalise_path(spec.path.as_deref()).map_err(|cause| SourceError::UnsafePath {
            ctx: ctx.clone(),
            path: path_display.clone(),
            cause,
        })?;
        let unusable = |cause: SecretUnusable| SourceError::Secret { ctx: ctx.clone(), cause };
        let known_hosts = match (url.transport(), creds.as_ref().and_then(|c| c.known_hosts.as_deref())) {
            (Transport::Ssh, Some(text)) => Some(KnownHosts::parse(text).map_err(|e| unusable(e.into()))?),
            (Transport::Ssh, None) => return Err(unusable(CredentialsUnusable::NoKnownHosts.into())),
            _ => None,
        };
        let ca = match creds.as_ref().and_then(|c| c.ca_cert.as_deref()) {
            Some(pem) => Some(CaBundle::parse(pem).map_err(|e| unusable(e.into()))?),
            None => None,
        };
        if let Some(c) = &creds {
            check_credentials(url.transport(), c).map_err(|e| unusable(e.into()))?;
        }
        let credentials = creds.as_ref().map(Credentials::digest).unwrap_or_default();
        // The proxy is part of the ids (above), not of the credentials the transport uses.
        let mut creds = creds;
        let proxy_settings = creds.as_mut().and_then(|c| c.proxy.take());
        let creds = creds.filter(|c| *c != Credentials::default());
        if proxy_settings.is_some() && url.transport() != Transport::Https {
            return Err(SourceError::invalid(
                "spec.source.proxySecretRef: a proxy is for https:// URLs only (libgit2 cannot fetch a plain-http remote through one)",
            ));
        }
        let environment = hyper_util::client::proxy::matcher::Matcher::from_env();
        let proxy = super::proxy::route(&url, proxy_settings.as_ref(), &environment);
        let mut framed = crate::digest::Framed::default();
        framed.value(url.raw().as_bytes()).value(&credentials);
        let repository_id = crate::digest::hex(&framed.finish());
        let mut framed = crate::digest::Framed::default();
        framed.value(url.raw().as_bytes()).value(&credentials).value(reference.describe().as_bytes());
        let source_id = crate::digest::hex(&framed.finish());
        Ok(Job {
            ctx,
            source_id,
            repository_id,
            repo_dir: dir.join("repo"),
            checkouts_dir: dir.join("checkouts"),
            listed_since: None,
            applied_inputs: None,
            dir,
            url,
            reference,
            path,
            path_display,
            creds,
            proxy,
            known_hosts,
            ca,
            limits,
            timeout,
            previous: previous.and_then(Previous::parse),
        })
    }

    pub(crate) fn run(
        self,
        cancel: &AtomicBool,
        counters: &Counters,
        listings: &Listings,
    ) -> Result<Artifact, SourceError> {
        let repo = self.open_repo()?;
        let st = CallbackState::new(cancel, self.limits.max_fetch_bytes);
        let source_id = self.source_id.clone();
        let (Resolved { commit, revision_name, fetched }, moved, network) =
            match self.recent_listing(&repo, listings, &source_id).or_else(|| self.cached_pin(&repo)) {
                Some(resolved) => (resolved, false, None),
                None => {
                    let started = std::time::SystemTime::now();
                    let clock = std::time::Instant::now();
                    let resolved = self.resolve_and_fetch(&repo, &st, counters)?;
                    let network = Some(clock.elapsed());
                    let listing =
                        Listing { commit: resolved.commit, revision_name: resolved.revision_name.clone(), at: started };
                    let before = lock(listings).insert(source_id.clone(), listing);
                    let moved = before.is_some_and(|b| b.commit != resolved.commit);
                    (resolved, moved, network)
                }
            };
        if st.cancelled() {
            return Err(self.timed_out());
        }
        let change = self.revision_change(&repo, commit, revision_name.as_deref());
        let hex = commit.to_string();
        let inputs = inputs::digest(&repo, commit, &self.path);
        let same_inputs = self.same_inputs(commit, inputs.as_deref());
        let (checkout_dir, inputs_unchanged) = match self.existing_checkout(commit, same_inputs) {
            Some(existing) => existing,
            None => (self.materialise(&repo, commit, &st, counters)?, false),
        };
        self.remove_own_checkouts();
        let dir = checkout::resolve_dir(&checkout_dir, &self.path).map_err(|e| self.path_error(e, &hex))?;
        let revision = match revision_name {
            Some(name) => format!("{name}@sha1:{hex}"),
            None => format!("sha1:{hex}"),
        };
        Ok(Artifact {
            revision,
            commit: hex,
            dir,
            checkout: checkout_dir,
            fetched,
            network,
            change,
            source_id,
            repository_id: self.repository_id.clone(),
            moved,
            inputs,
            inputs_unchanged,
        })
    }

    /// Whether `commit` is another commit than the one applied before, with the same inputs.
    fn same_inputs(&self, commit: Oid, inputs: Option<&str>) -> bool {
        self.previous.as_ref().is_some_and(|p| p.oid != commit)
            && inputs.is_some()
            && inputs == self.applied_inputs.as_deref()
    }

    /// A checkout already on disk that serves `commit`, and whether the inputs are unchanged:
    /// the commit's own (another ApplySet of the repository wrote it), else, when the inputs
    /// are the same, the one of the revision applied before (it holds the same files for
    /// this path).
    fn existing_checkout(&self, commit: Oid, same_inputs: bool) -> Option<(PathBuf, bool)> {
        let own = self.checkouts_dir.join(commit.to_string());
        if own.is_dir() {
            return Some((own, same_inputs));
        }
        let previous = self.previous.as_ref().filter(|_| same_inputs)?;
        let dir = self.checkouts_dir.join(previous.oid.to_string());
        dir.is_dir().then_some((dir, true))
    }

    /// Checkouts kept in the ApplySet's own directory by an earlier version of the cache.
    fn remove_own_checkouts(&self) {
        let own = self.dir.join("checkouts");
        if own != self.checkouts_dir && own.is_dir() {
            let _ = std::fs::remove_dir_all(own);
        }
    }

    /// The commit of the source's last listing, when it was made at or after
    /// [`Job::listed_since`] and the repository holds it: no connection then.
    fn recent_listing(&self, repo: &Repository, listings: &Listings, source_id: &str) -> Option<Resolved> {
        let since = self.listed_since?;
        let listing = lock(listings).get(source_id).cloned()?;
        (listing.at >= since && repo.find_commit(listing.commit).is_ok()).then_some(Resolved {
            commit: listing.commit,
            revision_name: listing.revision_name,
            fetched: false,
        })
    }

    /// The manifest files of the pinned commit under `path` (fetched first if the cache does
    /// not hold it), read from the object database without a checkout: an earlier revision,
    /// read beside the current one. Paths are relative to the repository root.
    pub(crate) fn read_files(
        self,
        cancel: &AtomicBool,
        counters: &Counters,
    ) -> Result<Vec<(PathBuf, Vec<u8>)>, SourceError> {
        let repo = self.open_repo()?;
        let st = CallbackState::new(cancel, self.limits.max_fetch_bytes);
        let Resolved { commit, .. } = match self.cached_pin(&repo) {
            Some(cached) => cached,
            None => self.resolve_and_fetch(&repo, &st, counters)?,
        };
        let hex = commit.to_string();
        let read = |e: git2::Error| self.err(ErrorCategory::Io, format!("read commit {hex}: {}", e.message()));
        let mut tree = repo.find_commit(commit).and_then(|c| c.tree()).map_err(read)?;
        if !self.path.as_os_str().is_empty() {
            let not_found =
                || self.err(ErrorCategory::PathNotFound, format!("{} is not a directory at {hex}", self.path_display));
            let entry = tree.get_path(&self.path).map_err(|_| not_found())?;
            tree = repo.find_tree(entry.id()).map_err(|_| not_found())?;
        }
        let cancelled = || st.cancelled();
        let mut budget = checkout::Budget {
            max_bytes: self.limits.max_checkout_bytes,
            max_files: self.limits.max_checkout_files,
            max_file_bytes: self.limits.max_checkout_file_bytes,
            root: &self.path,
            used_bytes: 0,
            used_files: 0,
            cancelled: &cancelled,
        };
        let mut files = Vec::new();
        checkout::read_manifest_files(&repo, &tree, &self.path, &mut budget, &mut files)
            .map_err(|e| self.checkout_error(e))?;
        Ok(files)
    }

    /// How `commit` relates to the previous revision: compared only when the same named ref
    /// moved (see [`cache::ancestry`]).
    fn revision_change(&self, repo: &Repository, commit: Oid, revision_name: Option<&str>) -> Option<RevisionChange> {
        let previous = self.previous.as_ref().filter(|p| p.oid != commit)?;
        let same_ref = previous.name.is_some() && previous.name.as_deref() == revision_name;
        let ancestry = if !same_ref || matches!(self.reference, RefRequest::Commit { .. }) {
            Ancestry::NotCompared
        } else {
            cache::ancestry(repo, commit, previous.oid)
        };
        Some(RevisionChange { previous: previous.revision.clone(), ancestry })
    }
}

/// A secret (or its absence) that cannot serve the URL's transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsUnusable {
    #[error("ssh sources need a secret with known_hosts (the host key is always verified)")]
    NoKnownHosts,
    #[error("ssh sources need a secret with identity (the private key)")]
    NoIdentity,
    #[error("bearerToken must be printable ASCII without spaces")]
    BearerToken,
}

/// What the transport needs from the secret: an ssh key for ssh; a bearer token that can go in
/// a header.
fn check_credentials(transport: Transport, creds: &Credentials) -> Result<(), CredentialsUnusable> {
    if transport == Transport::Ssh && creds.identity.is_none() {
        return Err(CredentialsUnusable::NoIdentity);
    }
    if let Some(token) = &creds.bearer_token {
        let ok = token.expose_str().is_some_and(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()));
        if !ok {
            return Err(CredentialsUnusable::BearerToken);
        }
    }
    Ok(())
}
