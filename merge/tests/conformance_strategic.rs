//! Conformance of the strategic merge patch against upstream's `pkg/util/strategicpatch`
//! tables (`merge/tests/conformance/strategicpatch/strategicpatch.*.json`), with exactly the
//! assertions of that folder's README, against every schema of each table: the Go struct
//! tags (table-driven, `support::struct_schema`) and the OpenAPI v2 and v3 test documents.
//!
//! Each test prints `<table> [<schema>]: passed/total` (visible with `--nocapture`) and fails
//! with every failing case listed: index, description, step, expected and actual.

mod support;

use std::fmt::Write as _;

use applyset_merge::{
    Error, Map, Schema, SchemaRef, Value, create_three_way_merge_patch, create_two_way_merge_patch,
    strategic_merge_patch,
};
use support::normalize::normalize;
use support::{description, load_table, schemas, text};

/// Counts per schema and the failures of one table.
struct Report {
    table: &'static str,
    summary: String,
    failures: Vec<String>,
}

impl Report {
    fn new(table: &'static str) -> Report {
        Report { table, summary: String::new(), failures: Vec::new() }
    }

    /// Runs `check` on every case for one schema; a case passes when all `runs` pass.
    fn run(&mut self, schema_id: &str, cases: &[Map], runs: usize, check: impl Fn(&Map) -> Result<(), String>) {
        let mut passed = 0;
        for case in cases {
            let outcome = (0..runs).try_for_each(|_| check(case));
            match outcome {
                Ok(()) => passed += 1,
                Err(msg) => self.failures.push(format!("[{schema_id}] {}: {msg}", description(case))),
            }
        }
        let line = format!("{} [{schema_id}]: {passed}/{}", self.table, cases.len());
        println!("{line}");
        self.summary.push_str(&line);
        self.summary.push('\n');
    }

    fn finish(self) {
        if !self.failures.is_empty() {
            let mut msg = self.summary;
            let _ = writeln!(msg, "\n{} failing case(s):", self.failures.len());
            for f in &self.failures {
                let _ = writeln!(msg, "  {f}");
            }
            panic!("{msg}");
        }
    }
}

fn apply(doc: &Value, patch: &Value, schema: &dyn Schema) -> Result<Value, Error> {
    strategic_merge_patch(doc, patch, schema)
}

fn expect_eq(step: &str, expected: &Value, actual: &Value) -> Result<(), String> {
    if expected == actual {
        Ok(())
    } else {
        Err(format!("{step}:\n      expected {expected}\n      actual   {actual}"))
    }
}

fn expect_text(step: &str, expected: &str, actual: &str) -> Result<(), String> {
    if expected == actual {
        Ok(())
    } else {
        Err(format!("{step}:\n      expected {expected}\n      actual   {actual}"))
    }
}

fn step<T>(name: &str, r: Result<T, Error>) -> Result<T, String> {
    r.map_err(|e| format!("{name} failed: {e}"))
}

/// A document field of a case; `Null` stands for "no bytes" (missing or `null`), which the
/// engine reads as `{}` when it is an input.
fn doc(case: &Map, field: &str) -> Value {
    case.get(field).cloned().unwrap_or(Value::Null)
}

fn is_present(v: &Value) -> bool {
    !v.is_null()
}

/// The two-way and three-way checks shared by the create tables (README, "What to assert").
/// `n` is N() for the YAML table and the identity for raw tables.
fn check_create_case(
    case: &Map,
    schema: &dyn Schema,
    n: &dyn Fn(Value) -> Result<Value, String>,
) -> Result<(), String> {
    let original = n(doc(case, "original"))?;
    let modified = n(doc(case, "modified"))?;
    let current = n(doc(case, "current"))?;
    let two_way = n(doc(case, "twoWay"))?;
    let two_way_result = n(doc(case, "twoWayResult"))?;
    let three_way = n(doc(case, "threeWay"))?;
    let result = n(doc(case, "result"))?;

    // Two-way.
    let patch = step("two-way creation", create_two_way_merge_patch(&original, &modified, schema))?;
    expect_eq("two-way patch", &two_way, &patch)?;
    let applied = step("two-way application", apply(&original, &patch, schema))?;
    let want = if is_present(&two_way_result) { &two_way_result } else { &modified };
    expect_eq("two-way result", want, &applied)?;

    // Three-way, overwrite=false first; a conflict is required exactly for "conflict" cases.
    let expects_conflict = text(case, "description").contains("conflict");
    let result_wanted = if n_is_yaml(case) {
        matches!(&result, Value::Object(m) if !m.is_empty())
    } else {
        case.contains_key("result")
    };
    match create_three_way_merge_patch(&original, &modified, &current, schema, false) {
        Err(e) => {
            if !e.is_conflict() {
                return Err(format!("three-way creation failed: {e}"));
            }
            if !expects_conflict {
                return Err(format!("unexpected conflict: {e}"));
            }
            if result_wanted {
                let patch = step(
                    "three-way creation (overwrite)",
                    create_three_way_merge_patch(&original, &modified, &current, schema, true),
                )?;
                expect_eq("three-way patch (overwrite)", &three_way, &patch)?;
                let applied = step("three-way application", apply(&current, &patch, schema))?;
                expect_eq("three-way result", &result, &applied)?;
            }
        }
        Ok(patch) => {
            if expects_conflict || !result_wanted {
                return Err(format!("expected conflict did not occur (patch {patch})"));
            }
            expect_eq("three-way patch", &three_way, &patch)?;
            let applied = step("three-way application", apply(&current, &patch, schema))?;
            expect_eq("three-way result", &result, &applied)?;
        }
    }
    Ok(())
}

