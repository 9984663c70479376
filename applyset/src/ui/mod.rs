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
//! come from its own pages (CSRF); every response forbids framing and foreign scripts.

mod live;
mod page;
mod server;
#[cfg(test)]
mod tests;
mod view;

use std::future::IntoFuture;
use std::process::ExitCode;

use crate::cli::UiArgs;
use crate::commands::apply::{CliError, connect, runtime};

/// Why `applyset ui` could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    #[error(transparent)]
    Cli(#[from] CliError),
    #[error("invalid --accept-hosts pattern {pattern:?}: {source}")]
    AcceptHosts {
        pattern: String,
        #[source]
        source: regex::Error,
    },
    #[error("cannot listen on {address}: {source}")]
    Listen {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot make the request token: {0}")]
    Token(#[source] openssl::error::ErrorStack),
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
            eprintln!("error: {error}");
            ExitCode::from(1)
        }
    }
}

async fn serve(args: UiArgs) -> Result<(), UiError> {
    let accept_hosts = accept_hosts(&args.accept_hosts)?;
    let cluster = connect(&args.cluster).await?;
    let namespace = args.namespace.clone().unwrap_or_else(|| cluster.default_namespace().to_owned());
    let listener = tokio::net::TcpListener::bind(&args.address)
        .await
        .map_err(|source| UiError::Listen { address: args.address.clone(), source })?;
    let address = listener.local_addr().map_err(|source| UiError::Listen { address: args.address.clone(), source })?;
    let state = server::Ui::new(cluster.client().clone(), cluster.server().to_owned(), namespace, accept_hosts)?;
    // The one line a script waits for (port 0 picks the port).
    println!("Serving the applyset UI at http://{address}/ (Ctrl-C stops it)");
    // Live pages never finish their responses: Ctrl-C ends the process, not a graceful drain.
    tokio::select! {
        served = axum::serve(listener, server::router(state)).into_future() => {
            served.map_err(|source| UiError::Listen { address: address.to_string(), source })
        }
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
