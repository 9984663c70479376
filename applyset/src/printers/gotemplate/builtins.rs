//! The builtin functions' bodies (`funcs.go`) and kubectl's `exists` and `base64decode`.
//! Errors display as the text Go's functions return; the caller adds `error calling NAME: `.

use std::borrow::Cow;

use super::error::CallError;
use super::exec::State;
use super::fmt::{Unsupported, sprint, sprintf, sprintln};
use super::value::{GoValue, Kind};

type Result<'d> = std::result::Result<GoValue<'d>, CallError>;

fn unsupported(e: Unsupported) -> CallError {
    CallError::Unsupported(e.0)
}

fn kinds<'d>(argv: Vec<GoValue<'d>>) -> Vec<Kind<'d>> {
    argv.into_iter().map(|v| v.unboxed().kind).collect()
}

fn string<'d>(s: String) -> Result<'d> {
    Ok(GoValue::new(Kind::Str(Cow::Owned(s))))
}

fn boolean<'d>(b: std::result::Result<bool, CallError>) -> Result<'d> {
    b.map(|b| GoValue::new(Kind::Bool(b)))
}

pub(super) fn call<'d>(_s: &State<'_, 'd>, name: &str, mut argv: Vec<GoValue<'d>>) -> Result<'d> {
    match name {
        "not" => Ok(GoValue::new(Kind::Bool(!argv[0].kind.truth()))),
        "len" => length(&argv[0]),
        "index" => index(argv),
        "slice" => slice(argv),
        "eq" => {
            let first = argv.remove(0).unboxed();
            boolean(eq(&first.kind, &kinds(argv)))
        }
        "ne" | "lt" | "le" | "gt" | "ge" => {
            let args = kinds(argv);
            let (a, b) = (&args[0], &args[1]);
            boolean(match name {
                "ne" => eq(a, std::slice::from_ref(b)).map(|e| !e),
                "lt" => lt(a, b),
                "le" => le(a, b),
                "gt" => le(a, b).map(|r| !r),
                _ => lt(a, b).map(|r| !r),
            })
        }
        "print" => sprint(&kinds(argv)).map_err(unsupported).and_then(string),
        "println" => sprintln(&kinds(argv)).map_err(unsupported).and_then(string),
        "printf" => {
            let args = kinds(argv);
            let Kind::Str(format) = &args[0] else { return Err(CallError::FormatNotString) };
            sprintf(format, &args[1..]).map_err(unsupported).and_then(string)
        }
        "html" => string(html_escape(&eval_args(kinds(argv))?)),
        "js" => string(js_escape(&eval_args(kinds(argv))?)),
        "urlquery" => string(query_escape(&eval_args(kinds(argv))?)),
        "exists" => {
            let args = kinds(argv);
            Ok(GoValue::new(Kind::Bool(exists(&args[0], &args[1..]))))
        }
        "base64decode" => {
            let Kind::Str(text) = &argv[0].kind else { return Err(CallError::ArgumentNotString) };
            let bytes = super::base64::decode(text.as_bytes()).map_err(CallError::Base64)?;
            String::from_utf8(bytes).map_err(|_| CallError::Base64NotUtf8).and_then(string)
        }
        _ => Err(CallError::UnknownFunction(name.to_owned())),
    }
}

/// Go's `indirect` on an argument: an `interface{}` holding nil is a nil pointer.
fn is_nil_pointer(v: &GoValue) -> bool {
    matches!(v.kind, Kind::Nil)
}

fn length<'d>(item: &GoValue<'d>) -> Result<'d> {
    let n = match &item.kind {
        Kind::Nil => return Err(CallError::LenOfNil),
        Kind::Invalid => return Err(CallError::LenOfNoValue),
        Kind::Str(s) => s.len(),
        Kind::List(items) => items.len(),
        Kind::Map(map) => map.len(),
        other => return Err(CallError::LenOfType(other.type_name())),
    };
    Ok(GoValue::new(Kind::Int(n as i64)))
}

/// Go's `indexArg`: an integer index within `0..=cap`.
fn index_arg(index: &Kind, cap: usize) -> std::result::Result<usize, CallError> {
    let x = match index {
        Kind::Int(i) | Kind::Int64(i) => i128::from(*i),
        Kind::Byte(b) => i128::from(*b),
        Kind::Invalid | Kind::Nil => return Err(CallError::NilIndex),
        other => return Err(CallError::IndexType(other.type_name())),
    };
    if x < 0 || x > cap as i128 {
        return Err(CallError::IndexOutOfRange(x));
    }
    Ok(x as usize)
}

