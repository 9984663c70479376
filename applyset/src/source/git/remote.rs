//! Talking to the remote: the redirect check, connecting with the transport's credentials,
//! listing the remote's refs (`git ls-remote`) and fetching.

use std::ffi::CString;
use std::sync::atomic::Ordering;
use std::time::Duration;

use git2::{AutotagOption, FetchOptions, Oid, ProxyOptions, Remote, RemoteRedirect, Repository};

use super::callbacks::CallbackState;
use super::plan::{RemoteRefs, Target};
use super::{Job, Resolved, ffi};
use crate::source::advertisement::Advertisement;
use crate::source::error::{ErrorCategory, SourceError};
use crate::source::listing::{self, Outcome};
use crate::source::redirect::HttpUrl;
use crate::source::spec::RefRequest;
use crate::source::url::{Transport, percent_decode, scrub_url};
use crate::source::{Counters, SERVER_IO_TIMEOUT_MS};

/// libgit2's "fetch everything, undoing a shallow clone" depth.
const DEPTH_UNSHALLOW: i32 = i32::MAX;

/// Depth of a fetch when the ref moved from a previous commit: enough
/// history to tell a fast-forward from a rewrite in the usual case, bounded
/// so that a rewrite of a long history does not download all of it.
const DEPTH_FOR_ANCESTRY: i32 = 64;

impl Job {
    /// A bare commit pin that is already cached: it needs no network at all.
    pub(super) fn cached_pin(&self, repo: &Repository) -> Option<Resolved> {
        let RefRequest::Commit { sha, branch: None } = &self.reference else { return None };
        let oid = Oid::from_str(sha).ok().filter(|oid| repo.find_commit(*oid).is_ok())?;
        Some(Resolved { commit: oid, revision_name: None, fetched: false })
    }

    /// Resolve the ref (ls-remote), fetch if the commit is not cached, and
    /// return the commit, the revision name and whether a fetch happened. It
    /// always connects: see [`Job::cached_pin`] for the one case that need not.
    pub(super) fn resolve_and_fetch(
        &self,
        repo: &Repository,
        st: &CallbackState<'_>,
        counters: &Counters,
    ) -> Result<Resolved, SourceError> {
        let (url, advertisement) = self.follow_redirects(st)?;
        counters.connects.fetch_add(1, Ordering::Relaxed);
        if let Some(advertisement) = advertisement
            && let Some(resolved) = self.resolve_cached(repo, advertisement)?
        {
            return Ok(resolved);
        }
        let mut remote = repo.remote_anonymous(&url).map_err(|e| self.err(ErrorCategory::InvalidSpec, e.message()))?;
        let headers = self.headers();
        // The connect callbacks must outlive the connection: declared before
        // any use, disconnected explicitly below.
        let connect_cbs = self.callbacks(st);
        let proxy = self.proxy_options();
        ffi::connect(&mut remote, &connect_cbs, &headers, &proxy).map_err(|e| self.remote_error(st, &e))?;
        let result = self.plan_and_fetch(repo, &mut remote, st, counters, &headers);
        let _ = remote.disconnect();
        drop(remote);
        drop(connect_cbs);
        result
    }

    /// For http(s): the repository URL after same-origin redirects of the
    /// ref listing (a redirect elsewhere is refused, see [`redirect`]), and the
    /// refs that listing advertised when the check could read them.
    fn follow_redirects(&self, st: &CallbackState<'_>) -> Result<(String, Option<Advertisement>), SourceError> {
        let raw = self.url.raw();
        if !matches!(self.url.transport(), Transport::Http | Transport::Https) {
            return Ok((raw.to_string(), None));
        }
        let request = listing::Request {
            ca: self.ca.as_ref(),
            bearer: self.bearer(),
            basic: self.basic(),
            proxy: self.proxy.as_ref(),
            deadline: self.timeout.min(Duration::from_millis(SERVER_IO_TIMEOUT_MS as u64)),
            cancel: st.cancel,
        };
        let (url, advertisement) = match listing::check(raw, &request) {
            Outcome::Use { url, advertisement } => (url, advertisement),
            Outcome::Refused { from, to } => {
                return Err(self.err(
                    ErrorCategory::RedirectRefused,
                    format!(
                        "{from} redirects to {to}; redirects to another scheme, host or port are refused (set spec.source.url to the new location if the move is intended)"
                    ),
                ));
            }
            Outcome::TooMany { from } => {
                return Err(self.err(ErrorCategory::Unreachable, format!("{from}: too many redirects")));
            }
            Outcome::TimedOut => return Err(self.timed_out()),
        };
        if st.cancelled() {
            return Err(self.timed_out());
        }
        *st.origin.borrow_mut() = HttpUrl::parse(&url).map(|u| u.origin);
        if url != raw {
            tracing::debug!(from = %self.ctx.url, to = %scrub_url(&url), "git source follows a same-origin redirect");
        }
        Ok((url, advertisement))
    }

