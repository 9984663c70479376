//! `applyset apply`: `kubectl apply -f …` (client-side) against the cluster.
//!
//! Contract: one line per object on stdout in input order (`<kind>[.<group>]/<name> <verb>`
//! plus the dry-run suffix, or only the name with `-o name`); warnings and failures on stderr;
//! exit code 0 when everything applied (and pruned), 1 otherwise.

use std::process::ExitCode;

use super::error::CliError;
use super::flags::{FlagError, parse_cascade, parse_dry_run, parse_validate, validate_flags};
use super::print::{output_format, print_prune, print_report, print_warnings};
use crate::apply::selector::Selector;
use crate::apply::{self, ApplyOptions, ApplyReport};
use crate::applyset::legacy as prune;
use crate::applyset::{DeleteOptions, FieldValidation, Parent, ParentWrites, Run};
use crate::causes::Chain;
use crate::cli::{ApplyArgs, ClusterArgs, InputArgs, KustomizeArgs};
use crate::cluster::{Cluster, DryRun, collecting_warnings};
use crate::manifest::decryption::Decryption;
use crate::manifest::{self, LoadedObject};
use crate::printers::OutputFormat;

pub fn run(mut args: ApplyArgs) -> ExitCode {
    if let Some(command) = args.last_applied.take() {
        return super::last_applied::run(*command, &args.cluster, args.input.namespace.as_deref());
    }
    match execute(args) {
        Ok(code) => code,
        // A flag value kubectl's flag parser refuses: cobra's words.
        Err(CliError::Flag(error @ FlagError::Timeout { .. })) => {
            eprintln!("error: {error}\nSee 'applyset apply --help' for usage.", error = Chain(&error));
            ExitCode::from(1)
        }
        Err(error) => {
            eprintln!("error: {}", Chain(&error));
            ExitCode::from(1)
        }
    }
}