fn index<'d>(argv: Vec<GoValue<'d>>) -> Result<'d> {
    let mut args = argv.into_iter();
    let mut item = args.next().unwrap_or(GoValue::INVALID).unboxed();
    if !item.is_valid() {
        return Err(CallError::IndexOfUntypedNil);
    }
    for index in args {
        let index = index.unboxed().kind;
        if is_nil_pointer(&item) {
            return Err(CallError::IndexOfNilPointer);
        }
        item = match &item.kind {
            Kind::List(items) => {
                let x = index_arg(&index, items.len())?;
                // `reflect.Value.Index` panics at len; Go reports the recovered panic.
                GoValue::element(items.get(x).ok_or(CallError::SliceIndexOutOfRange)?)
            }
            Kind::Str(s) => {
                let x = index_arg(&index, s.len())?;
                let b = *s.as_bytes().get(x).ok_or(CallError::StringIndexOutOfRange)?;
                GoValue::new(Kind::Byte(b))
            }
            Kind::Map(map) => {
                let key = match &index {
                    Kind::Str(k) => k,
                    Kind::Invalid | Kind::Nil => return Err(CallError::NilMapKey),
                    other => return Err(CallError::MapKeyType(other.type_name())),
                };
                match map.get(key.as_ref()) {
                    Some(v) => GoValue::element(v),
                    None => GoValue { kind: Kind::Nil, boxed: true },
                }
            }
            other => return Err(CallError::CannotIndex(other.type_name())),
        };
    }
    Ok(item)
}

fn slice<'d>(argv: Vec<GoValue<'d>>) -> Result<'d> {
    let mut args = argv.into_iter();
    let item = args.next().unwrap_or(GoValue::INVALID).unboxed();
    if !item.is_valid() {
        return Err(CallError::SliceOfUntypedNil);
    }
    let indexes: Vec<Kind> = args.map(|v| v.unboxed().kind).collect();
    if indexes.len() > 3 {
        return Err(CallError::TooManySliceIndexes(indexes.len()));
    }
    let len = match &item.kind {
        Kind::Str(s) => {
            if indexes.len() == 3 {
                return Err(CallError::ThreeIndexString);
            }
            s.len()
        }
        Kind::List(items) => items.len(),
        other => return Err(CallError::CannotSlice(other.type_name())),
    };
    let mut idx = [0, len, 0];
    for (i, index) in indexes.iter().enumerate() {
        let x = index_arg(index, usize::MAX)?;
        if x > len {
            // Go allows indexes up to the slice's capacity, which JSON decoding leaves
            // unspecified; refuse rather than guess.
            return Err(CallError::SliceBeyondLength { index: x, len });
        }
        idx[i] = x;
    }
    if idx[0] > idx[1] {
        return Err(CallError::InvalidSliceIndex { low: idx[0], high: idx[1] });
    }
    if indexes.len() == 3 && idx[1] > idx[2] {
        return Err(CallError::InvalidSliceIndex { low: idx[1], high: idx[2] });
    }
    match item.kind {
        Kind::Str(s) => {
            let sub = s.get(idx[0]..idx[1]).ok_or(CallError::SliceInsideCharacter)?;
            Ok(GoValue::new(Kind::Str(Cow::Owned(sub.to_string()))))
        }
        Kind::List(items) => Ok(GoValue::new(Kind::List(&items[idx[0]..idx[1]]))),
        _ => Err(CallError::CannotSliceValue),
    }
}

#[derive(PartialEq, Clone, Copy)]
enum BasicKind {
    Invalid,
    Bool,
    Int,
    Uint,
    Float,
    Str,
}

fn basic_kind(v: &Kind) -> BasicKind {
    match v {
        Kind::Bool(_) => BasicKind::Bool,
        Kind::Int(_) | Kind::Int64(_) => BasicKind::Int,
        Kind::Byte(_) => BasicKind::Uint,
        Kind::Float(_) => BasicKind::Float,
        Kind::Str(_) => BasicKind::Str,
        _ => BasicKind::Invalid,
    }
}

fn as_int(v: &Kind) -> i128 {
    match v {
        Kind::Int(i) | Kind::Int64(i) => i128::from(*i),
        Kind::Byte(b) => i128::from(*b),
        _ => 0,
    }
}

fn percent_s(v: &Kind) -> String {
    sprintf("%s", std::slice::from_ref(v)).unwrap_or_default()
}

fn percent_v(v: &Kind) -> String {
    sprintf("%v", std::slice::from_ref(v)).unwrap_or_default()
}

