use applyset_merge::Value;

use super::{CallError, ExecError, GoTemplate, SyntaxError, TemplateError};

mod cases;
mod more_cases;

fn run(template: &str, data: &Value, strict: bool) -> Result<String, TemplateError> {
    let mut parsed = GoTemplate::parse(template)?;
    parsed.allow_missing_keys = !strict;
    parsed.execute(data)
}

#[test]
fn matches_go_text_template() {
    let mut failures = Vec::new();
    for case in cases::CASES.iter().chain(more_cases::MORE_CASES) {
        let data = Value::from_json_str(case.data).expect("case data is JSON");
        let got = run(case.template, &data, case.strict).map_err(|e| crate::causes::with_causes(&e));
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
        assert!(err.is_unsupported(), "{template}: {err}");
        assert!(crate::causes::with_causes(&err).contains("unsupported"), "{template}: {err}");
    }
    let go_errors = ["{{1 | 2}}", "{{.f.b}}", "{{index .l 5}}", "{{printf}}"];
    for template in go_errors {
        let err = run(template, &data, false).unwrap_err();
        assert!(!err.is_unsupported(), "{template}: {err}");
    }
}

/// Each layer's error is its own type, kept as the source of the one above it.
#[test]
fn errors_are_typed_by_layer() {
    let data = Value::from_json_str(r#"{"l":[1,2]}"#).unwrap();
    let parse = run("{{.a}", &data, false).unwrap_err();
    assert!(matches!(parse, TemplateError::Parse { line: 1, error: SyntaxError::Lex { .. } }), "{parse:?}");
    let missing = run("{{.a}}", &data, true).unwrap_err();
    assert!(
        matches!(&missing, TemplateError::Exec { error: ExecError::MissingKey(key), .. } if key == "a"),
        "{missing:?}"
    );
    assert_eq!(
        crate::causes::with_causes(&missing),
        r#"template: output:1:2: executing "output" at <.a>: map has no entry for key "a""#
    );
    let call = run("{{index .l 5}}", &data, false).unwrap_err();
    let source = std::error::Error::source(&call).expect("the executor's error");
    assert!(
        matches!(
            source.downcast_ref::<ExecError>(),
            Some(ExecError::Call { error, .. }) if **error == CallError::IndexOutOfRange(5)
        ),
        "{call:?}"
    );
}
