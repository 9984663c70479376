//! The commands that show and drive ApplySets: `get`, `reconcile`, `suspend`, `resume`,
//! `tree`, `history`, `events`, `completion`.

use clap::Args;
use clap_complete::engine::ArgValueCandidates;

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
    #[arg(value_name = "NAME", add = ArgValueCandidates::new(crate::commands::fleet::applyset_names))]
    pub name: String,
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// How long to wait for the controller, and whether to.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// How long to wait for the run (Go duration).
    #[arg(long, default_value = "5m", value_name = "DURATION")]
    pub timeout: String,
}

/// `applyset get`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  # Every ApplySet of every namespace, failures first
  applyset get -A

  # One ApplySet, then a line each time it changes
  applyset get web -n team-a -w

  # The full objects
  applyset get -n team-a -o yaml

Exit code: 0, or 1 when the ApplySet named does not exist or the cluster cannot be read.")]
pub struct GetArgs {
    /// One ApplySet (default: every ApplySet of the namespace).
    #[arg(value_name = "NAME", add = ArgValueCandidates::new(crate::commands::fleet::applyset_names))]
    pub name: Option<String>,
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    /// Every namespace (the table gets a NAMESPACE column); `-n` is then ignored, as kubectl
    /// ignores it.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// After the table, print a line each time an ApplySet changes (until interrupted).
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// `json` or `yaml` (the objects, a `List` when several); default: the table; `wide` adds
    /// the Ready condition's message.
    #[arg(short = 'o', long, value_name = "FORMAT")]
    pub output: Option<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `applyset reconcile`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  # Run web now (git is read again) and wait until the run is done
  applyset reconcile web -n team-a

Progress goes to stderr. Exit code: 0 when the run left the ApplySet Ready at the revision it
applied; 1 when the run failed (with the Ready condition's message), the ApplySet is suspended or
missing, or --timeout passed.")]
pub struct ReconcileArgs {
    #[command(flatten)]
    pub target: NamedArgs,
    /// As Flux's flag: read the source again. Every requested run lists the git remote anew
    /// (it never reuses a listing made before the request), so this is always the case.
    #[arg(long)]
    pub with_source: bool,
    #[command(flatten)]
    pub wait: WaitArgs,
}

/// `applyset suspend`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  # Stop applying web (nothing is fetched, applied or pruned until resumed)
  applyset suspend web -n team-a")]
pub struct SuspendArgs {
    #[command(flatten)]
    pub target: NamedArgs,
}

/// `applyset resume`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  # Apply web again, and wait for its first run
  applyset resume web -n team-a

Exit code as for `applyset reconcile`.")]
pub struct ResumeArgs {
    #[command(flatten)]
    pub target: NamedArgs,
    /// Return once spec.suspend is false, without waiting for the run.
    #[arg(long)]
    pub no_wait: bool,
    #[command(flatten)]
    pub wait: WaitArgs,
}

/// `applyset history`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  # The revisions web applied, newest first (a failed last attempt above them)
  applyset history web -n team-a")]
pub struct HistoryArgs {
    #[command(flatten)]
    pub target: NamedArgs,
    /// `json` or `yaml`; default: a table.
    #[arg(short = 'o', long, value_name = "FORMAT")]
    pub output: Option<String>,
}

/// `applyset tree`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  # The objects web manages, by namespace and kind, with their state and health
  applyset tree web -n team-a

  # The same as data: one entry per object
  applyset tree web -n team-a -o json")]
pub struct TreeArgs {
    #[command(flatten)]
    pub target: NamedArgs,
    /// `json` or `yaml`: the objects as a list; default: the tree.
    #[arg(short = 'o', long, value_name = "FORMAT")]
    pub output: Option<String>,
}

/// `applyset events`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  # What the controller reported about web, oldest first, then each new Event
  applyset events web -n team-a -w")]
pub struct EventsArgs {
    #[command(flatten)]
    pub target: NamedArgs,
    /// `json` or `yaml`: the Events (a `List` when several); default: a table.
    #[arg(short = 'o', long, value_name = "FORMAT")]
    pub output: Option<String>,
    /// After the list, print each new Event (until interrupted); with the table only.
    #[arg(short = 'w', long, conflicts_with = "output")]
    pub watch: bool,
}

/// `applyset completion`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  # bash (needs the bash-completion package)
  source <(applyset completion bash)

  # zsh
  applyset completion zsh > \"${fpath[1]}/_applyset\"

  # fish
  applyset completion fish > ~/.config/fish/completions/applyset.fish

ApplySet names are completed from the cluster of the current kubeconfig context.")]
pub struct CompletionArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The shells `applyset completion` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}
