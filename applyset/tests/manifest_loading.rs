//! The manifest loader against real files: what `kubectl apply -f … [-R]` would read.

use std::fs;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use applyset::manifest::{LoadError, LoadedObject, find_duplicates, load};
use applyset_merge::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/manifests")
}

/// A fresh, empty directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("manifest_loading").join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn no_stdin() -> Cursor<Vec<u8>> {
    Cursor::new(Vec::new())
}

fn load_ok(paths: &[PathBuf], recursive: bool) -> Vec<LoadedObject> {
    load(paths, recursive, no_stdin()).unwrap_or_else(|e| panic!("load failed:\n{e}"))
}

fn load_err(paths: &[PathBuf], recursive: bool) -> LoadError {
    match load(paths, recursive, no_stdin()) {
        Ok(objects) => panic!("expected an error, loaded {} objects", objects.len()),
        Err(e) => e,
    }
}

fn name(o: &LoadedObject) -> String {
    o.object.as_object().unwrap()["metadata"].as_object().unwrap()["name"].as_str().unwrap().to_owned()
}

fn names(objects: &[LoadedObject]) -> Vec<String> {
    objects.iter().map(name).collect()
}

fn get<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, k| &v.as_object().unwrap_or_else(|| panic!("no object at {k}"))[*k])
}

#[test]
fn directory_without_recursion_reads_direct_files_in_lexical_order() {
    let objects = load_ok(&[fixtures().join("tree")], false);
    assert_eq!(
        names(&objects),
        ["hidden", "upper-z", "cm-a", "svc-a", "json-1", "json-2", "list-pod", "list-svc", "cm-l1", "cm-l2"]
    );
}

#[test]
fn recursion_adds_all_descendants() {
    let objects = load_ok(&[fixtures().join("tree")], true);
    let found = names(&objects);
    assert_eq!(found[..10], names(&load_ok(&[fixtures().join("tree")], false))[..]);
    assert_eq!(found[10..], ["deep", "nested"]);
    let deep = &objects[10];
    assert_eq!(deep.source.path, fixtures().join("tree/sub/deeper/deep.yml"));
}

#[test]
fn sources_name_file_and_document() {
    let objects = load_ok(&[fixtures().join("tree/a-multi.yaml"), fixtures().join("tree/b-stream.json")], false);
    let at: Vec<(String, usize, usize)> = objects
        .iter()
        .map(|o| (o.source.path.file_name().unwrap().to_string_lossy().into_owned(), o.source.document, o.source.line))
        .collect();
    assert_eq!(
        at,
        [
            ("a-multi.yaml".into(), 2, 3),
            ("a-multi.yaml".into(), 4, 12),
            ("b-stream.json".into(), 1, 1),
            ("b-stream.json".into(), 2, 2),
        ]
    );
    // JSON numbers keep Go's types: 1.0 stays a float in a JSON file.
    assert!(matches!(get(&objects[3].object, &["data", "float"]), Value::Float(_)));
}

#[test]
fn lists_are_flattened_and_items_report_the_list_source() {
    let objects = load_ok(&[fixtures().join("tree/c-list.yaml"), fixtures().join("tree/d-cmlist.yml")], false);
    assert_eq!(names(&objects), ["list-pod", "list-svc", "cm-l1", "cm-l2"]);
    assert_eq!(get(&objects[1].object, &["kind"]), &Value::String("Service".into()));
    // ConfigMapList items without kind/apiVersion inherit them.
    assert_eq!(
        objects[2].object.to_json_string(),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-l1"}}"#
    );
    assert!(objects[2].source.path.ends_with("d-cmlist.yml"));
    assert_eq!(objects[3].source.document, 1);
}

#[test]
fn explicit_files_are_read_whatever_their_extension() {
    let objects = load_ok(&[fixtures().join("odd.manifest")], false);
    assert_eq!(names(&objects), ["odd-extension"]);
    let objects = load_ok(&[fixtures().join("tree/f.yaml.bak")], false);
    assert_eq!(names(&objects), ["backup"]);
    // notes.txt is skipped when walking but read when named: it is no manifest.
    let e = load_err(&[fixtures().join("tree/notes.txt")], false);
    assert!(e.to_string().contains("notes.txt: document 1"), "{e}");
}

