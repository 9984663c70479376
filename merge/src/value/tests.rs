//! The JSON value model's behaviour: Go's number typing, text and `%v` forms, parse errors.

use super::format::go_v_float;
use super::*;

fn parse(s: &str) -> Value {
    Value::from_json_str(s).unwrap()
}

#[test]
fn numbers_follow_go_typing() {
    assert_eq!(parse("1"), Value::Int(1));
    assert_eq!(parse("-0"), Value::Int(0));
    assert_eq!(parse("1.0"), Value::Float(1.0));
    assert_eq!(parse("1e3"), Value::Float(1000.0));
    assert_eq!(parse("9223372036854775807"), Value::Int(i64::MAX));
    assert!(matches!(parse("9223372036854775808"), Value::Float(_)));
    assert!(matches!(parse("123456789012345678901234"), Value::Float(_)));
    assert_ne!(parse("1"), parse("1.0"));
}

#[test]
fn floats_print_like_go_encoding_json() {
    for (f, want) in [
        (1.0, "1"),
        (0.1, "0.1"),
        (-0.0, "-0"),
        (1e6, "1000000"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (1.5e300, "1.5e+300"),
        (3.4028234663852886e38, "3.4028234663852886e+38"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
    ] {
        assert_eq!(go_json_float(f), want, "{f}");
    }
}

#[test]
fn floats_render_like_go_percent_v() {
    for (f, want) in [
        (1e6, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (999999.0, "999999"),
        (123456.0, "123456"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1e21, "1e+21"),
        (100.0, "100"),
        (2.5e-5, "2.5e-05"),
    ] {
        assert_eq!(go_v_float(f), want, "{f}");
    }
}

#[test]
fn strings_escape_like_go() {
    let v = Value::String("<a&b>\n\u{1}\u{2028}\"\\é".into());
    assert_eq!(v.to_json_string(), r#""\u003ca\u0026b\u003e\n\u0001\u2028\"\\é""#);
}

#[test]
fn keys_sorted_and_compact() {
    let v = parse(r#"{"b": 1, "a": [true, null], "$patch": "x", "B": {}}"#);
    assert_eq!(v.to_json_string(), r#"{"$patch":"x","B":{},"a":[true,null],"b":1}"#);
}

#[test]
fn duplicate_keys_last_wins() {
    assert_eq!(parse(r#"{"a":1,"a":2}"#), parse(r#"{"a":2}"#));
}

#[test]
fn parser_follows_go_rules() {
    assert_eq!(parse("-0.0"), Value::Float(-0.0));
    assert!(matches!(parse("-0.0"), Value::Float(f) if f.is_sign_negative()));
    assert_eq!(parse("-9223372036854775808"), Value::Int(i64::MIN));
    assert_eq!(
        parse(" \t\r\n{ \"a\" : [ 1 , 2.5e-3 ] } "),
        Value::Object(Map::from([("a".to_owned(), Value::Array(vec![Value::Int(1), Value::Float(0.0025)]))]))
    );
    assert_eq!(parse(r#""\u00e9\ud83d\ude00\n\/""#), Value::String("é😀\n/".into()));
    assert_eq!(parse(r#""\ud800x""#), Value::String("\u{fffd}x".into()));
    assert_eq!(Value::from_json_slice(b"\"a\xffb\"").unwrap(), Value::String("a\u{fffd}b".into()));
    for bad in
        ["", "01", "1.", "-", "+1", "1e", "[1,]", "{\"a\":1,}", "{a:1}", "tru", "1 2", "\"\u{1}\"", "1e400", "nul"]
    {
        assert!(Value::from_json_str(bad).is_err(), "{bad:?} should not parse");
    }
}

#[test]
fn nesting_up_to_the_limit_parses() {
    let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    assert!(Value::from_json_str(&ok).is_ok());
    let too_deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    assert!(Value::from_json_str(&too_deep).is_err());
}

#[test]
fn deeper_than_the_limit_is_an_error_not_a_crash() {
    let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    let err = Value::from_json_str(&deep).unwrap_err();
    assert!(err.0.contains("exceeded max depth"), "{err}");
    let far_too_deep = "{\"a\":".repeat(1_000_000);
    assert!(Value::from_json_str(&far_too_deep).unwrap_err().0.contains("exceeded max depth"));
}

/// `{"a":[{"a":[…leaf…]}]}`, `levels` containers deep, as JSON text.
fn nested_text(levels: usize, leaf: &str) -> String {
    let mut text = String::new();
    for level in 0..levels {
        text.push_str(if level % 2 == 0 { "{\"a\":" } else { "[" });
    }
    text.push_str(leaf);
    for level in (0..levels).rev() {
        text.push(if level % 2 == 0 { '}' } else { ']' });
    }
    text
}

#[test]
fn documents_nested_to_the_limit_work_on_a_small_stack() {
    // Tokio's worker threads have 2 MiB stacks: every operation must fit on one whatever the
    // depth, up to the limit.
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let text = nested_text(MAX_DEPTH, "1");
            let value = Value::from_json_str(&text).unwrap();
            assert_eq!(value.to_json_string(), text);
            let indented = value.to_json_indented("", 0);
            assert_eq!(Value::from_json_str(&indented).unwrap(), value);
            assert!(value.go_v_string().starts_with("map[a:[map[a:"));
            let copy = value.clone();
            assert_eq!(copy, value);
            let other = Value::from_json_str(&nested_text(MAX_DEPTH, "2")).unwrap();
            assert_ne!(other, value);
            assert_eq!(serde_json::to_string(&value).unwrap(), text);
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn indented_json_is_go_marshal_indent() {
    let value = Value::from_json_str(r#"{"b":[1,{"x":"<a>"}],"a":{},"c":[],"d":{"e":null}}"#).unwrap();
    assert_eq!(
        value.to_json_indented("    ", 0),
        "{\n    \"a\": {},\n    \"b\": [\n        1,\n        {\n            \"x\": \"\\u003ca\\u003e\"\n        }\n    ],\n    \"c\": [],\n    \"d\": {\n        \"e\": null\n    }\n}"
    );
    assert_eq!(Value::from_json_str("[]").unwrap().to_json_indented("  ", 3), "[]");
}

#[test]
fn as_sent_is_what_the_json_text_decodes_to() {
    let mut map = Map::new();
    map.insert("whole".into(), Value::Float(80.0));
    map.insert("million".into(), Value::Float(1e6));
    map.insert("negative_zero".into(), Value::Float(-0.0));
    map.insert("fraction".into(), Value::Float(1.5));
    map.insert("huge".into(), Value::Float(1e21));
    map.insert("list".into(), Value::Array(vec![Value::Float(2.0), Value::Int(2)]));
    let sent = Value::Object(map).as_sent();
    assert_eq!(
        sent,
        Value::from_json_str(
            r#"{"whole":80,"million":1000000,"negative_zero":0,"fraction":1.5,"huge":1e21,"list":[2,2]}"#
        )
        .unwrap()
    );
    // `1e21` is written with an exponent, so it stays a float; whole numbers below become ints.
    assert!(matches!(sent.as_object().unwrap()["huge"], Value::Float(_)));
    assert!(matches!(sent.as_object().unwrap()["whole"], Value::Int(80)));
}
