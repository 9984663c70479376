//! Helpers of the strategic-merge conformance runner: locating and loading the upstream
//! tables, the schemas they run against, and N() normalisation.

#![allow(dead_code)]

pub mod normalize;
pub mod struct_schema;

use std::path::PathBuf;
use std::sync::Arc;

use applyset_merge::openapi::OpenApi;
use applyset_merge::{Map, SchemaRef, Value};

use struct_schema::{Registry, StructSchema};

/// `tests/conformance/strategicpatch` (upstream vectors, kept in the repository).
pub fn conformance_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/strategicpatch");
    assert!(dir.is_dir(), "conformance data not found at {} (it is part of the repository)", dir.display());
    dir
}

fn read(path: &str) -> String {
    let path = conformance_dir().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The cases of one table file, each an object.
pub fn load_table(file: &str) -> Vec<Map> {
    let Some(Ok(cases)) = Value::from_json_str(&read(file)).ok().map(Value::into_array) else {
        panic!("{file}: not a JSON array");
    };
    assert!(!cases.is_empty(), "{file}: no cases");
    cases
        .into_iter()
        .map(|case| case.into_object().unwrap_or_else(|other| panic!("{file}: a case is not an object: {other}")))
        .collect()
}

pub fn registry() -> Arc<Registry> {
    let doc = Value::from_json_str(&read("struct-schemas.json")).expect("struct-schemas.json");
    Arc::new(Registry::from_document(&doc))
}

/// An OpenAPI test document. The v2 file is not strict JSON (a trailing comma), so every
/// file is read with a YAML parser, as upstream does.
fn openapi(file: &str) -> OpenApi {
    let doc: Value = serde_yaml_ng::from_str(&read(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    OpenApi::from_document(doc).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The three schemas of a test model (`mergeItem` or `precisionItem`), by conformance id.
pub fn schemas(model: &str) -> Vec<(String, SchemaRef)> {
    let (struct_name, suffix) = match model {
        "mergeItem" => ("MergeItem", "merge-item"),
        "precisionItem" => ("PrecisionItem", "precision-item"),
        other => panic!("unknown model {other}"),
    };
    let by_struct = StructSchema::for_value(registry(), Some(struct_name), None).expect("struct schema");
    let v2 = openapi(&format!("testdata/swagger-{suffix}.json"));
    let v3 = openapi(&format!("testdata/swagger-{suffix}-v3.json"));
    vec![
        (format!("{model}/struct"), Arc::new(by_struct) as SchemaRef),
        (format!("{model}/openapi-v2"), v2.schema(model).expect("v2 model")),
        (format!("{model}/openapi-v3"), v3.schema(model).expect("v3 model")),
    ]
}

/// A string field of a case ("" when absent).
pub fn text<'a>(case: &'a Map, field: &str) -> &'a str {
    case.get(field).and_then(Value::as_str).unwrap_or("")
}

pub fn description(case: &Map) -> String {
    format!("#{} {:?}", case.get("index").map(Value::to_json_string).unwrap_or_default(), text(case, "description"))
}

/// An error as a report prints it: its message, then each cause's, `: `-separated (a message
/// leaves its source to the report, as `merge::Error::At` leaves the error found at its path).
pub fn reported(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}
