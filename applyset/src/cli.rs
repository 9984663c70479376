//! Command-line interface: flags grouped by concern, one struct per command.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
}

/// `applyset controller`: flags grouped by concern; every flag also reads an environment
/// variable (as a Helm chart sets them).
#[derive(Debug, Args)]
pub struct ControllerArgs {
    #[command(flatten)]
    pub cluster: ControllerClusterArgs,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub manifests: ManifestLimitArgs,
    #[command(flatten)]
    pub serving: ServingArgs,
    #[command(flatten)]
    pub leader: LeaderArgs,
    #[command(flatten)]
    pub logging: LoggingArgs,
}

/// Which cluster (in-cluster config when no kubeconfig is found) and how hard to drive it.
#[derive(Debug, Args)]
pub struct ControllerClusterArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// The most requests per second to the apiserver for the whole controller (0 = unlimited):
    /// one budget shared by its own requests and every identity it applies as. Below it the
    /// rate follows the apiserver: halved at each 429 (whose Retry-After holds every request),
    /// cut when write latency grows by 250 ms and 4x, grown back while the apiserver answers fast.
    #[arg(long, env = "APPLYSET_QPS", default_value_t = crate::cluster::DEFAULT_CONTROLLER_QPS)]
    pub qps: f64,
    /// Requests allowed in a burst above the rate (the same shared budget).
    #[arg(long, env = "APPLYSET_BURST", default_value_t = crate::cluster::DEFAULT_BURST)]
    pub burst: u32,
    /// A fixed rate of --qps (a plain token bucket, as client-go's), not one that adapts.
    #[arg(long, env = "APPLYSET_FIXED_QPS")]
    pub fixed_qps: bool,
}

/// What the controller watches and how much it does at once.
#[derive(Debug, Args)]
pub struct ScopeArgs {
    /// Only reconcile ApplySets in this namespace (default: all namespaces).
    #[arg(long, env = "APPLYSET_WATCH_NAMESPACE", value_name = "NAMESPACE")]
    pub watch_namespace: Option<String>,
    /// Only reconcile ApplySets whose labels match this selector, so several controllers split
    /// a cluster's ApplySets (as Flux's shards do): e.g. `sharding.applyset.dev/key=shard1` for
    /// one shard and `!sharding.applyset.dev/key` for the unlabelled rest.
    #[arg(long, env = "APPLYSET_SHARD_SELECTOR", value_name = "SELECTOR")]
    pub shard_selector: Option<String>,
    /// ApplySets reconciled at once, shared fairly between namespaces.
    #[arg(long, env = "APPLYSET_CONCURRENT_RECONCILES", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrent_reconciles: u16,
    /// Objects applied at once within one ApplySet.
    #[arg(long, env = "APPLYSET_APPLY_CONCURRENCY", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub apply_concurrency: u32,
    /// Where git checkouts are cached (needs to be writable; an emptyDir in a pod).
    #[arg(long, env = "APPLYSET_CACHE_DIR", default_value = "/tmp/applyset-cache", value_name = "DIR")]
    pub cache_dir: PathBuf,
    /// ApplySets without spec.serviceAccountName apply as this ServiceAccount of their own
    /// namespace (multi-tenant lockdown) instead of as the controller.
    #[arg(long, env = "APPLYSET_DEFAULT_SERVICE_ACCOUNT", value_name = "NAME")]
    pub default_service_account: Option<String>,
    /// Refuse every reference an ApplySet makes into another namespace (`spec.dependsOn`,
    /// `spec.healthChecks`), as Flux's flag of the same name: the run fails with
    /// `AccessDenied` and names the field, nothing of the other namespace is read.
    #[arg(long, env = "APPLYSET_NO_CROSS_NAMESPACE_REFS")]
    pub no_cross_namespace_refs: bool,
    /// Accept file:// and local-path sources (demos and tests only: they read the
    /// controller's own filesystem).
    #[arg(long, env = "APPLYSET_ALLOW_LOCAL_SOURCES")]
    pub allow_local_sources: bool,
    /// The shortest spec.interval and spec.retryInterval accepted (Go duration); an ApplySet
    /// asking for less fails with InvalidSpec instead of hammering git and the apiserver.
    #[arg(long, env = "APPLYSET_MIN_INTERVAL", default_value = "10s", value_name = "DURATION")]
    pub min_interval: String,
    /// What Secrets' last-applied annotations record for ApplySets without spec.secrets:
    /// `plain` (their values, as kubectl) or `hashed` (HMAC-SHA256 of each value).
    #[arg(long, env = "APPLYSET_DEFAULT_SECRETS", value_enum, default_value = "plain", value_name = "MODE")]
    pub default_secrets: crate::operator::api::SecretsMode,
    /// The Secret (in the controller's namespace, $POD_NAMESPACE) holding the key of `hashed`
    /// annotations; the controller creates it with a random key when it is missing.
    #[arg(long, env = "APPLYSET_SECRET_HASH_KEY", default_value = "applyset-secret-hash-key", value_name = "NAME")]
    pub secret_hash_key: String,
    /// The kustomize program (v5.6.0, kubectl 1.33's) that builds sources holding a
    /// kustomization: a path, or a name looked up on PATH.
    #[arg(long, env = "APPLYSET_KUSTOMIZE_BINARY", default_value = "kustomize", value_name = "PATH")]
    pub kustomize_binary: PathBuf,
}

