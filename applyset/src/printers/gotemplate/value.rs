//! The values a template computes with, modelled on the Go values kubectl's template sees:
//! apimachinery's `json.Unmarshal` into `map[string]interface{}` makes whole numbers `int64`
//! and the others `float64`, and every map or slice element an `interface{}`.

use std::borrow::Cow;

use applyset_merge::Value;
use applyset_merge::value::Map;

/// A Go value's dynamic kind.
#[derive(Clone, Debug)]
pub(super) enum Kind<'d> {
    /// Go's invalid `reflect.Value`: a missing map key ("no value") or an untyped nil.
    Invalid,
    /// A nil held in an `interface{}` (a JSON `null`); only ever seen boxed.
    Nil,
    Bool(bool),
    /// Go's `int`: integer constants in the template, `len`, range counters.
    Int(i64),
    /// Go's `int64`: a whole number of the document.
    Int64(i64),
    /// Go's `uint8`: what `index` returns for a string.
    Byte(u8),
    Float(f64),
    Str(Cow<'d, str>),
    List(&'d [Value]),
    Map(&'d Map),
}

/// A value plus whether its static type is `interface{}` (an element of a map or slice that
/// has not yet passed through a pipeline, which unwraps it). That changes error texts
/// (`interface {}` rather than `float64`) and makes a nil field access an error.
#[derive(Clone, Debug)]
pub(super) struct GoValue<'d> {
    pub kind: Kind<'d>,
    pub boxed: bool,
}

impl<'d> GoValue<'d> {
    pub const INVALID: GoValue<'static> = GoValue { kind: Kind::Invalid, boxed: false };

    pub fn new(kind: Kind<'d>) -> Self {
        GoValue { kind, boxed: false }
    }

    /// An element of a document map or slice: an `interface{}`.
    pub fn element(v: &'d Value) -> Self {
        GoValue { kind: Kind::of(v), boxed: true }
    }

    /// The document itself, as `reflect.ValueOf(data)` sees it.
    pub fn root(v: &'d Value) -> Self {
        GoValue { kind: Kind::of(v).unboxed(), boxed: false }
    }

    /// Go's "dig down one level" after each pipeline command (`value.Elem()` on an
    /// `interface{}`): a nil interface becomes an invalid value.
    pub fn unboxed(self) -> Self {
        GoValue { kind: self.kind.unboxed(), boxed: false }
    }

    pub fn is_valid(&self) -> bool {
        !matches!(self.kind, Kind::Invalid)
    }

    /// `value.Type().String()`.
    pub fn type_name(&self) -> &'static str {
        if self.boxed { "interface {}" } else { self.kind.type_name() }
    }
}

impl<'d> Kind<'d> {
    pub fn of(v: &'d Value) -> Self {
        match v {
            Value::Null => Kind::Nil,
            Value::Bool(b) => Kind::Bool(*b),
            Value::Int(i) => Kind::Int64(*i),
            Value::Float(f) => Kind::Float(*f),
            Value::String(s) => Kind::Str(Cow::Borrowed(s)),
            Value::Array(items) => Kind::List(items),
            Value::Object(map) => Kind::Map(map),
        }
    }

    pub fn unboxed(self) -> Self {
        match self {
            Kind::Nil => Kind::Invalid,
            other => other,
        }
    }

    /// The concrete type's name; `<nil>` for nil, as `%T` prints it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Kind::Invalid | Kind::Nil => "<nil>",
            Kind::Bool(_) => "bool",
            Kind::Int(_) => "int",
            Kind::Int64(_) => "int64",
            Kind::Byte(_) => "uint8",
            Kind::Float(_) => "float64",
            Kind::Str(_) => "string",
            Kind::List(_) => "[]interface {}",
            Kind::Map(_) => "map[string]interface {}",
        }
    }

    /// Go's `isTrue` (`if`, `with`, `and`, `or`, `not`).
    pub fn truth(&self) -> bool {
        match self {
            Kind::Invalid | Kind::Nil => false,
            Kind::Bool(b) => *b,
            Kind::Int(i) | Kind::Int64(i) => *i != 0,
            Kind::Byte(b) => *b != 0,
            Kind::Float(f) => *f != 0.0,
            Kind::Str(s) => !s.is_empty(),
            Kind::List(items) => !items.is_empty(),
            Kind::Map(map) => !map.is_empty(),
        }
    }
}
