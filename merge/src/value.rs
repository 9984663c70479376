//! The JSON value model kubectl's apply code sees.
//!
//! kubectl parses documents with `sigs.k8s.io/json` ("preserve ints"): an integer literal that
//! fits in `i64` is an integer, every other number is a float, and the two never compare equal.
//! Objects serialise with their keys in byte order, which is why [`Map`] is a `BTreeMap`.
//! Null and absent stay distinct: `{"a": null}` is not `{}`.

mod format;
mod parse;
mod serde_impl;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

pub use format::{go_json_float, go_quote, write_json_string};
use format::{write_go_v, write_json};

/// An object: keys iterate (and serialise) in byte order, as Go's `encoding/json` writes them.
pub type Map = BTreeMap<String, Value>;

/// How deep a parsed document may nest before parsing fails. Every algorithm in this crate
/// recurses over documents, so the limit is what keeps hostile input from overflowing the stack.
pub const MAX_DEPTH: usize = 128;

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    Array(Vec<Value>),
    Object(Map),
}

/// A JSON text that is not a document kubectl would accept.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

impl Value {
    /// Parses JSON text with Go's number rules. Empty (or all-whitespace) input is an error
    /// here; callers that treat "no bytes" as `{}` decide that themselves.
    pub fn from_json_str(text: &str) -> Result<Value, ParseError> {
        Value::from_json_slice(text.as_bytes())
    }

    /// Like [`Value::from_json_str`]; invalid UTF-8 inside strings becomes U+FFFD, as in Go.
    pub fn from_json_slice(bytes: &[u8]) -> Result<Value, ParseError> {
        parse::Parser::new(bytes).parse_document()
    }

    /// Compact JSON exactly as Go's `encoding/json` writes it: sorted keys, HTML-safe string
    /// escapes, Go's float format.
    pub fn to_json_string(&self) -> String {
        let mut out = String::new();
        write_json(self, &mut out);
        out
    }

    /// Go's `json.MarshalIndent(v, "", indent)` text, as if the value sat `depth` levels deep.
    pub fn to_json_indented(&self, indent: &str, depth: usize) -> String {
        let mut out = String::new();
        format::write_json_indented(self, indent, depth, &mut out);
        out
    }

    /// The name of the variant, as used in type-mismatch messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int64",
            Value::Float(_) => "float64",
            Value::String(_) => "string",
            Value::Array(_) => "[]interface {}",
            Value::Object(_) => "map[string]interface {}",
        }
    }

    /// True when both values are the same variant (Int and Float are different variants).
    pub fn same_variant(&self, other: &Value) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }

    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Go's `fmt` `%v` rendering, used by kubectl to sort list items and to match merge keys
    /// while diffing (so `80` and `"80"` render alike).
    pub fn go_v_string(&self) -> String {
        let mut out = String::new();
        write_go_v(self, &mut out);
        out
    }
}

impl From<serde_json::Value> for Value {
    fn from(v: serde_json::Value) -> Self {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::String(s),
            serde_json::Value::Array(a) => Value::Array(a.into_iter().map(Value::from).collect()),
            serde_json::Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, Value::from(v))).collect()),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json_string())
    }
}
