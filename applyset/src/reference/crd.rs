//! `applyset.md`: the fields of the `ApplySet` and `ApplySetRecord` custom resources, read
//! from the CRDs `applyset crd` prints (their OpenAPI v3 schemas, generated from the Rust types
//! of `operator/api/`, doc comments included).

use std::fmt::Write;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use super::markdown::{Table, cell, code, code_list};
use crate::operator::api;

/// One field of a schema, named by its path from the resource's root: `spec.source.ref.branch`,
/// `spec.dependsOn[].name` (an item of an array), `status.inventory.states.*` (a map's value).
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub path: String,
    /// `string`, `integer (uint32)`, `array of object`, `map of string`.
    pub type_name: String,
    /// Listed in its parent object's `required` (a field of an optional object is required only
    /// when that object is given).
    pub required: bool,
    pub default: Option<Value>,
    /// The allowed values (`enum`), without the `null` of an optional enum.
    pub allowed: Vec<String>,
    /// Validation beyond the type (pattern, lengths, bounds, CEL rules' messages), each as
    /// Markdown for a table cell.
    pub constraints: Vec<String>,
    pub description: String,
}

/// Every field under the schema `schema` of the object at `path` (`spec`), depth first, in the
/// schema's order (alphabetical: serde_json's maps are sorted).
pub fn fields(path: &str, schema: &Value) -> Vec<Field> {
    let mut fields = Vec::new();
    collect_children(path, schema, &mut fields);
    fields
}

fn collect_children(path: &str, schema: &Value, fields: &mut Vec<Field>) {
    let required: Vec<&str> =
        schema["required"].as_array().map(|names| names.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            let child = format!("{path}.{name}");
            fields.push(field(&child, property, required.contains(&name.as_str())));
            collect_children(&child, property, fields);
        }
    }
    if schema["items"].is_object() {
        collect_children(&format!("{path}[]"), &schema["items"], fields);
    }
    if schema["additionalProperties"].is_object() {
        collect_children(&format!("{path}.*"), &schema["additionalProperties"], fields);
    }
}

fn field(path: &str, schema: &Value, required: bool) -> Field {
    let allowed = schema["enum"].as_array().map(|values| values.iter().filter_map(Value::as_str).map(String::from));
    Field {
        path: path.to_owned(),
        type_name: type_name(schema),
        required,
        default: schema.get("default").cloned(),
        allowed: allowed.map(Iterator::collect).unwrap_or_default(),
        constraints: constraints(schema),
        description: schema["description"].as_str().unwrap_or_default().to_owned(),
    }
}

/// The schema's type as a reader says it: arrays and maps by what they hold, integers and
/// strings with their format.
fn type_name(schema: &Value) -> String {
    if schema["x-kubernetes-int-or-string"] == true {
        return "integer or string".into();
    }
    match schema["type"].as_str() {
        Some("array") => format!("array of {}", type_name(&schema["items"])),
        Some("object") if schema["additionalProperties"].is_object() => {
            format!("map of {}", type_name(&schema["additionalProperties"]))
        }
        Some(type_) => match schema["format"].as_str() {
            Some(format) => format!("{type_} ({format})"),
            None => type_.to_owned(),
        },
        None => "any".into(),
    }
}

fn constraints(schema: &Value) -> Vec<String> {
    let mut constraints = Vec::new();
    if let Some(pattern) = schema["pattern"].as_str() {
        constraints.push(format!("matches {}", code(pattern)));
    }
    let unsigned = schema["format"].as_str().is_some_and(|format| format.starts_with("uint"));
    // Keyword, wording, and what is counted (made plural unless the bound is 1).
    let bounds = [
        ("minLength", "at least", " character"),
        ("maxLength", "at most", " character"),
        ("minItems", "at least", " item"),
        ("maxItems", "at most", " item"),
        ("minimum", "at least", ""),
        ("maximum", "at most", ""),
    ];
    for (keyword, wording, unit) in bounds {
        let Some(bound) = schema[keyword].as_f64() else { continue };
        // An unsigned integer's 0 says what its format says already.
        if keyword == "minimum" && unsigned && bound == 0.0 {
            continue;
        }
        let plural = if unit.is_empty() || bound == 1.0 { "" } else { "s" };
        constraints.push(format!("{wording} {}{unit}{plural}", number(bound)));
    }
    for rule in schema["x-kubernetes-validations"].as_array().into_iter().flatten() {
        match rule["message"].as_str() {
            Some(message) => constraints.push(cell(message)),
            None => constraints.push(format!("the rule {}", code(rule["rule"].as_str().unwrap_or_default()))),
        }
    }
    constraints
}

