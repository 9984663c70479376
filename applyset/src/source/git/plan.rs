//! What to fetch for the spec's ref, decided from the refs the remote advertises, and the
//! commit it gives once fetched.

use std::ffi::CString;

use git2::{Oid, Remote, Repository};

use super::cache::is_ancestor;
use super::callbacks::CallbackState;
use super::{Job, Resolved};
use crate::source::Counters;
use crate::source::advertisement::Advertisement;
use crate::source::error::{ErrorCategory, SourceError};
use crate::source::semver_ref;
use crate::source::spec::RefRequest;

/// The refs a remote advertises (name and object), and what its HEAD points at: the ref
/// name, the reason it has none, or `None` when the advertisement did not say.
pub(super) struct RemoteRefs {
    refs: Vec<(String, Oid)>,
    head: Option<Result<String, String>>,
}

impl RemoteRefs {
    pub(super) fn new(refs: Vec<(String, Oid)>, head: Option<Result<String, String>>) -> Self {
        RemoteRefs { refs, head }
    }

    fn find(&self, name: &str) -> Option<Oid> {
        self.refs.iter().find(|(n, _)| n == name).map(|(_, oid)| *oid)
    }

    fn branch(&self, branch: &str) -> Option<Oid> {
        self.find(&format!("refs/heads/{branch}"))
    }

    /// The commit of a tag: what an annotated tag peels to (`^{}`), else the tag itself.
    fn peeled_tag(&self, tag: &str) -> Option<Oid> {
        self.find(&format!("refs/tags/{tag}^{{}}")).or_else(|| self.find(&format!("refs/tags/{tag}")))
    }

    fn tag_names(&self) -> impl Iterator<Item = &str> {
        self.refs.iter().filter_map(|(n, _)| n.strip_prefix("refs/tags/")).filter(|n| !n.ends_with("^{}"))
    }
}

/// What to fetch and what it should give.
pub(super) struct Target {
    /// Name for the revision (`main`, `v1.2.3`); `None` for a bare commit pin.
    pub(super) revision_name: Option<String>,
    /// The commit we expect (known from ls-remote), if known before fetching.
    pub(super) commit: Option<Oid>,
    /// Refspecs to fetch when the commit is not cached.
    pub(super) refspecs: Vec<String>,
    /// Local ref that the fetch updates and that points at the commit (for
    /// branch/tag/semver).
    local_ref: Option<String>,
    /// Whether depth 1 gives the commit.
    pub(super) shallow_ok: bool,
}

/// The spec's ref against the remote's refs.
enum Plan {
    /// A commit pinned on a branch, already cached and on the branch: nothing to fetch.
    Cached(Resolved),
    Fetch(Target),
}

impl Job {
    /// Resolve the ref against the connected remote's refs, fetch if the commit is not cached,
    /// and return the commit, the revision name and whether a fetch happened.
    pub(super) fn plan_and_fetch(
        &self,
        repo: &Repository,
        remote: &mut Remote<'_>,
        st: &CallbackState<'_>,
        counters: &Counters,
        headers: &[CString],
    ) -> Result<Resolved, SourceError> {
        let refs = self.list_refs(remote, st)?;
        let target = match self.plan(repo, &refs)? {
            Plan::Cached(resolved) => return Ok(resolved),
            Plan::Fetch(target) => target,
        };
        let cached = target.commit.is_some_and(|oid| repo.find_commit(oid).is_ok());
        if !cached {
            self.fetch(repo, remote, st, counters, headers, &target)?;
        }
        let commit = self.commit_of(repo, &target, cached)?;
        Ok(Resolved { commit, revision_name: target.revision_name, fetched: !cached })
    }

    fn not_found(&self, cause: String) -> SourceError {
        self.err(ErrorCategory::RefNotFound, cause)
    }

    /// The spec's ref resolved from the advertisement the redirect check read, when that is
    /// enough: the commit is cached (nothing to fetch) and the advertisement said all the
    /// plan needs. `None` sends the caller to connect with libgit2.
    pub(super) fn resolve_cached(
        &self,
        repo: &Repository,
        advertisement: Advertisement,
    ) -> Result<Option<Resolved>, SourceError> {
        if matches!(self.reference, RefRequest::DefaultBranch) && advertisement.head.is_none() {
            return Ok(None);
        }
        let refs = advertisement.refs.into_iter().map(|(name, oid)| (name, Oid::from_bytes(&oid)));
        let refs: Result<Vec<_>, _> = refs.map(|(name, oid)| oid.map(|oid| (name, oid))).collect();
        let Ok(refs) = refs else { return Ok(None) };
        let refs = RemoteRefs::new(refs, advertisement.head.map(Ok));
        match self.plan(repo, &refs)? {
            Plan::Cached(resolved) => Ok(Some(resolved)),
            Plan::Fetch(target) if target.commit.is_some_and(|oid| repo.find_commit(oid).is_ok()) => {
                let commit = self.commit_of(repo, &target, true)?;
                Ok(Some(Resolved { commit, revision_name: target.revision_name, fetched: false }))
            }
            Plan::Fetch(_) => Ok(None),
        }
    }

