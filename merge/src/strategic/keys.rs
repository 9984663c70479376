//! Comparing list elements the two ways kubectl does.
//!
//! * Applying a patch compares merge-key values (and scalar elements) with Go's `==` on
//!   `interface{}` values: typed, so `Int(80) != String("80")` and `Int(1) != Float(1.0)`.
//!   [`TypedKey`] is a hashable form of exactly that equality, so lookups are O(1).
//! * Diffing compares the `%v` strings ([`Value::go_v_string`]), so `80` and `"80"` match.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::value::{Map, Value};

/// A hashable key with Go's typed `==` semantics for scalars, borrowing strings from the
/// value it describes. Go panics when comparing two maps or slices; we compare those
/// structurally instead (their JSON text), which only matters for malformed input such as an
/// object used as a merge-key value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum TypedKey<'a> {
    Null,
    Bool(bool),
    Int(i64),
    /// Bits of the float, with -0.0 folded into 0.0 (Go: `-0.0 == 0.0`).
    Float(u64),
    Str(Cow<'a, str>),
    Composite(String),
}

impl<'a> TypedKey<'a> {
    pub(crate) fn of(v: &'a Value) -> TypedKey<'a> {
        match v {
            Value::Null => TypedKey::Null,
            Value::Bool(b) => TypedKey::Bool(*b),
            Value::Int(i) => TypedKey::Int(*i),
            Value::Float(f) => TypedKey::Float(if *f == 0.0 { 0 } else { f.to_bits() }),
            Value::String(s) => TypedKey::Str(Cow::Borrowed(s)),
            Value::Array(_) | Value::Object(_) => TypedKey::Composite(v.to_json_string()),
        }
    }

    /// The key of a list element: its merge-key value for maps (absent → `nil`, as Go's
    /// `map[key]` yields), the element itself otherwise.
    pub(crate) fn of_element(v: &'a Value, merge_key: &str) -> TypedKey<'a> {
        if merge_key.is_empty() {
            return TypedKey::of(v);
        }
        match v {
            Value::Object(m) => m.get(merge_key).map_or(TypedKey::Null, TypedKey::of),
            _ => TypedKey::Null,
        }
    }

    pub(crate) fn into_owned(self) -> TypedKey<'static> {
        match self {
            TypedKey::Null => TypedKey::Null,
            TypedKey::Bool(b) => TypedKey::Bool(b),
            TypedKey::Int(i) => TypedKey::Int(i),
            TypedKey::Float(f) => TypedKey::Float(f),
            TypedKey::Str(s) => TypedKey::Str(Cow::Owned(s.into_owned())),
            TypedKey::Composite(s) => TypedKey::Composite(s),
        }
    }

    /// The same key borrowing from `self`.
    pub(crate) fn reborrow(&self) -> TypedKey<'_> {
        match self {
            TypedKey::Str(s) => TypedKey::Str(Cow::Borrowed(s)),
            other => other.clone(),
        }
    }
}

/// Index of the first element with each key: Go's linear `index()` lookup, precomputed.
pub(crate) struct FirstIndex<'a>(HashMap<TypedKey<'a>, usize>);

impl<'a> FirstIndex<'a> {
    pub(crate) fn new(keys: impl IntoIterator<Item = TypedKey<'a>>) -> FirstIndex<'a> {
        let keys = keys.into_iter();
        let mut map = HashMap::with_capacity(keys.size_hint().0);
        for (i, k) in keys.enumerate() {
            map.entry(k).or_insert(i);
        }
        FirstIndex(map)
    }

    pub(crate) fn of_list(list: &'a [Value], merge_key: &str) -> FirstIndex<'a> {
        FirstIndex::new(list.iter().map(|v| TypedKey::of_element(v, merge_key)))
    }

    pub(crate) fn of_keys(keys: &'a [TypedKey<'_>]) -> FirstIndex<'a> {
        FirstIndex::new(keys.iter().map(TypedKey::reborrow))
    }

    pub(crate) fn get(&self, key: &TypedKey<'_>) -> Option<usize> {
        // The map's keys may live longer than `key`; look up at the shorter lifetime.
        let map: &HashMap<TypedKey<'_>, usize> = &self.0;
        map.get(key).copied()
    }
}

/// Go's `fmt.Sprintf("%s", v)`: strings as they are, everything else in Go's bad-verb form.
/// Used where kubectl renders values with `%s` (merge-key indexes of the conflict check,
/// `$patch` values in messages).
pub(crate) fn go_s_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".to_owned(),
        Value::Bool(b) => format!("%!s(bool={b})"),
        Value::Int(i) => format!("%!s(int64={i})"),
        Value::Float(_) => format!("%!s(float64={})", v.go_v_string()),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_s_string).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}:{}", go_s_string(v))).collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// Go's `reflect.TypeOf(v)` text, as printed in `expected a <T>, but received a <U>`.
pub(crate) fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        other => other.kind_name(),
    }
}

/// `%v` of a Go `[]interface{}` made of several lists: `[[a 1] [a]]`.
pub(crate) fn go_v_lists(lists: &[&[Value]]) -> String {
    let parts: Vec<String> = lists.iter().map(|l| Value::Array(l.to_vec()).go_v_string()).collect();
    format!("[{}]", parts.join(" "))
}

/// The merge-key value of an element, if the element is an object that has it.
pub(crate) fn merge_key_value<'a>(v: &'a Value, merge_key: &str) -> Option<&'a Value> {
    v.as_object().and_then(|m: &Map| m.get(merge_key))
}
