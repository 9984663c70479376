//! The commands that show and drive ApplySets: `get`, `reconcile`, `suspend`, `resume`,
//! `tree`, `history`, `events`, `completion`.

use clap::Args;

use super::ClusterArgs;

/// Which namespace an ApplySet command looks in.
#[derive(Debug, Args)]
pub struct NamespaceArgs {
    /// The ApplySet's namespace (default: the kubeconfig context's namespace, else `default`).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
}

/// A command about one ApplySet.
#[derive(Debug, Args)]
pub struct NamedArgs {
    /// The ApplySet's name.
    pub name: String,
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `applyset get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// One ApplySet (default: all of the namespace).
    pub name: Option<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `applyset reconcile`.
#[derive(Debug, Args)]
pub struct ReconcileArgs {
    #[command(flatten)]
    pub target: NamedArgs,
}

/// `applyset suspend`.
#[derive(Debug, Args)]
pub struct SuspendArgs {
    #[command(flatten)]
    pub target: NamedArgs,
}

/// `applyset resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub target: NamedArgs,
}

/// `applyset events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    #[command(flatten)]
    pub target: NamedArgs,
}

/// `applyset completion`.
#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// bash, zsh or fish.
    pub shell: String,
}
