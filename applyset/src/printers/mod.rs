//! kubectl's printers for applied objects: `-o json|yaml|name|jsonpath…|go-template…`.
//!
//! kubectl resolves its printer lazily: `-o name` and the default lines print per object, the
//! others print once after everything applied (one object alone, several in a `v1` `List`),
//! and a format or template it cannot use is only an error at that point — after the objects
//! were applied, and before anything is pruned. [`OutputFormat::resolve`] keeps that error
//! ([`OutputFormat::Unusable`]) for the CLI to report when it comes to print. Errors are
//! [`PrintError`]s, which display as kubectl's messages.

pub mod gotemplate;
pub mod jsonpath;

use std::sync::Arc;

use applyset_merge::Value;
use applyset_merge::value::go_quote;

use crate::causes::Chain;
use crate::causes::with_causes;
use crate::manifest::yaml::to_go_yaml;
use gotemplate::{GoTemplate, TemplateError};
use jsonpath::{JsonPath, JsonPathError};

/// The flags that choose a printer.
#[derive(Clone, Debug, Default)]
pub struct PrintFlags<'a> {
    /// `-o`.
    pub output: Option<&'a str>,
    /// `--template`.
    pub template: Option<&'a str>,
    /// `--allow-missing-template-keys`.
    pub allow_missing_keys: bool,
    /// `--show-managed-fields` (json and yaml drop `metadata.managedFields` otherwise).
    pub show_managed_fields: bool,
}

/// What `-o` asks for.
#[derive(Debug)]
pub enum OutputFormat {
    /// No `-o`: `configmap/a created`.
    Lines,
    /// `-o name`: `configmap/a`.
    Name,
    /// Printed once, after every object applied.
    Objects(ObjectPrinter),
    /// A format or template kubectl would refuse when it comes to print.
    Unusable(PrintError),
}

/// A printer of whole objects.
#[derive(Debug)]
pub struct ObjectPrinter {
    kind: ObjectFormat,
    show_managed_fields: bool,
    /// `--template` without `-o`: kubectl prints each object as it is applied, not a `List`
    /// at the end.
    pub per_object: bool,
}

#[derive(Debug)]
enum ObjectFormat {
    Json,
    Yaml,
    JsonPath(JsonPath),
    GoTemplate { template: GoTemplate, raw: String },
}

const JSONPATH_FORMATS: [&str; 3] = ["jsonpath", "jsonpath-file", "jsonpath-as-json"];
const TEMPLATE_FORMATS: [&str; 4] = ["template", "go-template", "go-template-file", "templatefile"];
const ALLOWED_FORMATS: &str =
    "go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,yaml";

impl OutputFormat {
    /// kubectl's `PrintFlags.ToPrinter`: `--template` alone means go-template; a template
    /// comes from `--template` or after `format=`; the `-file` formats read it from a file.
    pub fn resolve(flags: &PrintFlags<'_>) -> OutputFormat {
        let template = flags.template.filter(|t| !t.is_empty());
        let format = match (flags.output, template) {
            (None, Some(_)) => "go-template",
            (output, _) => output.unwrap_or(""),
        };
        let per_object = flags.output.is_none();
        let object = |kind| {
            OutputFormat::Objects(ObjectPrinter { kind, show_managed_fields: flags.show_managed_fields, per_object })
        };
        match format {
            "" => return OutputFormat::Lines,
            "name" => return OutputFormat::Name,
            "json" => return object(ObjectFormat::Json),
            "yaml" => return object(ObjectFormat::Yaml),
            _ => {}
        }
        for (family, is_jsonpath) in [(&JSONPATH_FORMATS[..], true), (&TEMPLATE_FORMATS[..], false)] {
            let Some((name, text)) = split_template(format, template, family) else { continue };
            let text = match read_template(name, text) {
                Ok(text) => text,
                Err(error) => return OutputFormat::Unusable(error),
            };
            return if is_jsonpath {
                match JsonPath::parse(&text) {
                    Ok(mut path) => {
                        path.allow_missing_keys = flags.allow_missing_keys;
                        path.json_output = name == "jsonpath-as-json";
                        object(ObjectFormat::JsonPath(path))
                    }
                    Err(error) => OutputFormat::Unusable(PrintError::ParseJsonPath { template: text, error }),
                }
            } else {
                match GoTemplate::parse(&text) {
                    Ok(mut parsed) => {
                        parsed.allow_missing_keys = flags.allow_missing_keys;
                        object(ObjectFormat::GoTemplate { template: parsed, raw: text })
                    }
                    Err(error) => {
                        OutputFormat::Unusable(PrintError::ParseTemplate { template: text, error: Box::new(error) })
                    }
                }
            };
        }
        OutputFormat::Unusable(PrintError::UnknownFormat { output: flags.output.unwrap_or_default().to_owned() })
    }

