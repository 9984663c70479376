//! `applyset apply set-last-applied`: `kubectl apply set-last-applied -f FILE`. Each object
//! of the files is checked first (it must exist, and have the annotation unless
//! `--create-annotation`); an object whose annotation already holds the file's text is reported
//! as needing no change; then the others are patched, one JSON merge patch each that sets the
//! annotation to the file's object as kubectl encodes it, and printed (`configmap/a
//! configured`, or through `-o`).

use std::io::Write;
use std::process::ExitCode;

use super::error::LastAppliedError;
use super::select::{self, Namespace, Request, Target};
use super::{annotation_patch, encode_to_json, strip_comments};
use crate::apply::object::{display_name, last_applied};
use crate::cli::SetLastAppliedArgs;
use crate::cluster::mapper::{gvk_string, gvr_string};
use crate::cluster::{Cluster, DryRun, PatchType, WriteParams};
use crate::commands::apply::{connect, runtime};
use crate::commands::flags::parse_dry_run;
use crate::printers::{OutputFormat, PrintFlags};

/// An object whose annotation is to be set.
struct Change {
    target: Target,
    /// The annotation's new text.
    configuration: String,
}

pub fn run(args: SetLastAppliedArgs) -> Result<ExitCode, LastAppliedError> {
    let dry_run = parse_dry_run(&args.dry_run)?;
    let format = OutputFormat::resolve(&PrintFlags {
        output: args.print.output.as_deref(),
        template: args.print.template.as_deref(),
        allow_missing_keys: args.print.allow_missing_template_keys,
        show_managed_fields: args.print.show_managed_fields,
    });
    if let OutputFormat::Unusable(error) = format {
        return Err(error.into());
    }
    runtime()?.block_on(async {
        let cluster = connect(&args.cluster).await?;
        let namespace = Namespace::of(args.namespace.as_deref(), &cluster);
        let changes = check(&cluster, &namespace, &args).await?;
        // One printer for all the objects: YAML documents after the first begin with `---`.
        let yaml = args.print.output.as_deref() == Some("yaml");
        for (index, change) in changes.into_iter().enumerate() {
            let printed = write(&cluster, change, dry_run).await?;
            print(&printed, &format, dry_run, yaml && index > 0)?;
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// kubectl's `Validate`: every object read, fetched and compared, in order; the first failure
/// stops the command before anything is written.
async fn check(
    cluster: &Cluster,
    namespace: &Namespace,
    args: &SetLastAppliedArgs,
) -> Result<Vec<Change>, LastAppliedError> {
    let request = Request { filenames: &args.filenames, ..Request::default() };
    select::plan(cluster, &request).await?;
    let mut changes = Vec::new();
    for loaded in select::load_inputs(&request).await? {
        let target = select::file_target(cluster, loaded?, namespace, false).await?;
        let target = select::finish_file_target(target, namespace)?;
        let configuration = encode_to_json(&target.object);
        let live = match select::get_latest(cluster, &target.mapping, &target.namespace, &target.name).await {
            Ok(live) => live,
            Err(error) if error.is_not_found() => return Err(error.into()),
            Err(error) => {
                let resource = &target.mapping.resource;
                let info = format!(
                    "Resource: {:?}, GroupVersionKind: {:?}\nName: {:?}, Namespace: {:?}",
                    gvr_string(&resource.group, &resource.version, &resource.plural),
                    gvk_string(&resource.group, &resource.version, &resource.kind),
                    target.name,
                    target.namespace
                );
                let verb = format!("retrieving current configuration of:\n{info}\nfrom server for:");
                return Err(LastAppliedError::with_source(&verb, target.source.as_deref().unwrap_or_default(), error));
            }
        };
        let recorded = last_applied(&live).map(str::to_owned);
        if recorded.is_none() && !args.create_annotation {
            return Err(LastAppliedError::SetNoAnnotation(target.name));
        }
        if strip_comments(recorded.unwrap_or_default().as_bytes()) == strip_comments(configuration.as_bytes()) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "set-last-applied {}: no changes required.", target.name);
            let _ = out.flush();
            continue;
        }
        changes.push(Change { target: Target { object: live, ..target }, configuration });
    }
    Ok(changes)
}

/// Patches the annotation (not with `--dry-run=client`): the object the server returned, or
/// the live object as fetched.
async fn write(cluster: &Cluster, change: Change, dry_run: DryRun) -> Result<applyset_merge::Value, LastAppliedError> {
    let Change { target, configuration } = change;
    if dry_run == DryRun::Client {
        return Ok(target.object);
    }
    let params = WriteParams {
        field_manager: String::new(),
        field_validation: String::new(),
        server_dry_run: dry_run == DryRun::Server,
        force: false,
    };
    let namespace = Some(target.namespace.as_str()).filter(|ns| !ns.is_empty());
    let patch = annotation_patch(&configuration);
    Ok(cluster.patch(&target.mapping, namespace, &target.name, PatchType::JsonMerge, &patch, &params).await?)
}

/// One object as kubectl's printer for `configured` prints it.
fn print(
    object: &applyset_merge::Value,
    format: &OutputFormat,
    dry_run: DryRun,
    separate: bool,
) -> Result<(), LastAppliedError> {
    let mut out = std::io::stdout().lock();
    let name = || {
        let text = |field: &str| {
            object.as_object().and_then(|o| o.get(field)).and_then(applyset_merge::Value::as_str).unwrap_or("")
        };
        let group = text("apiVersion").split_once('/').map_or("", |(group, _)| group);
        let name = crate::apply::object::meta_str(object, "name").unwrap_or_default();
        display_name(text("kind"), group, name)
    };
    match format {
        OutputFormat::Lines => {
            let _ = writeln!(out, "{} configured{}", name(), dry_run.suffix());
        }
        OutputFormat::Name => {
            let _ = writeln!(out, "{}", name());
        }
        OutputFormat::Objects(printer) => {
            if separate {
                let _ = out.write_all(b"---\n");
            }
            let printed = printer.print(vec![object.clone()]);
            let _ = out.write_all(printed.text.as_bytes());
            let _ = out.flush();
            if let Some(error) = printed.error {
                return Err(error.into());
            }
        }
        OutputFormat::Unusable(error) => return Err(error.clone().into()),
    }
    let _ = out.flush();
    Ok(())
}
