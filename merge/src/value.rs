//! The JSON value model kubectl's apply code sees.
//!
//! kubectl parses documents with `sigs.k8s.io/json` ("preserve ints"): an integer literal that
//! fits in `i64` is an integer, every other number is a float, and the two never compare equal.
//! Objects serialise with their keys in byte order, which is why [`Map`] is a `BTreeMap`.
//! Null and absent stay distinct: `{"a": null}` is not `{}`.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

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

// ---------------------------------------------------------------------------------------------
// Serialisation in Go's encoding/json format.

fn write_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&go_json_float(*f)),
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(k, out);
                out.push(':');
                write_json(item, out);
            }
            out.push('}');
        }
    }
}

/// Go's `%q` (`strconv.Quote`): double quotes, Go's short escapes, `\xNN` for ASCII control
/// bytes and `\uNNNN` for other control characters. kubectl quotes names and paths this way in
/// its messages.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `encoding/json` string escaping (HTML-safe, Go 1.22+ short forms for \b and \f).
pub fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A float as Go's `encoding/json` prints it: shortest round-trip digits, fixed notation for
/// magnitudes in [1e-6, 1e21), otherwise exponent notation with an explicit `+` sign.
pub fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        // Rust's Display is the shortest round-trip representation without an exponent.
        format!("{f}")
    } else {
        exponent_form(f, 0)
    }
}

/// Rust's `{:e}` (shortest digits) rewritten with Go's exponent sign and minimum width.
fn exponent_form(f: f64, min_exp_digits: usize) -> String {
    let text = format!("{f:e}");
    let (mantissa, exp) = text.split_once('e').expect("{:e} always has an exponent");
    let (sign, digits) = match exp.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exp),
    };
    format!("{mantissa}e{sign}{digits:0>min_exp_digits$}")
}

/// Go's `%v` for a float64: `%g` with the shortest digits, where Go decides on exponent form
/// with precision 6: exponent when the decimal exponent is below -4 or at least 6.
fn go_v_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{f:e}");
    let exp: i32 = sci.split_once('e').and_then(|(_, e)| e.parse().ok()).unwrap_or(0);
    if !(-4..6).contains(&exp) { exponent_form(f, 2) } else { format!("{f}") }
}

fn write_go_v(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&go_v_float(*f)),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_go_v(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push_str("map[");
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_go_v(item, out);
            }
            out.push(']');
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing with Go's rules (sigs.k8s.io/json): a hand-written parser, because serde_json types
// `-0` as a float, and so that nesting is bounded by MAX_DEPTH without recursion surprises.

mod parse {
    use super::{MAX_DEPTH, Map, ParseError, Value};

