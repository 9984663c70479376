//! Command-line interface: flags grouped by concern, one struct per command, one file per
//! family of commands.

mod apply;
mod cluster;
mod controller;
mod fleet;
mod kustomize;
mod last_applied;
mod patch;
mod preview;
mod ui;

use clap::{Parser, Subcommand};

pub use apply::{ApplyArgs, DiffArgs, InputArgs, KubectlApplyArgs};
pub use cluster::ClusterArgs;
pub use controller::{
    ControllerArgs, ControllerClusterArgs, DEFAULT_LEADER_ELECTION_ID, LeaderArgs, LogFormat, LoggingArgs,
    ManifestLimitArgs, ScopeArgs, ServingArgs,
};
pub use fleet::{
    CompletionArgs, EventsArgs, GetArgs, HistoryArgs, NamedArgs, NamespaceArgs, ReconcileArgs, ResumeArgs, Shell,
    SuspendArgs, TreeArgs, WaitArgs,
};
pub use kustomize::KustomizeArgs;
pub use last_applied::{
    EditLastAppliedArgs, LastAppliedCommand, ObjectArgs, PrintArgs, SetLastAppliedArgs, ViewLastAppliedArgs,
};
pub use patch::{PatchCommand, SchemaArgs};
pub use preview::{BuildArgs, CheckoutArgs, PlanArgs};
pub use ui::UiArgs;

#[derive(Debug, Parser)]
#[command(name = "applyset", version, about = "Keeps clusters in sync with git, applying exactly like kubectl apply")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: boxing the larger arguments would save nothing that matters.
#[allow(clippy::large_enum_variant)]
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
    /// Print the CustomResourceDefinitions of ApplySet and ApplySetRecord (YAML), generated from
    /// the Rust types.
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
    Tree(TreeArgs),
    /// The revisions an ApplySet applied, newest first.
    History(HistoryArgs),
    /// An ApplySet's Events, oldest first.
    Events(EventsArgs),
    /// A web UI on a local port: every ApplySet the kubeconfig identity may list, each with
    /// its conditions, objects, drift, revisions, prune and Events, live; reconcile, suspend,
    /// resume and approve a guarded prune with that identity (like `kubectl proxy`).
    Ui(UiArgs),
    /// Render what the controller would apply for an ApplySet from a local checkout
    /// (`flux build kustomization --path`, and more).
    ///
    /// The ApplySet's directory in the checkout (--path) is built as a run builds it: the
    /// same loader and size caps, kustomize, `spec.postBuild` substitution, namespace
    /// defaulting and the ApplySet's `part-of` label; the objects are printed as YAML documents
    /// in the order a run applies them (Namespaces, then CRDs, then the rest, each in source
    /// order). Secret values are masked (`***`), and values substituted from Secrets read
    /// `<redacted>`. Exit code 0 when the build succeeds, 1 otherwise (the controller's condition reason is
    /// in the message).
    Build(BuildArgs),
    /// What applying a local checkout for an ApplySet would change in the cluster
    /// (`flux diff kustomization --path`, and more).
    ///
    /// Builds the checkout as `build` does, then runs the controller's apply as a client dry
    /// run and its prune decision: one line per object, `created`, `configured`, `unchanged`
    /// or `pruned` (or why prune keeps it, and `spec.pruneGuard`'s verdict), then for each
    /// configured object the patch and the diff `applyset diff` prints, Secret values masked.
    /// Read-only: it sends GET and LIST requests only (the ApplySet, its member record parts,
    /// the substituteFrom ConfigMaps and Secrets, discovery and OpenAPI, the objects, the
    /// prune candidates), as the caller. Exit code (kubectl diff's convention): 0 when nothing
    /// would change, 1 when something would, greater than 1 when an error occurred (an object
    /// the run would fail on included).
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
