//! `applyset apply`'s flags as kubectl reads and checks them.

use crate::applyset::Propagation;
use crate::cli::{ApplyArgs, InputArgs};
use crate::cluster::DryRun;

/// A flag, or a combination of flags, kubectl refuses (each message is kubectl's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    #[error("Unexpected args: [{}]\nSee 'applyset apply -h' for help and examples", .0.join(" "))]
    UnexpectedArgs(Vec<String>),
    #[error(r#"Invalid dry-run value ({0}). Must be "none", "server", or "client"."#)]
    DryRun(String),
    #[error(r#"invalid - validate option "{0}"; must be one of: strict (or true), warn, ignore (or false)"#)]
    Validate(String),
    #[error(r#"invalid cascade value ({0}). Must be "background", "foreground", or "orphan""#)]
    Cascade(String),
    #[error("invalid argument {value:?} for \"--timeout\" flag")]
    Timeout { value: String, source: crate::duration::InvalidDuration },
    /// Two flags that exclude each other, or one that needs another: kubectl's words.
    #[error("{0}")]
    Combination(&'static str),
}

/// `--dry-run` as kubectl parses it (a bare `--dry-run` arrives as `unchanged`).
pub fn parse_dry_run(value: &str) -> Result<DryRun, FlagError> {
    match value {
        "none" | "false" => Ok(DryRun::None),
        "client" => Ok(DryRun::Client),
        "server" => Ok(DryRun::Server),
        "unchanged" | "true" => {
            eprintln!("W0000 --dry-run is deprecated and can be replaced with --dry-run=client.");
            Ok(DryRun::Client)
        }
        other => Err(FlagError::DryRun(other.to_owned())),
    }
}

/// `--validate` → the `fieldValidation` query value.
pub fn parse_validate(value: &str) -> Result<String, FlagError> {
    match value.to_ascii_lowercase().as_str() {
        "strict" | "true" => Ok("Strict".into()),
        "warn" => Ok("Warn".into()),
        "ignore" | "false" => Ok("Ignore".into()),
        _ => Err(FlagError::Validate(value.to_owned())),
    }
}

/// `--cascade` as kubectl reads it (the boolean forms warn).
pub fn parse_cascade(value: &str) -> Result<Propagation, FlagError> {
    match value {
        "background" => Ok(Propagation::Background),
        "foreground" => Ok(Propagation::Foreground),
        "orphan" => Ok(Propagation::Orphan),
        "true" | "false" => {
            let (replacement, propagation) =
                if value == "true" { ("background", Propagation::Background) } else { ("orphan", Propagation::Orphan) };
            eprintln!(
                "warning: --cascade={value} is deprecated (boolean value) and can be replaced with --cascade={replacement}."
            );
            Ok(propagation)
        }
        other => Err(FlagError::Cascade(other.to_owned())),
    }
}

/// `-f` or `-k`, one of them (kubectl apply's and kubectl diff's check and words).
pub fn check_one_input(input: &InputArgs) -> Result<(), FlagError> {
    match (&input.kustomize, input.filenames.is_empty()) {
        (Some(_), false) => Err(FlagError::Combination("only one of -f or -k can be specified")),
        (None, true) => Err(FlagError::Combination("must specify one of -f and -k")),
        _ => Ok(()),
    }
}

/// kubectl's checks of the flags this tool accepts only for kubectl's sake.
fn validate_kubectl_flags(args: &ApplyArgs) -> Result<(), FlagError> {
    check_one_input(&args.input)?;
    let kubectl = &args.kubectl;
    if kubectl.server_side {
        return Err(FlagError::Combination(
            "applyset applies client-side only: --server-side=true is not supported (use kubectl apply --server-side, or applyset apply --server-side-fallback for objects too large for client-side apply)",
        ));
    }
    if kubectl.force_conflicts {
        return Err(FlagError::Combination("--force-conflicts only works with --server-side"));
    }
    if kubectl.subresource.is_some() {
        return Err(FlagError::Combination("--subresource can only be specified for --server-side"));
    }
    Ok(())
}

pub(super) fn validate_flags(args: &ApplyArgs, dry_run: DryRun) -> Result<(), FlagError> {
    validate_kubectl_flags(args)?;
    if dry_run == DryRun::Server && args.force {
        return Err(FlagError::Combination("--dry-run=server cannot be used with --force"));
    }
    if args.all && args.input.selector.is_some() {
        return Err(FlagError::Combination("cannot set --all and --selector at the same time"));
    }
    if args.applyset.is_some() && !args.prune {
        return Err(FlagError::Combination("--applyset requires --prune"));
    }
    if args.prune {
        if args.force {
            return Err(FlagError::Combination("--force cannot be used with --prune"));
        }
        if args.applyset.is_some() {
            if args.all {
                return Err(FlagError::Combination("--all is incompatible with --applyset"));
            }
            if args.input.selector.is_some() {
                return Err(FlagError::Combination("--selector is incompatible with --applyset"));
            }
            if !args.prune_allowlist.is_empty() {
                return Err(FlagError::Combination("--prune-allowlist is incompatible with --applyset"));
            }
        } else if !args.all && args.input.selector.is_none() {
            return Err(FlagError::Combination(
                "all resources selected for prune without explicitly passing --all. To prune all resources, pass the --all flag. If you did not mean to prune all resources, specify a label selector",
            ));
        }
    }
    Ok(())
}
