//! Why a template does not parse or could not be executed, typed. `Display` is Go's
//! `err.Error()` byte for byte, built from each variant's data; [`TemplateError::is_unsupported`]
//! tells a construct this port does not model (complex numbers, `%p`, ...) from Go's own errors.

use applyset_merge::value::go_quote;

use super::exec::MAX_EXEC_DEPTH;
use super::parse::TEMPLATE_NAME;

/// A template that does not parse, or whose execution failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TemplateError {
    /// `template: output:LINE: …`: the text does not parse.
    #[error("template: {TEMPLATE_NAME}:{line}")]
    Parse {
        line: usize,
        #[source]
        error: SyntaxError,
    },
    /// `template: output:LINE:COL: executing "NAME" at <NODE>: …`: execution failed at a node.
    #[error("template: {TEMPLATE_NAME}:{line}:{column}: executing {} at <{node}>", go_quote(.template))]
    Exec {
        /// The template being executed (`output`, or one it called).
        template: String,
        line: usize,
        column: usize,
        /// The node, as Go prints it.
        node: String,
        #[source]
        error: ExecError,
    },
    /// `template: NAME: …`: execution failed before reaching any node.
    #[error("template: {template}")]
    ExecStart {
        template: String,
        #[source]
        error: ExecError,
    },
}

impl TemplateError {
    /// Whether the template uses something this port does not model (Go would run it).
    pub fn is_unsupported(&self) -> bool {
        match self {
            TemplateError::Parse { error, .. } => error.is_unsupported(),
            TemplateError::Exec { error, .. } | TemplateError::ExecStart { error, .. } => error.is_unsupported(),
        }
    }
}

