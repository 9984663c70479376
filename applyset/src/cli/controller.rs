//! `applyset controller`'s flags.

use std::path::PathBuf;

use clap::Args;

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
    /// ApplySets reconciled at once, shared fairly between namespaces. More runs with fewer
    /// objects each keep the apiserver busier than the reverse at the same number in flight
    /// (16 × 8 against 8 × 16: see the book's benchmarks page).
    #[arg(long, env = "APPLYSET_CONCURRENT_RECONCILES", default_value_t = 16, value_name = "COUNT", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrent_reconciles: u16,
    /// Objects applied at once within one ApplySet.
    #[arg(long, env = "APPLYSET_APPLY_CONCURRENCY", default_value_t = 8, value_name = "COUNT", value_parser = clap::value_parser!(u32).range(1..=256))]
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
    /// Let the kubeconfigs of spec.kubeConfig run exec plugins and auth providers and read
    /// files (tokenFile, client certificates, CA files) on the controller's machine. Off, only
    /// inline credentials are accepted: a tenant cannot run a program or read a file here.
    #[arg(long, env = "APPLYSET_ALLOW_REMOTE_EXEC")]
    pub allow_remote_exec: bool,
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
    // The kustomize that builds sources holding a kustomization (checked at start: a kustomize
    // of another version stops the controller; a missing one is logged).
    #[command(flatten)]
    pub kustomize: super::KustomizeArgs,
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
    /// Serve the webhook receiver (`POST /hook/<digest>`, each ApplySet with `spec.webhook`
    /// at its `status.webhookPath`) on this address, e.g. `0.0.0.0:9292`. Unset: no receiver.
    #[arg(long, env = "APPLYSET_WEBHOOK_BIND_ADDRESS", value_name = "ADDR")]
    pub webhook_bind_address: Option<std::net::SocketAddr>,
}

/// The Lease name when none is given.
pub const DEFAULT_LEADER_ELECTION_ID: &str = "applyset-controller";

/// Leader election on a coordination.k8s.io Lease: only the leader reconciles.
#[derive(Debug, Args)]
pub struct LeaderArgs {
    /// Elect a leader on a Lease: only the replica holding it reconciles; the others stand by,
    /// ready to take over.
    #[arg(long, env = "APPLYSET_LEADER_ELECT")]
    pub leader_elect: bool,
    /// The Lease's namespace (default: $POD_NAMESPACE, else `default`).
    #[arg(long, env = "POD_NAMESPACE", value_name = "NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// The Lease's name (with --shard-selector and this default, the name gets a digest of the
    /// selector: each shard elects its own leader).
    #[arg(long, env = "APPLYSET_LEADER_ELECTION_ID", default_value = DEFAULT_LEADER_ELECTION_ID, value_name = "NAME")]
    pub leader_election_id: String,
    /// This replica's identity (default: $POD_NAME, else the host name, plus a random suffix).
    #[arg(long, env = "POD_NAME", value_name = "IDENTITY")]
    pub leader_election_identity: Option<String>,
    /// Go duration: how long standbys wait before taking over an unrenewed lease.
    #[arg(long, default_value = "15s", value_name = "DURATION")]
    pub lease_duration: String,
    /// Go duration: how long the leader tries to renew before giving up leading.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub renew_deadline: String,
    /// Go duration: how often to renew (leader) or try to acquire (standby).
    #[arg(long, default_value = "2s", value_name = "DURATION")]
    pub retry_period: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// A line of text per event.
    Plain,
    /// A JSON object per event, one a line.
    Json,
}

/// Logs go to stderr; the level comes from RUST_LOG (default `info`).
#[derive(Debug, Args)]
pub struct LoggingArgs {
    /// How log lines are written.
    #[arg(long, env = "APPLYSET_LOG_FORMAT", value_enum, default_value = "plain", value_name = "FORMAT")]
    pub log_format: LogFormat,
}
