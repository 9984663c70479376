//! `applyset apply` and `applyset diff`: kubectl's flags.

use std::path::PathBuf;

use clap::Args;

use super::{ClusterArgs, LastAppliedCommand, go_bool};

/// What to read.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// A file, directory or glob of JSON/YAML manifests, or `-` for standard input. Repeatable.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub filenames: Vec<PathBuf>,
    /// A kustomization directory, built by the pinned kustomize (--kustomize-binary): no
    /// remote bases, nothing from outside the git work tree.
    #[arg(short = 'k', long = "kustomize", value_name = "DIR")]
    pub kustomize: Option<PathBuf>,
    // --kustomize-binary.
    #[command(flatten)]
    pub kustomize_program: super::KustomizeArgs,
    /// Walk directories recursively.
    #[arg(short = 'R', long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub recursive: bool,
    /// Namespace for namespaced objects that name none (default: the kubeconfig context's
    /// namespace, else `default`). Objects naming another namespace fail.
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Apply only objects whose labels match this selector (also the prune selector).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Field manager recorded for the writes.
    #[arg(long, value_name = "NAME", default_value = "kubectl-client-side-apply")]
    pub field_manager: String,
    /// Server-side field validation: strict (or true), warn, ignore (or false).
    #[arg(long, value_name = "MODE", default_value = "strict", num_args = 0..=1, default_missing_value = "strict")]
    pub validate: String,
    /// Beyond kubectl: an age identity file (`age-keygen`'s output; repeatable). SOPS-encrypted
    /// files of the input (manifests, and the files a kustomization reads) are decrypted with
    /// it, as the controller's `spec.decryption` does, and Secrets are recorded with hashed
    /// last-applied annotations. Without it files are read as kubectl reads them.
    #[arg(long = "decryption-key", value_name = "FILE")]
    pub decryption_keys: Vec<PathBuf>,
}

#[derive(Debug, Args)]
#[command(disable_help_subcommand = true)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Arguments that are not flags: refused as kubectl refuses them (`Unexpected args: […]`).
    #[arg(hide = true, value_name = "ARGS")]
    pub unexpected: Vec<String>,
    /// none, client (compute locally, only read from the cluster) or server (dryRun=All).
    #[arg(long, value_name = "MODE", default_value = "none", num_args = 0..=1, default_missing_value = "unchanged")]
    pub dry_run: String,
    /// Delete previously applied objects that are not in the input (with -l/--all or --applyset).
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub prune: bool,
    /// Prune every type of the allowlist, not only objects matching -l.
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub all: bool,
    /// group/version/kind to consider for pruning (`core` for the core group). Repeatable.
    #[arg(long, value_name = "GVK")]
    pub prune_allowlist: Vec<String>,
    /// ApplySet parent, `[RESOURCE][.GROUP]/NAME` (a Secret when only a name is given).
    #[arg(long, value_name = "PARENT")]
    pub applyset: Option<String>,
    /// When a patch fails with Conflict or Invalid, delete the object and create it again.
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub force: bool,
    /// Apply an object whose last-applied annotation would exceed the apiserver's 256 KiB
    /// limit with server-side apply (field manager `applyset`, no annotation) instead of
    /// failing it as kubectl does; conflicts are forced only on fields this tool owned.
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub server_side_fallback: bool,
    /// Output format, as kubectl prints it: `name` (kind/name per object), `json` or `yaml`
    /// (the objects, a `List` when several), `jsonpath=TEMPLATE`, `jsonpath-as-json=…`,
    /// `jsonpath-file=FILE`, `go-template=…`, `go-template-file=…`.
    #[arg(short = 'o', long, value_name = "FORMAT")]
    pub output: Option<String>,
    #[command(flatten)]
    pub kubectl: KubectlApplyArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// `view-last-applied`, `set-last-applied` or `edit-last-applied` (kubectl's subcommands
    /// of `apply`); without one, the objects of -f/-k are applied.
    #[command(subcommand)]
    pub last_applied: Option<Box<LastAppliedCommand>>,
}

/// The rest of kubectl 1.33's `apply` flags, accepted with kubectl's syntax and meaning so a
/// script written for `kubectl apply` runs unchanged.
#[derive(Debug, Args)]
pub struct KubectlApplyArgs {
    /// Automatically resolve conflicts between the modified and live configuration by using
    /// values from the modified configuration (false: a conflicting change fails).
    #[arg(long, default_value = "true", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub overwrite: bool,
    /// Seconds given to pruned (or, with --force, replaced) objects to terminate gracefully;
    /// negative: the object's default.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "SECONDS")]
    pub grace_period: i64,
    /// How dependents of pruned objects are deleted: background, foreground or orphan.
    #[arg(long, default_value = "background", num_args = 0..=1, require_equals = true, default_missing_value = "background", value_name = "MODE")]
    pub cascade: String,
    /// How long --force waits for a deleted object to be gone, and --wait for health (Go
    /// duration; 0: their defaults).
    #[arg(long, default_value = "0s", value_name = "DURATION")]
    pub timeout: String,
    /// Beyond kubectl (which accepts it and, for apply, does nothing): after applying (and
    /// pruning), wait until every applied object is healthy (kstatus Current: rolled out,
    /// complete, Ready), for --timeout (default 5m); exit 1 with the reason when one fails or
    /// the time runs out.
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub wait: bool,
    /// Deprecated (as in kubectl): record the command in each object's
    /// `kubernetes.io/change-cause` annotation.
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub record: bool,
    /// This tool applies client-side only: `--server-side=true` fails clearly.
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub server_side: bool,
    /// Only with --server-side (as kubectl says).
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub force_conflicts: bool,
    /// Only with --server-side (as kubectl says).
    #[arg(long, value_name = "NAME")]
    pub subresource: Option<String>,
    /// Keep `metadata.managedFields` in -o json output.
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub show_managed_fields: bool,
    /// Accepted: patches come from the apiserver's OpenAPI either way (kubectl's baked-in types
    /// carry the same patch metadata).
    #[arg(long, default_value = "true", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub openapi_patch: bool,
    /// The template (or template file) of -o jsonpath/go-template and their -file forms; alone,
    /// it means -o go-template.
    #[arg(long, value_name = "TEMPLATE")]
    pub template: Option<String>,
    /// For -o go-template/jsonpath.
    #[arg(long, default_value = "true", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub allow_missing_template_keys: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Also list, per object, the live fields apply would leave behind: absent from the manifest
    /// and the last-applied annotation, written by another field manager (a rollback, `kubectl
    /// edit`); kubectl's apply never deletes them. Does not change the exit code.
    #[arg(long)]
    pub show_left_behind: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}
