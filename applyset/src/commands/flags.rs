//! `applyset apply`'s flags as kubectl reads and checks them.

use crate::apply::DryRun;
use crate::applyset::Propagation;
use crate::cli::ApplyArgs;

/// `--dry-run` as kubectl parses it (a bare `--dry-run` arrives as `unchanged`).
pub fn parse_dry_run(value: &str) -> Result<DryRun, String> {
    match value {
        "none" | "false" => Ok(DryRun::None),
        "client" => Ok(DryRun::Client),
        "server" => Ok(DryRun::Server),
        "unchanged" | "true" => {
            eprintln!("W0000 --dry-run is deprecated and can be replaced with --dry-run=client.");
            Ok(DryRun::Client)
        }
        other => Err(format!(r#"Invalid dry-run value ({other}). Must be "none", "server", or "client"."#)),
    }
}

/// `--validate` → the `fieldValidation` query value.
pub fn parse_validate(value: &str) -> Result<String, String> {
    match value.to_ascii_lowercase().as_str() {
        "strict" | "true" => Ok("Strict".into()),
        "warn" => Ok("Warn".into()),
        "ignore" | "false" => Ok("Ignore".into()),
        _ => Err(format!(
            r#"invalid - validate option "{value}"; must be one of: strict (or true), warn, ignore (or false)"#
        )),
    }
}

/// `--cascade` as kubectl reads it (the boolean forms warn).
pub fn parse_cascade(value: &str) -> Result<Propagation, String> {
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
        other => Err(format!(r#"invalid cascade value ({other}). Must be "background", "foreground", or "orphan""#)),
    }
}

/// kubectl's checks of the flags this tool accepts only for kubectl's sake.
fn validate_kubectl_flags(args: &ApplyArgs) -> Result<(), String> {
    let input = &args.input;
    match (&input.kustomize, input.filenames.is_empty()) {
        (Some(_), false) => return Err("only one of -f or -k can be specified".into()),
        (Some(_), true) => {}
        (None, true) => return Err("must specify one of -f and -k".into()),
        (None, false) => {}
    }
    let kubectl = &args.kubectl;
    if kubectl.server_side {
        return Err("applyset applies client-side only: --server-side=true is not supported (use kubectl apply --server-side, or applyset apply --server-side-fallback for objects too large for client-side apply)".into());
    }
    if kubectl.force_conflicts {
        return Err("--force-conflicts only works with --server-side".into());
    }
    if kubectl.subresource.is_some() {
        return Err("--subresource can only be specified for --server-side".into());
    }
    Ok(())
}

pub(super) fn validate_flags(args: &ApplyArgs, dry_run: DryRun) -> Result<(), String> {
    validate_kubectl_flags(args)?;
    if dry_run == DryRun::Server && args.force {
        return Err("--dry-run=server cannot be used with --force".into());
    }
    if args.all && args.input.selector.is_some() {
        return Err("cannot set --all and --selector at the same time".into());
    }
    if args.applyset.is_some() && !args.prune {
        return Err("--applyset requires --prune".into());
    }
    if args.prune {
        if args.force {
            return Err("--force cannot be used with --prune".into());
        }
        if args.applyset.is_some() {
            if args.all {
                return Err("--all is incompatible with --applyset".into());
            }
            if args.input.selector.is_some() {
                return Err("--selector is incompatible with --applyset".into());
            }
            if !args.prune_allowlist.is_empty() {
                return Err("--prune-allowlist is incompatible with --applyset".into());
            }
        } else if !args.all && args.input.selector.is_none() {
            return Err("all resources selected for prune without explicitly passing --all. To prune all resources, pass the --all flag. If you did not mean to prune all resources, specify a label selector".into());
        }
    }
    Ok(())
}
