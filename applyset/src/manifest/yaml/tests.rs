//! go-yaml v2 / sigs.k8s.io/yaml behaviour, one document at a time.

use super::*;

fn json(text: &str) -> String {
    parse_document(text).unwrap().to_json_string()
}

fn err(text: &str) -> String {
    parse_document(text).unwrap_err().message
}

#[test]
fn scalars_follow_yaml_1_1() {
    assert_eq!(
        json(
            "a: yes\nb: on\nc: y\nd: \"yes\"\ne: 'on'\nf: 0755\ng: 0x1F\nh: 1_000\ni: ~\nj:\nk: 2001-12-14\nl: 1.0\nm: 1.5\nnn: 1e3\no: NO\nn: x\n"
        ),
        r#"{"a":true,"b":true,"c":true,"d":"yes","e":"on","f":493,"false":"x","g":31,"h":1000,"i":null,"j":null,"k":"2001-12-14","l":1,"m":1.5,"nn":1000,"o":false}"#
    );
}

#[test]
fn keys_become_strings() {
    assert_eq!(
        json("y: 1\nno: 2\n3: 3\n1.5: 4\n0x10: 5\n\"on\": 6\n"),
        r#"{"1.5":4,"16":5,"3":3,"false":2,"on":6,"true":1}"#
    );
    assert!(err("~: 1\n").contains("unsupported map key"));
    assert!(err("? [a]\n: 1\n").contains("invalid map key"));
}