    fn plan(&self, repo: &Repository, refs: &RemoteRefs) -> Result<Plan, SourceError> {
        let target = match &self.reference {
            RefRequest::DefaultBranch => self.branch_target(refs, &self.default_branch(refs)?)?,
            RefRequest::Branch(b) => self.branch_target(refs, b)?,
            RefRequest::Tag(t) => self.tag_target(refs, t)?,
            RefRequest::Semver { range, req } => {
                let tag = semver_ref::pick(req, refs.tag_names())
                    .ok_or_else(|| self.not_found(format!("no tag matches the semver range {range:?}")))?
                    .to_string();
                self.tag_target(refs, &tag)?
            }
            RefRequest::Commit { sha, branch } => return self.commit_plan(repo, refs, sha, branch.as_deref()),
        };
        Ok(Plan::Fetch(target))
    }

    /// The branch the remote's HEAD points at.
    fn default_branch(&self, refs: &RemoteRefs) -> Result<String, SourceError> {
        let head = match &refs.head {
            Some(Ok(head)) => head.as_str(),
            Some(Err(cause)) => {
                return Err(self.not_found(format!("the remote has no default branch (HEAD): {cause}")));
            }
            None => return Err(self.not_found("the remote did not say its default branch (HEAD)".to_string())),
        };
        match head.strip_prefix("refs/heads/") {
            Some(branch) => Ok(branch.to_string()),
            None => Err(self.not_found(format!("the remote HEAD {head:?} is not a branch"))),
        }
    }

    fn branch_target(&self, refs: &RemoteRefs, b: &str) -> Result<Target, SourceError> {
        let oid = refs.branch(b).ok_or_else(|| self.not_found(format!("branch {b} does not exist on the remote")))?;
        Ok(Target {
            revision_name: Some(b.to_string()),
            commit: Some(oid),
            refspecs: vec![format!("+refs/heads/{b}:refs/remotes/origin/{b}")],
            local_ref: Some(format!("refs/remotes/origin/{b}")),
            shallow_ok: true,
        })
    }

    fn tag_target(&self, refs: &RemoteRefs, t: &str) -> Result<Target, SourceError> {
        let oid = refs.peeled_tag(t).ok_or_else(|| self.not_found(format!("tag {t} does not exist on the remote")))?;
        Ok(Target {
            revision_name: Some(t.to_string()),
            commit: Some(oid),
            refspecs: vec![format!("+refs/tags/{t}:refs/tags/{t}")],
            local_ref: Some(format!("refs/tags/{t}")),
            shallow_ok: true,
        })
    }

    /// A pinned commit: on `branch` (fetched with it; nothing to fetch when it is cached and
    /// on the branch's tip's history), or anywhere (every branch and tag is fetched).
    fn commit_plan(
        &self,
        repo: &Repository,
        refs: &RemoteRefs,
        sha: &str,
        branch: Option<&str>,
    ) -> Result<Plan, SourceError> {
        let oid = Oid::from_str(sha).map_err(|e| self.err(ErrorCategory::InvalidSpec, e.message()))?;
        let Some(b) = branch else {
            return Ok(Plan::Fetch(Target {
                revision_name: None,
                commit: Some(oid),
                refspecs: vec![
                    "+refs/heads/*:refs/remotes/origin/*".to_string(),
                    "+refs/tags/*:refs/tags/*".to_string(),
                ],
                local_ref: None,
                shallow_ok: false,
            }));
        };
        let tip = refs.branch(b).ok_or_else(|| self.not_found(format!("branch {b} does not exist on the remote")))?;
        if repo.find_commit(oid).is_ok() && (tip == oid || is_ancestor(repo, oid, tip)) {
            return Ok(Plan::Cached(Resolved { commit: oid, revision_name: Some(b.to_string()), fetched: false }));
        }
        Ok(Plan::Fetch(Target {
            revision_name: Some(b.to_string()),
            commit: Some(oid),
            refspecs: vec![format!("+refs/heads/{b}:refs/remotes/origin/{b}")],
            local_ref: None,
            shallow_ok: tip == oid,
        }))
    }

    /// The commit `target` gives, once fetched if it was not `cached`: a pinned commit must
    /// have arrived (and be on its branch); a branch or tag is what the fetch updated.
    fn commit_of(&self, repo: &Repository, target: &Target, cached: bool) -> Result<Oid, SourceError> {
        match (&self.reference, &target.local_ref) {
            (RefRequest::Commit { sha, branch }, _) => {
                let oid = target.commit.expect("commit targets know their commit");
                self.check_pinned_commit(repo, oid, sha, branch.as_deref())?;
                Ok(oid)
            }
            (_, Some(local)) if !cached => {
                repo.find_reference(local).and_then(|r| r.peel_to_commit()).map(|c| c.id()).map_err(|e| {
                    self.err(ErrorCategory::Io, format!("fetched {local} but cannot read it: {}", e.message()))
                })
            }
            _ => Ok(target.commit.expect("branch and tag targets know their commit")),
        }
    }

    /// A pinned commit is in the cache after the fetch, and on its branch if one is named.
    fn check_pinned_commit(
        &self,
        repo: &Repository,
        oid: Oid,
        sha: &str,
        branch: Option<&str>,
    ) -> Result<(), SourceError> {
        if repo.find_commit(oid).is_err() {
            let place = match branch {
                Some(b) => format!("on branch {b}"),
                None => "in any branch or tag".to_string(),
            };
            return Err(self.not_found(format!("commit {sha} not found {place}")));
        }
        if let Some(b) = branch {
            let tip = repo
                .find_reference(&format!("refs/remotes/origin/{b}"))
                .and_then(|r| r.peel_to_commit())
                .map(|c| c.id())
                .ok();
            if tip.is_none_or(|tip| tip != oid && !is_ancestor(repo, oid, tip)) {
                return Err(self.not_found(format!("commit {sha} is not on branch {b}")));
            }
        }
        Ok(())
    }
}
