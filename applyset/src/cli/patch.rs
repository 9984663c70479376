//! `applyset patch`: the merge engine on local files.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum PatchCommand {
    /// Two-way patch from --original to --modified; prints {"patch": P, "result": R}.
    TwoWay {
        /// The document before (JSON or YAML).
        #[arg(long, value_name = "FILE")]
        original: PathBuf,
        /// The document after (JSON or YAML).
        #[arg(long, value_name = "FILE")]
        modified: PathBuf,
        #[command(flatten)]
        schema: SchemaArgs,
    },
    /// Three-way patch as kubectl apply computes it (original = last-applied configuration,
    /// modified = new manifest, current = live object); prints {"patch": P, "result": R}.
    ThreeWay {
        /// The last-applied configuration (JSON or YAML).
        #[arg(long, value_name = "FILE")]
        original: PathBuf,
        /// The new manifest (JSON or YAML).
        #[arg(long, value_name = "FILE")]
        modified: PathBuf,
        /// The live object (JSON or YAML).
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
        /// The document to patch (JSON or YAML).
        #[arg(long, value_name = "FILE")]
        current: PathBuf,
        /// The patch (JSON or YAML): a strategic merge patch with --openapi, else a JSON merge
        /// patch.
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