fn eq(first: &Kind, others: &[Kind]) -> std::result::Result<bool, CallError> {
    if others.is_empty() {
        return Err(CallError::MissingComparisonArgument);
    }
    let k1 = basic_kind(first);
    for other in others {
        let k2 = basic_kind(other);
        let truth = if k1 != k2 {
            match (k1, k2) {
                (BasicKind::Int, BasicKind::Uint) | (BasicKind::Uint, BasicKind::Int) => as_int(first) == as_int(other),
                _ => {
                    if !matches!(first, Kind::Invalid) && !matches!(other, Kind::Invalid) {
                        return Err(CallError::IncompatibleTypes { left: first.type_name(), right: other.type_name() });
                    }
                    false
                }
            }
        } else {
            match (first, other) {
                (Kind::Bool(a), Kind::Bool(b)) => a == b,
                (Kind::Float(a), Kind::Float(b)) => a == b,
                (Kind::Str(a), Kind::Str(b)) => a == b,
                (Kind::Int(_) | Kind::Int64(_) | Kind::Byte(_), _) => as_int(first) == as_int(other),
                _ => {
                    let (nil1, nil2) = (matches!(first, Kind::Invalid), matches!(other, Kind::Invalid));
                    let same_kind =
                        matches!((first, other), (Kind::Map(_), Kind::Map(_)) | (Kind::List(_), Kind::List(_)));
                    if !same_kind && !nil1 && !nil2 {
                        return Err(CallError::NonComparableTypes {
                            left: percent_s(first),
                            left_type: first.type_name(),
                            right_type: other.type_name(),
                            right: percent_v(other),
                        });
                    }
                    if nil1 || nil2 {
                        nil1 == nil2
                    } else {
                        return Err(CallError::NonComparableType {
                            value: percent_s(other),
                            type_name: other.type_name(),
                        });
                    }
                }
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

fn lt(a: &Kind, b: &Kind) -> std::result::Result<bool, CallError> {
    let (k1, k2) = (basic_kind(a), basic_kind(b));
    if k1 == BasicKind::Invalid || k2 == BasicKind::Invalid {
        return Err(CallError::InvalidComparisonType);
    }
    if k1 != k2 {
        return match (k1, k2) {
            (BasicKind::Int, BasicKind::Uint) | (BasicKind::Uint, BasicKind::Int) => Ok(as_int(a) < as_int(b)),
            _ => Err(CallError::IncompatibleTypes { left: a.type_name(), right: b.type_name() }),
        };
    }
    match (a, b) {
        (Kind::Bool(_), _) => Err(CallError::InvalidComparisonType),
        (Kind::Float(x), Kind::Float(y)) => Ok(x < y),
        (Kind::Str(x), Kind::Str(y)) => Ok(x < y),
        _ => Ok(as_int(a) < as_int(b)),
    }
}

fn le(a: &Kind, b: &Kind) -> std::result::Result<bool, CallError> {
    if lt(a, b)? {
        return Ok(true);
    }
    eq(a, std::slice::from_ref(b))
}

/// Go's `evalArgs` for html/js/urlquery: one string as is, otherwise `Sprint` with nil
/// operands shown as `<no value>`.
fn eval_args(args: Vec<Kind>) -> std::result::Result<String, CallError> {
    if let [Kind::Str(s)] = args.as_slice() {
        return Ok(s.to_string());
    }
    let args: Vec<Kind> = args
        .into_iter()
        .map(|a| if matches!(a, Kind::Invalid | Kind::Nil) { Kind::Str("<no value>".into()) } else { a })
        .collect();
    sprint(&args).map_err(unsupported)
}

fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\0' => out.push('\u{fffd}'),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u00{:02X}", c as u32)),
            c if c.is_ascii() || super::fmt::is_print(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", c as u32)),
        }
    }
    out
}

/// `url.QueryEscape`.
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// kubectl's `exists`: whether indexing `item` through `indices` succeeds and ends non-nil.
fn exists(item: &Kind, indices: &[Kind]) -> bool {
    let mut v = item.clone();
    for index in indices {
        if matches!(v, Kind::Nil) {
            return false;
        }
        v = match (&v, index) {
            (Kind::List(items), Kind::Int(_) | Kind::Int64(_) | Kind::Byte(_)) => {
                let x = as_int(index);
                match usize::try_from(x).ok().and_then(|x| items.get(x)) {
                    Some(e) => Kind::of(e),
                    None => return false,
                }
            }
            (Kind::Str(s), Kind::Int(_) | Kind::Int64(_) | Kind::Byte(_)) => {
                let x = as_int(index);
                match usize::try_from(x).ok().and_then(|x| s.as_bytes().get(x)) {
                    Some(b) => Kind::Byte(*b),
                    None => return false,
                }
            }
            (Kind::Map(map), Kind::Str(_) | Kind::Invalid | Kind::Nil) => {
                let key = if let Kind::Str(k) = index { k.as_ref() } else { "" };
                map.get(key).map_or(Kind::Nil, Kind::of)
            }
            _ => return false,
        };
    }
    !matches!(v, Kind::Nil)
}
