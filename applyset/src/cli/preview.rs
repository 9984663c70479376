//! `applyset build` and `applyset plan`: what the controller would do with a local checkout.

use std::path::PathBuf;

use clap::Args;

use super::fleet::NamespaceArgs;
use super::{ClusterArgs, ManifestLimitArgs};

/// The local checkout a preview renders, and how the controller renders it.
#[derive(Debug, Args)]
pub struct CheckoutArgs {
    /// The ApplySet's directory in a local checkout of its repository: the directory its
    /// `spec.source.path` names (as `flux build kustomization --path` takes the Kustomization's
    /// directory). The repository's root is the git work tree holding DIR (else DIR with
    /// `spec.source.path` taken off its end, else DIR): file names are shown from it, and kustomize may
    /// read nothing outside it, as in the controller.
    #[arg(long, value_name = "DIR")]
    pub path: PathBuf,
    #[command(flatten)]
    pub limits: ManifestLimitArgs,
    /// The kustomize program (v5.6.0, kubectl 1.33's) that builds a directory holding a
    /// kustomization: a path, or a name looked up on PATH (the controller's flag of the same name).
    #[arg(long, env = "APPLYSET_KUSTOMIZE_BINARY", default_value = "kustomize", value_name = "PATH")]
    pub kustomize_binary: PathBuf,
    /// An age identity file (`age-keygen`'s output; repeatable) that decrypts the checkout's
    /// SOPS-encrypted files, standing for the Secret `spec.decryption.secretRef` names (read
    /// from the cluster when this is not given and the ApplySet comes from the cluster).
    /// `build` prints Secrets masked, decrypted or not.
    #[arg(long = "decryption-key", value_name = "FILE")]
    pub decryption_keys: Vec<PathBuf>,
}

/// `applyset build`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  # What the controller would apply for ApplySet web (read from the cluster) from this checkout
  applyset build web -n shop --path ./apps/web

  # In CI, without cluster credentials: the ApplySet's manifest from git, and the ConfigMap its
  # spec.postBuild.substituteFrom names, from a file
  applyset build --applyset-file clusters/prod/web.yaml --path ./apps/web \\
      --substitute-from-file clusters/prod/vars.yaml")]
pub struct BuildArgs {
    /// The ApplySet whose spec shapes the build, read from the cluster (with --applyset-file:
    /// the one of that name in the file, needed when it holds several).
    #[arg(required_unless_present = "applyset_file")]
    pub name: Option<String>,
    /// Read the ApplySet from this manifest file (YAML or JSON, as in git) instead of the
    /// cluster: nothing is asked of any cluster. Its namespace is its `metadata.namespace`,
    /// else -n, else `default`; kinds the build does not define by a CRD are placed in a
    /// namespace by what Kubernetes 1.33 serves (others are taken as namespaced, with a warning).
    #[arg(long, value_name = "FILE")]
    pub applyset_file: Option<PathBuf>,
    /// With --applyset-file: a file of ConfigMap and Secret manifests (repeatable) whose data
    /// stand for the objects `spec.postBuild.substituteFrom` names (without it such an
    /// ApplySet fails to build, naming the field).
    #[arg(long = "substitute-from-file", value_name = "FILE", requires = "applyset_file")]
    pub substitute_from_files: Vec<PathBuf>,
    #[command(flatten)]
    pub checkout: CheckoutArgs,
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `applyset plan`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  # What applying this checkout for ApplySet web would change in the cluster
  applyset plan web -n shop --path ./apps/web

  # In a pull request's CI job (read-only credentials): fail the job when something would change
  applyset plan web -n shop --path ./apps/web || echo \"exit $?: 1 = changes, 2 = error\"")]
pub struct PlanArgs {
    /// The ApplySet to plan for (read from the cluster, with its record of members).
    pub name: String,
    /// The controller's `--default-secrets` (what Secrets' annotations record for ApplySets
    /// without spec.secrets), which a plan cannot read from the cluster.
    #[arg(long, env = "APPLYSET_DEFAULT_SECRETS", value_enum, default_value = "plain", value_name = "MODE")]
    pub default_secrets: crate::operator::api::SecretsMode,
    #[command(flatten)]
    pub checkout: CheckoutArgs,
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}