    /// The bearer token, sent with every request (as libgit2 sends it, an extra header).
    fn bearer(&self) -> Option<String> {
        let token = self.creds.as_ref()?.bearer_token.as_ref()?;
        token.expose_str().map(str::to_owned)
    }

    /// The user and password libgit2 would answer a Basic challenge with: the Secret's, else
    /// the URL's (decoded).
    fn basic(&self) -> Option<(String, Vec<u8>)> {
        let creds = self.creds.as_ref();
        if let Some(password) = creds.and_then(|c| c.password.as_ref()) {
            let user = creds.and_then(|c| c.username.as_deref()).or(self.url.username()).unwrap_or_default();
            return Some((user.to_owned(), password.expose().to_vec()));
        }
        let url = HttpUrl::parse(self.url.raw())?;
        let authority = url.prefix.split_once("://")?.1;
        let (userinfo, _) = authority.rsplit_once('@')?;
        let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
        Some((percent_decode(user), percent_decode(password).into_bytes()))
    }

    /// libgit2's proxy: the one [`crate::source::proxy::route`] chose, or none (libgit2 is
    /// never left to guess one of its own).
    pub(super) fn proxy_options(&self) -> ProxyOptions<'_> {
        let mut options = ProxyOptions::new();
        if let Some(proxy) = &self.proxy {
            options.url(&proxy.for_libgit2());
        }
        options
    }

    /// Extra HTTP headers of every request: the bearer token, over http(s).
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

    /// The refs the connected remote advertises, and the branch its HEAD points at.
    pub(super) fn list_refs(&self, remote: &Remote<'_>, st: &CallbackState<'_>) -> Result<RemoteRefs, SourceError> {
        let heads = remote.list().map_err(|e| self.remote_error(st, &e))?;
        let refs = heads.iter().map(|h| (h.name().to_string(), h.oid())).collect();
        let head = remote
            .default_branch()
            .map_err(|e| e.message().to_string())
            .and_then(|b| b.as_str().map(str::to_owned).map_err(|_| "not UTF-8".to_string()));
        Ok(RemoteRefs::new(refs, Some(head)))
    }

    pub(super) fn fetch(
        &self,
        repo: &Repository,
        remote: &mut Remote<'_>,
        st: &CallbackState<'_>,
        counters: &Counters,
        headers: &[CString],
        target: &Target,
    ) -> Result<(), SourceError> {
        let header_strs: Vec<&str> = headers.iter().filter_map(|h| h.to_str().ok()).collect();
        let mut fo = FetchOptions::new();
        fo.remote_callbacks(self.callbacks(st))
            .proxy_options(self.proxy_options())
            .download_tags(AutotagOption::None)
            .update_fetchhead(false)
            .depth(self.fetch_depth(repo, target))
            .follow_redirects(RemoteRedirect::None)
            .custom_headers(&header_strs);
        counters.fetches.fetch_add(1, Ordering::Relaxed);
        remote.fetch(&target.refspecs, Some(&mut fo), None).map_err(|e| self.remote_error(st, &e))
    }

    /// 1 where the ref allows it; more when the ref moved from the commit applied before, to
    /// tell a fast-forward from a rewrite (see [`super::cache::ancestry`]); all of it (0, or
    /// undoing a shallow cache) otherwise.
    fn fetch_depth(&self, repo: &Repository, target: &Target) -> i32 {
        let moved = self
            .previous
            .as_ref()
            .is_some_and(|p| p.name.is_some() && p.name == target.revision_name && Some(p.oid) != target.commit);
        if self.url.transport() == Transport::Local {
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
        }
    }
}
