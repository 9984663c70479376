//! Go's `text/template` as `kubectl -o go-template=...` runs it (kubectl 1.33, Go 1.24).
//!
//! kubectl marshals the object to JSON and unmarshals it (apimachinery's decoder) into
//! `map[string]interface{}`, so the template sees maps, `[]interface{}`, strings, bools, nil,
//! `int64` whole numbers and `float64` others; this port models exactly those values (see
//! `value`). Errors are [`TemplateError`]s, which display as Go's messages.
//! Constructs outside that model (complex numbers, `%p`, `%x` on floats, ...) are reported as
//! errors ([`TemplateError::is_unsupported`], their message says `unsupported: …`) rather than
//! printed approximately.

mod base64;
mod builtins;
mod error;
mod exec;
mod fmt;
mod funcs;
mod lex;
mod literal;
mod node;
mod parse;
#[cfg(test)]
mod tests;
mod value;

use applyset_merge::Value;

pub use error::{CallError, ExecError, SyntaxError, TemplateError};

/// A parsed template: `output` and every template it defines.
#[derive(Debug)]
pub struct GoTemplate {
    text: String,
    trees: parse::Trees,
    /// `missingkey=default` when true (kubectl's default: a missing map key prints
    /// `<no value>`), `missingkey=error` when false.
    pub allow_missing_keys: bool,
}

impl GoTemplate {
    /// Parses like `template.New("output").Funcs({exists, base64decode}).Parse(text)`; the
    /// error displays as Go's `err.Error()` (e.g. `template: output:1: unexpected "}" in operand`).
    pub fn parse(text: &str) -> Result<GoTemplate, TemplateError> {
        let trees = parse::parse(text)?;
        Ok(GoTemplate { text: text.to_string(), trees, allow_missing_keys: true })
    }

    /// Executes over `data`; the error displays as Go's exec error (e.g. `template: output:1:2:
    /// executing "output" at <.a.b>: nil pointer evaluating interface {}.b`).
    pub fn execute(&self, data: &Value) -> Result<String, TemplateError> {
        let (output, error) = self.execute_partial(data);
        match error {
            None => Ok(output),
            Some(error) => Err(error),
        }
    }

    /// Executes over `data` as Go writes to its writer: the output produced before an error
    /// stays (kubectl's printer writes straight to stdout), with the error if there was one.
    pub fn execute_partial(&self, data: &Value) -> (String, Option<TemplateError>) {
        let root = &self.trees[parse::TEMPLATE_NAME];
        let mut state = exec::State {
            trees: &self.trees,
            text: &self.text,
            name: parse::TEMPLATE_NAME,
            missing_key_error: !self.allow_missing_keys,
            vars: Vec::new(),
            at: None,
            out: String::new(),
            depth: 0,
        };
        let result = state.run(root, data);
        (state.out, result.err())
    }
}