/// Raw tables carry `sourceLine` and no `normalized`; "result non-empty" there means the
/// field is present, in the YAML table it means a non-empty object.
fn n_is_yaml(case: &Map) -> bool {
    case.contains_key("normalized")
}

fn normalizer(schema: &dyn Schema) -> impl Fn(Value) -> Result<Value, String> + '_ {
    move |v: Value| {
        if v.is_null() {
            return Ok(v);
        }
        normalize(&v, schema).map_err(|e| format!("N() failed: {e}"))
    }
}

fn identity(v: Value) -> Result<Value, String> {
    Ok(v)
}

#[test]
fn sort_merge_list_test_case_data() {
    let cases = load_table("strategicpatch.sortMergeListTestCaseData.json");
    let mut report = Report::new("sortMergeListTestCaseData");
    for (id, schema) in schemas("mergeItem") {
        report.run(&id, &cases, 1, |case| {
            let sorted = step("N(original)", normalize(&doc(case, "original"), schema.as_ref()))?;
            expect_eq("N(original)", &doc(case, "sorted"), &sorted)
        });
    }
    report.finish();
}

/// Our N() against the `normalized` documents upstream's function produced (struct schema).
#[test]
fn normalisation_matches_upstream_normalized_documents() {
    let (id, schema) = schemas("mergeItem").remove(0);
    let mut report = Report::new("normalized documents");
    for file in [
        "strategicpatch.customStrategicMergePatchTestCaseData.json",
        "strategicpatch.createStrategicMergePatchTestCaseData.json",
    ] {
        let cases = load_table(file);
        report.run(&format!("{id}, {file}"), &cases, 1, |case| {
            let Some(Value::Object(normalized)) = case.get("normalized") else { return Ok(()) };
            for (field, want) in normalized {
                let got = step("N()", normalize(&doc(case, field), schema.as_ref()))?;
                expect_eq(&format!("N({field})"), want, &got)?;
            }
            Ok(())
        });
    }
    report.finish();
}

#[test]
fn custom_strategic_merge_patch_test_case_data() {
    let cases = load_table("strategicpatch.customStrategicMergePatchTestCaseData.json");
    let mut report = Report::new("customStrategicMergePatchTestCaseData");
    for (id, schema) in schemas("mergeItem") {
        let n = normalizer(schema.as_ref());
        report.run(&id, &cases, 1, |case| {
            let original = n(doc(case, "original"))?;
            let patch = n(doc(case, "twoWay"))?;
            let two_way_result = n(doc(case, "twoWayResult"))?;
            let want = if is_present(&two_way_result) { two_way_result } else { n(doc(case, "modified"))? };
            let got = step("apply", apply(&original, &patch, schema.as_ref()))?;
            expect_eq("apply(N(original), N(twoWay))", &want, &got)
        });
    }
    report.finish();
}

#[test]
fn custom_strategic_merge_patch_raw_test_cases() {
    let cases = load_table("strategicpatch.customStrategicMergePatchRawTestCases.json");
    let mut report = Report::new("customStrategicMergePatchRawTestCases");
    for (id, schema) in schemas("mergeItem") {
        report.run(&id, &cases, 1, |case| {
            let outcome = apply(&doc(case, "original"), &doc(case, "twoWay"), schema.as_ref());
            let expected_error = text(case, "expectedError");
            if !expected_error.is_empty() {
                return match outcome {
                    Err(e) if support::reported(&e).contains(expected_error) => Ok(()),
                    Err(e) => Err(format!("error {e:?} does not contain {expected_error:?}")),
                    Ok(v) => Err(format!("expected an error containing {expected_error:?}, got {v}")),
                };
            }
            let got = step("apply", outcome)?;
            let two_way_result = doc(case, "twoWayResult");
            let want = if is_present(&two_way_result) { two_way_result } else { doc(case, "modified") };
            expect_eq("apply(original, twoWay)", &want, &got)
        });
    }
    report.finish();
}

#[test]
fn create_strategic_merge_patch_test_case_data() {
    let cases = load_table("strategicpatch.createStrategicMergePatchTestCaseData.json");
    let mut report = Report::new("createStrategicMergePatchTestCaseData");
    for (id, schema) in schemas("mergeItem") {
        let n = normalizer(schema.as_ref());
        report.run(&id, &cases, 1, |case| check_create_case(case, schema.as_ref(), &n));
    }
    report.finish();
}

