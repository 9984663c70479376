//! The cache on disk: a bare repository of what was fetched for a URL and credentials (with
//! `source-id` naming the URL it was made for), and its checkouts, `<sha>`, the trees of the
//! commits in use (see [`crate::source`]).

use std::collections::{HashSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use git2::{Oid, Repository};

use super::Job;
use super::callbacks::CallbackState;
use crate::source::checkout::{self, Budget};
use crate::source::error::{ErrorCategory, SourceError};
use crate::source::{Ancestry, Counters};

/// Packs a cache repository may hold before it is rebuilt.
const MAX_PACKS: usize = 64;

/// Commits walked at most to decide ancestry.
const MAX_ANCESTRY_WALK: usize = 20_000;

impl Job {
    /// Open the cache repository, recreating it when it is unreadable or was
    /// made for another URL.
    pub(super) fn open_repo(&self) -> Result<Repository, SourceError> {
        let repo_dir = &self.repo_dir;
        fs::create_dir_all(repo_dir).map_err(|e| self.io("create cache directory", e))?;
        let id_file = repo_dir.with_extension("source-id");
        let id = crate::digest::hex(&openssl::sha::sha256(self.url.raw().as_bytes()));
        let same_source = fs::read_to_string(&id_file).is_ok_and(|s| s.trim() == id);
        // libgit2 cannot repack: every fetch adds a pack. Past a bound the
        // cache is simply rebuilt by the next fetch.
        if same_source
            && pack_count(repo_dir) <= MAX_PACKS
            && let Ok(repo) = Repository::open_bare(repo_dir)
        {
            return Ok(repo);
        }
        match fs::remove_dir_all(repo_dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.io("remove stale cache repository", e)),
        }
        let repo = Repository::init_bare(repo_dir).map_err(|e| self.io("create cache repository", e.message()))?;
        fs::write(&id_file, id).map_err(|e| self.io("write cache id", e))?;
        Ok(repo)
    }

    /// Write the commit's tree to `<checkouts>/<sha>` (reused if present). Older checkouts are
    /// the caller's to remove (another ApplySet may read them).
    pub(super) fn materialise(
        &self,
        repo: &Repository,
        commit: Oid,
        st: &CallbackState<'_>,
        counters: &Counters,
    ) -> Result<PathBuf, SourceError> {
        let hex = commit.to_string();
        let checkouts = &self.checkouts_dir;
        fs::create_dir_all(checkouts).map_err(|e| self.io("create checkouts directory", e))?;
        let final_dir = checkouts.join(&hex);
        if !final_dir.is_dir() {
            self.write_checkout(repo, commit, checkouts, st)?;
            counters.checkouts.fetch_add(1, Ordering::Relaxed);
        }
        Ok(final_dir)
    }

    /// Write the tree of `commit` to `checkouts/<sha>`: under a temporary name, within the
    /// checkout limits, then renamed, so that a checkout directory that exists is complete.
    fn write_checkout(
        &self,
        repo: &Repository,
        commit: Oid,
        checkouts: &Path,
        st: &CallbackState<'_>,
    ) -> Result<(), SourceError> {
        let hex = commit.to_string();
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
        if let Err(e) = checkout::write_tree(repo, &tree, &tmp, &mut budget) {
            let _ = fs::remove_dir_all(&tmp);
            return Err(self.checkout_error(e));
        }
        fs::rename(&tmp, checkouts.join(&hex)).map_err(|e| {
            let _ = fs::remove_dir_all(&tmp);
            self.io("rename checkout", e)
        })
    }
}

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
pub(super) fn ancestry(repo: &Repository, new: Oid, old: Oid) -> Ancestry {
    if repo.find_commit(old).is_err() {
        return Ancestry::Unknown;
    }
    let shallow: HashSet<Oid> = fs::read_to_string(repo.path().join("shallow"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| Oid::from_str(l.trim()).ok())
        .collect();
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([new]);
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

pub(super) fn is_ancestor(repo: &Repository, ancestor: Oid, tip: Oid) -> bool {
    repo.graph_descendant_of(tip, ancestor).unwrap_or(false)
}
