//! Conformance of the JSON merge patch against upstream's `pkg/util/jsonmergepatch` tables
//! (`merge/tests/conformance/strategicpatch/jsonmergepatch.*.json`), with the assertions of that
//! folder's README. Every case runs; a failure lists each failing case.

mod support;

use applyset_merge::{Map, Value, json_merge};
use support::load_table;

/// JSON value equality as the README defines it: key order is irrelevant (our maps are
/// sorted), array order matters, numbers compare by value (`1` equals `1.0`).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Float(y)) | (Value::Float(y), Value::Int(x)) => *x as f64 == *y,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| same_json(p, q)))
        }
        _ => a == b,
    }
}

/// Collects failures of one table and reports them together.
struct Table {
    name: &'static str,
    total: usize,
    failures: Vec<String>,
}

impl Table {
    fn new(name: &'static str) -> Table {
        Table { name, total: 0, failures: Vec::new() }
    }

    fn check(&mut self, case: &Map, outcome: Result<(), String>) {
        self.total += 1;
        if let Err(why) = outcome {
            self.failures.push(format!("  #{} {:?}: {why}", index(case), description(case)));
        }
    }

    fn finish(self) {
        let passed = self.total - self.failures.len();
        println!("{}: {passed}/{}", self.name, self.total);
        assert!(
            self.failures.is_empty(),
            "{} failures in {}:\n{}",
            self.failures.len(),
            self.name,
            self.failures.join("\n")
        );
    }
}

fn index(case: &Map) -> String {
    case.get("index").map(Value::to_json_string).unwrap_or_else(|| "?".into())
}

fn description(case: &Map) -> &str {
    case.get("description").and_then(Value::as_str).unwrap_or("")
}

/// A document field; a missing one is "no bytes", which upstream treats as `{}`.
fn document(case: &Map, field: &str) -> Value {
    case.get(field).cloned().unwrap_or_else(|| Value::Object(Map::new()))
}

/// An expected field, which every case must provide.
fn expected<'a>(case: &'a Map, field: &str) -> Result<&'a Value, String> {
    case.get(field).ok_or_else(|| format!("the case has no `{field}`"))
}

fn compare(what: &str, want: &Value, got: &Value) -> Result<(), String> {
    if same_json(want, got) { Ok(()) } else { Err(format!("{what}\n    expected: {want}\n    actual:   {got}")) }
}

#[test]
fn filter_null_test_case_data() {
    let mut table = Table::new("filterNullTestCaseData");
    for case in load_table("jsonmergepatch.filterNullTestCaseData.json") {
        let outcome = (|| {
            let Value::Object(obj) = expected(&case, "originalObj")? else {
                return Err("`originalObj` is not an object".into());
            };
            let with_null = Value::Object(json_merge::keep_or_delete_null(obj, true));
            compare("keepNull=true", expected(&case, "expectedWithNull")?, &with_null)?;
            let without_null = Value::Object(json_merge::keep_or_delete_null(obj, false));
            compare("keepNull=false", expected(&case, "expectedWithoutNull")?, &without_null)
        })();
        table.check(&case, outcome);
    }
    table.finish();
}

#[test]
fn create_json_merge_patch_test_case_data() {
    let mut table = Table::new("createJSONMergePatchTestCaseData");
    for case in load_table("jsonmergepatch.createJSONMergePatchTestCaseData.json") {
        let outcome = (|| {
            let (original, modified, current) =
                (document(&case, "original"), document(&case, "modified"), document(&case, "current"));
            // No case may fail, "conflict" in the description included.
            let patch = json_merge::create_three_way(&original, &modified, &current)
                .map_err(|e| format!("create_three_way failed: {e}"))?;
            compare("three-way patch", expected(&case, "threeWay")?, &patch)?;
            let result = json_merge::merge_patch(&current, &patch).map_err(|e| format!("merge_patch failed: {e}"))?;
            compare("merge_patch(current, patch)", expected(&case, "result")?, &result)
        })();
        table.check(&case, outcome);
    }
    table.finish();
}
