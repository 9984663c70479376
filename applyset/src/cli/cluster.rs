//! Which cluster the commands talk to, and how.

use std::path::PathBuf;

use clap::Args;

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
