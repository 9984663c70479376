//! The libgit2 calls the git2 crate binds as `unsafe` (process-wide options) or not at all
//! (`git_remote_connect_ext`): the only unsafe code of the git source besides the zeroing of
//! secrets in `credentials.rs`. Each call carries a SAFETY comment.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::os::raw::c_char;

use git2::{Binding, ProxyOptions, Remote, RemoteCallbacks};

pub(crate) fn set_global_timeouts(connect_ms: i32, io_ms: i32) {
    // SAFETY: these only set libgit2 globals; they are not tied to any
    // object's lifetime. Failure leaves libgit2's defaults in place.
    unsafe {
        let _ = git2::opts::set_server_connect_timeout_in_milliseconds(connect_ms);
        let _ = git2::opts::set_server_timeout_in_milliseconds(io_ms);
    }
}

// Not bound by libgit2-sys 0.18; part of libgit2's public API since 1.7 and
// linked in with it.
unsafe extern "C" {
    fn git_remote_connect_ext(
        remote: *mut libgit2_sys::git_remote,
        direction: libgit2_sys::git_direction,
        opts: *const libgit2_sys::git_remote_connect_options,
    ) -> std::os::raw::c_int;
}

/// `git_remote_connect_ext` with custom HTTP headers (git2's `connect_auth`
/// has no way to pass them, and a bearer token must be sent on the ref
/// listing too), through `proxy` (see `Job::proxy_options`), and without following redirects to another host
/// (`git_remote_connect` would read `http.followRedirects`, default
/// "initial": anywhere). `cbs` must stay alive, unmoved, until the remote is
/// disconnected.
pub(super) fn connect(
    remote: &mut Remote<'_>,
    cbs: &RemoteCallbacks<'_>,
    headers: &[CString],
    proxy: &ProxyOptions<'_>,
) -> Result<(), git2::Error> {
    let ptrs: Vec<*mut c_char> = headers.iter().map(|h| h.as_ptr() as *mut c_char).collect();
    let strarray = libgit2_sys::git_strarray { strings: ptrs.as_ptr() as *mut *mut c_char, count: ptrs.len() };
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
