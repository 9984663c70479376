//! The git source: resolves `spec.source` of an ApplySet to a commit, keeps one
//! repository per shared source (URL, ref and credentials' content) and one checkout per
//! commit of it, and hands the reconciler a directory of manifests.
//!
//! This is the only module that touches `git2`.
//!
//! # How a sync works
//!
//! 1. Validate the spec (URL, ref, path, credentials) — [`ErrorCategory::InvalidSpec`].
//! 2. Take the ApplySet's lock, then its repository's (syncs of one ApplySet, and fetches
//!    into one repository, never overlap; a sync abandoned by a timeout keeps the locks
//!    until its blocking thread ends).
//! 3. On a blocking thread: open (or create) the bare repository shared by the URL and
//!    credentials `<cache_root>/sources/<repository id>`; reuse the source's last listing of
//!    the remote when it is recent enough ([`SyncOptions::listed_since`]), else
//!    connect to the remote and list its refs (`git ls-remote`), resolve the
//!    ref to a commit. A pinned `commit`
//!    (without `branch`) that is already cached needs no connection at all.
//!    For http(s), the ref listing is first requested here to see
//!    redirects: one to the same scheme, host and port is followed, any
//!    other refused ([`ErrorCategory::RedirectRefused`]); libgit2 itself
//!    follows none to another host.
//! 4. Fetch **only if that commit is not in the cache yet**, with depth 1
//!    where the ref allows it (branch, tag, semver, a commit that is its
//!    branch's tip; not over `file://`, whose transport cannot do shallow);
//!    when the same ref moved from the previous commit given to
//!    [`GitSource::sync_since`], with depth 64, so that the cache holds
//!    enough history to tell a fast-forward from a rewrite
//!    ([`Artifact::change`]). [`GitSource::stats`] counts connections and
//!    fetches.
//! 5. Materialise the commit's tree straight from the object database into
//!    `<cache_root>/checkouts/<repository id>/<sha>` (written to a temporary name and
//!    renamed, so a directory that exists is complete), unless it is there already: every
//!    ApplySet of the repository at that commit reads the same one. The ApplySet claims it
//!    until its next sync, and checkouts nobody claims are removed (see `claims.rs`). A new commit
//!    that leaves the ApplySet's inputs unchanged keeps the checkout it has.
//! 6. Resolve `path` inside the checkout: `..`, absolute paths, symlinked
//!    components and symlinks under it that lead outside the checkout are
//!    [`ErrorCategory::PathEscapes`].
//!
//! The whole operation runs under `tokio::time::timeout`; on expiry a flag
//! makes every libgit2 callback abort, and libgit2's process-wide socket
//! timeouts (set by [`GitSource::new`]) bound a thread blocked on a silent
//! server. Transfer-progress callbacks enforce [`Limits::max_fetch_bytes`];
//! the checkout enforces [`Limits::max_checkout_bytes`] and
//! [`Limits::max_checkout_files`].
//!
//! The returned [`Artifact::dir`] stays valid until the next sync of the same
//! key (or [`GitSource::purge`]).

mod advertisement;
mod checkout;
mod claims;
mod credentials;
mod error;
mod git;
mod known_hosts;
mod listing;
mod proxy;
mod redirect;
mod semver_ref;
mod spec;
mod tls;
mod url;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::causes::{Chain, with_causes};

pub use checkout::UnsafePath;
/// The controller's checks of `spec.path` in a checkout (`applyset build` checks a local one).
pub(crate) use checkout::{PathError, normalise_path, resolve_dir};
pub use credentials::{Credentials, Secret};
pub use error::{ErrorCategory, ErrorContext, SecretUnusable, SourceError};
pub use git::CredentialsUnusable;
pub use known_hosts::KnownHostsError;
pub use proxy::ProxySettings;
pub use spec::{GitRef, SecretRef, SourceSpec};
pub use tls::CaError;
pub use url::{GitUrl, Transport, scrub_url, url_secrets};