    pub(super) struct Parser<'a> {
        bytes: &'a [u8],
        pos: usize,
        depth: usize,
    }

    impl<'a> Parser<'a> {
        pub(super) fn new(bytes: &'a [u8]) -> Parser<'a> {
            Parser { bytes, pos: 0, depth: 0 }
        }

        pub(super) fn parse_document(mut self) -> Result<Value, ParseError> {
            self.skip_whitespace();
            if self.pos >= self.bytes.len() {
                return Err(self.error("EOF while parsing a value"));
            }
            let v = self.parse_value()?;
            self.skip_whitespace();
            if self.pos < self.bytes.len() {
                return Err(self.error("trailing characters"));
            }
            Ok(v)
        }

        /// An error message with serde_json-style position information.
        fn error(&self, what: &str) -> ParseError {
            let consumed = &self.bytes[..self.pos.min(self.bytes.len())];
            let line = consumed.iter().filter(|&&b| b == b'\n').count() + 1;
            let column = consumed.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
            ParseError(format!("{what} at line {line} column {column}"))
        }

        fn skip_whitespace(&mut self) {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
        }

        fn peek(&self) -> Option<u8> {
            self.bytes.get(self.pos).copied()
        }

        fn expect_literal(&mut self, literal: &str, value: Value) -> Result<Value, ParseError> {
            if self.bytes[self.pos..].starts_with(literal.as_bytes()) {
                self.pos += literal.len();
                Ok(value)
            } else {
                Err(self.error("expected value"))
            }
        }

        fn parse_value(&mut self) -> Result<Value, ParseError> {
            match self.peek() {
                Some(b'{') => self.nested(Self::parse_object),
                Some(b'[') => self.nested(Self::parse_array),
                Some(b'"') => self.parse_string().map(Value::String),
                Some(b't') => self.expect_literal("true", Value::Bool(true)),
                Some(b'f') => self.expect_literal("false", Value::Bool(false)),
                Some(b'n') => self.expect_literal("null", Value::Null),
                Some(b'-' | b'0'..=b'9') => self.parse_number(),
                Some(_) => Err(self.error("expected value")),
                None => Err(self.error("EOF while parsing a value")),
            }
        }

        fn nested(&mut self, parse: fn(&mut Self) -> Result<Value, ParseError>) -> Result<Value, ParseError> {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(self.error("recursion limit exceeded"));
            }
            let v = parse(self)?;
            self.depth -= 1;
            Ok(v)
        }

        fn parse_array(&mut self) -> Result<Value, ParseError> {
            self.pos += 1; // [
            let mut items = Vec::new();
            self.skip_whitespace();
            if self.peek() == Some(b']') {
                self.pos += 1;
                return Ok(Value::Array(items));
            }
            loop {
                self.skip_whitespace();
                items.push(self.parse_value()?);
                self.skip_whitespace();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b']') => {
                        self.pos += 1;
                        return Ok(Value::Array(items));
                    }
                    Some(_) => return Err(self.error("expected `,` or `]`")),
                    None => return Err(self.error("EOF while parsing a list")),
                }
            }
        }

        fn parse_object(&mut self) -> Result<Value, ParseError> {
            self.pos += 1; // {
            let mut map = Map::new();
            self.skip_whitespace();
            if self.peek() == Some(b'}') {
                self.pos += 1;
                return Ok(Value::Object(map));
            }
            loop {
                self.skip_whitespace();
                if self.peek() != Some(b'"') {
                    return Err(self.error("key must be a string"));
                }
                let key = self.parse_string()?;
                self.skip_whitespace();
                if self.peek() != Some(b':') {
                    return Err(self.error("expected `:`"));
                }
                self.pos += 1;
                self.skip_whitespace();
                let value = self.parse_value()?;
                // A repeated key: the last one wins, as in Go.
                map.insert(key, value);
                self.skip_whitespace();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b'}') => {
                        self.pos += 1;
                        return Ok(Value::Object(map));
                    }
                    Some(_) => return Err(self.error("expected `,` or `}`")),
                    None => return Err(self.error("EOF while parsing an object")),
                }
            }
        }

        fn parse_string(&mut self) -> Result<String, ParseError> {
            self.pos += 1; // opening quote
            let mut out: Vec<u8> = Vec::new();
            loop {
                let start = self.pos;
                while let Some(&b) = self.bytes.get(self.pos) {
                    if b == b'"' || b == b'\\' || b < 0x20 {
                        break;
                    }
                    self.pos += 1;
                }
                out.extend_from_slice(&self.bytes[start..self.pos]);
                match self.peek() {
                    Some(b'"') => {
                        self.pos += 1;
                        // Go replaces invalid UTF-8 with U+FFFD.
                        return Ok(match String::from_utf8(out) {
                            Ok(s) => s,
                            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
                        });
                    }
                    Some(b'\\') => {
                        self.pos += 1;
                        let escaped = match self.peek() {
                            Some(b'"') => '"',
                            Some(b'\\') => '\\',
                            Some(b'/') => '/',
                            Some(b'b') => '\u{8}',
                            Some(b'f') => '\u{c}',
                            Some(b'n') => '\n',
                            Some(b'r') => '\r',
                            Some(b't') => '\t',
                            Some(b'u') => {
                                self.pos += 1;
                                let c = self.parse_unicode_escape()?;
                                let mut buf = [0u8; 4];
                                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                                continue;
                            }
                            _ => return Err(self.error("invalid escape")),
                        };
                        self.pos += 1;
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(escaped.encode_utf8(&mut buf).as_bytes());
                    }
                    Some(_) => {
                        return Err(self.error("control character (\\u0000-\\u001F) found while parsing a string"));
                    }
                    None => return Err(self.error("EOF while parsing a string")),
                }
            }
        }

        fn hex4(&mut self) -> Option<u16> {
            let digits = self.bytes.get(self.pos..self.pos + 4)?;
            let text = std::str::from_utf8(digits).ok()?;
            let v = u16::from_str_radix(text, 16).ok()?;
            self.pos += 4;
            Some(v)
        }

        /// `\uXXXX`, with surrogate pairs; a lone surrogate becomes U+FFFD (Go's rule).
        fn parse_unicode_escape(&mut self) -> Result<char, ParseError> {
            let first = self.hex4().ok_or_else(|| self.error("invalid unicode escape"))?;
            if !(0xD800..0xDC00).contains(&first) {
                return Ok(char::from_u32(first as u32).unwrap_or('\u{fffd}'));
            }
            if self.bytes[self.pos..].starts_with(b"\\u") {
                let save = self.pos;
                self.pos += 2;
                if let Some(second) = self.hex4()
                    && (0xDC00..0xE000).contains(&second)
                {
                    let c = 0x10000 + (((first as u32) - 0xD800) << 10) + ((second as u32) - 0xDC00);
                    return Ok(char::from_u32(c).unwrap_or('\u{fffd}'));
                }
                self.pos = save;
            }
            Ok('\u{fffd}')
        }

        /// Go's number rules: an integer literal that fits in i64 is an `Int` (so `-0` is
        /// `Int(0)`); anything with a fraction or exponent, or too large, is a `Float`.
        fn parse_number(&mut self) -> Result<Value, ParseError> {
            let start = self.pos;
            if self.peek() == Some(b'-') {
                self.pos += 1;
            }
            match self.peek() {
                Some(b'0') => self.pos += 1,
                Some(b'1'..=b'9') => self.skip_digits(),
                _ => return Err(self.error("invalid number")),
            }
            let mut integer = true;
            if self.peek() == Some(b'.') {
                integer = false;
                self.pos += 1;
                if !matches!(self.peek(), Some(b'0'..=b'9')) {
                    return Err(self.error("invalid number"));
                }
                self.skip_digits();
            }
            if let Some(b'e' | b'E') = self.peek() {
                integer = false;
                self.pos += 1;
                if let Some(b'+' | b'-') = self.peek() {
                    self.pos += 1;
                }
                if !matches!(self.peek(), Some(b'0'..=b'9')) {
                    return Err(self.error("invalid number"));
                }
                self.skip_digits();
            }
            let text = std::str::from_utf8(&self.bytes[start..self.pos]).expect("ASCII");
            if integer && let Ok(i) = text.parse::<i64>() {
                return Ok(Value::Int(i));
            }
            match text.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Value::Float(f)),
                _ => Err(self.error("number out of range")),
            }
        }

        fn skip_digits(&mut self) {
            while let Some(b'0'..=b'9') = self.peek() {
                self.pos += 1;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// serde: parsing through any serde format (YAML for other crates) with Go's number rules.

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Deserialize::deserialize(d)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }
    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        // Go keeps an integer only when it fits in int64; larger ones become float64.
        Ok(i64::try_from(u).map_or(Value::Float(u as f64), Value::Int))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Float(f))
    }
    fn visit_i128<E: de::Error>(self, i: i128) -> Result<Value, E> {
        Ok(i64::try_from(i).map_or(Value::Float(i as f64), Value::Int))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        // A repeated key: the last one wins, as in Go.
        while let Some((k, v)) = access.next_entry::<MapKey, Value>()? {
            map.insert(k.0, v);
        }
        Ok(Value::Object(map))
    }
}

