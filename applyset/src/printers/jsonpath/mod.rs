//! `-o jsonpath=…`, `-o jsonpath-as-json=…`, `-o jsonpath-file=…`: kubectl's JSONPath
//! templates (client-go's dialect, not RFC 9535), parsed and evaluated as client-go does.

mod eval;
mod parse;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

use applyset_merge::Value;

/// A parsed template.
#[derive(Debug)]
pub struct JsonPath {
    source: String,
    nodes: Vec<parse::Node>,
    pub allow_missing_keys: bool,
    pub json_output: bool,
}

impl JsonPath {
    /// Parses `template`; the error displays as client-go's parser message.
    pub fn parse(template: &str) -> Result<JsonPath, JsonPathError> {
        Ok(JsonPath {
            source: template.to_owned(),
            nodes: parse::parse(template)?,
            allow_missing_keys: true,
            json_output: false,
        })
    }

    /// The template as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The template's output for `data`, or client-go's execution error (unwrapped).
    pub fn execute(&self, data: &Value) -> Result<String, JsonPathError> {
        let mut evaluator = eval::Evaluator::new(self.allow_missing_keys);
        let groups = evaluator.find_results(&self.nodes, 0, eval::Item::Value(Cow::Borrowed(data)))?;
        let mut out = String::new();
        for group in &groups {
            eval::print_results(group, self.json_output, &mut out);
        }
        Ok(out)
    }
}

/// Why a template does not parse or cannot be evaluated; `Display` is client-go's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JsonPathError {
    // The parser's.
    /// An action that is not closed by `}` before the line or the input ends.
    #[error("unclosed action")]
    UnclosedAction,
    /// A character that cannot start anything inside an action.
    #[error("unrecognized character in action: {}", parse::go_unicode(*.0))]
    UnrecognizedCharacter(char),
    /// `....`.
    #[error("invalid multiple recursive descent")]
    MultipleRecursiveDescent,
    /// A run of signs, digits and dots that is no number.
    #[error("cannot parse number {0}")]
    InvalidNumber(String),
    /// A `[` not closed on its line.
    #[error("unterminated array")]
    UnterminatedArray,
    /// A subscript that is neither a union, a quoted key nor `start:end:step`.
    #[error("invalid array index {0}")]
    InvalidArrayIndex(String),
    /// A bound of `start:end:step` that is not an integer.
    #[error("array index {0} is not a number")]
    IndexNotANumber(String),
    /// A `[?(` not closed on its line.
    #[error("unterminated filter")]
    UnterminatedFilter,
    /// A filter's `)` not followed by `]`.
    #[error("unclosed array expect ]")]
    UnclosedFilter,
    /// A quote not closed on its line.
    #[error("unterminated quoted string")]
    UnterminatedQuote,
    /// A quoted string with an escape Go does not know.
    #[error("unquote string {0} error invalid syntax")]
    InvalidQuotedString(String),

    // The evaluator's.
    /// A bare word other than `range` and `end`.
    #[error("unrecognized identifier {0}")]
    UnrecognizedIdentifier(String),
    /// `{end}` outside a `{range}`.
    #[error("not in range, nothing to end")]
    EndOutsideRange,
    /// A field that no input has (only with `--allow-missing-template-keys=false`).
    #[error("{0} is not found")]
    MissingKey(String),
    /// A filter over something that is not an array: the value as Go's `%v` shows it.
    #[error("{0} is not array or slice and cannot be filtered")]
    NotFilterable(String),
    /// A subscript of something that is not an array: its Go kind.
    #[error("{0} is not array or slice")]
    NotAnArray(&'static str),
    /// A subscript beyond the array.
    #[error("array index out of bounds: index {index}, length {length}")]
    IndexOutOfBounds { index: i64, length: i64 },
    /// `[start:end]` with `start` after `end`.
    #[error("starting index {start} is greater than ending index {end}")]
    StartAfterEnd { start: i64, end: i64 },
    /// `[::0]` or a negative step.
    #[error("step must be > 0")]
    StepNotPositive,
    /// A filter side that gives several values.
    #[error("can only compare one element at a time")]
    CompareSeveral,
    /// A filter side that is not a bool, number or string.
    #[error("invalid type for comparison")]
    InvalidComparisonType,
    /// Filter sides of different kinds.
    #[error("incompatible types for comparison")]
    IncompatibleTypes,
    /// A filter operator other than `==`, `!=`, `<`, `<=`, `>`, `>=`.
    #[error("unrecognized filter operator {0}")]
    UnknownOperator(String),
}
