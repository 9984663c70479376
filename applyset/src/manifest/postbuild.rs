//! Post-build variable substitution (`spec.postBuild`), as Flux's kustomize-controller does it:
//! `${VAR}` and `${VAR:=default}` (or `${VAR:-default}`) in the manifests' text are replaced by
//! the variables' values before the text is parsed, so an unquoted `replicas: ${REPLICAS}`
//! becomes a number and a quoted one stays a string; `$${VAR}` is the literal text `${VAR}`;
//! `$VAR` without braces is left alone (shell scripts in ConfigMaps keep theirs). An object
//! labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled` is kept as written.
//! Strict, as Flux's strict mode: a `${VAR}` with no value and no default fails, naming the
//! variable and the object.

use std::collections::BTreeMap;

use applyset_merge::Value;

use super::stream::parse_stream_limited;

/// The opt-out, Flux's own key.
pub use crate::keys::SUBSTITUTE_OPT_OUT as OPT_OUT;

/// The variables: name → value.
pub type Variables = BTreeMap<String, String>;

/// Whether `name` is a variable name Flux accepts (`^[_[:alpha:]][_[:alpha:][:digit:]]*$`).
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Why substitution failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubstituteError {
    #[error("${{{0}}} has no value (spec.postBuild.substitute or substituteFrom) and no default")]
    Undefined(String),
    #[error("${{{0}}}: unsupported substitution (only ${{VAR}}, ${{VAR:=default}} and ${{VAR:-default}})")]
    Unsupported(String),
    #[error("a ${{ without its closing }}")]
    Unclosed,
}

