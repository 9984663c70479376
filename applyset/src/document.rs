//! Reading one JSON or YAML document from a file, with errors that name the file.

use std::fmt;
use std::path::{Path, PathBuf};

use applyset_merge::Value;
use serde::Deserialize;

/// A file that could not be turned into one document.
#[derive(Debug, thiserror::Error)]
pub struct DocumentError {
    pub path: PathBuf,
    pub problem: String,
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

/// Reads a file holding a single JSON or YAML object. An empty file (or one holding only
/// comments or `null`) is the empty object, as kubectl treats a missing configuration.
pub fn read_object(path: &Path) -> Result<Value, DocumentError> {
    let fail = |problem: String| DocumentError { path: path.to_owned(), problem };
    let bytes = std::fs::read(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| fail(format!("not UTF-8 text: {e}")))?;
    let mut documents = parse_documents(&text).map_err(fail)?;
    match documents.len() {
        0 => Ok(Value::Object(Default::default())),
        1 => match documents.remove(0) {
            object @ Value::Object(_) => Ok(object),
            other => Err(fail(format!("expected an object, found {}", describe(&other)))),
        },
        n => Err(fail(format!("expected one document, found {n}"))),
    }
}

/// Parses a JSON or YAML stream into its non-empty documents. Like kubectl, text whose first
/// non-blank character is `{` is JSON; anything else is YAML (a superset of JSON, so a JSON
/// value that fails as JSON still gets the YAML parser's more precise message).
pub fn parse_documents(text: &str) -> Result<Vec<Value>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('{') {
        if let Ok(value) = Value::from_json_str(text) {
            return Ok(vec![value]);
        }
    }
    let mut documents = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(document).map_err(|e| format!("document {}: {e}", index + 1))?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Int(_) | Value::Float(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_go_number_types() {
        let docs = parse_documents(r#"{"a": 1, "b": 1.0}"#).unwrap();
        assert_eq!(docs, vec![Value::from_json_str(r#"{"a":1,"b":1.0}"#).unwrap()]);
    }

    #[test]
    fn yaml_documents_skip_empty_ones() {
        let docs = parse_documents("---\na: 1\n---\n# only a comment\n---\nb: [x, 2.5]\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].to_json_string(), r#"{"b":["x",2.5]}"#);
    }

    #[test]
    fn yaml_error_names_the_document_and_position() {
        let err = parse_documents("a: 1\n---\nb: [unclosed\n").unwrap_err();
        assert!(err.starts_with("document 2:"), "{err}");
        assert!(err.contains("line"), "{err}");
    }

    #[test]
    fn deep_yaml_is_an_error_not_a_crash() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert!(parse_documents(&deep).is_err());
    }
}
