//! `applyset patch` as a user runs it: hand-written YAML/JSON files in, one JSON object out,
//! exit codes 0 / 1 (error naming the file) / 3 (conflict).

mod support;

use std::path::PathBuf;
use std::process::{Command, Output};

use applyset_merge::Value;

const APPS_V1: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../merge/tests/fixtures/openapi/apps-v1.json");
const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";

/// A scratch directory per test, under cargo's per-target temp dir.
fn scratch(test: &str) -> PathBuf {
    support::scratch_dir("patch_cli", test)
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn applyset(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_applyset")).args(args).output().expect("run applyset")
}

fn stdout_json(out: &Output) -> Value {
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(text.lines().count(), 1, "one JSON object on one line: {text}");
    Value::from_json_str(&text).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const LAST_APPLIED: &str = "# what was applied last time\n\
apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: app\n        image: app:1\n        env:\n        - {name: A, value: '1'}\n        - {name: B, value: '2'}\n";

const MANIFEST: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: app:2\n        env:\n        - {name: A, value: '1'}\n";

const LIVE: &str = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","uid":"u1"},
 "spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"app","image":"app:1","imagePullPolicy":"IfNotPresent",
 "env":[{"name":"A","value":"1"},{"name":"B","value":"2"},{"name":"INJECTED","value":"x"}]}]}}}}"#;

#[test]
fn three_way_prints_kubectls_patch_and_the_result() {
    let dir = scratch("three_way");
    let (o, m, c) = (write(&dir, "o.yaml", LAST_APPLIED), write(&dir, "m.yml", MANIFEST), write(&dir, "c.json", LIVE));
    let out = applyset(&[
        "patch",
        "three-way",
        "--original",
        &o,
        "--modified",
        &m,
        "--current",
        &c,
        "--openapi",
        APPS_V1,
        "--definition",
        DEPLOYMENT,
    ]);
    let out = stdout_json(&out);
    let obj = out.as_object().unwrap();
    assert_eq!(
        obj["patch"].to_json_string(),
        r#"{"spec":{"replicas":null,"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"$setElementOrder/env":[{"name":"A"}],"env":[{"$patch":"delete","name":"B"}],"image":"app:2","name":"app"}]}}}}"#
    );
    assert_eq!(
        obj["result"],
        Value::from_json_str(
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","uid":"u1"},
             "spec":{"template":{"spec":{"containers":[{"name":"app","image":"app:2","imagePullPolicy":"IfNotPresent",
             "env":[{"name":"A","value":"1"},{"name":"INJECTED","value":"x"}]}]}}}}"#
        )
        .unwrap()
    );
}

#[test]
fn two_way_and_apply_round_trip() {
    let dir = scratch("two_way");
    let (o, m) = (write(&dir, "o.yaml", LAST_APPLIED), write(&dir, "m.yaml", MANIFEST));
    let out = stdout_json(&applyset(&[
        "patch",
        "two-way",
        "--original",
        &o,
        "--modified",
        &m,
        "--openapi",
        APPS_V1,
        "--definition",
        DEPLOYMENT,
    ]));
    let obj = out.as_object().unwrap();
    let expected_result = applyset::document::parse_documents(MANIFEST).unwrap().remove(0);
    assert_eq!(obj["result"], expected_result);

    let patch = write(&dir, "p.json", &obj["patch"].to_json_string());
    let applied = stdout_json(&applyset(&[
        "patch",
        "apply",
        "--current",
        &o,
        "--patch",
        &patch,
        "--openapi",
        APPS_V1,
        "--definition",
        DEPLOYMENT,
    ]));
    assert_eq!(applied.as_object().unwrap().keys().collect::<Vec<_>>(), ["result"]);
    assert_eq!(applied.as_object().unwrap()["result"], expected_result);
}

#[test]
fn json_merge_path_replaces_lists_and_has_no_conflicts() {
    let dir = scratch("json_merge");
    let o = write(&dir, "o.yaml", "spec:\n  list: [{name: a, v: 1}]\n  map: {k1: 1, k2: 2}\n  keep: k\n");
    let m = write(&dir, "m.yaml", "spec:\n  list: [{name: a, v: 2}]\n  map: {k1: 1}\n");
    let c = write(
        &dir,
        "c.yaml",
        "spec:\n  list: [{name: a, v: 1}, {name: b}]\n  map: {k1: 1, k2: 2, k3: 3}\n  keep: k\n  serverField: s\nstatus: {ok: true}\n",
    );
    let out = stdout_json(&applyset(&[
        "patch",
        "three-way",
        "--original",
        &o,
        "--modified",
        &m,
        "--current",
        &c,
        "--json-merge",
        "--no-overwrite",
    ]));
    let obj = out.as_object().unwrap();
    assert_eq!(
        obj["patch"].to_json_string(),
        r#"{"spec":{"keep":null,"list":[{"name":"a","v":2}],"map":{"k2":null}}}"#
    );
    assert_eq!(
        obj["result"].to_json_string(),
        r#"{"spec":{"list":[{"name":"a","v":2}],"map":{"k1":1,"k3":3},"serverField":"s"},"status":{"ok":true}}"#
    );
}