/// The text with every `${…}` replaced (see the module docs).
pub fn substitute_text(text: &str, vars: &Variables) -> Result<String, SubstituteError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(escaped) = tail.strip_prefix("$${") {
            out.push_str("${");
            rest = escaped;
        } else if let Some(inner) = tail.strip_prefix("${") {
            let end = inner.find('}').ok_or(SubstituteError::Unclosed)?;
            out.push_str(&resolve(&inner[..end], vars)?);
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// One `${…}` body: `NAME`, `NAME:=default` or `NAME:-default` (a default applies when the
/// variable is unset or empty).
fn resolve(body: &str, vars: &Variables) -> Result<String, SubstituteError> {
    let name_end = body.find(|c: char| !(c == '_' || c.is_ascii_alphanumeric())).unwrap_or(body.len());
    let (name, operator) = body.split_at(name_end);
    if !valid_name(name) {
        return Err(SubstituteError::Unsupported(body.to_owned()));
    }
    let value = vars.get(name).filter(|v| !v.is_empty());
    match (operator.get(..2), value) {
        (None, _) if !operator.is_empty() => Err(SubstituteError::Unsupported(body.to_owned())),
        (None, Some(value)) => Ok(value.clone()),
        (None, None) => vars.get(name).cloned().ok_or_else(|| SubstituteError::Undefined(name.to_owned())),
        (Some(":=" | ":-"), Some(value)) => Ok(value.clone()),
        (Some(":=" | ":-"), None) => Ok(operator[2..].to_owned()),
        _ => Err(SubstituteError::Unsupported(body.to_owned())),
    }
}

fn opted_out(value: &Value) -> bool {
    let metadata = value.as_object().and_then(|o| o.get("metadata")).and_then(Value::as_object);
    ["labels", "annotations"].iter().any(|field| {
        metadata
            .and_then(|m| m.get(*field))
            .and_then(Value::as_object)
            .and_then(|m| m.get(OPT_OUT))
            .and_then(Value::as_str)
            == Some("disabled")
    })
}

/// `kind/name` of a document, for messages.
fn named(value: &Value) -> String {
    let map = value.as_object();
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
    let kind = text(map.and_then(|m| m.get("kind")));
    let name = text(map.and_then(|m| m.get("metadata")).and_then(Value::as_object).and_then(|m| m.get("name")));
    format!("{}/{name}", kind.to_lowercase())
}

/// `text` with the variables substituted document by document (split where kubectl's reader
/// splits a stream, at lines starting with `---`), except in documents opted out. An error
/// names the document and its object.
pub fn substitute_stream(text: &str, vars: &Variables, max_document: Option<u64>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut number = 0;
    for piece in split_documents(text) {
        let (separator, body) = piece;
        out.push_str(separator);
        if separator.is_empty() && body.trim().is_empty() && number == 0 {
            out.push_str(body);
            continue;
        }
        number += 1;
        let written = parse_stream_limited(body, max_document).ok().and_then(|docs| docs.into_iter().next());
        if written.as_ref().is_some_and(|doc| opted_out(&doc.value)) {
            out.push_str(body);
            continue;
        }
        match substitute_text(body, vars) {
            Ok(substituted) => out.push_str(&substituted),
            Err(error) => {
                let object = written.as_ref().map(|doc| format!("{}: ", named(&doc.value))).unwrap_or_default();
                return Err(format!("document {number}: {object}{error}"));
            }
        }
    }
    Ok(out)
}

/// The pieces of a YAML stream: each with the separator line before it (empty for the first).
fn split_documents(text: &str) -> Vec<(&str, &str)> {
    let mut pieces = Vec::new();
    let (mut separator_start, mut body_start) = (0, 0);
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("---") {
            pieces.push((&text[separator_start..body_start], &text[body_start..offset]));
            separator_start = offset;
            body_start = offset + line.len();
        }
        offset += line.len();
    }
    pieces.push((&text[separator_start..body_start], &text[body_start..]));
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Variables {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn braces_defaults_escapes_and_bare_dollars() {
        let v = vars(&[("REPLICAS", "3"), ("EMPTY", ""), ("REGION", "eu")]);
        assert_eq!(substitute_text("replicas: ${REPLICAS}", &v).unwrap(), "replicas: 3");
        assert_eq!(substitute_text("r: ${MISSING:=2} e: ${EMPTY:-x} z: ${REGION:=us}", &v).unwrap(), "r: 2 e: x z: eu");
        assert_eq!(
            substitute_text("keep $${REGION} and $HOME and $ alone", &v).unwrap(),
            "keep ${REGION} and $HOME and $ alone"
        );
        assert_eq!(substitute_text("x: ${MISSING}", &v), Err(SubstituteError::Undefined("MISSING".into())));
        assert_eq!(substitute_text("x: ${EMPTY}", &v).unwrap(), "x: ", "set but empty is a value");
        assert!(matches!(substitute_text("x: ${REGION^}", &v), Err(SubstituteError::Unsupported(_))));
        assert_eq!(substitute_text("x: ${REGION", &v), Err(SubstituteError::Unclosed));
        assert!(valid_name("_A1") && !valid_name("1A") && !valid_name("A-B") && !valid_name(""));
    }

    #[test]
    fn documents_are_typed_after_substitution_and_opt_outs_kept() {
        let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: ${REPLICAS}\n  note: \"${REPLICAS}\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: script\n  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata:\n  run: echo ${UNDEFINED}\n";
        let substituted = substitute_stream(text, &vars(&[("REPLICAS", "3")]), None).unwrap();
        let docs = parse_stream_limited(&substituted, None).unwrap();
        let spec = docs[0].value.as_object().unwrap()["spec"].as_object().unwrap().clone();
        assert_eq!(spec["replicas"], Value::Int(3), "unquoted: a number");
        assert_eq!(spec["note"], Value::String("3".into()), "quoted: a string");
        let data = docs[1].value.as_object().unwrap()["data"].as_object().unwrap().clone();
        assert_eq!(data["run"], Value::String("echo ${UNDEFINED}".into()), "opted out, even of strictness");
    }

    #[test]
    fn an_undefined_variable_names_the_document_and_object() {
        let text = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: \"${NOPE}\"}\n";
        let error = substitute_stream(text, &Variables::new(), None).unwrap_err();
        assert_eq!(
            error,
            "document 2: configmap/b: ${NOPE} has no value (spec.postBuild.substitute or substituteFrom) and no default"
        );
        assert_eq!(
            substitute_stream("a: 1\n--- \nb: $${X}\n", &Variables::new(), None).unwrap(),
            "a: 1\n--- \nb: ${X}\n"
        );
    }
}