#[test]
fn strategic_merge_patch_raw_test_cases() {
    let cases = load_table("strategicpatch.strategicMergePatchRawTestCases.json");
    let mut report = Report::new("strategicMergePatchRawTestCases");
    for (id, schema) in schemas("mergeItem") {
        // Upstream runs the table 10 times per schema to shake out map-order dependence.
        report.run(&id, &cases, 10, |case| check_create_case(case, schema.as_ref(), &identity));
    }
    report.finish();
}

#[test]
fn replace_raw_extension_patch_test_cases() {
    let cases = load_table("strategicpatch.replaceRawExtensionPatchTestCases.json");
    let mut report = Report::new("replaceRawExtensionPatchTestCases");
    for (id, schema) in schemas("mergeItem") {
        report.run(&id, &cases, 1, |case| check_create_case(case, schema.as_ref(), &identity));
    }
    report.finish();
}

fn parse(text: &str) -> Result<Value, Error> {
    Value::from_json_str(text).map_err(|_| Error::BadJsonDoc)
}

#[test]
fn number_conversion() {
    let cases = load_table("strategicpatch.TestNumberConversion.json");
    let mut report = Report::new("TestNumberConversion");
    for (id, schema) in schemas("precisionItem") {
        report.run(&id, &cases, 1, |case| {
            let old = step("parse old", parse(text(case, "old")))?;
            let new = step("parse new", parse(text(case, "new")))?;
            let patch = step("two-way creation", create_two_way_merge_patch(&old, &new, schema.as_ref()))?;
            expect_text("patch", text(case, "expectedPatch"), &patch.to_json_string())?;
            let result = step("apply", apply(&old, &patch, schema.as_ref()))?;
            expect_text("result", text(case, "expectedResult"), &result.to_json_string())
        });
    }
    report.finish();
}

#[test]
fn unknown_field() {
    let cases = load_table("strategicpatch.TestUnknownField.json");
    let mut report = Report::new("TestUnknownField");
    for (id, schema) in schemas("mergeItem") {
        report.run(&id, &cases, 1, |case| {
            let original = step("parse original", parse(text(case, "original")))?;
            let current = step("parse current", parse(text(case, "current")))?;
            let modified = step("parse modified", parse(text(case, "modified")))?;

            let two_way_err = text(case, "expectedTwoWayErr");
            match create_two_way_merge_patch(&original, &modified, schema.as_ref()) {
                Err(e) if !two_way_err.is_empty() && support::reported(&e).contains(two_way_err) => {}
                Err(e) => return Err(format!("two-way creation failed: {e} (expected error {two_way_err:?})")),
                Ok(patch) => {
                    expect_text("two-way patch", text(case, "expectedTwoWay"), &patch.to_json_string())?;
                    let result = step("two-way application", apply(&original, &patch, schema.as_ref()))?;
                    expect_text("two-way result", text(case, "expectedTwoWayResult"), &result.to_json_string())?;
                }
            }

            let three_way_err = text(case, "expectedThreeWayErr");
            match create_three_way_merge_patch(&original, &modified, &current, schema.as_ref(), false) {
                Err(e) if !three_way_err.is_empty() && support::reported(&e).contains(three_way_err) => Ok(()),
                Err(e) => Err(format!("three-way creation failed: {e} (expected error {three_way_err:?})")),
                Ok(patch) => {
                    expect_text("three-way patch", text(case, "expectedThreeWay"), &patch.to_json_string())?;
                    let result = step("three-way application", apply(&current, &patch, schema.as_ref()))?;
                    expect_text("three-way result", text(case, "expectedThreeWayResult"), &result.to_json_string())
                }
            }
        });
    }
    report.finish();
}

#[test]
fn bad_arguments() {
    let cases = load_table("strategicpatch.TestStrategicMergePatch.badArguments.json");
    let mut report = Report::new("TestStrategicMergePatch.badArguments");
    let registry = support::registry();
    let each: Vec<(String, Option<SchemaRef>)> =
        schemas("mergeItem").into_iter().map(|(id, s)| (id, Some(s))).collect();
    for (id, schema) in each {
        report.run(&id, &cases, 1, |case| {
            let expected = text(case, "expectedError");
            let per_schema = case.get("schema").and_then(Value::as_str) == Some("each");
            let outcome: Result<Value, Error> = if per_schema {
                // The document bytes are parsed first; the schema is a real one.
                let schema = schema.as_ref().expect("schema");
                parse(text(case, "original"))
                    .and_then(|o| parse(text(case, "patch")).map(|p| (o, p)))
                    .and_then(|(o, p)| apply(&o, &p, schema.as_ref()))
            } else {
                // Go's argument checks on the value passed instead of a struct.
                let kind = case
                    .get("dataStruct")
                    .and_then(Value::as_object)
                    .and_then(|d| d.get("goKind"))
                    .and_then(Value::as_str);
                support::struct_schema::StructSchema::for_value(registry.clone(), None, kind).map(|_| Value::Null)
            };
            match outcome {
                Err(e) => expect_text("error", expected, &e.to_string()),
                Ok(v) => Err(format!("expected error {expected:?}, got {v}")),
            }
        });
    }
    report.finish();
}