#[test]
fn conflict_under_no_overwrite_exits_3() {
    let dir = scratch("conflict");
    let o = write(&dir, "o.yaml", "spec: {replicas: 2}\n");
    let m = write(&dir, "m.yaml", "spec: {replicas: 3}\n");
    let c = write(&dir, "c.yaml", "spec: {replicas: 5}\n");
    let args = [
        "patch",
        "three-way",
        "--original",
        &o,
        "--modified",
        &m,
        "--current",
        &c,
        "--openapi",
        APPS_V1,
        "--definition",
        DEPLOYMENT,
    ];
    let out = applyset(&[&args[..], &["--no-overwrite"]].concat());
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("conflict"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    // Without --no-overwrite the manifest wins.
    let out = stdout_json(&applyset(&args));
    assert_eq!(out.as_object().unwrap()["patch"].to_json_string(), r#"{"spec":{"replicas":3}}"#);
}

#[test]
fn malformed_yaml_names_the_file_and_position() {
    let dir = scratch("malformed");
    let o = write(&dir, "o.yaml", "spec: {}\n");
    let bad = write(&dir, "broken.yaml", "spec:\n  replicas: [1, 2\n");
    let out = applyset(&["patch", "two-way", "--original", &o, "--modified", &bad, "--json-merge"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("broken.yaml") && err.contains("line"), "{err}");
}

#[test]
fn engine_errors_name_the_files_and_the_field() {
    let dir = scratch("engine_error");
    let o = write(&dir, "o.yaml", "spec:\n  foo: {a: 1}\n");
    let m = write(&dir, "m.yaml", "spec:\n  foo: {a: 2}\n");
    let out = applyset(&[
        "patch",
        "two-way",
        "--original",
        &o,
        "--modified",
        &m,
        "--openapi",
        APPS_V1,
        "--definition",
        DEPLOYMENT,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("o.yaml") && err.contains("m.yaml") && err.contains(r#"spec.foo: unable to find api field "foo""#),
        "{err}"
    );
}

#[test]
fn bad_schema_arguments_are_explained() {
    let dir = scratch("schema_args");
    let o = write(&dir, "o.yaml", "a: 1\n");
    // No schema at all.
    let out = applyset(&["patch", "two-way", "--original", &o, "--modified", &o]);
    assert_eq!(out.status.code(), Some(2), "clap usage error");
    assert!(stderr(&out).contains("--openapi") || stderr(&out).contains("--json-merge"), "{}", stderr(&out));
    // Unknown definition.
    let out = applyset(&[
        "patch",
        "two-way",
        "--original",
        &o,
        "--modified",
        &o,
        "--openapi",
        APPS_V1,
        "--definition",
        "NoSuchKind",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("NoSuchKind"), "{}", stderr(&out));
    // A document that is not an object.
    let list = write(&dir, "list.yaml", "- a\n- b\n");
    let out = applyset(&["patch", "two-way", "--original", &o, "--modified", &list, "--json-merge"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("list.yaml") && stderr(&out).contains("expected an object"), "{}", stderr(&out));
    // A missing file.
    let out = applyset(&["patch", "apply", "--current", &o, "--patch", "/nonexistent/p.json", "--json-merge"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("/nonexistent/p.json"), "{}", stderr(&out));
}

#[test]
fn bad_input_gives_a_clear_error_never_a_crash() {
    let dir = scratch("bad_input");
    let schema = ["--openapi", APPS_V1, "--definition", DEPLOYMENT];
    let pod = |env: &str| {
        format!("spec:\n  template:\n    spec:\n      containers:\n      - name: app\n        env: {env}\n")
    };
    let run_two_way = |o: &str, m: &str| {
        let (o, m) = (write(&dir, "o.yaml", o), write(&dir, "m.yaml", m));
        applyset(&[&["patch", "two-way", "--original", o.as_str(), "--modified", m.as_str()][..], &schema].concat())
    };
    let run_apply = |c: &str, p: &str| {
        let (c, p) = (write(&dir, "c.yaml", c), write(&dir, "p.yaml", p));
        applyset(&[&["patch", "apply", "--current", c.as_str(), "--patch", p.as_str()][..], &schema].concat())
    };
    let cases: Vec<(&str, Output, &str)> = vec![
        (
            "missing merge key",
            run_two_way(&pod("[{name: A, value: '1'}]"), &pod("[{value: '1'}]")),
            "does not contain declared merge key: name",
        ),
        (
            "mixed list element types",
            run_two_way("metadata: {finalizers: [a, 1]}\n", "metadata: {finalizers: [a]}\n"),
            "list element types are not identical",
        ),
        (
            "duplicate merge keys applied",
            run_apply(
                &pod("[{name: C, value: '0'}]"),
                "spec:\n  template:\n    spec:\n      containers:\n      - name: app\n        $setElementOrder/env: [{name: B}, {name: C}, {name: B}]\n        env: [{name: B, value: '3'}, {name: B, value: '1'}, {name: C, value: '2'}]\n",
            ),
            "doesn't match $setElementOrder list",
        ),
        (
            "unknown directive",
            run_apply(
                "spec: {selector: {matchLabels: {a: b}}}\n",
                "spec: {selector: {matchLabels: {$patch: merge, c: d}}}\n",
            ),
            "unknown patch type: merge",
        ),
        (
            "bad retainKeys",
            run_apply(
                "spec: {strategy: {type: RollingUpdate}}\n",
                "spec: {strategy: {$retainKeys: [type], rollingUpdate: {maxSurge: 1}}}\n",
            ),
            "invalid patch format of retainKeys",
        ),
    ];
    for (what, out, message) in cases {
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{what}: {}", stderr(&out));
    }

    for (name, deep) in [
        ("deep.json", format!("{{\"a\":{}1{}}}", "[".repeat(10_000), "]".repeat(10_000))),
        ("deep.yaml", format!("a: {}1{}\n", "[".repeat(10_000), "]".repeat(10_000))),
    ] {
        let path = write(&dir, name, &deep);
        let out = applyset(&["patch", "two-way", "--original", &path, "--modified", &path, "--json-merge"]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
        assert!(stderr(&out).contains(name), "{name}: {}", stderr(&out));
    }
}

#[test]
fn whole_number_floats_in_a_patch_act_as_the_apiserver_reads_them() {
    // `80.0` in the manifest: the patch is printed (and sent) as `80`, which the apiserver reads
    // as the integer merge key of the live port. The printed result must be what applying the
    // printed patch gives, not what the in-memory float would.
    let dir = scratch("whole_number_floats");
    let container = |ports: &str, args: &str| {
        format!(
            r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"web"}},"spec":{{"template":{{"spec":{{"containers":[{{"name":"app","args":{args},"ports":{ports}}}]}}}}}}}}"#
        )
    };
    let original = write(&dir, "o.json", &container(r#"[{"containerPort":80,"name":"http"}]"#, r#"["a"]"#));
    let modified = write(
        &dir,
        "m.json",
        &container(r#"[{"containerPort":80.0,"name":"web"},{"containerPort":1e3}]"#, "[1.0, -0.0]"),
    );
    let current =
        write(&dir, "c.json", &container(r#"[{"containerPort":80,"name":"http","protocol":"TCP"}]"#, r#"["a"]"#));
    let schema = ["--openapi", APPS_V1, "--definition", DEPLOYMENT];
    let three_way = stdout_json(&applyset(
        &[
            &["patch", "three-way", "--original", &original, "--modified", &modified, "--current", &current][..],
            &schema,
        ]
        .concat(),
    ));
    let printed_patch = write(&dir, "p.json", &three_way.as_object().unwrap()["patch"].to_json_string());
    let applied = stdout_json(&applyset(
        &[&["patch", "apply", "--current", &current, "--patch", &printed_patch][..], &schema].concat(),
    ));
    assert_eq!(three_way.as_object().unwrap()["result"], applied.as_object().unwrap()["result"]);
    // The port merged by its key (the live protocol kept), the list of numbers all integers.
    let container = &applied.as_object().unwrap()["result"].to_json_string();
    assert!(container.contains(r#""args":[1,0]"#), "{container}");
    assert!(container.contains(r#"{"containerPort":80,"name":"web","protocol":"TCP"}"#), "{container}");
}