/// Caps on the manifests of one revision, checked before they are read or parsed, so that one
/// commit cannot exhaust the controller's memory (a 100 MB YAML file is 1 MB in git). Loaded,
/// manifests take about 17 times their size in memory (measured: 64 MiB of Deployments and
/// Services became 1.1 GiB of values), and a reconcile holds them more than once while it
/// applies (the plan keeps a copy for its retry; the live objects are as large again). With the
/// defaults, a worst-case revision costs a reconcile in the order of 200 MiB, so a 512 MiB
/// controller survives two at once beside ordinary ones. Sizes are bytes, or with Ki, Mi, Gi
/// (or k, M, G).
#[derive(Debug, Args)]
pub struct ManifestLimitArgs {
    /// Largest manifest file (checked on its size before it is read).
    #[arg(long, env = "APPLYSET_MAX_MANIFEST_FILE_SIZE", default_value = "2Mi", value_name = "SIZE", value_parser = crate::manifest::limits::parse_size)]
    pub max_manifest_file_size: u64,
    /// Largest document of a file (one object, or a `kind: List`), checked before it is parsed.
    /// Client-side apply cannot apply an object over 256 KiB (its last-applied annotation must
    /// fit the apiserver's limit on annotations); 1 MiB leaves room for comments and YAML's
    /// indentation. Aliases may expand a document by as much again.
    #[arg(long, env = "APPLYSET_MAX_MANIFEST_DOCUMENT_SIZE", default_value = "1Mi", value_name = "SIZE", value_parser = crate::manifest::limits::parse_size)]
    pub max_manifest_document_size: u64,
    /// All manifest files of one revision together (the ApplySet's directory), summed before
    /// any is read: several thousand typical objects.
    #[arg(long, env = "APPLYSET_MAX_MANIFEST_REVISION_SIZE", default_value = "4Mi", value_name = "SIZE", value_parser = crate::manifest::limits::parse_size)]
    pub max_manifest_revision_size: u64,
}

/// Metrics and health endpoints.
#[derive(Debug, Args)]
pub struct ServingArgs {
    /// Serves GET /metrics (Prometheus text format).
    #[arg(long, env = "APPLYSET_METRICS_BIND_ADDRESS", default_value = "0.0.0.0:8080", value_name = "ADDR")]
    pub metrics_bind_address: std::net::SocketAddr,
    /// Serves GET /healthz and GET /readyz (ready once the ApplySet cache is synced and,
    /// with --leader-elect, this replica leads or stands by).
    #[arg(long, env = "APPLYSET_HEALTH_PROBE_BIND_ADDRESS", default_value = "0.0.0.0:8081", value_name = "ADDR")]
    pub health_probe_bind_address: std::net::SocketAddr,
    /// Serve the webhook receiver (`POST /hook/<namespace>/<name>`, for ApplySets with
    /// `spec.webhook`) on this address, e.g. `0.0.0.0:9292`. Unset: no receiver.
    #[arg(long, env = "APPLYSET_WEBHOOK_BIND_ADDRESS", value_name = "ADDR")]
    pub webhook_bind_address: Option<std::net::SocketAddr>,
}

/// The Lease name when none is given.
pub const DEFAULT_LEADER_ELECTION_ID: &str = "applyset-controller";

