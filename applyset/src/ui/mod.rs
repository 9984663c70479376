//! `applyset ui`: a web UI on a local port, acting with the caller's kubeconfig identity (as
//! `kubectl proxy` does), so it shows and does exactly what that identity's RBAC allows and
//! adds no credential anywhere.
//!
//! - `/`: every ApplySet the identity may list (every namespace, else the context's), failures
//!   first, with a filter box;
//! - `/applysets/{namespace}/{name}`: conditions, the objects as a tree with state and health,
//!   drift field by field (reason, manager, revision), the applied revisions, the last prune,
//!   the Events; buttons to reconcile, suspend, resume and approve a guarded prune;
//! - each page's `…/live` (server-sent events): the page's content again whenever a watch of
//!   what it shows reports a change, so pages follow the cluster without a reload.
//!
//! Server-rendered HTML (`page.rs`, from the plain values of `view.rs`), a stylesheet and a small
//! script embedded in the binary. Requests whose Host the `--accept-hosts` patterns refuse are
//! refused (DNS rebinding); actions are POSTs that must carry the server's random token and
//! come from its own pages (CSRF); every response forbids framing and foreign scripts. It
//! listens on loopback only, unless `--allow-remote-access` is given, and then every request
//! must carry a random access token (`access.rs`).

mod access;
mod live;
mod page;
mod server;
#[cfg(test)]
mod tests;
mod view;

use std::future::IntoFuture;
use std::process::ExitCode;

use crate::causes::Chain;
use crate::cli::UiArgs;
use crate::commands::apply::{connect, runtime};
use crate::commands::error::CliError;

/// Why `applyset ui` could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    #[error(transparent)]
    Cli(#[from] CliError),
    #[error("invalid --accept-hosts pattern {pattern:?}")]
    AcceptHosts {
        pattern: String,
        #[source]
        source: regex::Error,
    },
    #[error("cannot listen on {address}")]
    Listen {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot make the request token")]
    Token(#[source] openssl::error::ErrorStack),
    /// A non-loopback `--address` without `--allow-remote-access`.
    #[error(
        "--address {address} is not a loopback address: anyone who reaches it would act with your cluster identity; \
         pass --allow-remote-access to serve it with an access token (TLS is then your reverse proxy's)"
    )]
    RemoteAddress { address: String },
    #[error("cannot resolve --address {address}")]
    Resolve {
        address: String,
        #[source]
        source: std::io::Error,
    },
}

/// The default `--accept-hosts`: kubectl proxy's (loopback names) on loopback; any host with
/// `--allow-remote-access`, where the access token is what guards the server.
const LOOPBACK_HOSTS: &str = r"^localhost$,^127\.0\.0\.1$,^\[::1\]$";

/// Whether every address `address` resolves to is a loopback one.
async fn is_loopback(address: &str) -> Result<bool, UiError> {
    let resolved = tokio::net::lookup_host(address)
        .await
        .map_err(|source| UiError::Resolve { address: address.to_owned(), source })?;
    let mut any = false;
    for socket in resolved {
        any = true;
        if !socket.ip().is_loopback() {
            return Ok(false);
        }
    }
    Ok(any)
}

/// `--accept-hosts`: comma-separated regular expressions, as `kubectl proxy` takes them.
fn accept_hosts(patterns: &str) -> Result<Vec<regex::Regex>, UiError> {
    patterns
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|pattern| {
            regex::Regex::new(pattern).map_err(|source| UiError::AcceptHosts { pattern: pattern.to_owned(), source })
        })
        .collect()
}

/// Runs the server until interrupted.
pub fn ui(args: UiArgs) -> ExitCode {
    let outcome = match runtime() {
        Ok(runtime) => runtime.block_on(serve(args)),
        Err(error) => Err(error.into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}", error = Chain(&error));
            ExitCode::from(1)
        }
    }
}

async fn serve(args: UiArgs) -> Result<(), UiError> {
    if !args.allow_remote_access && !is_loopback(&args.address).await? {
        return Err(UiError::RemoteAddress { address: args.address.clone() });
    }
    let default_hosts = if args.allow_remote_access { ".*" } else { LOOPBACK_HOSTS };
    let accept_hosts = accept_hosts(args.accept_hosts.as_deref().unwrap_or(default_hosts))?;
    let access_token = args.allow_remote_access.then(access::new_token).transpose().map_err(UiError::Token)?;
    let cluster = connect(&args.cluster).await?;
    let namespace = args.namespace.clone().unwrap_or_else(|| cluster.default_namespace().to_owned());
    let listener = tokio::net::TcpListener::bind(&args.address)
        .await
        .map_err(|source| UiError::Listen { address: args.address.clone(), source })?;
    let address = listener.local_addr().map_err(|source| UiError::Listen { address: args.address.clone(), source })?;
    let state = server::Ui::new(
        cluster.client().clone(),
        cluster.server().to_owned(),
        namespace,
        accept_hosts,
        access_token.clone(),
    )?;
    // The one line a script waits for (port 0 picks the port); the token is printed only here.
    match &access_token {
        None => println!("Serving the applyset UI at http://{address}/ (Ctrl-C stops it)"),
        Some(token) => println!(
            "Serving the applyset UI at http://{address}/?token={token} (Ctrl-C stops it; the token is shown once: open this URL first)"
        ),
    }
    // Live pages never finish their responses: Ctrl-C ends the process, not a graceful drain.
    tokio::select! {
        served = axum::serve(listener, server::router(state)).into_future() => {
            served.map_err(|source| UiError::Listen { address: address.to_string(), source })
        }
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