/// Reads the input (SOPS-encrypted files decrypted with `--decryption-key`): every load error
/// is printed and the run stops before touching the cluster. Objects not matching `-l` are
/// dropped, as kubectl does.
pub fn load_input(
    input: &InputArgs,
    selector: Option<&Selector>,
    decryption: Option<&Decryption>,
) -> Result<Vec<LoadedObject>, ExitCode> {
    let options = manifest::LoadOptions { decryption: decryption.cloned(), ..manifest::LoadOptions::default() };
    let loaded = match manifest::load_with(&input.filenames, input.recursive, std::io::stdin(), &options) {
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

/// `kubectl apply`'s reading (`ContinueOnError`): every object that could be read, and the
/// problems with the others, each with its place in input order (counted in the objects kept).
/// Only a `-f` value that names nothing stops the run here.
fn load_for_apply(
    input: &InputArgs,
    selector: Option<&Selector>,
    kubectl_validation: bool,
    decryption: Option<&Decryption>,
) -> Result<(Vec<LoadedObject>, Vec<LoadFailure>), ExitCode> {
    let options = manifest::LoadOptions {
        kubectl_validation,
        decryption: decryption.cloned(),
        ..manifest::LoadOptions::default()
    };
    let loaded = manifest::load_partial(&input.filenames, input.recursive, std::io::stdin(), &options);
    if loaded.fatal {
        for e in &loaded.errors {
            eprintln!("error: {e}");
        }
        return Err(ExitCode::from(1));
    }
    let keep: Vec<bool> = loaded.objects.iter().map(|o| selector.is_none_or(|s| s.matches_object(&o.object))).collect();
    let failures = loaded
        .errors
        .iter()
        .zip(&loaded.positions)
        .map(|(error, &position)| LoadFailure {
            position: keep[..position].iter().filter(|&&k| k).count(),
            message: error.kubectl_message(),
        })
        .collect();
    let objects = loaded.objects.into_iter().zip(keep).filter_map(|(o, k)| k.then_some(o)).collect();
    Ok((objects, failures))
}

/// A document kubectl could not read, worded as kubectl words it; `position` is the number of
/// objects read before it.
#[derive(Debug, Clone)]
pub struct LoadFailure {
    pub position: usize,
    pub message: String,
}

pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(crate::DOCUMENT_THREAD_STACK)
        .enable_all()
        .build()
        .map_err(CliError::Runtime)
}

/// The cluster kubectl's global flags (and the kubeconfig) name, with their `-v` log started.
pub async fn connect(args: &ClusterArgs) -> Result<Cluster, CliError> {
    args.init_logging();
    let options = args.connect_options().map_err(|e| CliError::Connect(e.into()))?;
    Cluster::connect(&options).await.map_err(CliError::Connect)
}

fn execute(args: ApplyArgs) -> Result<ExitCode, CliError> {
    if args.kubectl.record {
        eprintln!("Flag --record has been deprecated, --record will be removed in the future");
    }
    // kubectl's first check, with its usage hint.
    if !args.unexpected.is_empty() {
        return Err(FlagError::UnexpectedArgs(args.unexpected.clone()).into());
    }
    let dry_run = parse_dry_run(&args.dry_run)?;
    let field_validation = parse_validate(&args.input.validate)?;
    validate_flags(&args, dry_run)?;
    let propagation = parse_cascade(&args.kubectl.cascade)?;
    let timeout = crate::duration::parse(&args.kubectl.timeout)
        .map_err(|source| FlagError::Timeout { value: args.kubectl.timeout.clone(), source })?;
    let selector = args.input.selector.as_deref().map(Selector::parse).transpose()?;
    // The client configuration is checked before the input is read, as kubectl does (nothing
    // is sent yet); one runtime serves the whole command, as the client lives on it.
    let runtime = runtime()?;
    let cluster = runtime.block_on(connect(&args.cluster))?;
    let decryption = super::decryption::from_key_files(&args.input.decryption_keys)?;
    let (mut objects, load_failures) = match &args.input.kustomize {
        Some(dir) => {
            let built =
                runtime.block_on(build_kustomization(dir, &args.input.kustomize_program, decryption.as_ref()))?;
            let selected =
                built.into_iter().filter(|o| selector.as_ref().is_none_or(|s| s.matches_object(&o.object))).collect();
            (selected, Vec::new())
        }
        None => match load_for_apply(&args.input, selector.as_ref(), field_validation != "Ignore", decryption.as_ref())
        {
            Ok(loaded) => loaded,
            Err(code) => return Ok(code),
        },
    };
    // Resolved once (a template file is read once); like kubectl, it only fails when printing.
    let format = output_format(&args);
    if objects.is_empty() {
        if load_failures.is_empty() {
            return Err(CliError::NoObjects("apply"));
        }
        // Nothing to apply: only the documents that could not be read to report.
        let nothing = ApplyReport::default();
        print_report(&nothing, dry_run, &format, &load_failures);
        return Ok(ExitCode::from(1));
    }
    if args.kubectl.record {
        let cause = change_cause();
        for object in &mut objects {
            apply::object::set_annotation_value(&mut object.object, CHANGE_CAUSE, &cause);
        }
    }
    let last_applied = super::decryption::hashed_annotations(decryption.as_ref(), &mut objects);
    let defaults = ApplyOptions::default();
    let options = ApplyOptions {
        last_applied,
        dry_run,
        force: args.force,
        server_side_fallback: args.server_side_fallback.then(|| "applyset".to_owned()),
        field_manager: args.input.field_manager.clone(),
        field_validation,
        namespace: args.input.namespace.clone(),
        concurrency: args.cluster.concurrency as usize,
        overwrite: args.kubectl.overwrite,
        keep_results: if format.keeps_objects() { crate::apply::Keep::Everything } else { crate::apply::Keep::Nothing },
        force_timeout: if timeout.is_zero() { defaults.force_timeout } else { timeout },
        ..defaults
    };
    let mut delete_options = DeleteOptions::new(dry_run);
    delete_options.propagation = propagation;
    delete_options.grace_period_seconds = u32::try_from(args.kubectl.grace_period).ok();
    delete_options.keep_objects = matches!(format, OutputFormat::Objects(_));
    let allowlist =
        if args.prune && args.applyset.is_none() { prune::parse_allowlist(&args.prune_allowlist)? } else { Vec::new() };
    let run = ApplyRun {
        cluster: &cluster,
        args: &args,
        allowlist: &allowlist,
        dry_run,
        delete_options: &delete_options,
        format: &format,
        load_failures,
        // A dry run applies nothing to wait for.
        health_timeout: (args.kubectl.wait && dry_run == DryRun::None)
            .then(|| if timeout.is_zero() { super::wait::DEFAULT_TIMEOUT } else { timeout }),
    };
    runtime.block_on(run.apply_and_prune(objects, options))
}

/// `-k DIR`: the kustomization built by the pinned kustomize (`--kustomize-binary`, else
/// `$APPLYSET_KUSTOMIZE_BINARY`, else `kustomize` on PATH; its version checked first), with the
/// controller's safety checks; the repository is the git work tree holding DIR (else the
/// current directory), and nothing may come from outside it. With `--decryption-key`, the
/// SOPS-encrypted files it reads are decrypted into a private copy first.
pub async fn build_kustomization(
    dir: &std::path::Path,
    program: &KustomizeArgs,
    decryption: Option<&Decryption>,
) -> Result<Vec<LoadedObject>, CliError> {
    let dir = dir.canonicalize().map_err(|source| CliError::KustomizeDir { dir: dir.to_owned(), source })?;
    if manifest::kustomize::kustomization_file(&dir).is_none() {
        return Err(CliError::NoKustomization(dir));
    }
    let root = dir
        .ancestors()
        .find(|d| d.join(".git").exists())
        .map(std::path::Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok().and_then(|c| c.canonicalize().ok()))
        .filter(|root| dir.starts_with(root))
        .unwrap_or_else(|| dir.clone());
    let kustomize = manifest::kustomize::Kustomize {
        binary: program.kustomize_binary.clone(),
        timeout: std::time::Duration::from_secs(120),
        max_output: 64 << 20,
    };
    manifest::kustomize::check_version(&kustomize.binary).await?;
    let options = manifest::LoadOptions { decryption: decryption.cloned(), ..manifest::LoadOptions::default() };
    Ok(kustomize.build_with(&root, &dir, &options).await?)
}

/// kubectl's `--record` annotation.
const CHANGE_CAUSE: &str = crate::keys::CHANGE_CAUSE_ANNOTATION;

/// The command as kubectl records it: the program and subcommand, then every flag as given,
/// in order, written `--name=value` (short flags by their long name).
fn change_cause() -> String {
    use clap::CommandFactory;
    let cli = crate::cli::Cli::command();
    let apply = cli.find_subcommand("apply").expect("the apply subcommand exists");
    // The values clap gave flags written bare (`--cascade` is `background`, `--force` `true`).
    let matches = cli.clone().try_get_matches_from(std::env::args()).ok();
    let parsed = matches.as_ref().and_then(|m| m.subcommand_matches("apply"));
    let mut args = std::env::args();
    let program = args.next().map(|p| p.rsplit('/').next().unwrap_or_default().to_owned()).unwrap_or_default();
    let mut words = vec![program];
    let mut rest = args.peekable();
    if let Some(command) = rest.next() {
        words.push(command);
    }
    while let Some(arg) = rest.next() {
        let Some(flag) = arg.strip_prefix('-') else { continue };
        // What clap was told of the flag: its long name, and how it takes a value.
        let (known, value) = match flag.strip_prefix('-') {
            Some(long) => {
                let (name, value) = long.split_once('=').map_or((long, None), |(n, v)| (n, Some(v)));
                (apply.get_arguments().find(|a| a.get_long() == Some(name)), value)
            }
            None => {
                let mut chars = flag.chars();
                let short = chars.next();
                let value = chars.as_str().strip_prefix('=').unwrap_or(chars.as_str());
                (apply.get_arguments().find(|a| a.get_short() == short), (!value.is_empty()).then_some(value))
            }
        };
        let Some(known) = known else { continue };
        let name = known.get_long().unwrap_or_else(|| known.get_id().as_str());
        // A value after `=` only (kubectl's booleans): bare, it is the flag's implied value.
        let implied = parsed
            .filter(|_| known.is_require_equals_set())
            .and_then(|m| m.get_raw(known.get_id().as_str()))
            .and_then(|mut values| values.next())
            .map(|v| v.to_string_lossy().into_owned());
        let value = match (value, implied) {
            (Some(value), _) => value.to_owned(),
            (None, Some(implied)) => implied,
            (None, None) => rest.next_if(|next| !next.starts_with('-')).unwrap_or_default(),
        };
        words.push(format!("--{name}={value}"));
    }
    words.join(" ")
}

/// What one `applyset apply` does once its input is read.
struct ApplyRun<'a> {
    cluster: &'a Cluster,
    args: &'a ApplyArgs,
    allowlist: &'a [kube::core::GroupVersionKind],
    dry_run: DryRun,
    delete_options: &'a DeleteOptions,
    /// How applied (and pruned) objects are printed.
    format: &'a OutputFormat,
    /// Documents that could not be read: reported with the apply's failures, and no prune.
    load_failures: Vec<LoadFailure>,
    /// `--wait`: how long to wait for the applied objects' health afterwards.
    health_timeout: Option<std::time::Duration>,
}