    /// Whether applied objects must be kept for printing.
    pub fn keeps_objects(&self) -> bool {
        matches!(self, OutputFormat::Objects(_) | OutputFormat::Unusable(_))
    }
}

/// The format and its template text when `format` is one of `family` (`name=TEMPLATE`, or
/// `name` with `--template`). `Some((name, None))` when no template was given.
fn split_template<'a>(
    format: &'a str,
    template: Option<&'a str>,
    family: &[&'static str],
) -> Option<(&'static str, Option<&'a str>)> {
    if template.is_none() {
        for &name in family {
            if let Some(text) = format.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')) {
                return Some((name, Some(text).filter(|t| !t.is_empty())));
            }
        }
    }
    family.iter().find(|&&name| name == format).map(|&name| (name, template))
}

fn read_template(name: &str, text: Option<&str>) -> Result<String, PrintError> {
    let text = text.ok_or(PrintError::NoTemplate)?;
    if name.ends_with("file") {
        return std::fs::read_to_string(text)
            .map_err(|error| PrintError::ReadTemplate { path: text.to_owned(), error: Arc::new(error) });
    }
    Ok(text.to_owned())
}

/// Go's `*PathError` text for a failed open: `open PATH: no such file or directory`.
fn go_io_error(path: &str, error: &std::io::Error) -> String {
    let reason = match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        std::io::ErrorKind::IsADirectory => "is a directory".to_owned(),
        _ => with_causes(&error),
    };
    format!("open {path}: {reason}")
}

impl ObjectPrinter {
    /// kubectl's `printObjects`: the objects as returned by the apiserver, one alone or a
    /// `v1` `List` of several: what goes to stdout, and the error (kubectl prints its message
    /// after `error: `) if printing failed.
    pub fn print(&self, objects: Vec<Value>) -> Printed {
        match self.print_or_fail(objects) {
            Ok(text) => Printed { text, error: None },
            Err(failure) => failure,
        }
    }

    fn print_or_fail(&self, objects: Vec<Value>) -> Result<String, Printed> {
        let failed = |error: PrintError| Printed { text: String::new(), error: Some(error) };
        let several = objects.len() > 1;
        let objects: Vec<Value> = match self.kind {
            ObjectFormat::Json | ObjectFormat::Yaml if !self.show_managed_fields => {
                objects.into_iter().map(without_managed_fields).collect()
            }
            _ => objects,
        };
        match &self.kind {
            ObjectFormat::Json => Ok(json_text(objects)),
            ObjectFormat::Yaml => {
                let document = if several { list(objects) } else { objects.into_iter().next().unwrap_or_default() };
                to_go_yaml(&document).ok_or_else(|| failed(PrintError::Yaml))
            }
            ObjectFormat::JsonPath(path) => {
                // kubectl hands an applied object to JSONPath as it is (integers stay
                // integers); a List goes through JSON into Go maps, where every number is a float.
                let data =
                    if several { floats_only(list(objects)) } else { objects.into_iter().next().unwrap_or_default() };
                path.execute(&data).map_err(move |error| {
                    failed(PrintError::ExecuteJsonPath { template: path.source().to_owned(), object: data, error })
                })
            }
            ObjectFormat::GoTemplate { template, raw } => {
                // kubectl's template printer goes through JSON into Go maps (apimachinery's
                // decoder: whole numbers stay int64), which the template engine models itself.
                let raw_data = if several { json_list_compact(&objects) } else { String::new() };
                let data = if several { list(objects) } else { objects.into_iter().next().unwrap_or_default() };
                let (mut text, error) = template.execute_partial(&data);
                let Some(error) = error else { return Ok(text) };
                // kubectl writes its debugging help to stdout, after what the template wrote.
                let raw_data = if several { raw_data } else { data.to_json_string() };
                text.push_str(&format!(
                    "Error executing template: {}. Printing more information for debugging the template:\n\ttemplate was:\n\t\t{raw}\n\traw data was:\n\t\t{raw_data}\n\tobject given to template engine was:\n\t\t{}\n\n",
                    Chain(&error),
                    data.go_v_string()
                ));
                Err(Printed {
                    text,
                    error: Some(PrintError::ExecuteTemplate { template: raw.clone(), error: Box::new(error) }),
                })
            }
        }
    }
}

