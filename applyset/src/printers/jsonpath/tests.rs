use applyset_merge::Value;

use super::{JsonPath, JsonPathError};

fn nodes() -> Value {
    Value::from_json_str(
        r#"{
  "kind": "List",
  "items": [
    {"kind": "None", "metadata": {"name": "127.0.0.1", "labels": {"kubernetes.io/hostname": "127.0.0.1"}},
     "status": {"capacity": {"cpu": "4"}, "ready": true, "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.1"}]}},
    {"kind": "None", "metadata": {"name": "127.0.0.2", "labels": {"kubernetes.io/hostname": "127.0.0.2"}},
     "status": {"capacity": {"cpu": "8"}, "ready": false, "addresses": [
       {"type": "LegacyHostIP", "address": "127.0.0.2"}, {"type": "another", "address": "127.0.0.3"}]}}
  ],
  "users": [
    {"name": "myself", "user": {}},
    {"name": "e2e", "user": {"username": "admin", "password": "secret"}}
  ],
  "numbers": [2, 6, 3, 7, 1.5, 1000000.0],
  "ints": [2, 6, 3, 7],
  "points": [{"id": "i1", "x": 4}, {"id": "i2", "x": -2, "z": 1}, {"id": "i7", "x": null}]
}"#,
    )
    .unwrap()
}

fn run(template: &str, allow_missing_keys: bool) -> Result<String, JsonPathError> {
    let mut path = JsonPath::parse(template)?;
    path.allow_missing_keys = allow_missing_keys;
    path.execute(&nodes())
}

#[test]
fn templates_print_what_kubectl_prints() {
    let cases = [
        ("hello", "hello"),
        ("{range .items[*]}{.metadata.name}, {end}{.kind}", "127.0.0.1, 127.0.0.2, List"),
        ("{range .items[*]}{.metadata.name}{\"\\t\"}{end}", "127.0.0.1\t127.0.0.2\t"),
        ("{.items[*].status.addresses[*].address}", "127.0.0.1 127.0.0.2 127.0.0.3"),
        ("{range .items[*]}{range .status.addresses[*]}{.address}, {end}{end}", "127.0.0.1, 127.0.0.2, 127.0.0.3, "),
        ("{.items[*]['metadata.name', 'status.capacity']}", r#"127.0.0.1 127.0.0.2 {"cpu":"4"} {"cpu":"8"}"#),
        (
            "{range .items[*]}[{.metadata.name}, {.status.capacity}] {end}",
            r#"[127.0.0.1, {"cpu":"4"}] [127.0.0.2, {"cpu":"8"}] "#,
        ),
        ("{.users[?(@.name==\"e2e\")].user.password}", "secret"),
        ("{.items[0].metadata.labels.kubernetes\\.io/hostname}", "127.0.0.1"),
        ("{.items[?(@.metadata.labels.kubernetes\\.io/hostname==\"127.0.0.1\")].kind}", "None"),
        ("{.items[?(@..ready==true)].metadata.name}", "127.0.0.1"),
        ("{..name}", "127.0.0.1 127.0.0.2 myself e2e"),
        ("{.ints[?(@<5)]}", "2 3"),
        ("{.ints[?(@>=6)]}", "6 7"),
        ("{.numbers[1,3]}", "6 7"),
        ("{.numbers[0:2]}", "2 6"),
        ("{.numbers[-1:]}", "1e+06"),
        ("{.numbers[4]}", "1.5"),
        ("{.numbers[::2]}", "2 3 1.5"),
        ("{.points[?(@.z)].id}", "i2"),
        ("{.points[0]['id']}", "i1"),
        ("{.points[-1]['x']}", "null"),
        ("{.users[0].user}", "{}"),
        ("{.missing}", ""),
        ("before-{.missing}after", "before-after"),
        ("{\"{\"}", "{"),
        ("{.kind.*}", "76 105 115 116"),
        ("{.numbers[2:2]}", ""),
        ("{range .users[*]}{.name}={.user.username};{end}", "myself=;e2e=admin;"),
    ];
    for (template, want) in cases {
        assert_eq!(run(template, true).as_deref(), Ok(want), "{template}");
    }
}

#[test]
fn execution_errors_are_client_go_s() {
    let cases = [
        ("{hello}", "unrecognized identifier hello"),
        ("{.kind[0]}", "string is not array or slice"),
        ("{.items[5]}", "array index out of bounds: index 5, length 2"),
        ("{.items[0:5]}", "array index out of bounds: index 4, length 2"),
        ("{.numbers[?(@<>10)]}", "unrecognized filter operator <>"),
        ("{.numbers[?(@<5)]}", "incompatible types for comparison"),
        ("{.ints[?(@==\"a\")]}", "incompatible types for comparison"),
        ("{range .items[*]}{@}{end}{end}", "not in range, nothing to end"),
        ("{.kind[?(@.a)]}", "List is not array or slice and cannot be filtered"),
        ("{.numbers[::0]}", "step must be > 0"),
    ];
    for (template, want) in cases {
        assert_eq!(run(template, true).map_err(|e| e.to_string()), Err(want.to_owned()), "{template}");
    }
    let missing = run("{.missing}", false).unwrap_err();
    assert_eq!(missing.to_string(), "missing is not found");
    assert_eq!(missing, JsonPathError::MissingKey("missing".into()));
}

#[test]
fn json_output_is_an_indented_array_per_action() {
    let mut path = JsonPath::parse("{.items[*].metadata.name}").unwrap();
    path.json_output = true;
    assert_eq!(path.execute(&nodes()).unwrap(), "[\n    \"127.0.0.1\",\n    \"127.0.0.2\"\n]\n");
}

#[test]
fn resolved_bounds_stay_in_the_node_as_in_client_go() {
    // `[-1]` is resolved against the first array (length 2 → index 1) and the resolved index
    // is kept: the second array (length 1) is then out of bounds, as kubectl reports it.
    let doc = Value::from_json_str(r#"{"a": [{"b": [1, 2]}, {"b": [3]}]}"#).unwrap();
    let path = JsonPath::parse("{range .a[*]}{.b[-1]}{end}").unwrap();
    let error = path.execute(&doc).unwrap_err();
    assert_eq!(error, JsonPathError::IndexOutOfBounds { index: 1, length: 1 });
    assert_eq!(error.to_string(), "array index out of bounds: index 1, length 1");
}
