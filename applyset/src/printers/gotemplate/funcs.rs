//! Function calls (`evalCall`, `evalArg`, `validateType`) and the builtin functions of
//! `text/template/funcs.go`, plus kubectl's `exists` and `base64decode`.

use super::error::{CallError, ExecError};
use super::exec::{R, State};
use super::node::{Arg, At};
use super::value::{GoValue, Kind};

/// A Go parameter type, as far as argument conversion cares.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Param {
    /// `reflect.Value`: receives the value as evaluated (`and`, `len`, `index`, `eq`, ...).
    Reflect,
    /// `interface{}` (`print`, `exists`, ...): receives the concrete value.
    Any,
    /// `string` (`printf`'s format, `base64decode`).
    Str,
}

/// A builtin's fixed parameters and variadic element type.
fn signature(name: &str) -> (&'static [Param], Option<Param>) {
    use Param::*;
    match name {
        "and" | "or" | "index" | "slice" | "call" | "eq" => (&[Reflect], Some(Reflect)),
        "not" | "len" => (&[Reflect], None),
        "ne" | "lt" | "le" | "gt" | "ge" => (&[Reflect, Reflect], None),
        "print" | "println" | "html" | "js" | "urlquery" => (&[], Some(Any)),
        "printf" => (&[Str], Some(Any)),
        "exists" => (&[Any], Some(Any)),
        "base64decode" => (&[Str], None),
        _ => (&[], None),
    }
}

/// Go's `evalCall`; `args` excludes the function name.
pub(super) fn eval_call<'t, 'd>(
    s: &mut State<'t, 'd>,
    dot: &GoValue<'d>,
    name: &str,
    node: At<'t>,
    args: &'t [Arg],
    fin: Option<GoValue<'d>>,
) -> R<GoValue<'d>> {
    let (fixed, variadic) = signature(name);
    let num_in = args.len() + usize::from(fin.is_some());
    let num_fixed = if variadic.is_some() { fixed.len() } else { args.len() };
    if variadic.is_some() {
        if num_in < num_fixed {
            return s.error(ExecError::TooFewArgs { function: name.to_owned(), want: fixed.len(), got: args.len() });
        }
    } else if num_in != fixed.len() {
        return s.error(ExecError::WrongArgCount { function: name.to_owned(), want: fixed.len(), got: num_in });
    }
    if name == "and" || name == "or" {
        let mut value = GoValue::INVALID;
        for arg in args {
            value = eval_arg(s, dot, Some(Param::Reflect), arg)?;
            if value.kind.truth() == (name == "or") {
                return Ok(value);
            }
        }
        if let Some(fin) = fin {
            value = fin;
        }
        return Ok(value);
    }
    let param_at = |i: usize| fixed.get(i).copied().or(variadic).unwrap_or(Param::Any);
    let mut argv = Vec::with_capacity(num_in);
    for (i, arg) in args.iter().enumerate() {
        argv.push(eval_arg(s, dot, Some(param_at(i)), arg)?);
    }
    if let Some(fin) = fin {
        let param = param_at(argv.len());
        argv.push(validate_type(s, fin, Some(param))?);
    }
    if name == "call" {
        let callee = match (args.first(), &argv[0].kind) {
            (Some(arg), _) => arg.to_string(),
            (None, Kind::Str(text)) => text.to_string(),
            (None, kind) => format!("<{} Value>", kind.type_name()),
        };
        let result = match &argv[0].clone().unboxed().kind {
            Kind::Invalid => Err(CallError::CallOfNil),
            kind => Err(CallError::NotAFunction { callee, type_name: kind.type_name() }),
        };
        return call_result(s, node, name, result);
    }
    let result = super::builtins::call(s, name, argv);
    call_result(s, node, name, result)
}

fn call_result<'t, 'd>(
    s: &mut State<'t, 'd>,
    node: At<'t>,
    name: &str,
    result: Result<GoValue<'d>, CallError>,
) -> R<GoValue<'d>> {
    result.or_else(|error| {
        s.at = Some(node);
        s.error(ExecError::Call { function: name.to_owned(), error: Box::new(error) })
    })
}

/// Go's `validateType`; `None` is the untyped context of a chain's receiver.
pub(super) fn validate_type<'d>(s: &State<'_, 'd>, value: GoValue<'d>, param: Option<Param>) -> R<GoValue<'d>> {
    match param {
        None | Some(Param::Reflect) => Ok(value),
        Some(Param::Any) => Ok(value.unboxed()),
        Some(Param::Str) => match (&value.kind, value.boxed) {
            (Kind::Invalid, _) => s.error(ExecError::InvalidString),
            (Kind::Str(_), _) => Ok(value.unboxed()),
            (Kind::Nil, _) => s.error(ExecError::NotAString("interface {}")),
            (kind, _) => s.error(ExecError::NotAString(kind.type_name())),
        },
    }
}

/// Go's `evalArg`.
pub(super) fn eval_arg<'t, 'd>(
    s: &mut State<'t, 'd>,
    dot: &GoValue<'d>,
    param: Option<Param>,
    arg: &'t Arg,
) -> R<GoValue<'d>> {
    s.at = Some(At::Arg(arg));
    let value = match arg {
        Arg::Dot { .. } => dot.clone(),
        Arg::Nil { .. } => {
            return match param {
                Some(Param::Str) => s.error(ExecError::NilString),
                _ => Ok(GoValue::INVALID),
            };
        }
        Arg::Field { ident, .. } => s.eval_field_node(dot, arg, ident, std::slice::from_ref(arg), None)?,
        Arg::Variable(var) => s.eval_variable_node(dot, var, &[], None)?,
        Arg::Pipe(pipe) => applyset_merge::value::deeper(|| s.eval_pipeline(dot, Some(pipe)))?,
        Arg::Identifier { name, .. } => eval_call(s, dot, name, At::Arg(arg), &[], None)?,
        Arg::Chain { .. } => s.eval_chain_node(dot, arg, &[], None)?,
        Arg::Bool { value, .. } if param != Some(Param::Str) => return Ok(GoValue::new(Kind::Bool(*value))),
        Arg::Number { number, .. } if param != Some(Param::Str) => return s.ideal_constant(number),
        Arg::String { text, .. } => return Ok(GoValue::new(Kind::Str(text.clone().into()))),
        other => return s.error(ExecError::ExpectedString(other.to_string())),
    };
    validate_type(s, value, param)
}