impl ObjectPrinter {
    /// Pruned objects, each printed alone as kubectl's prune prints them, ignoring print errors
    /// as kubectl does. kubectl's ApplySet prune uses one YAML printer, which puts `---` before
    /// every document but the first; its label-selector prune makes a printer per object, so
    /// no separator.
    pub fn print_pruned(&self, objects: impl IntoIterator<Item = Value>, one_printer: bool) -> String {
        let mut out = String::new();
        for (i, object) in objects.into_iter().enumerate() {
            if one_printer && i > 0 && matches!(self.kind, ObjectFormat::Yaml) {
                out.push_str("---\n");
            }
            out.push_str(&self.print(vec![object]).text);
        }
        out
    }
}

/// What printing wrote to stdout, and the error kubectl then reports (if any).
#[derive(Debug)]
pub struct Printed {
    pub text: String,
    pub error: Option<PrintError>,
}

/// Why kubectl's printer cannot be made or could not print; `Display` is kubectl's message
/// (printed after `error: `), the debugging help of an execution error included. kubectl's
/// sentences embed the parser's or the executor's error (after a comma, or mid-sentence), so
/// those errors are the message's data, not sources a report would print after it.
#[derive(Clone, Debug, thiserror::Error)]
pub enum PrintError {
    /// A template format without its template.
    #[error("template format specified but no template given")]
    NoTemplate,
    /// A `-file` format whose file cannot be read.
    #[error("error reading --template {path}, {}\n", go_io_error(.path, .error))]
    ReadTemplate { path: String, error: Arc<std::io::Error> },
    /// A JSONPath template that does not parse.
    #[error("error parsing jsonpath {template}, {error}\n")]
    ParseJsonPath { template: String, error: JsonPathError },
    /// A go-template that does not parse (its error boxed, as it is large).
    #[error("error parsing template {template}, {}\n", Chain(&**.error))]
    ParseTemplate { template: String, error: Box<TemplateError> },
    /// An `-o` kubectl has no printer for.
    #[error(
        r#"unable to match a printer suitable for the output format "{output}", allowed formats are: {ALLOWED_FORMATS}"#
    )]
    UnknownFormat { output: String },
    #[error("cannot write the objects as YAML")]
    Yaml,
    /// A JSONPath evaluation error, with kubectl's dump of the object in Go syntax.
    #[error(
        "error executing jsonpath {}: Error executing template: {error}. Printing more information for debugging the template:\n\ttemplate was:\n\t\t{template}\n\tobject given to jsonpath engine was:\n\t\t{}\n\n\n",
        go_quote(.template),
        go_syntax(.object)
    )]
    ExecuteJsonPath {
        template: String,
        /// The data the template was executed over.
        object: Value,
        error: JsonPathError,
    },
    /// A template execution error (its debugging help went to stdout).
    #[error("error executing template {}: {}", go_quote(.template), Chain(&**.error))]
    ExecuteTemplate { template: String, error: Box<TemplateError> },
}

fn without_managed_fields(mut object: Value) -> Value {
    if let Some(metadata) = object.as_object_mut().and_then(|o| o.get_mut("metadata")).and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    object
}

/// The `v1` `List` kubectl wraps several objects in.
fn list(objects: Vec<Value>) -> Value {
    let mut map = applyset_merge::value::Map::new();
    map.insert("apiVersion".into(), Value::String("v1".into()));
    map.insert("items".into(), Value::Array(objects));
    map.insert("kind".into(), Value::String("List".into()));
    map.insert("metadata".into(), Value::Object(Default::default()));
    Value::Object(map)
}