/// What a ref advertisement says: the refs (name, SHA-1) in the order sent, and the branch
/// HEAD points at when the server said.
pub type AdvertisedRefs = (Vec<(String, [u8; 20])>, Option<String>);

/// The ref advertisement reader (see `advertisement.rs`), for the fuzz target
/// (`applyset/fuzz/fuzz_targets/ref_advertisement.rs`): the refs, and the branch HEAD points
/// at, of a smart-HTTP `info/refs` body; `None` unless it is understood whole.
#[doc(hidden)]
pub fn read_ref_advertisement(body: &[u8]) -> Option<AdvertisedRefs> {
    advertisement::parse(body).map(|ad| (ad.refs, ad.head))
}

/// A revision as [`Artifact::revision`] writes it (`<ref>@sha1:<hex>` or `sha1:<hex>`): its ref
/// name, if any, and its full commit SHA.
pub fn parse_revision(revision: &str) -> Option<(Option<&str>, &str)> {
    let (name, hex) = match revision.rsplit_once("@sha1:") {
        Some((name, hex)) => (Some(name), hex),
        None => (None, revision.strip_prefix("sha1:")?),
    };
    (hex.len() == 40 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some((name, hex))
}

/// Identifies one ApplySet's cache: its namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheKey {
    pub namespace: String,
    pub name: String,
}

impl CacheKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        CacheKey { namespace: namespace.into(), name: name.into() }
    }

    /// The cache directory name: `<namespace>_<name>` with every byte outside
    /// `[a-z0-9.-]` (including `_`) written as `%XX` and a leading `.` escaped,
    /// so distinct keys never share a directory and no key names `.`/`..` or
    /// contains a `/`.
    pub fn dir_name(&self) -> String {
        fn esc(s: &str) -> String {
            let mut out = String::with_capacity(s.len());
            for (i, b) in s.bytes().enumerate() {
                if b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || (b == b'.' && i > 0) {
                    out.push(b as char);
                } else {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            out
        }
        format!("{}_{}", esc(&self.namespace), esc(&self.name))
    }
}

/// What a sync produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    /// `<ref>@sha1:<hex>` like Flux: `main@sha1:…` for a branch (or the
    /// default branch), `v1.2.3@sha1:…` for a tag or the tag a semver range
    /// picked, `sha1:…` for a commit pinned without a branch.
    pub revision: String,
    /// The full commit SHA (40 hex digits).
    pub commit: String,
    /// The canonical `source.path` directory inside the checkout.
    pub dir: PathBuf,
    /// The root of the checkout (`dir` is inside it).
    pub checkout: PathBuf,
    /// Whether this sync fetched from the remote (false when the commit was
    /// already cached).
    pub fetched: bool,
    /// How long this sync spent on the remote (its listing, and the fetch when `fetched`);
    /// `None` when it touched no network: it took the source's shared listing, or a pinned
    /// commit already cached.
    pub network: Option<std::time::Duration>,
    /// How this revision relates to the previous one given to
    /// [`GitSource::sync_since`]; `None` without one, or when the commit is
    /// the same.
    pub change: Option<RevisionChange>,
    /// The shared source this came from (URL, ref and credentials' content, hashed): every
    /// ApplySet with the same id shares its listing of the remote.
    pub source_id: String,
    /// The repository it was fetched into (URL and credentials' content, hashed): shared by
    /// every ref fetched with them ([`GitSource::repository_dir`]).
    pub repository_id: String,
    /// This sync listed the remote and found another commit than the source's last listing:
    /// the other ApplySets that follow the source have a new revision to apply.
    pub moved: bool,
    /// The digest of what the ApplySet reads from this commit (its path's tree and what its
    /// kustomizations reach); `None` when that cannot be told (a symbolic link, a remote base).
    pub inputs: Option<String>,
    /// Another commit than the previous revision, with the same inputs as given in
    /// [`SyncOptions::applied_inputs`]: nothing the ApplySet reads changed, and the previous
    /// revision's checkout (the same files) was reused instead of writing a new one.
    pub inputs_unchanged: bool,
}

