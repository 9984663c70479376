//! `applyset diff`: what `apply` would send, without writing anything.
//!
//! Runs the apply flow with client-side dry run (only reads from the cluster) and prints, per
//! object that would change, the patch (or the object to create) and a unified diff of the live
//! object against the result, both rendered as YAML without `metadata.managedFields`.
//!
//! Exit code, as `kubectl diff`: 0 nothing would change, 1 something would, 2 an error.

use std::process::ExitCode;
use std::sync::Arc;

use applyset_merge::Value;

use crate::apply::selector::Selector;
use crate::apply::{self, ApplyOptions, DryRun, FieldPolicyRef, Verb};
use crate::cli::DiffArgs;
use crate::commands::apply::{connect, load_input, parse_validate, runtime};
use crate::fields::{Finding, LeftBehind};

pub fn run(args: DiffArgs) -> ExitCode {
    match execute(args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn execute(args: DiffArgs) -> Result<ExitCode, String> {
    let field_validation = parse_validate(&args.input.validate)?;
    let selector = args.input.selector.as_deref().map(Selector::parse).transpose()?;
    let objects = match load_input(&args.input, selector.as_ref()) {
        Ok(objects) => objects,
        Err(_) => return Ok(ExitCode::from(2)),
    };
    if objects.is_empty() {
        return Err("no objects passed to diff".into());
    }
    let options = ApplyOptions {
        dry_run: DryRun::Client,
        field_manager: args.input.field_manager.clone(),
        field_validation,
        namespace: args.input.namespace.clone(),
        concurrency: args.cluster.concurrency as usize,
        keep_results: true,
        field_policy: args
            .show_left_behind
            .then(|| FieldPolicyRef(Arc::new(LeftBehind { own_manager: args.input.field_manager.clone() }))),
        ..ApplyOptions::default()
    };
    let runtime = runtime()?;
    runtime.block_on(async {
        let cluster = connect(&args.cluster).await?;
        let report = apply::apply(&cluster, objects, &options).await.map_err(|e| e.to_string())?;
        let mut differs = false;
        let mut failed = false;
        for object in &report.objects {
            for warning in &object.warnings {
                eprintln!("{warning}");
            }
            let verb = match &object.result {
                Ok(verb) => *verb,
                Err(error) => {
                    failed = true;
                    eprintln!(
                        "{}: document {}: {}",
                        object.source.path.display(),
                        object.source.document,
                        error.render_in_list()
                    );
                    continue;
                }
            };
            let details = object.details.as_deref().cloned().unwrap_or_default();
            print_left_behind(&object.name, &object.source, &details.fields);
            if verb == Verb::Unchanged {
                continue;
            }
            differs = true;
            println!("diff {} ({}: document {})", object.name, object.source.path.display(), object.source.document);
            match (&details.patch, details.patch_type) {
                (Some(patch), Some(patch_type)) => {
                    println!("patch ({}):", patch_type.content_type());
                    println!("{}", patch.to_json_string());
                }
                _ => println!("create (the object does not exist)"),
            }
            let before = details.live.as_ref().map(render).unwrap_or_default();
            let after = details.result.as_ref().map(render).unwrap_or_default();
            let diff = similar::TextDiff::from_lines(&before, &after);
            print!(
                "{}",
                diff.unified_diff()
                    .context_radius(3)
                    .header(&format!("live/{}", object.name), &format!("applied/{}", object.name))
            );
        }
        Ok(if failed {
            ExitCode::from(2)
        } else if differs {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    })
}

/// The fields apply leaves behind, one per line with the manager that wrote it.
fn print_left_behind(name: &str, source: &crate::manifest::Source, fields: &[Finding]) {
    if fields.is_empty() {
        return;
    }
    println!("left behind {name} ({}: document {}):", source.path.display(), source.document);
    for field in fields {
        let manager = field.manager.as_deref().unwrap_or("unknown manager");
        println!("  {}  (written by {manager})", field.path);
    }
}

/// YAML without `metadata.managedFields`.
fn render(object: &Value) -> String {
    let mut object = object.clone();
    if let Some(metadata) = object.as_object_mut().and_then(|o| o.get_mut("metadata")).and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    serde_yaml_ng::to_string(&object)
        .unwrap_or_else(|e| format!("# cannot render as YAML: {e}\n{}\n", object.to_json_string()))
}