/// Object keys: YAML may have non-string keys (`1: a`, `true: b`); like sigs.k8s.io/yaml they
/// become their string form.
struct MapKey(String);

impl<'de> Deserialize<'de> for MapKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = MapKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_str<E>(self, s: &str) -> Result<MapKey, E> {
                Ok(MapKey(s.to_owned()))
            }
            fn visit_string<E>(self, s: String) -> Result<MapKey, E> {
                Ok(MapKey(s))
            }
            fn visit_bool<E>(self, b: bool) -> Result<MapKey, E> {
                Ok(MapKey(b.to_string()))
            }
            fn visit_i64<E>(self, i: i64) -> Result<MapKey, E> {
                Ok(MapKey(i.to_string()))
            }
            fn visit_u64<E>(self, u: u64) -> Result<MapKey, E> {
                Ok(MapKey(u.to_string()))
            }
            fn visit_f64<E>(self, f: f64) -> Result<MapKey, E> {
                Ok(MapKey(go_v_float(f)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<MapKey, E> {
                Ok(MapKey("null".into()))
            }
        }
        d.deserialize_any(KeyVisitor)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::String(v) => s.serialize_str(v),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut m = s.serialize_map(Some(map.len()))?;
                for (k, v) in map {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Value {
        Value::from_json_str(s).unwrap()
    }

    #[test]
    fn numbers_follow_go_typing() {
        assert_eq!(parse("1"), Value::Int(1));
        assert_eq!(parse("-0"), Value::Int(0));
        assert_eq!(parse("1.0"), Value::Float(1.0));
        assert_eq!(parse("1e3"), Value::Float(1000.0));
        assert_eq!(parse("9223372036854775807"), Value::Int(i64::MAX));
        assert!(matches!(parse("9223372036854775808"), Value::Float(_)));
        assert!(matches!(parse("123456789012345678901234"), Value::Float(_)));
        assert_ne!(parse("1"), parse("1.0"));
    }

    #[test]
    fn floats_print_like_go_encoding_json() {
        for (f, want) in [
            (1.0, "1"),
            (0.1, "0.1"),
            (-0.0, "-0"),
            (1e6, "1000000"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1e-7, "1e-7"),
            (1e-6, "0.000001"),
            (1.5e300, "1.5e+300"),
            (3.4028234663852886e38, "3.4028234663852886e+38"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ] {
            assert_eq!(go_json_float(f), want, "{f}");
        }
    }

    #[test]
    fn floats_render_like_go_percent_v() {
        for (f, want) in [
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (999999.0, "999999"),
            (123456.0, "123456"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e21, "1e+21"),
            (100.0, "100"),
            (2.5e-5, "2.5e-05"),
        ] {
            assert_eq!(go_v_float(f), want, "{f}");
        }
    }

    #[test]
    fn strings_escape_like_go() {
        let v = Value::String("<a&b>\n\u{1}\u{2028}\"\\é".into());
        assert_eq!(v.to_json_string(), r#""\u003ca\u0026b\u003e\n\u0001\u2028\"\\é""#);
    }

    #[test]
    fn keys_sorted_and_compact() {
        let v = parse(r#"{"b": 1, "a": [true, null], "$patch": "x", "B": {}}"#);
        assert_eq!(v.to_json_string(), r#"{"$patch":"x","B":{},"a":[true,null],"b":1}"#);
    }

    #[test]
    fn duplicate_keys_last_wins() {
        assert_eq!(parse(r#"{"a":1,"a":2}"#), parse(r#"{"a":2}"#));
    }

    #[test]
    fn parser_follows_go_rules() {
        assert_eq!(parse("-0.0"), Value::Float(-0.0));
        assert!(matches!(parse("-0.0"), Value::Float(f) if f.is_sign_negative()));
        assert_eq!(parse("-9223372036854775808"), Value::Int(i64::MIN));
        assert_eq!(
            parse(" \t\r\n{ \"a\" : [ 1 , 2.5e-3 ] } "),
            Value::Object(Map::from([("a".to_owned(), Value::Array(vec![Value::Int(1), Value::Float(0.0025)]))]))
        );
        assert_eq!(parse(r#""\u00e9\ud83d\ude00\n\/""#), Value::String("é😀\n/".into()));
        assert_eq!(parse(r#""\ud800x""#), Value::String("\u{fffd}x".into()));
        assert_eq!(Value::from_json_slice(b"\"a\xffb\"").unwrap(), Value::String("a\u{fffd}b".into()));
        for bad in
            ["", "01", "1.", "-", "+1", "1e", "[1,]", "{\"a\":1,}", "{a:1}", "tru", "1 2", "\"\u{1}\"", "1e400", "nul"]
        {
            assert!(Value::from_json_str(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn nesting_up_to_the_limit_parses() {
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(Value::from_json_str(&ok).is_ok());
        let too_deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(Value::from_json_str(&too_deep).is_err());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        let err = Value::from_json_str(&deep).unwrap_err();
        assert!(err.0.contains("recursion limit"), "{err}");
    }
}