/// How a sync may use what the source's other followers did.
#[derive(Clone, Copy, Debug, Default)]
pub struct SyncOptions<'a> {
    /// The revision applied before (see [`GitSource::sync_since`]).
    pub previous: Option<&'a str>,
    /// A listing of the remote made at or after this time (by any ApplySet of the same
    /// source) is reused instead of connecting; `None` always connects.
    pub listed_since: Option<std::time::SystemTime>,
    /// The inputs digest of the revision applied before (see [`Artifact::inputs_unchanged`]).
    pub applied_inputs: Option<&'a str>,
}
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RevisionChange {
    /// The previous revision, as given (`main@sha1:…`).
    pub previous: String,
    pub ancestry: Ancestry,
}

/// How a new commit relates to the previous commit of the same ref, by what
/// the cache holds (see the fetch depth in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ancestry {
    /// The new commit descends from the previous one: a fast-forward.
    Descendant,
    /// It does not: the ref was force-pushed backwards or its history
    /// rewritten.
    Rewritten,
    /// The cache cannot tell: the previous commit is not in it (a new cache,
    /// another URL) or the history between them is cut (shallow fetch,
    /// more than the fetched depth).
    Unknown,
    /// Not compared: the ref itself changed (another branch, tag or semver
    /// pick) or the spec pins a commit.
    NotCompared,
}

/// Size limits, enforced during the fetch (bytes received) and the checkout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Maximum bytes received from the remote in one fetch.
    pub max_fetch_bytes: u64,
    /// Maximum total size of the files of one checkout.
    pub max_checkout_bytes: u64,
    /// Maximum number of entries (files, directories, links) of one checkout.
    pub max_checkout_files: u64,
    /// Maximum size of one file of a checkout, checked on the object's header before it is
    /// inflated: libgit2 holds a blob whole in memory, and a file of zeros hundreds of MB
    /// large is well under a megabyte in git.
    pub max_checkout_file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_fetch_bytes: 512 * 1024 * 1024,
            max_checkout_bytes: 1024 * 1024 * 1024,
            max_checkout_files: 200_000,
            // Above the loader's own caps (a manifest that large fails LoadFailed, naming it),
            // below what would threaten the controller's memory.
            max_checkout_file_bytes: 128 * 1024 * 1024,
        }
    }
}

/// Counters, for metrics and for proving that unchanged refs are not fetched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// Syncs started.
    pub syncs: u64,
    /// Connections to remotes (ls-remote).
    pub connects: u64,
    /// Fetches (downloads of objects).
    pub fetches: u64,
    /// Checkouts written.
    pub checkouts: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    syncs: AtomicU64,
    connects: AtomicU64,
    fetches: AtomicU64,
    checkouts: AtomicU64,
}

/// The git source. Cheap to share (`Arc` it); one per operator.
pub struct GitSource {
    cache_root: PathBuf,
    limits: Limits,
    counters: Arc<Counters>,
    /// One lock per ApplySet (its checkouts) and one per shared source (its repository).
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The last listing of each shared source's remote.
    listings: Arc<git::Listings>,
    /// The ApplySets that synced each shared source.
    followers: Mutex<HashMap<String, std::collections::BTreeSet<CacheKey>>>,
    /// The checkout each ApplySet reads.
    claims: Arc<claims::Claims>,
}

impl std::fmt::Debug for GitSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitSource").field("cache_root", &self.cache_root).field("limits", &self.limits).finish()
    }
}

/// libgit2's socket timeouts. They are process-wide; they only bound how long
/// a thread abandoned by a timed-out sync can stay blocked on a silent server.
const SERVER_CONNECT_TIMEOUT_MS: i32 = 30_000;
const SERVER_IO_TIMEOUT_MS: i32 = 60_000;

