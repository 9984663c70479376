//! `applyset build` and `applyset plan`: what the controller would do with a local checkout.

use clap::Args;

use super::ClusterArgs;

/// `applyset build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The ApplySet whose spec shapes the build.
    pub name: Option<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `applyset plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The ApplySet to plan for.
    pub name: String,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}
