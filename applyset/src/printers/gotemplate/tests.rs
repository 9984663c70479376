use applyset_merge::Value;

use super::GoTemplate;

mod cases;
mod more_cases;

fn run(template: &str, data: &Value, strict: bool) -> Result<String, String> {
    let mut parsed = GoTemplate::parse(template)?;
    parsed.allow_missing_keys = !strict;
    parsed.execute(data)
}

#[test]
fn matches_go_text_template() {
    let mut failures = Vec::new();
    for case in cases::CASES.iter().chain(more_cases::MORE_CASES) {
        let data = Value::from_json_str(case.data).expect("case data is JSON");
        let got = run(case.template, &data, case.strict);
        let expected = case.expected.map(str::to_string).map_err(str::to_string);
        if got != expected {
            failures.push(format!("{:?}\n  expected {expected:?}\n  got      {got:?}", case.template));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from Go:\n{}",
        failures.len(),
        cases::CASES.len() + more_cases::MORE_CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn allow_missing_keys_defaults_to_true() {
    let parsed = GoTemplate::parse("{{.a}}").unwrap();
    assert!(parsed.allow_missing_keys);
    assert_eq!(parsed.execute(&Value::from_json_str(cases::POD).unwrap()).unwrap(), "<no value>");
}

/// A 10,000-level document prints without overflowing the stack.
#[test]
fn deep_document_prints() {
    const DEPTH: usize = 10_000;
    let json = format!("{}1{}", r#"{"a":"#.repeat(DEPTH), "}".repeat(DEPTH));
    let data = Value::from_json_str(&json).unwrap();
    let out = std::thread::spawn(move || run("{{.}}", &data, false)).join().unwrap().unwrap();
    assert_eq!(out, format!("{}1{}", "map[a:".repeat(DEPTH), "]".repeat(DEPTH)));
}

/// Deeply nested parentheses parse through the growing stack too.
#[test]
fn deep_parentheses_parse() {
    let template = format!("{{{{{}1{}}}}}", "(".repeat(5_000), ")".repeat(5_000));
    let out = std::thread::spawn(move || run(&template, &Value::from_json_str("{}").unwrap(), false)).join().unwrap();
    assert_eq!(out.unwrap(), "1");
}

#[test]
fn unsupported_constructs_are_errors() {
    let data = Value::from_json_str(r#"{"f":1.5,"l":[1,2]}"#).unwrap();
    for template in ["{{1i}}", "{{printf \"%x\" .f}}", "{{printf \"%p\" .l}}", "{{slice .l 0 3}}", "{{0x1p-2}}"] {
        let err = run(template, &data, false).unwrap_err();
        assert!(err.contains("unsupported"), "{template}: {err}");
    }
}