impl GitSource {
    /// A source caching under `cache_root` (created on first use), with
    /// default [`Limits`]. Also sets libgit2's process-wide socket timeouts.
    pub fn new(cache_root: impl Into<PathBuf>) -> Self {
        git::set_global_timeouts(SERVER_CONNECT_TIMEOUT_MS, SERVER_IO_TIMEOUT_MS);
        GitSource {
            cache_root: cache_root.into(),
            limits: Limits::default(),
            counters: Arc::default(),
            locks: Mutex::default(),
            listings: Arc::default(),
            followers: Mutex::default(),
            claims: Arc::default(),
        }
    }

    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub fn cache_root(&self) -> &Path {
        &self.cache_root
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn stats(&self) -> SourceStats {
        SourceStats {
            syncs: self.counters.syncs.load(Ordering::Relaxed),
            connects: self.counters.connects.load(Ordering::Relaxed),
            fetches: self.counters.fetches.load(Ordering::Relaxed),
            checkouts: self.counters.checkouts.load(Ordering::Relaxed),
        }
    }

    /// The cache directory of `key`.
    pub fn cache_dir(&self, key: &CacheKey) -> PathBuf {
        self.cache_root.join(key.dir_name())
    }

    fn lock_for(&self, name: String) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(name).or_default().clone()
    }

    /// The lock of an ApplySet's checkouts.
    fn set_lock(&self, key: &CacheKey) -> Arc<tokio::sync::Mutex<()>> {
        self.lock_for(format!("set/{}", key.dir_name()))
    }

    /// The locks a job takes, in this order: the ApplySet's, then its repository's.
    fn locks_of(&self, key: &CacheKey, job: &git::Job) -> [Arc<tokio::sync::Mutex<()>>; 2] {
        [self.set_lock(key), self.lock_for(format!("repository/{}", job.repository_id))]
    }

    /// The bare repository shared by every ApplySet with the same URL and credentials
    /// ([`Artifact::repository_id`]), whatever ref each follows.
    pub fn repository_dir(&self, repository_id: &str) -> PathBuf {
        self.cache_root.join("sources").join(repository_id)
    }

    /// The checkouts of the repository named by `repository_id`, one per commit in use.
    pub fn checkouts_dir(&self, repository_id: &str) -> PathBuf {
        self.cache_root.join("checkouts").join(repository_id)
    }

    /// The ApplySets (other than `key`) that synced the same source as `key` last did.
    pub fn fellow_followers(&self, source_id: &str, key: &CacheKey) -> Vec<CacheKey> {
        let followers = self.followers.lock().unwrap_or_else(|p| p.into_inner());
        followers.get(source_id).map(|keys| keys.iter().filter(|k| *k != key).cloned().collect()).unwrap_or_default()
    }

    /// `key` follows `source_id` now (and no other source).
    fn follows(&self, key: &CacheKey, source_id: &str) {
        self.unfollow(key);
        let mut followers = self.followers.lock().unwrap_or_else(|p| p.into_inner());
        followers.entry(source_id.to_owned()).or_default().insert(key.clone());
    }

    /// `key` follows no source (any more).
    fn unfollow(&self, key: &CacheKey) {
        let mut followers = self.followers.lock().unwrap_or_else(|p| p.into_inner());
        for keys in followers.values_mut() {
            keys.remove(key);
        }
        followers.retain(|_, keys| !keys.is_empty());
    }

    /// Resolve `spec` to a commit, fetch it if it is not cached, check it out
    /// and return the directory of `spec.path`. The whole operation —
    /// waiting for the key's lock included — is bounded by `timeout`.
    pub async fn sync(
        &self,
        key: &CacheKey,
        spec: &SourceSpec,
        auth: Option<Credentials>,
        timeout: Duration,
    ) -> Result<Artifact, SourceError> {
        self.sync_since(key, spec, auth, timeout, None).await
    }

