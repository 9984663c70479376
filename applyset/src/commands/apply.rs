//! `applyset apply`: `kubectl apply -f …` (client-side) against the cluster.
//!
//! Contract: one line per object on stdout in input order (`<kind>[.<group>]/<name> <verb>`
//! plus the dry-run suffix, or only the name with `-o name`); warnings and failures on stderr;
//! exit code 0 when everything applied (and pruned), 1 otherwise.

use std::process::ExitCode;

use crate::apply::prune;
use crate::apply::selector::Selector;
use crate::apply::{self, ApplyOptions, ApplyReport, DryRun};
use crate::applyset::{DeleteOptions, FieldValidation, Parent, ParentWrites, PruneSummary, Run};
use crate::cli::{ApplyArgs, ClusterArgs, InputArgs};
use crate::cluster::{Cluster, ConnectOptions, collecting_warnings};
use crate::manifest::{self, LoadedObject};

pub fn run(args: ApplyArgs) -> ExitCode {
    match execute(args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
    }
}

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

/// Reads the input: every load error is printed and the run stops before touching the cluster.
/// Objects not matching `-l` are dropped, as kubectl does.
pub fn load_input(input: &InputArgs, selector: Option<&Selector>) -> Result<Vec<LoadedObject>, ExitCode> {
    let loaded = match manifest::load(&input.filenames, input.recursive, std::io::stdin()) {
        Ok(loaded) => loaded,
        Err(error) => {
            for e in &error.errors {
                eprintln!("error: {e}");
            }
            return Err(ExitCode::from(1));
        }
    };
    Ok(match selector {
        Some(selector) => loaded.into_iter().filter(|o| selector.matches_object(&o.object)).collect(),
        None => loaded,
    })
}

pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

pub async fn connect(args: &ClusterArgs) -> Result<Cluster, String> {
    Cluster::connect(&ConnectOptions {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        qps: args.qps,
        burst: args.burst,
    })
    .await
    .map_err(|e| e.to_string())
}

/// Prints warnings, one line per object (stdout) and the failures (stderr); returns whether
/// anything failed.
pub fn print_report(report: &ApplyReport, dry_run: DryRun, name_only: bool) -> bool {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut failures = Vec::new();
    // kubectl's warning writer prints each distinct server warning once per run.
    let mut seen = std::collections::HashSet::new();
    for object in &report.objects {
        for warning in &object.warnings {
            if seen.insert(warning.as_str()) {
                let _ = out.flush();
                eprintln!("{warning}");
            }
        }
        match &object.result {
            Ok(_) if name_only => {
                let _ = writeln!(out, "{}", object.name);
            }
            Ok(verb) => {
                let _ = writeln!(out, "{} {}{}", object.name, verb.word(), dry_run.suffix());
            }
            Err(error) => failures.push((&object.source, error)),
        }
    }
    let _ = out.flush();
    // kubectl's wording, led by where the object came from (kubectl's lone-error form names
    // neither the file nor the document).
    let rendered = apply::render_errors(failures.iter().map(|(_, error)| *error));
    for ((source, _), line) in failures.iter().zip(rendered) {
        match line.strip_prefix("error: ") {
            Some(message) => eprintln!("error: {source}: {message}"),
            None => eprintln!("{source}: {line}"),
        }
    }
    !failures.is_empty()
}

fn validate_flags(args: &ApplyArgs, dry_run: DryRun) -> Result<(), String> {
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
    match args.output.as_deref() {
        None | Some("name") => Ok(()),
        Some(other) => Err(format!(
            r#"unable to match a printer suitable for the output format "{other}", allowed formats are: name"#
        )),
    }
}

fn execute(args: ApplyArgs) -> Result<ExitCode, String> {
    let dry_run = parse_dry_run(&args.dry_run)?;
    let field_validation = parse_validate(&args.input.validate)?;
    validate_flags(&args, dry_run)?;
    let selector = args.input.selector.as_deref().map(Selector::parse).transpose()?;
    let objects = match load_input(&args.input, selector.as_ref()) {
        Ok(objects) => objects,
        Err(code) => return Ok(code),
    };
    if objects.is_empty() {
        return Err("no objects passed to apply".into());
    }
    let options = ApplyOptions {
        dry_run,
        force: args.force,
        server_side_fallback: args.server_side_fallback.then(|| "applyset".to_owned()),
        field_manager: args.input.field_manager.clone(),
        field_validation,
        namespace: args.input.namespace.clone(),
        concurrency: args.cluster.concurrency as usize,
        ..ApplyOptions::default()
    };
    let allowlist =
        if args.prune && args.applyset.is_none() { prune::parse_allowlist(&args.prune_allowlist)? } else { Vec::new() };
    runtime()?.block_on(apply_and_prune(&args, objects, options, &allowlist, dry_run))
}