/// A JSON number as written by hand: `100` rather than `100.0`.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 { format!("{}", value as i64) } else { value.to_string() }
}

/// The table of `fields`: field, type, required, default, description (with the allowed values
/// and the validation).
pub fn fields_table(fields: &[Field]) -> Table {
    let mut table = Table::new(&["Field", "Type", "Required", "Default", "Description"]);
    for field in fields {
        let mut description = cell(&field.description);
        let mut notes = Vec::new();
        if !field.allowed.is_empty() {
            notes.push(format!("One of {}.", code_list(&field.allowed)));
        }
        if !field.constraints.is_empty() {
            notes.push(format!("Validation: {}.", field.constraints.join("; ")));
        }
        for note in notes {
            if !description.is_empty() {
                description.push_str("<br><br>");
            }
            description.push_str(&note);
        }
        let default = match &field.default {
            Some(Value::String(text)) => code(text),
            Some(value) => code(&value.to_string()),
            None => String::new(),
        };
        let required = if field.required { "required" } else { "optional" };
        table.row(vec![code(&field.path), cell(&field.type_name), required.to_owned(), default, description]);
    }
    table
}

/// The section of one custom resource: what it is (group, version, kind, scope, names, printer
/// columns) and a table per top-level part of its schema (`spec`, `status`).
pub fn resource_section(crd: &CustomResourceDefinition, heading: &str) -> String {
    let names = &crd.spec.names;
    let version = crd.spec.versions.first().expect("a CRD has a version");
    let schema = version.schema.as_ref().and_then(|schema| schema.open_api_v3_schema.as_ref());
    let schema = serde_json::to_value(schema).expect("a schema serialises");
    let mut out = format!("{heading} {}\n\n", names.kind);
    let _ = writeln!(out, "- API version: {}", code(&format!("{}/{}", crd.spec.group, version.name)));
    let _ = writeln!(out, "- Kind: {}", code(&names.kind));
    let _ = writeln!(out, "- Scope: {}", crd.spec.scope);
    let mut resource_names = vec![names.plural.clone()];
    resource_names.extend(names.singular.clone());
    resource_names.extend(names.short_names.iter().flatten().cloned());
    let _ = writeln!(out, "- Names: {}", code_list(&resource_names));
    if let Some(categories) = names.categories.as_ref().filter(|categories| !categories.is_empty()) {
        let _ = writeln!(out, "- Categories: {}", code_list(categories));
    }
    out.push('\n');
    if let Some(spec_description) = schema["properties"]["spec"]["description"].as_str() {
        let _ = writeln!(out, "{}\n", cell(spec_description));
    }
    let columns = version.additional_printer_columns.iter().flatten();
    let mut printed = Table::new(&["Column", "Type", "JSONPath"]);
    for column in columns {
        printed.row(vec![cell(&column.name), cell(&column.type_), code(&column.json_path)]);
    }
    if !printed.is_empty() {
        let _ = writeln!(out, "`kubectl get` shows:\n\n{}", printed.render());
    }
    for part in ["spec", "status"] {
        let part_schema = &schema["properties"][part];
        if part_schema.is_null() {
            continue;
        }
        let _ = writeln!(out, "{heading}# {}\n", code(part));
        let _ = writeln!(out, "{}", fields_table(&fields(part, part_schema)).render());
    }
    out
}