#[test]
fn globs_expand_like_go() {
    let pattern = fixtures().join("tree/*.yml");
    let objects = load_ok(&[pattern], false);
    assert_eq!(names(&objects), ["cm-l1", "cm-l2"]);
    let pattern = fixtures().join("tree/[a-b]-*");
    assert_eq!(names(&load_ok(&[pattern], false)), ["cm-a", "svc-a", "json-1", "json-2"]);
}

#[test]
fn stdin_is_read_once_in_argument_order() {
    let stdin = Cursor::new(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-stdin\n".to_vec());
    let objects =
        load(&[fixtures().join("odd.manifest"), PathBuf::from("-"), fixtures().join("tree/Z.yaml")], false, stdin)
            .unwrap();
    assert_eq!(names(&objects), ["odd-extension", "from-stdin", "upper-z"]);
    assert_eq!(objects[1].source.path, PathBuf::from("-"));

    let e = load(&[PathBuf::from("-"), PathBuf::from("-")], false, Cursor::new(Vec::new())).unwrap_err();
    assert_eq!(e.to_string(), "standard input cannot be used for multiple arguments");
}

#[test]
fn argument_errors() {
    let missing = fixtures().join("no-such-dir");
    let e = load_err(std::slice::from_ref(&missing), false);
    assert_eq!(e.to_string(), format!("the path \"{}\" does not exist", missing.display()));

    let e = load_err(&[PathBuf::from("https://example.invalid/app.yaml")], false);
    assert!(e.to_string().contains("URL is not supported") || e.to_string().contains("a URL is not supported"), "{e}");

    let empty = temp_dir("empty");
    fs::write(empty.join("readme.md"), "# nothing\n").unwrap();
    fs::create_dir(empty.join("sub")).unwrap();
    fs::write(empty.join("sub/x.yaml"), "kind: A\n").unwrap();
    let e = load_err(std::slice::from_ref(&empty), false);
    assert_eq!(
        e.to_string(),
        format!("error reading [{}]: recognized file extensions are [.json .yaml .yml]", empty.display())
    );
    // With -R the nested file is found.
    assert_eq!(load_ok(&[empty], true).len(), 1);

    // Every argument error is reported.
    let e = load_err(&[missing, fixtures().join("also-missing.yaml")], false);
    assert_eq!(e.errors.len(), 2);
}

#[test]
fn yaml_1_1_scalars_resolve_as_kubectl_does() {
    let objects = load_ok(&[fixtures().join("yaml11.yaml")], false);
    let o = &objects[0].object;
    assert_eq!(
        get(o, &["values"]).to_json_string(),
        concat!(
            r#"{"big":9223372036854776000,"date":"2001-12-14","datetime":"2001-12-14t21:59:43.10-05:00","empty":null,"#,
            r#""exp":1000,"float":2.5,"float_int":1,"hex":31,"invalid_octal":8,"literal":"yes\n","mode":493,"#,
            r#""n_value":false,"no_value":false,"null_word":null,"off_value":false,"on_value":true,"quoted":"yes","#,
            r#""single":"on","str_tag":"0755","thousand":1000,"tilde":null,"true_value":true,"version":1.1,"#,
            r#""y_value":true,"yes_value":true}"#
        )
    );
    assert!(matches!(get(o, &["values", "big"]), Value::Float(_)));
    assert!(matches!(get(o, &["values", "float_int"]), Value::Int(1)));
    assert_eq!(get(o, &["metadata", "labels", "quoted"]), &Value::String("yes".into()));
    // Keys: y/n/off become "true"/"false" (off, the later false key, wins); numbers become strings.
    assert_eq!(
        get(o, &["keys"]).to_json_string(),
        r#"{"1":"one","1.5":"one and a half","false":"c","on":"quoted key","true":"a"}"#
    );
    assert_eq!(get(o, &["anchored"]).to_json_string(), r#"{"image":"httpd","replicas":1}"#);
    assert_eq!(get(o, &["copy"]), get(o, &["defaults"]));
    assert_eq!(get(o, &["list_copy"]).to_json_string(), r#"["a","b"]"#);
}

#[test]
fn byte_order_marks_are_honoured() {
    let dir = temp_dir("bom");
    let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bom-é\n";
    let mut utf8 = vec![0xEF, 0xBB, 0xBF];
    utf8.extend_from_slice(doc.as_bytes());
    fs::write(dir.join("a-utf8.yaml"), utf8).unwrap();
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(doc.encode_utf16().flat_map(u16::to_le_bytes));
    fs::write(dir.join("b-utf16le.yaml"), utf16).unwrap();
    let mut json = vec![0xEF, 0xBB, 0xBF];
    json.extend_from_slice(br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bom-json"}}"#);
    fs::write(dir.join("c.json"), json).unwrap();
    assert_eq!(names(&load_ok(&[dir], false)), ["bom-é", "bom-é", "bom-json"]);
}

#[test]
fn every_broken_file_is_reported_with_file_and_document() {
    let dir = temp_dir("broken");
    fs::write(dir.join("a-good.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good}\n").unwrap();
    fs::write(
        dir.join("b-web.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: two\n  labels: a: b\n",
    )
    .unwrap();
    fs::write(
        dir.join("c-nokind.yaml"),
        "apiVersion: v1\nmetadata:\n  name: x\n---\nkind: ConfigMap\nmetadata: {name: later}\n",
    )
    .unwrap();
    fs::write(dir.join("d-separator.yaml"), "kind: A\n--- kind: B\n").unwrap();
    fs::write(dir.join("e-inf.yaml"), "kind: A\nvalue: .inf\n").unwrap();
    fs::write(dir.join("f-alias.yaml"), "kind: A\nvalue: *missing\n").unwrap();
    fs::write(dir.join("g-json.json"), "{\"kind\": \"A\"}\n{\"kind\": \n").unwrap();
    let e = load_err(std::slice::from_ref(&dir), false);
    let shown: Vec<String> = e.errors.iter().map(ToString::to_string).collect();
    let p = |f: &str| dir.join(f).display().to_string();
    assert_eq!(
        shown,
        [
            format!(
                "{}: document 2: line 9 column 12: mapping values are not allowed in this context",
                p("b-web.yaml")
            ),
            format!(
                "{}: document 1: line 1: Object 'Kind' is missing in '{{\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"x\"}}}}'",
                p("c-nokind.yaml")
            ),
            format!("{}: document 1: line 2: invalid Yaml document separator: kind: B", p("d-separator.yaml")),
            format!("{}: document 1: line 2 column 8: json: unsupported value: +Inf", p("e-inf.yaml")),
            format!("{}: document 1: line 2 column 8: unknown anchor 'missing' referenced", p("f-alias.yaml")),
            format!("{}: document 2: line 3: unexpected EOF", p("g-json.json")),
        ]
    );
}

#[test]
fn hostile_documents_fail_cleanly() {
    let dir = temp_dir("hostile");
    let deep = format!("kind: A\nspec: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
    fs::write(dir.join("deep.yaml"), deep).unwrap();
    let mut block = String::from("kind: A\nspec:\n");
    for i in 1..1_000 {
        block.push_str(&" ".repeat(i));
        block.push_str("a:\n");
    }
    fs::write(dir.join("deep-block.yaml"), block).unwrap();
    let deep_json = format!("{{\"kind\":\"A\",\"spec\":{}1{}}}", "[".repeat(10_000), "]".repeat(10_000));
    fs::write(dir.join("deep.json"), deep_json).unwrap();
    let mut bomb = String::from("kind: A\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..12 {
        bomb.push_str(&format!("a{i}: &a{i} [{}]\n", vec![format!("*a{}", i - 1); 10].join(", ")));
    }
    fs::write(dir.join("laughs.yaml"), bomb).unwrap();
    let e = load_err(std::slice::from_ref(&dir), false);
    let shown = e.to_string();
    assert_eq!(e.errors.len(), 4, "{shown}");
    assert!(
        shown.contains("deep.yaml: document 1: line 2") && shown.contains("nested deeper than 128 levels"),
        "{shown}"
    );
    assert!(shown.contains("deep-block.yaml: document 1"), "{shown}");
    assert!(shown.contains("deep.json: document 1"), "{shown}");
    assert!(
        shown.contains("laughs.yaml: document 1") && shown.contains("document contains excessive aliasing"),
        "{shown}"
    );
}

#[test]
fn duplicates_are_found_across_files() {
    let dir = temp_dir("dups");
    fs::write(dir.join("a.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n").unwrap();
    fs::write(
        dir.join("b.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n---\napiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: web}\n",
    )
    .unwrap();
    let objects = load_ok(std::slice::from_ref(&dir), false);
    let dups = find_duplicates(&objects);
    assert_eq!(dups.len(), 1);
    assert_eq!(
        dups[0].to_string(),
        format!(
            "Deployment.apps web is defined twice: in {}: document 1 (line 1) and in {}: document 2 (line 5)",
            dir.join("a.yaml").display(),
            dir.join("b.yaml").display()
        )
    );
}