    /// [`GitSource::sync`], relating the result to `previous`, the revision
    /// applied before (`<ref>@sha1:<hex>` as in [`Artifact::revision`]):
    /// [`Artifact::change`] says whether the ref moved forward or its
    /// history was rewritten.
    pub async fn sync_since(
        &self,
        key: &CacheKey,
        spec: &SourceSpec,
        auth: Option<Credentials>,
        timeout: Duration,
        previous: Option<&str>,
    ) -> Result<Artifact, SourceError> {
        self.sync_with(key, spec, auth, timeout, SyncOptions { previous, ..SyncOptions::default() }).await
    }

    /// [`GitSource::sync_since`] from the repository shared by every ApplySet with the same
    /// URL, ref and credentials' content: one fetch serves them all, and a listing of the
    /// remote made since `options.listed_since` is reused without connecting.
    pub async fn sync_with(
        &self,
        key: &CacheKey,
        spec: &SourceSpec,
        auth: Option<Credentials>,
        timeout: Duration,
        options: SyncOptions<'_>,
    ) -> Result<Artifact, SourceError> {
        self.counters.syncs.fetch_add(1, Ordering::Relaxed);
        let mut job = git::Job::prepare(self.cache_dir(key), spec, auth, self.limits, timeout, options.previous)?;
        job.repo_dir = self.repository_dir(&job.repository_id);
        job.checkouts_dir = self.checkouts_dir(&job.repository_id);
        job.listed_since = options.listed_since;
        job.applied_inputs = options.applied_inputs.map(str::to_owned);
        let (listings, claims, claimant) = (self.listings.clone(), self.claims.clone(), key.clone());
        let result = self
            .run_locked(key, job, timeout, move |job, cancel, counters| {
                let checkouts = job.checkouts_dir.clone();
                let artifact = job.run(cancel, counters, &listings)?;
                // Under the repository's lock: nobody writes or claims its checkouts meanwhile.
                claims.claim(&claimant, &artifact.checkout);
                claims.sweep(&checkouts);
                Ok(artifact)
            })
            .await;
        if let Ok(artifact) = &result {
            self.follows(key, &artifact.source_id);
        }
        match &result {
            Ok(a) => tracing::debug!(key = ?key, revision = %a.revision, fetched = a.fetched, "git source synced"),
            Err(e) => {
                tracing::debug!(key = ?key, category = %e.category(), error = %Chain(&e), "git source sync failed")
            }
        }
        result
    }

    /// The manifest files of an earlier revision: `commit` under `path` (both as they were
    /// when it was applied), from the cache, or fetched into it when it does not hold the
    /// commit (a restarted controller with an empty cache). Paths are relative to the
    /// repository root. Serialised with the key's syncs; bounded by `timeout`.
    pub async fn read_revision(
        &self,
        key: &CacheKey,
        spec: &SourceSpec,
        commit: &str,
        auth: Option<Credentials>,
        timeout: Duration,
    ) -> Result<Vec<(PathBuf, Vec<u8>)>, SourceError> {
        let pinned = SourceSpec {
            reference: Some(GitRef { commit: Some(commit.to_owned()), ..GitRef::default() }),
            ..spec.clone()
        };
        let mut job = git::Job::prepare(self.cache_dir(key), &pinned, auth, self.limits, timeout, None)?;
        job.repo_dir = self.repository_dir(&job.repository_id);
        self.run_locked(key, job, timeout, |job, cancel, counters| job.read_files(cancel, counters)).await
    }

