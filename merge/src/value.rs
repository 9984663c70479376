//! The JSON value model kubectl's apply code sees.
//!
//! kubectl parses documents with `sigs.k8s.io/json` ("preserve ints"): an integer literal that
//! fits in `i64` is an integer, every other number is a float, and the two never compare equal.
//! Objects serialise with their keys in byte order, which is why [`Map`] is a `BTreeMap`.
//! Null and absent stay distinct: `{"a": null}` is not `{}`.

mod format;
mod packed;
pub use packed::Packed;
mod parse;
mod serde_impl;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

pub use format::{go_json_float, go_quote, go_v_float, write_json_string};
use format::{write_go_v, write_json};

/// An object: keys iterate (and serialise) in byte order, as Go's `encoding/json` writes them.
pub type Map = BTreeMap<String, Value>;

/// How deep a document may nest (arrays and objects) before parsing fails: Go's
/// `encoding/json` limit, so every document the apiserver stores (and kubectl applies) is
/// accepted. Algorithms recurse one level per nesting level through [`deeper`], which moves to
/// a heap-allocated stack segment when the thread's stack runs low: no depth up to this limit
/// can overflow the stack, on any thread.
pub const MAX_DEPTH: usize = 10_000;

/// Stack left below which [`deeper`] switches to a new segment.
const STACK_RED_ZONE: usize = 128 * 1024;
/// The size of each new stack segment.
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// Runs one level of a recursive walk over a document, growing the stack first if it runs low
/// (see [`MAX_DEPTH`]). Every recursive function over [`Value`]s calls itself through this.
#[inline]
pub fn deeper<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, f)
}

#[derive(Debug, Default)]
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

    /// The value its JSON text decodes to on the other side, which is what the apiserver acts
    /// on: Go writes a whole-number float without a fraction (`80.0` as `80`, `1e6` as
    /// `1000000`, `-0.0` as `-0`), and the apiserver's decoder reads that back as an integer.
    /// A patch computed here is applied locally in this form, so the result is the apiserver's.
    pub fn as_sent(&self) -> Value {
        // Our own output parses, at the depth it was built with.
        Value::from_json_str(&self.to_json_string()).unwrap_or_else(|_| self.clone())
    }

    /// Whether the value is an array or an object (what can nest).
    pub fn is_container(&self) -> bool {
        matches!(self, Value::Array(_) | Value::Object(_))
    }

    /// The map of an object, or the value back.
    pub fn into_object(mut self) -> Result<Map, Value> {
        match &mut self {
            Value::Object(map) => Ok(std::mem::take(map)),
            _ => Err(self),
        }
    }

    /// The items of an array, or the value back.
    pub fn into_array(mut self) -> Result<Vec<Value>, Value> {
        match &mut self {
            Value::Array(items) => Ok(std::mem::take(items)),
            _ => Err(self),
        }
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
/// Cloning recurses through [`deeper`].
impl Clone for Value {
    fn clone(&self) -> Self {
        match self {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(*b),
            Value::Int(i) => Value::Int(*i),
            Value::Float(f) => Value::Float(*f),
            Value::String(s) => Value::String(s.clone()),
            Value::Array(items) => deeper(|| Value::Array(items.clone())),
            Value::Object(map) => deeper(|| Value::Object(map.clone())),
        }
    }
}

/// Structural equality (a float never equals an integer), recursing through [`deeper`].
impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => deeper(|| a == b),
            (Value::Object(a), Value::Object(b)) => deeper(|| a == b),
            _ => false,
        }
    }
}

/// Dropping a document never recurses: children that are themselves containers are moved to a
/// heap worklist (a `null` left in their place) and emptied one by one, so a document nested
/// [`MAX_DEPTH`] levels deep drops on any thread's stack. Scalars are freed where they are, and
/// a container without nested containers is freed at once (its own drop recurses one level).
impl Drop for Value {
    fn drop(&mut self) {
        if !has_nested(self) {
            return;
        }
        let mut pending: Vec<Value> = Vec::new();
        take_nested(self, &mut pending);
        while let Some(mut value) = pending.pop() {
            if has_nested(&value) {
                take_nested(&mut value, &mut pending);
            }
            // `value` holds no containers now: its own drop returns at once.
        }
    }
}

/// Whether a container holds containers.
fn has_nested(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(Value::is_container),
        Value::Object(map) => map.values().any(Value::is_container),
        _ => false,
    }
}

/// Moves a container's children that are containers themselves to `pending`, leaving `null`
/// in their place (the map keeps its shape: nothing is rebuilt).
fn take_nested(value: &mut Value, pending: &mut Vec<Value>) {
    let take = |child: &mut Value| child.is_container().then(|| std::mem::replace(child, Value::Null));
    match value {
        Value::Array(items) => pending.extend(items.iter_mut().filter_map(take)),
        Value::Object(map) => pending.extend(map.values_mut().filter_map(take)),
        _ => {}
    }
}
