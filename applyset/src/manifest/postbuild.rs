//! Post-build variable substitution (`spec.postBuild`), as Flux's kustomize-controller does it:
//! `${VAR}` and `${VAR:=default}` (or `${VAR:-default}`) in the manifests' text are replaced by
//! the variables' values before the text is parsed, so an unquoted `replicas: ${REPLICAS}`
//! becomes a number and a quoted one stays a string; `$${VAR}` is the literal text `${VAR}`;
//! `$VAR` without braces is left alone (shell scripts in ConfigMaps keep theirs). An object
//! labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled` is kept as written.
//! Strict, as Flux's strict mode: a `${VAR}` with no value and no default fails, naming the
//! variable and the object.
//!
//! Beyond Flux: a variable's value may not change the YAML structure of the document it lands
//! in ([`shape`]), unless [`Variables::allow_structural_values`]. Values come from ConfigMaps
//! and Secrets that people other than the manifests' authors may be able to edit; without the
//! check, `metadata: {name: ${NAME}}` with the value `x, namespace: other` moves the object.

pub mod shape;

use std::collections::BTreeMap;

use applyset_merge::Value;

use super::stream::parse_stream_limited;
use crate::keys::SUBSTITUTE_OPT_OUT;
pub use shape::StructureChange;

/// The variables, and how far their values are trusted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Variables {
    /// Name → value.
    pub values: BTreeMap<String, String>,
    /// `spec.postBuild.allowStructuralValues`: a value may change the YAML structure of the
    /// document it lands in (add keys, items, documents). Off, such a value is refused.
    pub allow_structural_values: bool,
}

impl Variables {
    /// No variables; values may not change the YAML structure.
    pub fn new() -> Self {
        Self::default()
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }
}

impl FromIterator<(String, String)> for Variables {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        Variables { values: pairs.into_iter().collect(), allow_structural_values: false }
    }
}

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
    /// The values of these variables (never quoted: they may come from Secrets) change the
    /// YAML structure of the document ([`shape`]).
    #[error(
        "{} the document's YAML structure ({change}); set spec.postBuild.allowStructuralValues to allow it",
        values_change(variables)
    )]
    StructureChanged { variables: Vec<String>, change: StructureChange },
}

/// `the value of ${A} changes`, `the values of ${A} and ${B} change`.
fn values_change(variables: &[String]) -> String {
    let named: Vec<String> = variables.iter().map(|name| format!("${{{name}}}")).collect();
    match named.as_slice() {
        [one] => format!("the value of {one} changes"),
        [init @ .., last] => format!("the values of {} and {last} change", init.join(", ")),
        [] => "the values change".to_owned(),
    }
}

/// A substitution error located in a stream: the document (from 1) and its object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("document {document}: {}{error}", object.as_deref().map(|o| format!("{o}: ")).unwrap_or_default())]
pub struct StreamError {
    pub document: usize,
    /// `kind/name` as written in git (a `${NAME}` in it kept as such), when the document parses.
    pub object: Option<String>,
    pub error: SubstituteError,
}

/// The text with every `${…}` replaced (see the module docs).
pub fn substitute_text(text: &str, vars: &Variables) -> Result<String, SubstituteError> {
    substitute_with(text, vars, |resolved, out| out.push_str(resolved.value))
}

/// What one `${…}` resolved to.
#[derive(Debug, Clone, Copy)]
struct Resolved<'a> {
    name: &'a str,
    value: &'a str,
    /// The value is a variable's; otherwise it is the default written in the manifest.
    from_variable: bool,
}

/// The text with every `${…}` written by `render` (escapes and bare dollars as in
/// [`substitute_text`]).
fn substitute_with<'a>(
    text: &'a str,
    vars: &'a Variables,
    mut render: impl FnMut(Resolved<'a>, &mut String),
) -> Result<String, SubstituteError> {
    expand(text, |reference, out| {
        render(resolve(reference, vars)?, out);
        Ok(())
    })
}

