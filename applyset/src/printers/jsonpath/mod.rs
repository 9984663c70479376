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
    /// Parses `template`; the error is client-go's parser message.
    pub fn parse(template: &str) -> Result<JsonPath, String> {
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
    pub fn execute(&self, data: &Value) -> Result<String, String> {
        let mut evaluator = eval::Evaluator::new(self.allow_missing_keys);
        let groups = evaluator.find_results(&self.nodes, 0, eval::Item::Value(Cow::Borrowed(data)))?;
        let mut out = String::new();
        for group in &groups {
            eval::print_results(group, self.json_output, &mut out);
        }
        Ok(out)
    }
}