#[test]
fn duplicate_keys_last_wins() {
    assert_eq!(json("a: 1\na: 2\nyes: x\ntrue: z\n"), r#"{"a":2,"true":"z"}"#);
}

#[test]
fn anchors_aliases_and_merges() {
    let doc = "base: &b {x: 1, z: 2}\nlist: &l [1, 2]\nuse:\n  <<: *b\n  z: 3\nalias: *l\nmulti:\n  <<: [{p: 1}, {p: 2, q: 2}]\nbefore:\n  x: 9\n  <<: *b\nquoted:\n  \"<<\": *b\n";
    assert_eq!(
        json(doc),
        r#"{"alias":[1,2],"base":{"x":1,"z":2},"before":{"x":1,"z":2},"list":[1,2],"multi":{"p":1,"q":2},"quoted":{"\u003c\u003c":{"x":1,"z":2}},"use":{"x":1,"z":3}}"#
    );
    assert_eq!(err("a: *nope\n"), "unknown anchor 'nope' referenced");
    assert_eq!(err("a: &x [*x]\n"), "anchor 'x' value contains itself");
    assert_eq!(err("a: &s 1\nb:\n  <<: *s\n"), "map merge requires map or sequence of maps as the value");
}

#[test]
fn tags() {
    assert_eq!(
        json(
            "a: !!str 123\nb: !!int \"12\"\nc: !!float 1\nd: !custom yes\ne: ! yes\nf: !!binary aGVsbG8=\ng: !!bool \"on\"\n"
        ),
        r#"{"a":"123","b":12,"c":1,"d":"yes","e":"yes","f":"hello","g":true}"#
    );
    assert_eq!(err("a: !!int abc\n"), "cannot decode !!str `abc` as a !!int");
}

#[test]
fn json_cannot_hold_inf_or_nan() {
    assert_eq!(err("a: .inf\n"), "json: unsupported value: +Inf");
    assert_eq!(err("a: -.inf\n"), "json: unsupported value: -Inf");
    assert_eq!(err("a: .nan\n"), "json: unsupported value: NaN");
}

#[test]
fn big_numbers() {
    assert_eq!(
        json("a: 9223372036854775807\nb: 9223372036854775808\nc: 1e21\nd: 123456789012345678901234\n"),
        r#"{"a":9223372036854775807,"b":9223372036854776000,"c":1e+21,"d":1.2345678901234569e+23}"#
    );
    assert!(matches!(parse_document("b: 9223372036854775808").unwrap().as_object().unwrap()["b"], Value::Float(_)));
    // Integral floats come back as Go's text reads: shortest digits padded with zeros.
    assert_eq!(
        json("a: 1152921504606846976.0\nb: -0.0\nc: 0x1FFFFFFFFFFFFFFFF\n"),
        r#"{"a":1152921504606847000,"b":0,"c":36893488147419103000}"#
    );
}

#[test]
fn syntax_errors_have_positions() {
    let e = parse_document("a: 1\nb: c: d\n").unwrap_err();
    assert_eq!(e.message, "mapping values are not allowed in this context");
    assert_eq!((e.line, e.column), (Some(2), Some(5)));
    assert!(parse_document("a: [1, 2\n").is_err());
    assert!(parse_document("a:\n\t- b\n").is_err());
}

#[test]
fn empty_and_null_documents() {
    assert_eq!(parse_document("").unwrap(), Value::Null);
    assert_eq!(parse_document("# only a comment\n").unwrap(), Value::Null);
    assert_eq!(parse_document("~\n").unwrap(), Value::Null);
    assert_eq!(parse_document("---\n").unwrap(), Value::Null);
    // Only the first document counts.
    assert_eq!(json("a: 1\n...\nb: 2\n"), r#"{"a":1}"#);
}

#[test]
fn nesting_past_the_limit_is_an_error_not_a_crash() {
    use applyset_merge::value::MAX_DEPTH;
    // On a stack the size of tokio's workers.
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let deeper_than = format!("nested deeper than {MAX_DEPTH}");
            let flow = |levels: usize| "[".repeat(levels) + &"]".repeat(levels);
            assert!(parse_document(&flow(MAX_DEPTH)).is_ok());
            assert!(err(&flow(MAX_DEPTH + 1)).contains(&deeper_than));
            assert!(err(&flow(10 * MAX_DEPTH)).contains(&deeper_than));
            let mut block = String::new();
            for i in 0..=MAX_DEPTH {
                block.push_str(&" ".repeat(i));
                block.push_str("a:\n");
            }
            assert!(err(&block).contains(&deeper_than));
            // Aliases cannot be used to build deeper values either.
            let half = MAX_DEPTH / 2 + 1;
            let doc = format!(
                "a: &a {}{}\nb: {}*a{}\n",
                "[".repeat(half),
                "]".repeat(half),
                "[".repeat(half),
                "]".repeat(half)
            );
            assert!(err(&doc).contains("nested deeper"));
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn alias_bombs_are_refused() {
    let mut doc = String::from("a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        doc.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 9].join(",")));
    }
    assert_eq!(err(&doc), "document contains excessive aliasing");
    // Long merge chains cannot overflow the stack.
    let mut chain = String::from("m0: &m0 {x: 1}\n");
    for i in 1..5000 {
        chain.push_str(&format!("m{i}: &m{i} {{<<: *m{}}}\n", i - 1));
    }
    assert!(parse_document(&chain).is_err());
}

#[test]
fn long_strings_through_aliases_are_bounded_by_the_budget() {
    // go-yaml's ratio check stops nothing under 1,000 nodes: 500 aliases of a 10 KB string
    // make 5 MB from 13 KB of text.
    let doc = format!("a: &a \"{}\"\nb: [{}]\n", "x".repeat(10_000), vec!["*a"; 500].join(","));
    let value = parse_document(&doc).unwrap();
    assert_eq!(value.as_object().unwrap()["b"].as_array().unwrap().len(), 500);
    let e = parse_document_limited(&doc, Some(1 << 20)).unwrap_err();
    assert_eq!(e.too_large, Some(LimitExceeded::Aliases { limit: 1 << 20 }));
    assert_eq!(e.message, "the document's aliases expand to more than 1048576 bytes (1 MiB) (the limit per document)");
    // Merges count too; a few aliases within the budget are fine.
    let merges = format!("a: &a {{k: \"{}\"}}\nb: {{<<: *a}}\nc: {{<<: *a}}\n", "x".repeat(1000));
    assert!(parse_document_limited(&merges, Some(1500)).is_err());
    assert!(parse_document_limited(&merges, Some(3000)).is_ok());
    // Without aliases the budget is not used, however large the document.
    assert!(parse_document_limited(&format!("a: \"{}\"\n", "x".repeat(10_000)), Some(1)).is_ok());
}