/// Applies, then (with `--prune`, and only when everything applied) prunes and, for an
/// ApplySet, records the latest set: one [`Run`] as the controller drives it.
async fn apply_and_prune(
    args: &ApplyArgs,
    objects: Vec<LoadedObject>,
    mut options: ApplyOptions,
    allowlist: &[kube::core::GroupVersionKind],
    dry_run: DryRun,
) -> Result<ExitCode, String> {
    let cluster = connect(&args.cluster).await?;
    let name_only = args.output.as_deref() == Some("name");
    let mut run = start_run(&cluster, args, &mut options, dry_run).await?;
    // kubectl maps --prune-allowlist kinds before applying anything: a bad kind changes nothing.
    if !allowlist.is_empty() {
        prune::check_allowlist(&cluster, allowlist).await?;
    }
    let plan = apply::plan(&cluster, objects, &options).await.map_err(|e| e.to_string())?;
    if let Some(run) = run.as_mut() {
        let begun = run.begin(&plan).await;
        print_warnings(run.take_warnings());
        begun.map_err(|e| e.to_string())?;
    }
    let report = apply::execute(&cluster, plan, &options).await;
    if print_report(&report, dry_run, name_only) {
        return Ok(ExitCode::from(1));
    }
    if !args.prune {
        return Ok(ExitCode::SUCCESS);
    }

    // Prune only after every object applied. The server's warnings on its LISTs and
    // DELETEs follow prune's own warnings, as kubectl prints them.
    let delete_options = DeleteOptions::new(dry_run);
    let (summary, server_warnings) = collecting_warnings(async {
        match run.as_ref() {
            Some(run) => run.prune(&report.visited, &delete_options).await,
            None => {
                let selector = args.input.selector.as_deref();
                let (visited, namespaces) = (&report.visited, &report.namespaces_visited);
                prune::by_selector(&cluster, selector, args.all, allowlist, visited, namespaces, &delete_options).await
            }
        }
    })
    .await;
    if print_prune(&summary, &server_warnings, &report, dry_run, name_only) {
        return Ok(ExitCode::from(1));
    }
    if let Some(run) = run.as_mut() {
        let finished = run.finish().await;
        print_warnings(run.take_warnings());
        finished.map_err(|e| e.to_string())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `--applyset`: the parent is validated and its ID computed before anything is read or
/// written; every object then carries the part-of label (inside its annotation).
async fn start_run<'c>(
    cluster: &'c Cluster,
    args: &ApplyArgs,
    options: &mut ApplyOptions,
    dry_run: DryRun,
) -> Result<Option<Run<'c>>, String> {
    let Some(reference) = &args.applyset else { return Ok(None) };
    let mut parent =
        Parent::prepare(cluster, reference, args.input.namespace.as_deref()).await.map_err(|e| e.to_string())?;
    parent.field_validation = Some(match options.field_validation.as_str() {
        "Warn" => FieldValidation::Warn,
        "Ignore" => FieldValidation::Ignore,
        _ => FieldValidation::Strict,
    });
    options.applyset_label = Some(parent.id().to_owned());
    Ok(Some(Run::new(cluster, parent, ParentWrites::Kubectl, dry_run)))
}

/// Prints prune's warnings (each once, after the apply's), the pruned objects as kubectl does
/// and the errors; returns whether anything failed.
fn print_prune(
    summary: &PruneSummary,
    server_warnings: &[String],
    report: &ApplyReport,
    dry_run: DryRun,
    name_only: bool,
) -> bool {
    let mut seen: std::collections::HashSet<&str> =
        report.objects.iter().flat_map(|o| o.warnings.iter().map(String::as_str)).collect();
    for warning in summary.warnings.iter().chain(server_warnings) {
        if seen.insert(warning.as_str()) {
            eprintln!("{warning}");
        }
    }
    for object in &summary.pruned {
        // `-o name` prints bare names, as kubectl's name printer does for pruned objects too.
        if name_only {
            println!("{}", object.name);
        } else {
            println!("{}", object.line(dry_run));
        }
    }
    for error in &summary.errors {
        eprintln!("error: {error}");
    }
    !summary.errors.is_empty()
}

fn print_warnings(warnings: Vec<String>) {
    for warning in warnings {
        eprintln!("{warning}");
    }
}
