//! Command-line interface: flags grouped by concern, one struct per command, one file per
//! family of commands.

mod apply;
mod cluster;
mod controller;
mod fleet;
mod last_applied;
mod patch;
mod preview;

use clap::{Parser, Subcommand};

pub use apply::{ApplyArgs, DiffArgs, InputArgs, KubectlApplyArgs};
pub use cluster::ClusterArgs;
pub use controller::{
    ControllerArgs, ControllerClusterArgs, DEFAULT_LEADER_ELECTION_ID, LeaderArgs, LogFormat, LoggingArgs,
    ManifestLimitArgs, ScopeArgs, ServingArgs,
};
pub use fleet::{CompletionArgs, EventsArgs, GetArgs, NamedArgs, ReconcileArgs, ResumeArgs, SuspendArgs};
pub use last_applied::{
    EditLastAppliedArgs, LastAppliedCommand, ObjectArgs, PrintArgs, SetLastAppliedArgs, ViewLastAppliedArgs,
};
pub use patch::{PatchCommand, SchemaArgs};
pub use preview::{BuildArgs, PlanArgs};

#[derive(Debug, Parser)]
#[command(name = "applyset", version, about = "Keeps clusters in sync with git, applying exactly like kubectl apply")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compute or apply kubectl's client-side apply patches on local files.
    #[command(subcommand)]
    Patch(PatchCommand),
    /// Apply manifests to the cluster exactly like `kubectl apply` (client-side, kubectl 1.33):
    /// creates missing objects, three-way patches existing ones, and records each manifest in
    /// the kubectl.kubernetes.io/last-applied-configuration annotation.
    ///
    /// Prints one line per object in input order (`deployment.apps/web created|configured|
    /// unchanged`, with ` (dry run)` or ` (server dry run)`). Namespaces, then CRDs (waited for
    /// until Established), then all other objects are applied, each stage concurrently. Exit
    /// code 0 when every object was applied, 1 otherwise.
    Apply(ApplyArgs),
    /// Show what `apply` would do, without changing anything: for each object, the patch that
    /// would be sent and a unified diff of the live object against the result (YAML).
    ///
    /// Exit code (kubectl diff's convention): 0 when nothing would change, 1 when something
    /// would, greater than 1 when an error occurred.
    Diff(DiffArgs),
    /// Run the operator: reconcile every ApplySet (fetch from git, apply like kubectl, prune,
    /// detect drift, report status), serve metrics and health probes, and optionally elect a
    /// leader so that only one replica writes.
    Controller(ControllerArgs),
    /// Print the ApplySet CustomResourceDefinition (YAML), generated from the Rust types.
    Crd,
    /// List ApplySets (or show one) with their readiness, revision and state.
    Get(GetArgs),
    /// Ask the controller to run an ApplySet now and wait until the run is done.
    Reconcile(ReconcileArgs),
    /// Stop reconciling an ApplySet (spec.suspend: true).
    Suspend(SuspendArgs),
    /// Reconcile a suspended ApplySet again, and wait for its run.
    Resume(ResumeArgs),
    /// The objects an ApplySet manages, as a tree by namespace and kind.
    Tree(NamedArgs),
    /// The revisions an ApplySet applied, newest first.
    History(NamedArgs),
    /// An ApplySet's Events, oldest first.
    Events(EventsArgs),
    /// Render what the controller would apply for an ApplySet from a local checkout.
    Build(BuildArgs),
    /// What applying a local checkout for an ApplySet would change in the cluster.
    Plan(PlanArgs),
    /// Print a shell completion script.
    Completion(CompletionArgs),
}

/// A boolean as Go's `strconv.ParseBool` (kubectl's flag parser) reads it.
pub fn go_bool(value: &str) -> Result<bool, String> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        other => Err(format!("strconv.ParseBool: parsing {other:?}: invalid syntax")),
    }
}