/// Leader election on a coordination.k8s.io Lease: only the leader reconciles.
#[derive(Debug, Args)]
pub struct LeaderArgs {
    #[arg(long, env = "APPLYSET_LEADER_ELECT")]
    pub leader_elect: bool,
    /// The Lease's namespace (default: $POD_NAMESPACE, else `default`).
    #[arg(long, env = "POD_NAMESPACE", value_name = "NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// The Lease's name (with --shard-selector and this default, the name gets a digest of the
    /// selector: each shard elects its own leader).
    #[arg(long, env = "APPLYSET_LEADER_ELECTION_ID", default_value = DEFAULT_LEADER_ELECTION_ID)]
    pub leader_election_id: String,
    /// This replica's identity (default: $POD_NAME, else the host name, plus a random suffix).
    #[arg(long, env = "POD_NAME")]
    pub leader_election_identity: Option<String>,
    /// Go duration: how long standbys wait before taking over an unrenewed lease.
    #[arg(long, default_value = "15s")]
    pub lease_duration: String,
    /// Go duration: how long the leader tries to renew before giving up leading.
    #[arg(long, default_value = "10s")]
    pub renew_deadline: String,
    /// Go duration: how often to renew (leader) or try to acquire (standby).
    #[arg(long, default_value = "2s")]
    pub retry_period: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Plain,
    Json,
}

/// Logs go to stderr; the level comes from RUST_LOG (default `info`).
#[derive(Debug, Args)]
pub struct LoggingArgs {
    #[arg(long, env = "APPLYSET_LOG_FORMAT", value_enum, default_value = "plain")]
    pub log_format: LogFormat,
}

/// Which cluster, and how hard to drive it.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Maximum requests per second to the apiserver (0 = unlimited). With at most
    /// --concurrency objects in flight this keeps a run's load bounded; the apiserver's own
    /// API Priority and Fairness still applies. (kubectl sends its requests one at a time.)
    #[arg(long, default_value_t = crate::cluster::DEFAULT_QPS)]
    pub qps: f64,
    /// Requests allowed in a burst above --qps.
    #[arg(long, default_value_t = crate::cluster::DEFAULT_BURST)]
    pub burst: u32,
    /// Objects applied at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub concurrency: u32,
}

/// What to read.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// A file, directory or glob of JSON/YAML manifests, or `-` for standard input. Repeatable.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub filenames: Vec<PathBuf>,
    /// A kustomization directory, built by the pinned kustomize ($APPLYSET_KUSTOMIZE, else
    /// `kustomize` on PATH): no remote bases, nothing from outside the git work tree.
    #[arg(short = 'k', long = "kustomize", value_name = "DIR")]
    pub kustomize: Option<PathBuf>,
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
}

#[derive(Debug, Args)]
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

/// A boolean as Go's `strconv.ParseBool` (kubectl's flag parser) reads it.
pub fn go_bool(value: &str) -> Result<bool, String> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        other => Err(format!("strconv.ParseBool: parsing {other:?}: invalid syntax")),
    }
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

#[derive(Debug, Subcommand)]
pub enum PatchCommand {
    /// Two-way patch from --original to --modified; prints {"patch": P, "result": R}.
    TwoWay {
        #[arg(long, value_name = "FILE")]
        original: PathBuf,
        #[arg(long, value_name = "FILE")]
        modified: PathBuf,
        #[command(flatten)]
        schema: SchemaArgs,
    },
    /// Three-way patch as kubectl apply computes it (original = last-applied configuration,
    /// modified = new manifest, current = live object); prints {"patch": P, "result": R}.
    ThreeWay {
        #[arg(long, value_name = "FILE")]
        original: PathBuf,
        #[arg(long, value_name = "FILE")]
        modified: PathBuf,
        #[arg(long, value_name = "FILE")]
        current: PathBuf,
        /// Fail with exit code 3 when the patch conflicts with changes made from original to
        /// current (kubectl apply --overwrite=false).
        #[arg(long)]
        no_overwrite: bool,
        #[command(flatten)]
        schema: SchemaArgs,
    },
    /// Apply a patch to a document as the API server would; prints {"result": R}.
    Apply {
        #[arg(long, value_name = "FILE")]
        current: PathBuf,
        #[arg(long, value_name = "FILE")]
        patch: PathBuf,
        #[command(flatten)]
        schema: SchemaArgs,
    },
}

/// Where patch metadata comes from: an OpenAPI definition (strategic merge patch) or none at
/// all (JSON merge patch, the custom-resource path).
#[derive(Debug, Args)]
#[group(required = true, multiple = true)]
pub struct SchemaArgs {
    /// OpenAPI v2 or v3 document (JSON or YAML) holding the object's schema.
    #[arg(long, value_name = "FILE", requires = "definition", conflicts_with = "json_merge")]
    pub openapi: Option<PathBuf>,
    /// Name of the object's schema under `definitions` (v2) or `components.schemas` (v3),
    /// e.g. io.k8s.api.apps.v1.Deployment.
    #[arg(long, value_name = "NAME", requires = "openapi")]
    pub definition: Option<String>,
    /// Use the three-way JSON merge patch kubectl uses for custom resources.
    #[arg(long)]
    pub json_merge: bool,
}
