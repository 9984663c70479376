//! The commands that show and drive ApplySets (`get`, `reconcile`, `suspend`, `resume`, `tree`,
//! `history`, `events`, `completion`): reads and small patches of `ApplySet` objects with the
//! caller's kubeconfig identity, printed as kubectl prints its tables.
//!
//! Exit codes: 0 when the command did what it says; 1 when it failed (the cluster answered with
//! an error, the ApplySet is missing, a run it waited for failed or did not finish in time).

mod completion;
pub(crate) mod drive;
pub(crate) mod events;
mod get;
pub(crate) mod history;
mod outcome;
pub(crate) mod summary;
pub(crate) mod table;
pub(crate) mod tree;

use std::future::Future;
use std::process::ExitCode;

use kube::Api;
use kube::core::Status;

pub use completion::{COMPLETE_VAR, applyset_names, completion};
pub use drive::{reconcile, resume, suspend};
pub use events::events;
pub use get::get;
pub use history::history;
pub use tree::tree;

use super::apply::{connect, runtime};
use crate::cli::NamedArgs;
use crate::cluster::Cluster;
use crate::commands::error::CliError;
use crate::operator::api::ApplySet;

/// Why a command about ApplySets stopped.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error(transparent)]
    Cli(#[from] CliError),
    /// The apiserver refused the request: printed as kubectl prints it (the status is the
    /// message's data, not a cause printed after it).
    #[error("Error from server ({}): {}", .0.reason, .0.message)]
    Server(Box<Status>),
    /// `get NAME` of an ApplySet that does not exist: kubectl's words.
    #[error("Error from server (NotFound): applysets.applyset.dev \"{0}\" not found")]
    NotFound(String),
    /// The request did not get an answer from the apiserver.
    #[error("{action}")]
    Request {
        action: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot watch ApplySet {applyset}")]
    Watch {
        applyset: String,
        #[source]
        source: kube::runtime::wait::Error,
    },
    #[error("invalid --timeout {value:?}")]
    Timeout {
        value: String,
        #[source]
        source: crate::duration::InvalidDuration,
    },
    #[error("unable to match a printer suitable for the output format {0:?}, allowed formats are: json,name,wide,yaml")]
    Output(String),
    #[error(transparent)]
    Print(#[from] crate::printers::PrintError),
    #[error("cannot read the member record of {applyset}")]
    Record {
        applyset: String,
        #[source]
        source: Box<crate::operator::members::RecordError>,
    },
    /// A run was asked for or waited on and did not end well.
    #[error(transparent)]
    Run(#[from] outcome::RunError),
    #[error("cannot write the completion script")]
    Write(#[source] std::io::Error),
}

impl FleetError {
    /// `Error from server …` stands alone (as kubectl prints it); the others follow `error: `.
    fn print(&self) {
        match self {
            FleetError::Server(_) | FleetError::NotFound(_) => eprintln!("{self}"),
            other => eprintln!("error: {}", crate::causes::Chain(other)),
        }
    }
}

/// A failed request: the apiserver's answer, or why there was none.
fn request_failed(action: impl Into<String>) -> impl FnOnce(kube::Error) -> FleetError {
    let action = action.into();
    move |error| match error {
        kube::Error::Api(status) => FleetError::Server(status),
        source => FleetError::Request { action, source },
    }
}

/// Runs a command's work on its own runtime and turns its outcome into the exit code.
fn block_on<F>(work: impl FnOnce() -> F) -> ExitCode
where
    F: Future<Output = Result<ExitCode, FleetError>>,
{
    let outcome = match runtime() {
        Ok(runtime) => runtime.block_on(work()),
        Err(error) => Err(error.into()),
    };
    outcome.unwrap_or_else(|error| {
        error.print();
        ExitCode::from(1)
    })
}

/// One ApplySet named on the command line, and where to reach it.
struct Target {
    cluster: Cluster,
    api: Api<ApplySet>,
    namespace: String,
    name: String,
}

impl Target {
    async fn of(args: &NamedArgs) -> Result<Target, FleetError> {
        let cluster = connect(&args.cluster).await?;
        let namespace = namespace_or_default(&cluster, args.namespace.namespace.as_deref());
        let api = Api::namespaced(cluster.client().clone(), &namespace);
        Ok(Target { cluster, api, namespace, name: args.name.clone() })
    }

    /// The ApplySet as it is now.
    async fn read(&self) -> Result<ApplySet, FleetError> {
        self.api.get(&self.name).await.map_err(request_failed(format!("cannot read ApplySet {}", self.key())))
    }

    fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// `-n`, else the kubeconfig context's namespace, else `default`.
fn namespace_or_default(cluster: &Cluster, namespace: Option<&str>) -> String {
    namespace.map_or_else(|| cluster.default_namespace().to_owned(), str::to_owned)
}