    /// Runs `work` on a blocking thread under the key's lock, within `timeout` (the wait for
    /// the lock included); on expiry a flag makes every libgit2 callback abort.
    async fn run_locked<T: Send + 'static>(
        &self,
        key: &CacheKey,
        job: git::Job,
        timeout: Duration,
        work: impl FnOnce(git::Job, &AtomicBool, &Counters) -> Result<T, SourceError> + Send + 'static,
    ) -> Result<T, SourceError> {
        let ctx = job.ctx.clone();
        let cancel = Arc::new(AtomicBool::new(false));
        let [set_lock, source_lock] = self.locks_of(key, &job);
        let counters = self.counters.clone();
        let cancel2 = cancel.clone();
        let locked = Arc::new(AtomicBool::new(false));
        let locked2 = locked.clone();
        let run = async move {
            let guards = (set_lock.lock_owned().await, source_lock.lock_owned().await);
            locked2.store(true, Ordering::SeqCst);
            let handle = tokio::task::spawn_blocking(move || {
                let _guards = guards;
                work(job, &cancel2, &counters)
            });
            handle.await
        };
        match tokio::time::timeout(timeout, run).await {
            Ok(Ok(result)) => result,
            Ok(Err(join)) => Err(SourceError::new(ErrorCategory::Io, &ctx, format!("sync task failed: {join}"))),
            Err(_) if !locked.load(Ordering::SeqCst) => {
                // An earlier sync of this key (timed out, but stuck in a socket read that no
                // cancel flag reaches) still holds the cache: say so, not "timed out".
                tracing::debug!(key = ?key, ?timeout, "git source busy with an earlier sync");
                Err(SourceError::timeout(
                    &ctx,
                    timeout,
                    format!(
                        "an earlier fetch of this source is still running (it stops at the server I/O timeout of {} s at the latest); this one could not start",
                        SERVER_IO_TIMEOUT_MS / 1000
                    ),
                ))
            }
            Err(_) => {
                cancel.store(true, Ordering::SeqCst);
                tracing::debug!(key = ?key, ?timeout, "git source sync timed out");
                Err(SourceError::timeout(&ctx, timeout, ""))
            }
        }
    }

    /// A checkout its last reader released, under its repository's lock (another ApplySet
    /// may have claimed it again meanwhile).
    async fn remove_unclaimed(&self, checkout: PathBuf) {
        let Some(repository_id) = checkout.parent().and_then(Path::file_name).and_then(|n| n.to_str()) else {
            return;
        };
        let lock = self.lock_for(format!("repository/{repository_id}"));
        let _guard = lock.lock().await;
        let claims = self.claims.clone();
        let removed = tokio::task::spawn_blocking(move || {
            if !claims.is_claimed(&checkout) {
                let _ = std::fs::remove_dir_all(&checkout);
            }
        });
        let _ = removed.await;
    }

    /// Remove the cache of `key` (when its ApplySet is deleted). Waits for a
    /// running sync of the key to finish.
    pub async fn purge(&self, key: &CacheKey) -> Result<(), SourceError> {
        let lock = self.set_lock(key);
        let _guard = lock.lock().await;
        if let Some(checkout) = self.claims.release(key) {
            self.remove_unclaimed(checkout).await;
        }
        let dir = self.cache_dir(key);
        let result = tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        })
        .await;
        self.locks.lock().unwrap_or_else(|p| p.into_inner()).remove(&format!("set/{}", key.dir_name()));
        self.unfollow(key);
        let ctx = ErrorContext { url: String::new(), reference: format!("cache of {}/{}", key.namespace, key.name) };
        match result {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(SourceError::new(ErrorCategory::Io, &ctx, with_causes(&e))),
            Err(e) => Err(SourceError::new(ErrorCategory::Io, &ctx, with_causes(&e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_dir_names_are_safe_and_distinct() {
        let k = |ns: &str, n: &str| CacheKey::new(ns, n).dir_name();
        assert_eq!(k("default", "web"), "default_web");
        assert_eq!(k("team-a", "app.v1"), "team-a_app.v1");
        assert_ne!(k("a_b", "c"), k("a", "b_c"));
        assert_eq!(k("..", ".."), "%2E._%2E.");
        assert!(!k("x/../..", "y").contains('/'));
        assert_eq!(k("A", "b"), "%41_b");
    }

    #[test]
    fn categories_are_bounded() {
        let names: Vec<&str> = ErrorCategory::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), 11);
        assert!(names.iter().all(|n| n.chars().all(|c| c.is_ascii_alphabetic())));
    }
}