/// The page: `ApplySet`, then `ApplySetRecord`.
pub fn page() -> String {
    let mut out = super::header("applyset/src/operator/api/ (the CRDs `applyset crd` prints)");
    out.push_str("# ApplySet reference\n\n");
    out.push_str(
        "Every field of the custom resources, by its path from the object's root: `a.b` is field `b` of \
         object `a`, `a[]` an item of the array `a`, `a.*` a value of the map `a`. A required field is \
         required within its parent: a field of an optional object is required only when that object is \
         given.\n\n",
    );
    out.push_str(&resource_section(&api::crd(), "##"));
    out.push('\n');
    out.push_str(&resource_section(&api::record_crd(), "##"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn small_schema() -> Value {
        json!({
            "type": "object",
            "required": ["source"],
            "properties": {
                "interval": {"type": "string", "default": "5m", "pattern": "^[0-9]+m$", "description": "How often."},
                "mode": {"type": "string", "enum": ["Correct", "Report", null], "nullable": true},
                "source": {
                    "type": "object",
                    "description": "Where from.",
                    "required": ["url"],
                    "properties": {"url": {"type": "string", "minLength": 1, "description": "The | URL."}},
                    "x-kubernetes-validations": [{"rule": "true", "message": "set one"}]
                },
                "counts": {"type": "object", "additionalProperties": {"type": "integer", "format": "uint64", "minimum": 0.0}},
                "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "percent": {"type": "integer", "format": "uint32", "minimum": 0.0, "maximum": 100.0}
            }
        })
    }

    #[test]
    fn fields_are_named_by_their_dotted_path() {
        let paths: Vec<String> = fields("spec", &small_schema()).into_iter().map(|field| field.path).collect();
        assert_eq!(
            paths,
            [
                "spec.counts",
                "spec.interval",
                "spec.items",
                "spec.items[].name",
                "spec.mode",
                "spec.percent",
                "spec.source",
                "spec.source.url"
            ]
        );
    }

    #[test]
    fn a_field_has_its_type_requirement_default_values_and_rules() {
        let fields = fields("spec", &small_schema());
        let by_path = |path: &str| fields.iter().find(|field| field.path == path).unwrap().clone();
        assert_eq!(by_path("spec.counts").type_name, "map of integer (uint64)");
        assert_eq!(by_path("spec.items").type_name, "array of object");
        assert_eq!(by_path("spec.interval").default, Some(json!("5m")));
        assert_eq!(by_path("spec.mode").allowed, ["Correct", "Report"]);
        assert!(by_path("spec.source").required);
        assert!(!by_path("spec.mode").required);
        assert_eq!(by_path("spec.source").constraints, ["set one"]);
        assert_eq!(by_path("spec.percent").constraints, ["at most 100"], "an unsigned integer's minimum 0 is implied");
        assert_eq!(by_path("spec.source.url").constraints, ["at least 1 character"]);
    }

    #[test]
    fn the_table_of_a_small_schema() {
        let schema = json!({
            "type": "object",
            "required": ["url"],
            "properties": {
                "mode": {"type": "string", "default": "Correct", "enum": ["Correct", "Report"], "description": "What to do\nwith drift."},
                "url": {"type": "string", "pattern": "^(https|ssh)://", "maxLength": 200, "description": "The repository | its URL."}
            }
        });
        let expected = "\
| Field | Type | Required | Default | Description |
| --- | --- | --- | --- | --- |
| `spec.mode` | string | optional | `Correct` | What to do with drift.<br><br>One of `Correct`, `Report`. |
| `spec.url` | string | required |  | The repository \\| its URL.<br><br>Validation: matches `^(https\\|ssh)://`; at most 200 characters. |
";
        assert_eq!(fields_table(&fields("spec", &schema)).render(), expected);
    }

    #[test]
    fn the_page_covers_both_resources() {
        let page = page();
        assert!(page.starts_with("<!-- Generated by"), "{page}");
        assert!(page.contains("## ApplySet\n"), "{page}");
        assert!(page.contains("## ApplySetRecord\n"), "{page}");
        assert!(page.contains("| `spec.source.url` |"), "{page}");
        assert!(page.contains("| `spec.applySet` |"), "{page}");
    }
}
