//! `applyset apply view-last-applied`: `kubectl apply view-last-applied`. Every object is
//! found first (the first failure stops the command before anything is printed); then each
//! annotation is printed as YAML (go-yaml's rendering of it) or, with `-o json`, as its own
//! text indented by Go's `json.Indent`, one after the other with no separator.
//!
//! An object named on the command line that has no annotation is skipped silently; one read
//! from a file fails the command (kubectl's message, `<nil>` included).

use std::io::Write;
use std::process::ExitCode;

use super::error::LastAppliedError;
use super::indent::go_indent;
use super::select::{self, Namespace, Request};
use crate::apply::object::last_applied;
use crate::causes::with_causes;
use crate::cli::ViewLastAppliedArgs;
use crate::commands::apply::{connect, runtime};
use crate::manifest::yaml::{parse_document_limited, to_go_yaml};

pub fn run(args: ViewLastAppliedArgs) -> Result<ExitCode, LastAppliedError> {
    let annotations = runtime()?.block_on(collect(&args))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for annotation in &annotations {
        let printed = match args.output.as_str() {
            "json" => go_indent(annotation, "  ").map_err(|e| LastAppliedError::Annotation(with_causes(&e))),
            "yaml" => annotation_yaml(annotation),
            other => Err(LastAppliedError::OutputMode {
                output: other.to_owned(),
                command: "applyset apply view-last-applied".to_owned(),
            }),
        };
        let printed = printed.inspect_err(|_| {
            let _ = out.flush();
        })?;
        let _ = out.write_all(printed.as_bytes());
    }
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}

/// The annotations of the objects, in order.
async fn collect(args: &ViewLastAppliedArgs) -> Result<Vec<String>, LastAppliedError> {
    let cluster = connect(&args.cluster).await?;
    let objects = &args.objects;
    let namespace = Namespace::of(objects.namespace.as_deref(), &cluster);
    let request = Request {
        resources: &objects.resources,
        filenames: &objects.filenames,
        kustomize: objects.kustomize.as_deref().map(|dir| (dir, &objects.kustomize_program)),
        recursive: objects.recursive,
        selector: args.selector.as_deref(),
        all: args.all,
        // kubectl passes whether -n was given as `allowEmptySelector`.
        type_alone_selects_all: namespace.enforced,
        ..Request::default()
    };
    let plan = select::plan(&cluster, &request).await?;
    let mut annotations = Vec::new();
    select::visit(&cluster, &namespace, &request, plan, |target| {
        match (last_applied(&target.object), target.source) {
            (Some(annotation), _) => annotations.push(annotation.to_owned()),
            (None, Some(source)) => return Err(LastAppliedError::ViewNoAnnotation { name: target.name, file: source }),
            (None, None) => {}
        }
        Ok(())
    })
    .await?;
    Ok(annotations)
}

/// `yaml.JSONToYAML`: the annotation read by go-yaml (its first document) and written back.
fn annotation_yaml(annotation: &str) -> Result<String, LastAppliedError> {
    let value = parse_document_limited(annotation, None).map_err(|error| {
        LastAppliedError::Annotation(match error.go_line {
            Some(line) => format!("yaml: line {line}: {}", error.message),
            None => format!("yaml: {}", error.message),
        })
    })?;
    to_go_yaml(&value).ok_or_else(|| LastAppliedError::Annotation("cannot write the annotation as YAML".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_is_go_yamls_rendering_of_the_annotation() {
        let annotation = "{\"apiVersion\":\"v1\",\"data\":{\"a10\":\"x\",\"a9\":\"y\",\"false\":\"1\",\"k\":\"\\u003cv\\u003e\",\"n\":1.0},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"a\"}}\n";
        assert_eq!(
            annotation_yaml(annotation).unwrap(),
            "apiVersion: v1\ndata:\n  a9: \"y\"\n  a10: x\n  \"false\": \"1\"\n  k: <v>\n  \"n\": 1\nkind: ConfigMap\nmetadata:\n  annotations: {}\n  name: a\n"
        );
        assert_eq!(annotation_yaml("").unwrap(), "null\n");
        assert!(annotation_yaml("{\"a\": [}").unwrap_err().to_string().starts_with("yaml: "));
    }
}