/// What the parser (or a literal's decoding) refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    /// The lexer's error token, and the line its action started on when that is another.
    #[error("{message}{}", action_started(.message, *.action_line))]
    Lex { message: String, action_line: Option<usize> },
    /// A token that cannot come here: the token as Go describes it, and what was being parsed.
    #[error("unexpected {token} in {context}")]
    Unexpected { token: String, context: &'static str },
    /// `{{end}}` or `{{else}}` with nothing to close.
    #[error("unexpected {0}")]
    Unmatched(&'static str),
    /// The input ended inside a control structure or definition.
    #[error("unexpected EOF")]
    UnexpectedEof,
    /// Two non-empty definitions of one name.
    #[error("template: multiple definition of template {}", go_quote(.0))]
    MultipleDefinition(String),
    /// `{{break}}` or `{{continue}}` outside a range.
    #[error("{0} outside {{{{range}}}}")]
    OutsideRange(&'static str),
    /// An `{{else}}` branch closed by something other than `{{end}}`.
    #[error("expected end; found {0}")]
    ExpectedEnd(&'static str),
    /// `{{range $a, 1}}`.
    #[error("range can only initialize variables")]
    RangeInitialization,
    /// More variables than the construct declares.
    #[error("too many declarations in {0}")]
    TooManyDeclarations(&'static str),
    /// A pipeline without a command.
    #[error("missing value for {0}")]
    MissingValue(&'static str),
    /// A constant after a `|`: the stage's number, from 1.
    #[error("non executable command in pipeline stage {0}")]
    NonExecutableCommand(usize),
    #[error("empty command")]
    EmptyCommand,
    /// A field of a constant (`"a".b`): the term.
    #[error("unexpected . after term {}", go_quote(.0))]
    FieldOfTerm(String),
    #[error("function {} not defined", go_quote(.0))]
    UndefinedFunction(String),
    #[error("undefined variable {}", go_quote(.0))]
    UndefinedVariable(String),
    /// Parentheses nested deeper than Go's limit.
    #[error("max expression depth exceeded")]
    TooDeep,
    /// A quoted string or character constant Go cannot decode.
    #[error("invalid syntax")]
    InvalidSyntax,
    #[error("malformed character constant: {0}")]
    MalformedCharacter(String),
    /// An integer constant beyond 64 bits.
    #[error("integer overflow: {}", go_quote(.0))]
    IntegerOverflow(String),
    #[error("illegal number syntax: {}", go_quote(.0))]
    IllegalNumber(String),
    /// Unsupported: a string constant whose escapes spell bytes that are not UTF-8.
    #[error("unsupported: string constant is not valid UTF-8")]
    NotUtf8,
    /// Unsupported: a complex constant.
    #[error("unsupported: complex constant {0}")]
    Complex(String),
    /// Unsupported: a hexadecimal floating-point constant.
    #[error("unsupported: hexadecimal floating-point constant {0}")]
    HexFloat(String),
}

impl SyntaxError {
    fn is_unsupported(&self) -> bool {
        matches!(self, SyntaxError::NotUtf8 | SyntaxError::Complex(_) | SyntaxError::HexFloat(_))
    }
}

/// Go's `extra` after a lexer error: where the action began, unless it began on that line.
fn action_started(message: &str, action_line: Option<usize>) -> String {
    let Some(line) = action_line else { return String::new() };
    let extra = format!(" in action started at {TEMPLATE_NAME}:{line}");
    // Go avoids "action in action".
    if message.ends_with(" action") { extra[" in action".len()..].to_string() } else { extra }
}

/// What the executor refused (after the location prefix).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// Unsupported: a `fmt` verb or flag this port does not implement.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A number ranged over with two variables: the number as printed.
    #[error("can't use {0} to iterate over more than one variable")]
    RangeVariables(String),
    /// A range over a value that is not a list, map or integer: the value as printed.
    #[error("range can't iterate over {0}")]
    RangeOver(String),
    #[error("undefined variable: {0}")]
    UndefinedVariable(String),
    #[error("template {} not defined", go_quote(.0))]
    UndefinedTemplate(String),
    /// `{{template}}` calls nested deeper than Go's limit.
    #[error("exceeded maximum template depth ({MAX_EXEC_DEPTH})")]
    TooDeep,
    /// Arguments after something that is not a function: that thing, as Go prints it.
    #[error("can't give argument to non-function {0}")]
    NotAFunction(String),
    #[error("nil is not a command")]
    NilCommand,
    #[error("can't evaluate command {0}")]
    NotACommand(String),
    /// An integer constant that only fits unsigned.
    #[error("{0} overflows int")]
    IntOverflow(String),
    #[error("internal error: not a chain")]
    NotAChain,
    #[error("indirection through explicit nil in {0}")]
    NilIndirection(String),
    /// A field of a missing value, with `missingkey=error`.
    #[error("nil data; no entry for key {}", go_quote(.0))]
    NilData(String),
    /// A field of a null.
    #[error("nil pointer evaluating {type_name}.{field}")]
    NilPointer { type_name: &'static str, field: String },
    /// A map key given arguments.
    #[error("{0} is not a method but has arguments")]
    NotAMethod(String),
    /// A missing map key, with `missingkey=error`.
    #[error("map has no entry for key {}", go_quote(.0))]
    MissingKey(String),
    /// A field of something that is not a map.
    #[error("can't evaluate field {field} in type {type_name}")]
    NoField { field: String, type_name: &'static str },
    #[error("wrong number of args for {function}: want at least {want} got {got}")]
    TooFewArgs { function: String, want: usize, got: usize },
    #[error("wrong number of args for {function}: want {want} got {got}")]
    WrongArgCount { function: String, want: usize, got: usize },
    /// A function that failed: `error calling NAME: …` (boxed: the executor passes its errors
    /// up every frame).
    #[error("error calling {function}")]
    Call {
        function: String,
        #[source]
        error: Box<CallError>,
    },
    /// A missing value where a string parameter is.
    #[error("invalid value; expected string")]
    InvalidString,
    /// A value of another type where a string parameter is: Go's type name.
    #[error("wrong type for value; expected string; got {0}")]
    NotAString(&'static str),
    #[error("cannot assign nil to string")]
    NilString,
    /// A constant of another kind where a string parameter is: the constant.
    #[error("expected string; found {0}")]
    ExpectedString(String),
}

impl ExecError {
    fn is_unsupported(&self) -> bool {
        match self {
            ExecError::Unsupported(_) => true,
            ExecError::Call { error, .. } => error.is_unsupported(),
            _ => false,
        }
    }
}

/// What a function returned as its error (the executor adds `error calling NAME: `).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("call of nil")]
    CallOfNil,
    /// `call` of something that is not a function: as written, and its Go type.
    #[error("non-function {callee} of type {type_name}")]
    NotAFunction { callee: String, type_name: &'static str },
    #[error("format is not a string")]
    FormatNotString,
    #[error("argument is not a string")]
    ArgumentNotString,
    /// `base64decode` of text that is not base64: the offending byte's offset.
    #[error("base64 decode failed: illegal base64 data at input byte {0}")]
    Base64(usize),
    #[error("len of nil pointer")]
    LenOfNil,
    /// `len` of a missing value (Go's recovered `reflect` panic).
    #[error("reflect: call of reflect.Value.Type on zero Value")]
    LenOfNoValue,
    #[error("len of type {0}")]
    LenOfType(&'static str),
    #[error("cannot index slice/array with nil")]
    NilIndex,
    #[error("cannot index slice/array with type {0}")]
    IndexType(&'static str),
    #[error("index out of range: {0}")]
    IndexOutOfRange(i128),
    #[error("index of untyped nil")]
    IndexOfUntypedNil,
    #[error("index of nil pointer")]
    IndexOfNilPointer,
    /// An index at a list's length (Go's recovered `reflect` panic).
    #[error("reflect: slice index out of range")]
    SliceIndexOutOfRange,
    /// An index at a string's length (Go's recovered `reflect` panic).
    #[error("reflect: string index out of range")]
    StringIndexOutOfRange,
    #[error("value is nil; should be of type string")]
    NilMapKey,
    #[error("value has type {0}; should be string")]
    MapKeyType(&'static str),
    #[error("can't index item of type {0}")]
    CannotIndex(&'static str),
    #[error("slice of untyped nil")]
    SliceOfUntypedNil,
    #[error("too many slice indexes: {0}")]
    TooManySliceIndexes(usize),
    #[error("cannot 3-index slice a string")]
    ThreeIndexString,
    #[error("can't slice item of type {0}")]
    CannotSlice(&'static str),
    #[error("invalid slice index: {low} > {high}")]
    InvalidSliceIndex { low: usize, high: usize },
    #[error("can't slice")]
    CannotSliceValue,
    #[error("missing argument for comparison")]
    MissingComparisonArgument,
    #[error("incompatible types for comparison: {left} and {right}")]
    IncompatibleTypes { left: &'static str, right: &'static str },
    /// Two values Go cannot compare: each as printed (`%s`, `%v`) with its type.
    #[error("non-comparable types {left}: {left_type}, {right_type}: {right}")]
    NonComparableTypes { left: String, left_type: &'static str, right_type: &'static str, right: String },
    #[error("non-comparable type {value}: {type_name}")]
    NonComparableType { value: String, type_name: &'static str },
    #[error("invalid type for comparison")]
    InvalidComparisonType,
    /// Unsupported: a `fmt` verb or flag this port does not implement.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// Unsupported: `base64decode` of bytes that are not UTF-8.
    #[error("unsupported: base64decode produced bytes that are not UTF-8")]
    Base64NotUtf8,
    /// Unsupported: a slice bound within the capacity but beyond the length.
    #[error("unsupported: slice index {index} beyond the length {len}")]
    SliceBeyondLength { index: usize, len: usize },
    /// Unsupported: a string sliced inside a UTF-8 character.
    #[error("unsupported: slicing a string inside a UTF-8 character")]
    SliceInsideCharacter,
    /// Unsupported: a function the parser knows but this port does not run.
    #[error("unsupported function {0}")]
    UnknownFunction(String),
}

impl CallError {
    fn is_unsupported(&self) -> bool {
        matches!(
            self,
            CallError::Unsupported(_)
                | CallError::Base64NotUtf8
                | CallError::SliceBeyondLength { .. }
                | CallError::SliceInsideCharacter
                | CallError::UnknownFunction(_)
        )
    }
}