/// The text with every `${…}` written by `each`, given what is between the braces; `$${` is
/// the literal `${`, and a `$` without a brace is kept.
fn expand<'a>(
    text: &'a str,
    mut each: impl FnMut(&'a str, &mut String) -> Result<(), SubstituteError>,
) -> Result<String, SubstituteError> {
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
            each(&inner[..end], &mut out)?;
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
fn resolve<'a>(body: &'a str, vars: &'a Variables) -> Result<Resolved<'a>, SubstituteError> {
    let name_end = body.find(|c: char| !(c == '_' || c.is_ascii_alphanumeric())).unwrap_or(body.len());
    let (name, operator) = body.split_at(name_end);
    if !valid_name(name) {
        return Err(SubstituteError::Unsupported(body.to_owned()));
    }
    let variable = |value| Resolved { name, value, from_variable: true };
    let value = vars.get(name).filter(|v| !v.is_empty());
    match (operator.get(..2), value) {
        (None, _) if !operator.is_empty() => Err(SubstituteError::Unsupported(body.to_owned())),
        (None, Some(value)) => Ok(variable(value)),
        (None, None) => vars.get(name).map(variable).ok_or_else(|| SubstituteError::Undefined(name.to_owned())),
        (Some(":=" | ":-"), Some(value)) => Ok(variable(value)),
        (Some(":=" | ":-"), None) => Ok(Resolved { name, value: &operator[2..], from_variable: false }),
        _ => Err(SubstituteError::Unsupported(body.to_owned())),
    }
}

fn opted_out(value: &Value) -> bool {
    let metadata = value.as_object().and_then(|o| o.get("metadata")).and_then(Value::as_object);
    ["labels", "annotations"].iter().any(|field| {
        metadata
            .and_then(|m| m.get(*field))
            .and_then(Value::as_object)
            .and_then(|m| m.get(SUBSTITUTE_OPT_OUT))
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

/// The first document of `body` as written, for its opt-out and its name: parsed as is or,
/// when a `${…}` keeps it from parsing, with placeholders (then returned too, to name them).
fn as_written(body: &str, max_document: Option<u64>) -> Option<(Value, Option<shape::Placeholders>)> {
    match parse_stream_limited(body, max_document) {
        Ok(documents) => documents.into_iter().next().map(|document| (document.value, None)),
        Err(_) if body.contains("${") => {
            shape::template_document(body, max_document).map(|(value, placeholders)| (value, Some(placeholders)))
        }
        Err(_) => None,
    }
}

/// `text` with the variables substituted document by document (split where kubectl's reader
/// splits a stream, at lines starting with `---`), except in documents opted out. Unless
/// [`Variables::allow_structural_values`], each document with a `${` is checked: the variables'
/// values may not change its YAML structure ([`shape`]). An error names the document and its
/// object.
pub fn substitute_stream(text: &str, vars: &Variables, max_document: Option<u64>) -> Result<String, StreamError> {
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
        let written = as_written(body, max_document);
        if written.as_ref().is_some_and(|(value, _)| opted_out(value)) {
            out.push_str(body);
            continue;
        }
        let checked = substitute_text(body, vars).and_then(|substituted| {
            // A document over the size cap is refused by the loader whatever its shape.
            let within_cap = max_document.is_none_or(|cap| substituted.len() as u64 <= cap);
            if !vars.allow_structural_values && within_cap && body.contains("${") {
                shape::check(body, &substituted, vars, max_document)?;
            }
            Ok(substituted)
        });
        match checked {
            Ok(substituted) => out.push_str(&substituted),
            Err(error) => {
                let object = written.as_ref().map(|(value, placeholders)| match placeholders {
                    Some(placeholders) => placeholders.restored(&named(value)),
                    None => named(value),
                });
                return Err(StreamError { document: number, object, error });
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
mod tests;
