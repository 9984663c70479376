//! Reading one JSON or YAML document from a file, with errors that name the file.

use std::fmt;
use std::path::{Path, PathBuf};

use applyset_merge::Value;

/// A file that could not be turned into one document (every message starts with the path).
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error("{}: cannot read", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}", path.display())]
    Syntax { path: PathBuf, source: SyntaxError },
    #[error("{}: expected an object, found {found}", path.display())]
    NotAnObject { path: PathBuf, found: &'static str },
    #[error("{}: expected one document, found {count}", path.display())]
    SeveralDocuments { path: PathBuf, count: usize },
}

/// A JSON or YAML stream that cannot be read: which document, where, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct SyntaxError(pub Box<crate::manifest::DocumentError>);

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.0;
        write!(f, "document {}: ", e.document)?;
        if let (Some(line), Some(column)) = (e.line, e.column) {
            write!(f, "line {line} column {column}: ")?;
        }
        f.write_str(&e.message)
    }
}

/// Reads a file holding a single JSON or YAML object. An empty file (or one holding only
/// comments or `null`) is the empty object, as kubectl treats a missing configuration.
pub fn read_object(path: &Path) -> Result<Value, DocumentError> {
    let path_buf = || path.to_owned();
    let bytes = std::fs::read(path).map_err(|source| DocumentError::Read { path: path_buf(), source })?;
    let text = crate::manifest::decode_text(&bytes);
    let mut documents = parse_documents(&text).map_err(|source| DocumentError::Syntax { path: path_buf(), source })?;
    match documents.len() {
        0 => Ok(Value::Object(Default::default())),
        1 => match documents.remove(0) {
            object @ Value::Object(_) => Ok(object),
            other => Err(DocumentError::NotAnObject { path: path_buf(), found: describe(&other) }),
        },
        count => Err(DocumentError::SeveralDocuments { path: path_buf(), count }),
    }
}

/// Parses a JSON or YAML stream into its non-empty documents, with the manifest loader's
/// rules (kubectl's: JSON when the text starts with `{`, else YAML with YAML 1.1 scalars), so
/// `applyset patch` reads a file exactly as `applyset apply` and kubectl do.
pub fn parse_documents(text: &str) -> Result<Vec<Value>, SyntaxError> {
    let documents = crate::manifest::parse_stream(text).map_err(|e| SyntaxError(Box::new(e)))?;
    Ok(documents.into_iter().map(|d| d.value).collect())
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
    fn yaml_scalars_follow_yaml_1_1_like_kubectl() {
        let docs = parse_documents("a: yes\nb: on\nmode: 0755\nc: \"yes\"\n").unwrap();
        assert_eq!(docs[0].to_json_string(), r#"{"a":true,"b":true,"c":"yes","mode":493}"#);
    }

    #[test]
    fn yaml_error_names_the_document_and_position() {
        let err = parse_documents("a: 1\n---\nb: [unclosed\n").unwrap_err();
        assert_eq!(err.0.document, 2);
        let err = err.to_string();
        assert!(err.starts_with("document 2:"), "{err}");
        assert!(err.contains("line"), "{err}");
    }

    #[test]
    fn deep_yaml_up_to_the_limit_parses_and_deeper_is_an_error_not_a_crash() {
        use applyset_merge::value::MAX_DEPTH;
        // On a stack the size of tokio's workers.
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let nested = |levels: usize| "[".repeat(levels) + &"]".repeat(levels);
                assert!(parse_documents(&nested(MAX_DEPTH)).is_ok());
                assert!(parse_documents(&nested(MAX_DEPTH + 1)).is_err());
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
