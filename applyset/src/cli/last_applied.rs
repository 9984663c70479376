//! `applyset apply view-last-applied | set-last-applied | edit-last-applied`: kubectl 1.33's
//! `kubectl apply` subcommands of the same names, with their flags.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{ClusterArgs, go_bool};

/// The subcommands of `applyset apply`.
#[derive(Debug, Subcommand)]
pub enum LastAppliedCommand {
    /// View the latest last-applied-configuration annotations of a resource/object (YAML by
    /// default, `-o json`), as `kubectl apply view-last-applied` prints them.
    ///
    /// Usage: (TYPE [NAME | -l label] | TYPE/NAME | -f FILENAME)
    ViewLastApplied(ViewLastAppliedArgs),
    /// Set the last-applied-configuration annotation on a live object to match the contents of
    /// a file, as though `apply -f FILE` was run, without updating any other part of the object.
    ///
    /// Usage: -f FILENAME
    SetLastApplied(SetLastAppliedArgs),
    /// Edit latest last-applied-configuration annotations of a resource/object in the editor
    /// of $KUBE_EDITOR, else $EDITOR, else `vi` (YAML, or JSON with `-o json`).
    ///
    /// Usage: (RESOURCE/NAME | -f FILENAME)
    EditLastApplied(EditLastAppliedArgs),
}

/// Which objects: files, a kustomization or `TYPE NAME…`/`TYPE/NAME…` arguments, in a namespace.
#[derive(Debug, Args)]
pub struct ObjectArgs {
    /// `TYPE [NAME…]`, `TYPE1,TYPE2 NAME…` or `TYPE/NAME…` (types resolve through discovery:
    /// plural, singular, short name or kind, optionally `.group` or `.version.group`).
    #[arg(value_name = "RESOURCE")]
    pub resources: Vec<String>,
    /// A file, directory or glob of manifests naming the objects, or `-` for standard input.
    /// Repeatable.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub filenames: Vec<PathBuf>,
    /// A kustomization directory naming the objects (not with -f or -R).
    #[arg(short = 'k', long = "kustomize", value_name = "DIR")]
    pub kustomize: Option<PathBuf>,
    #[command(flatten)]
    pub kustomize_program: super::KustomizeArgs,
    /// Walk the directories of -f recursively.
    #[arg(short = 'R', long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub recursive: bool,
    /// The namespace (default: the kubeconfig context's, else `default`). Objects of the files
    /// naming another namespace fail.
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
}

#[derive(Debug, Args)]
pub struct ViewLastAppliedArgs {
    #[command(flatten)]
    pub objects: ObjectArgs,
    /// Output format. Must be one of (yaml, json).
    #[arg(short = 'o', long, value_name = "FORMAT", default_value = "yaml")]
    pub output: String,
    /// Select all resources in the namespace of the specified resource types.
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub all: bool,
    /// Label selector (`key1=value1,key2!=value2`) the objects must match.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// How the objects a command wrote are printed (kubectl's print flags).
#[derive(Debug, Args)]
pub struct PrintArgs {
    /// Output format: json, yaml, name, go-template, go-template-file, template,
    /// templatefile, jsonpath, jsonpath-as-json, jsonpath-file.
    #[arg(short = 'o', long, value_name = "FORMAT")]
    pub output: Option<String>,
    /// Template string or path to template file for -o go-template/jsonpath and their -file forms.
    #[arg(long, value_name = "TEMPLATE")]
    pub template: Option<String>,
    /// Ignore errors in templates when a field or map key is missing in the template.
    #[arg(long, default_value = "true", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub allow_missing_template_keys: bool,
    /// Keep the managedFields when printing objects in JSON or YAML format.
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub show_managed_fields: bool,
}

#[derive(Debug, Args)]
pub struct SetLastAppliedArgs {
    /// Files, directories or globs that contain the last-applied-configuration annotations, or
    /// `-` for standard input. Repeatable.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub filenames: Vec<PathBuf>,
    /// Create the annotation on objects that do not have one.
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub create_annotation: bool,
    /// none, client (only print the object that would be sent) or server (dryRun=All).
    #[arg(long, value_name = "MODE", default_value = "none", num_args = 0..=1, default_missing_value = "unchanged")]
    pub dry_run: String,
    /// The namespace of objects that name none (default: the kubeconfig context's, else
    /// `default`); objects naming another fail.
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Accepted and ignored, as kubectl ignores them: the objects come from -f.
    #[arg(hide = true, value_name = "ARGS")]
    pub ignored: Vec<String>,
    #[command(flatten)]
    pub print: PrintArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

#[derive(Debug, Args)]
pub struct EditLastAppliedArgs {
    #[command(flatten)]
    pub objects: ObjectArgs,
    #[command(flatten)]
    pub print: PrintArgs,
    /// Field manager recorded for the write.
    #[arg(long, value_name = "NAME", default_value = "kubectl-client-side-apply")]
    pub field_manager: String,
    /// Server-side field validation: strict (or true), warn, ignore (or false).
    #[arg(long, value_name = "MODE", default_value = "strict", num_args = 0..=1, default_missing_value = "strict")]
    pub validate: String,
    /// Write the file to edit with Windows line endings (CRLF).
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub windows_line_endings: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}