impl ApplyRun<'_> {
    /// Applies, then (with `--prune`, and only when everything was read and applied) prunes and,
    /// for an ApplySet, records the latest set: one [`Run`] as the controller drives it.
    async fn apply_and_prune(
        &self,
        objects: Vec<LoadedObject>,
        mut options: ApplyOptions,
    ) -> Result<ExitCode, CliError> {
        let ApplyRun { cluster, args, allowlist, dry_run, delete_options, format, .. } = *self;
        let mut run = start_run(cluster, args, &mut options, dry_run).await?;
        // kubectl maps --prune-allowlist kinds before applying anything: a bad kind changes nothing.
        if !allowlist.is_empty() {
            prune::check_allowlist(cluster, allowlist).await?;
        }
        let plan = apply::plan(cluster, objects, &options).await?;
        if let Some(run) = run.as_mut() {
            let begun = run.begin(&plan).await;
            print_warnings(run.take_warnings());
            begun?;
        }
        let report = apply::execute(cluster, plan, &options).await;
        if print_report(&report, dry_run, format, &self.load_failures) {
            return Ok(ExitCode::from(1));
        }
        if !args.prune {
            return Ok(self.wait(cluster, &report).await);
        }

        // Prune only after every object applied. The server's warnings on its LISTs and
        // DELETEs follow prune's own warnings, as kubectl prints them.
        let (summary, server_warnings) = collecting_warnings(async {
            match run.as_ref() {
                Some(run) => run.prune(&report.visited, delete_options).await,
                None => {
                    let selector = args.input.selector.as_deref();
                    let (visited, namespaces) = (&report.visited, &report.namespaces_visited);
                    prune::by_selector(cluster, selector, args.all, allowlist, visited, namespaces, delete_options)
                        .await
                }
            }
        })
        .await;
        if print_prune(&summary, &server_warnings, &report, dry_run, format, run.is_some()) {
            return Ok(ExitCode::from(1));
        }
        if let Some(run) = run.as_mut() {
            let finished = run.finish().await;
            print_warnings(run.take_warnings());
            finished?;
        }
        Ok(self.wait(cluster, &report).await)
    }

    /// `--wait`: until the applied objects are healthy (exit 1 with the reason when not).
    async fn wait(&self, cluster: &Cluster, report: &ApplyReport) -> ExitCode {
        let Some(timeout) = self.health_timeout else { return ExitCode::SUCCESS };
        match super::wait::until_healthy(cluster, &report.visited, timeout).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {error}", error = Chain(&error));
                ExitCode::from(1)
            }
        }
    }
}

/// `--applyset`: the parent is validated and its ID computed before anything is read or
/// written; every object then carries the part-of label (inside its annotation).
async fn start_run<'c>(
    cluster: &'c Cluster,
    args: &ApplyArgs,
    options: &mut ApplyOptions,
    dry_run: DryRun,
) -> Result<Option<Run<'c>>, CliError> {
    let Some(reference) = &args.applyset else { return Ok(None) };
    let mut parent = Parent::prepare(cluster, reference, args.input.namespace.as_deref()).await?;
    parent.field_validation = Some(match options.field_validation.as_str() {
        "Warn" => FieldValidation::Warn,
        "Ignore" => FieldValidation::Ignore,
        _ => FieldValidation::Strict,
    });
    options.applyset_label = Some(parent.id().to_owned());
    Ok(Some(Run::new(cluster, parent, ParentWrites::Kubectl, dry_run)))
}
