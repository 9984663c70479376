//! `applyset apply view-last-applied | set-last-applied | edit-last-applied`: kubectl 1.33's
//! subcommands of `kubectl apply` that read and write the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation, with kubectl's flags, output
//! bytes, messages and exit codes (0, or 1 on any failure).
//!
//! - `builder`, `select`: which objects (kubectl's resource builder: the command line read,
//!   then files, `TYPE NAME`, `TYPE/NAME`, `-l`, `--all`, namespaces);
//! - `view`, `set`, `edit`: the three commands; `editor`: the editor, its file and the
//!   comparisons of the edit loop; `indent`: Go's `json.Indent`;
//! - `error`: the failures, printed as kubectl prints them.

mod builder;
mod edit;
mod editor;
mod error;
mod indent;
mod select;
mod set;
mod view;

use std::process::ExitCode;

use applyset_merge::Value;

pub use error::{BuilderError, LastAppliedError};

use crate::apply::object::set_annotation_value;
use crate::cli::{ClusterArgs, LastAppliedCommand};
use crate::keys::LAST_APPLIED_ANNOTATION;
use crate::manifest;

/// Runs the subcommand. `parent` and `parent_namespace` are what was given before its name
/// (`applyset apply --kubeconfig K -n NS view-last-applied …`), which kubectl takes as the
/// subcommand's own global flags.
pub fn run(command: LastAppliedCommand, parent: &ClusterArgs, parent_namespace: Option<&str>) -> ExitCode {
    let inherit_namespace = |namespace: &mut Option<String>| {
        if namespace.is_none() {
            *namespace = parent_namespace.map(str::to_owned);
        }
    };
    let result = match command {
        LastAppliedCommand::ViewLastApplied(mut args) => {
            inherit(&mut args.cluster, parent);
            inherit_namespace(&mut args.objects.namespace);
            view::run(args)
        }
        LastAppliedCommand::SetLastApplied(mut args) => {
            inherit(&mut args.cluster, parent);
            inherit_namespace(&mut args.namespace);
            set::run(args)
        }
        LastAppliedCommand::EditLastApplied(mut args) => {
            inherit(&mut args.cluster, parent);
            inherit_namespace(&mut args.objects.namespace);
            edit::run(args)
        }
    };
    result.unwrap_or_else(|error| {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        eprint!("{}", error.render());
        ExitCode::from(1)
    })
}

/// The kubeconfig and context given before the subcommand's name, unless given after it.
fn inherit(cluster: &mut ClusterArgs, parent: &ClusterArgs) {
    if cluster.kubeconfig.is_none() {
        cluster.kubeconfig.clone_from(&parent.kubeconfig);
    }
    if cluster.context.is_none() {
        cluster.context.clone_from(&parent.context);
    }
}

/// kubectl's `encodeToJSON` of an object: Go's `json.Marshal` (keys sorted, HTML characters
/// escaped) and the encoder's newline — the encoder the apply path writes its annotation with.
/// `set-last-applied` and `edit-last-applied` record exactly this text (unlike `apply`, they
/// neither add `annotations: {}` nor drop an annotation already there).
pub fn encode_to_json(object: &Value) -> String {
    object.to_json_string() + "\n"
}

/// The JSON merge patch that sets the last-applied annotation to `configuration` (kubectl's
/// `GetApplyPatch`: the object with and without it differ in that key only).
pub fn annotation_patch(configuration: &str) -> Value {
    let mut patch = Value::Object(Default::default());
    set_annotation_value(&mut patch, LAST_APPLIED_ANNOTATION, configuration);
    patch
}

/// kubectl's `StripComments`: YAML read as its first document's JSON text (comments dropped);
/// JSON as it is; text that is not YAML with its comment lines removed.
pub fn strip_comments(text: &[u8]) -> Vec<u8> {
    let as_text = String::from_utf8_lossy(text);
    if as_text.trim_start().starts_with('{') {
        return text.to_vec();
    }
    match manifest::yaml::parse_document_limited(&as_text, None) {
        Ok(value) => value.to_json_string().into_bytes(),
        Err(_) => manual_strip(text),
    }
}

/// kubectl's `ManualStrip`: every line whose first non-blank character is `#` (but not `#!`)
/// removed.
pub fn manual_strip(text: &[u8]) -> Vec<u8> {
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let mut out = Vec::with_capacity(text.len());
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_ascii();
        if trimmed.starts_with(b"#") && !trimmed.starts_with(b"#!") {
            continue;
        }
        out.extend_from_slice(line);
        if i + 1 < lines.len() {
            out.push(b'\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_stripped_as_kubectl_strips_them() {
        let yaml = b"# header\n#\napiVersion: v1\nkind: ConfigMap  # trailing\ndata: {a: '1'}\n";
        assert_eq!(strip_comments(yaml), br#"{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap"}"#);
        // Formatting alone is no change.
        assert_eq!(strip_comments(b"kind: ConfigMap\napiVersion: v1\ndata:\n  a: \"1\"\n"), strip_comments(yaml));
        assert_eq!(strip_comments(b"  {\"a\": 1}\n"), b"  {\"a\": 1}\n", "JSON is compared as it is");
        assert_eq!(strip_comments(b""), b"null");
        assert_eq!(strip_comments(b"# x\na: [\n  #! keep\n#drop\n"), b"a: [\n  #! keep\n");
    }

    #[test]
    fn the_patch_sets_only_the_annotation() {
        let configuration =
            encode_to_json(&Value::from_json_str(r#"{"kind":"ConfigMap","data":{"k":"<v>"}}"#).unwrap());
        assert_eq!(configuration, "{\"data\":{\"k\":\"\\u003cv\\u003e\"},\"kind\":\"ConfigMap\"}\n");
        assert_eq!(
            annotation_patch(&configuration).to_json_string(),
            r#"{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"k\":\"\\u003cv\\u003e\"},\"kind\":\"ConfigMap\"}\n"}}}"#
        );
    }
}