/// kubectl's JSON printer: `json.MarshalIndent` with four spaces; several objects go in a
/// `List`, whose members kubectl writes in its struct's order.
fn json_text(mut objects: Vec<Value>) -> String {
    if objects.len() == 1 {
        return format!("{}\n", objects.remove(0).to_json_indented("    ", 0));
    }
    let items: Vec<String> =
        objects.iter().map(|object| format!("        {}", object.to_json_indented("    ", 2))).collect();
    let items = if items.is_empty() { "[]".to_owned() } else { format!("[\n{}\n    ]", items.join(",\n")) };
    format!(
        "{{\n    \"kind\": \"List\",\n    \"apiVersion\": \"v1\",\n    \"metadata\": {{}},\n    \"items\": {items}\n}}\n"
    )
}

/// `json.Marshal` of kubectl's `v1` `List` (its struct's field order), compact.
fn json_list_compact(objects: &[Value]) -> String {
    let items: Vec<String> = objects.iter().map(Value::to_json_string).collect();
    format!(r#"{{"kind":"List","apiVersion":"v1","metadata":{{}},"items":[{}]}}"#, items.join(","))
}

/// Every integer as a float, as `json.Unmarshal` into `interface{}` leaves numbers.
fn floats_only(mut value: Value) -> Value {
    floats_in_place(&mut value);
    value
}

fn floats_in_place(value: &mut Value) {
    match value {
        Value::Int(i) => *value = Value::Float(*i as f64),
        Value::Array(items) => items.iter_mut().for_each(|v| applyset_merge::value::deeper(|| floats_in_place(v))),
        Value::Object(map) => map.values_mut().for_each(|v| applyset_merge::value::deeper(|| floats_in_place(v))),
        _ => {}
    }
}

/// Go's `%#v` of the value as `map[string]interface{}` holds it.
fn go_syntax(value: &Value) -> String {
    let mut out = String::new();
    write_go_syntax(value, &mut out);
    out
}

fn write_go_syntax(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("interface {}(nil)"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&applyset_merge::value::go_v_float(*f)),
        Value::String(s) => out.push_str(&go_quote(s)),
        Value::Array(items) => {
            out.push_str("[]interface {}{");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                applyset_merge::value::deeper(|| write_go_syntax(item, out));
            }
            out.push('}');
        }
        Value::Object(map) => {
            out.push_str("map[string]interface {}{");
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&go_quote(key));
                out.push(':');
                applyset_merge::value::deeper(|| write_go_syntax(item, out));
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unusable(output: Option<&str>, template: Option<&str>) -> PrintError {
        match OutputFormat::resolve(&PrintFlags { output, template, ..Default::default() }) {
            OutputFormat::Unusable(error) => error,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unusable_formats_say_what_kubectl_says() {
        let error = unusable(Some("wide"), None);
        assert!(matches!(&error, PrintError::UnknownFormat { output } if output == "wide"));
        assert_eq!(
            error.to_string(),
            r#"unable to match a printer suitable for the output format "wide", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,yaml"#
        );
        let error = unusable(Some("jsonpath"), None);
        assert!(matches!(error, PrintError::NoTemplate));
        assert_eq!(error.to_string(), "template format specified but no template given");
        let error = unusable(Some("jsonpath={.a"), None);
        assert!(matches!(error, PrintError::ParseJsonPath { error: JsonPathError::UnclosedAction, .. }));
        assert_eq!(error.to_string(), "error parsing jsonpath {.a, unclosed action\n");
        let error = unusable(Some("go-template={{.a}"), None);
        assert!(
            matches!(&error, PrintError::ParseTemplate { error, .. } if matches!(**error, TemplateError::Parse { .. }))
        );
        let error = unusable(Some("jsonpath-file=/nonexistent/applyset-template"), None);
        // kubectl's sentence holds the I/O error: it is data, not a source printed again.
        assert!(matches!(error, PrintError::ReadTemplate { .. }));
        assert!(std::error::Error::source(&error).is_none());
        assert_eq!(
            error.to_string(),
            "error reading --template /nonexistent/applyset-template, open /nonexistent/applyset-template: no such file or directory\n"
        );
    }
}
