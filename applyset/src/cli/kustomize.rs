//! The kustomize program: one flag and one variable for every command that builds
//! kustomizations (`apply -k`, `diff -k`, the controller).

use std::path::PathBuf;

use clap::Args;

/// Which kustomize builds kustomizations.
#[derive(Debug, Clone, Args)]
pub struct KustomizeArgs {
    /// The kustomize program: a path, or a name looked up on PATH. It must be v5.6.0 (kubectl
    /// 1.33's; `scripts/build-kustomize` builds it): its version is checked when it is first
    /// needed.
    #[arg(long, env = "APPLYSET_KUSTOMIZE_BINARY", default_value = "kustomize", value_name = "PATH")]
    pub kustomize_binary: PathBuf,
}
