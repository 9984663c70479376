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
use crate::apply::{self, ApplyOptions, FieldPolicyRef, Verb, last_applied};
use crate::causes::Chain;
use crate::cli::DiffArgs;
use crate::cluster::DryRun;
use crate::commands::apply::{build_kustomization, connect, load_input, runtime};
use crate::commands::error::CliError;
use crate::commands::flags::{check_one_input, parse_validate};
use crate::fields::{Finding, LeftBehind};
use crate::keys::LAST_APPLIED_ANNOTATION;

pub fn run(args: DiffArgs) -> ExitCode {
    match execute(args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {}", Chain(&message));
            ExitCode::from(2)
        }
    }
}

fn execute(args: DiffArgs) -> Result<ExitCode, CliError> {
    check_one_input(&args.input)?;
    let field_validation = parse_validate(&args.input.validate)?;
    let selector = args.input.selector.as_deref().map(Selector::parse).transpose()?;
    let options = ApplyOptions {
        dry_run: DryRun::Client,
        field_manager: args.input.field_manager.clone(),
        field_validation,
        namespace: args.input.namespace.clone(),
        concurrency: args.cluster.concurrency as usize,
        keep_results: crate::apply::Keep::Everything,
        field_policy: args
            .show_left_behind
            .then(|| FieldPolicyRef(Arc::new(LeftBehind { own_manager: args.input.field_manager.clone() }))),
        ..ApplyOptions::default()
    };
    let runtime = runtime()?;
    runtime.block_on(async {
        // kubectl's order: the client's configuration is checked before the input is read.
        let cluster = connect(&args.cluster).await?;
        let decryption = super::decryption::from_key_files(&args.input.decryption_keys)?;
        let mut objects: Vec<_> = match &args.input.kustomize {
            // Built exactly as `apply -k` builds it.
            Some(dir) => {
                let built = build_kustomization(dir, &args.input.kustomize_program, decryption.as_ref()).await?;
                built.into_iter().filter(|o| selector.as_ref().is_none_or(|s| s.matches_object(&o.object))).collect()
            }
            None => match load_input(&args.input, selector.as_ref(), decryption.as_ref()) {
                Ok(objects) => objects,
                Err(_) => return Ok(ExitCode::from(2)),
            },
        };
        if objects.is_empty() {
            return Err(CliError::NoObjects("diff"));
        }
        // As `apply --decryption-key` records them.
        let options = ApplyOptions {
            last_applied: super::decryption::hashed_annotations(decryption.as_ref(), &mut objects),
            ..options
        };
        let report = apply::apply(&cluster, objects, &options).await?;
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
            print!("{}", change_text(&object.name, &object.source, &details));
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

/// What `diff` prints for an object that would change: a header naming it, the patch (or that
/// it would be created) and a unified diff of the live object against the result, as YAML
/// without `metadata.managedFields`; a Secret's values masked as `kubectl diff` masks them.
/// `applyset plan` prints the same for each object it would configure.
pub(crate) fn change_text(name: &str, source: &crate::manifest::Source, details: &apply::Details) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let _ = writeln!(text, "diff {name} ({}: document {})", source.path.display(), source.document);
    let secret = [&details.live, &details.result].into_iter().flatten().any(last_applied::is_secret);
    match (&details.patch, details.patch_type) {
        (Some(patch), Some(patch_type)) => {
            let _ = writeln!(text, "patch ({}):", patch_type.content_type());
            let patch = if secret { masked(patch) } else { patch.clone() };
            let _ = writeln!(text, "{}", patch.to_json_string());
        }
        _ => text.push_str("create (the object does not exist)\n"),
    }
    let (mut live, mut result) = (details.live.clone(), details.result.clone());
    if secret {
        mask_pair(live.as_mut(), result.as_mut());
    }
    let before = live.as_ref().map(render).unwrap_or_default();
    let after = result.as_ref().map(render).unwrap_or_default();
    let diff = similar::TextDiff::from_lines(&before, &after);
    let _ = write!(
        text,
        "{}",
        diff.unified_diff().context_radius(3).header(&format!("live/{name}"), &format!("applied/{name}"))
    );
    text
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

/// kubectl diff's masks for Secret values.
const MASK: &str = "***";
const MASK_BEFORE: &str = "*** (before)";
const MASK_AFTER: &str = "*** (after)";

/// A Secret's patch or object with every value of `data` and `stringData` masked, and the same
/// inside its last-applied annotation (which kubectl diff prints in clear).
pub(crate) fn masked(object: &Value) -> Value {
    let mut object = object.clone();
    mask_values(&mut object, &|_| MASK);
    object
}

/// Masks `data`/`stringData` values (each through `mask`, given the key) and those of the
/// last-applied annotation (always `***`: hashed ones included, they are no business of a diff).
fn mask_values(object: &mut Value, mask: &dyn Fn(&str) -> &'static str) {
    let Some(root) = object.as_object_mut() else { return };
    for section in ["data", "stringData"] {
        if let Some(Value::Object(values)) = root.get_mut(section) {
            for (key, value) in values.iter_mut() {
                if !value.is_null() {
                    *value = Value::String(mask(key).to_owned());
                }
            }
        }
    }
    let annotation = root
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
        .and_then(|a| a.get_mut(LAST_APPLIED_ANNOTATION));
    if let Some(Value::String(text)) = annotation
        && let Ok(mut recorded) = Value::from_json_str(text)
    {
        mask_values(&mut recorded, &|_| MASK);
        *text = recorded.to_json_string() + "\n";
    }
}

/// kubectl diff's masking of a Secret's `data`: a key on both sides with different values reads
/// `*** (before)` / `*** (after)`, any other `***`, so a changed value shows without showing it.
fn mask_pair(before: Option<&mut Value>, after: Option<&mut Value>) {
    let data = |object: &Option<&mut Value>| -> std::collections::BTreeMap<String, Value> {
        let data = object.as_deref().and_then(Value::as_object).and_then(|o| o.get("data")).and_then(Value::as_object);
        data.map(|d| d.iter().map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default()
    };
    let (from, to) = (data(&before), data(&after));
    let changed = |key: &str| matches!((from.get(key), to.get(key)), (Some(a), Some(b)) if a != b);
    if let Some(before) = before {
        mask_values(before, &|key| if changed(key) { MASK_BEFORE } else { MASK });
    }
    if let Some(after) = after {
        mask_values(after, &|key| if changed(key) { MASK_AFTER } else { MASK });
    }
}

/// YAML without `metadata.managedFields`.
fn render(object: &Value) -> String {
    let mut object = object.clone();
    if let Some(metadata) = object.as_object_mut().and_then(|o| o.get_mut("metadata")).and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    serde_yaml_ng::to_string(&object)
        .unwrap_or_else(|e| format!("# cannot render as YAML: {e}\n{}\n", object.to_json_string(), e = Chain(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        Value::from_json_str(text).unwrap()
    }

    #[test]
    fn secret_values_are_masked_as_kubectl_diff_does_and_in_the_annotation_too() {
        let annotation = r#"{\"apiVersion\":\"v1\",\"data\":{\"a\":\"aHVudGVyMg==\"},\"kind\":\"Secret\"}\n"#;
        let mut live = json(&format!(
            r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"annotations":{{"{LAST_APPLIED_ANNOTATION}":"{annotation}"}}}},"data":{{"a":"aHVudGVyMg==","b":"b2xk","gone":"eA=="}}}}"#
        ));
        let mut result =
            json(r#"{"apiVersion":"v1","kind":"Secret","data":{"a":"aHVudGVyMg==","b":"bmV3","added":"eQ=="}}"#);
        mask_pair(Some(&mut live), Some(&mut result));
        let (live, result) = (live.to_json_string(), result.to_json_string());
        for text in [&live, &result] {
            assert!(!text.contains("aHVudGVyMg==") && !text.contains("b2xk") && !text.contains("bmV3"), "{text}");
        }
        assert!(live.contains(r#""a":"***","b":"*** (before)","gone":"***""#), "{live}");
        assert!(result.contains(r#""a":"***","added":"***","b":"*** (after)""#), "{result}");
        assert!(live.contains(r#"\"data\":{\"a\":\"***\"}"#), "the annotation is masked: {live}");

        let patch = json(r#"{"data":{"b":"bmV3","gone":null},"stringData":{"c":"hunter2"}}"#);
        assert_eq!(masked(&patch).to_json_string(), r#"{"data":{"b":"***","gone":null},"stringData":{"c":"***"}}"#);
    }
}
