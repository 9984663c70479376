//! The manifest loader against real files: what `kubectl apply -f … [-R]` would read.

mod support;

use std::fs;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use applyset::manifest::{
    ErrorKind, LimitExceeded, Limits, LoadError, LoadOptions, LoadedObject, find_duplicates, load, load_with,
};
use applyset_merge::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/manifests")
}

/// A fresh, empty directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    support::scratch_dir("manifest_loading", name)
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
    // One level past the limit under the root mapping.
    use applyset_merge::value::MAX_DEPTH;
    let deep = format!("kind: A\nspec: {}{}\n", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    fs::write(dir.join("deep.yaml"), deep).unwrap();
    let mut block = String::from("kind: A\nspec:\n");
    for i in 1..=MAX_DEPTH {
        block.push_str(&" ".repeat(i));
        block.push_str("a:\n");
    }
    fs::write(dir.join("deep-block.yaml"), block).unwrap();
    let deep_json = format!("{{\"kind\":\"A\",\"spec\":{}1{}}}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
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
        shown.contains("deep.yaml: document 1: line 2")
            && shown.contains(&format!("nested deeper than {MAX_DEPTH} levels")),
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

fn with_limits(file: Option<u64>, document: Option<u64>, total: Option<u64>) -> LoadOptions {
    LoadOptions { limits: Limits { file, document, total }, ..LoadOptions::default() }
}

fn load_with_err(paths: &[PathBuf], options: &LoadOptions) -> LoadError {
    match load_with(paths, true, no_stdin(), options) {
        Ok(objects) => panic!("expected an error, loaded {} objects", objects.len()),
        Err(e) => e,
    }
}

const MI: u64 = 1 << 20;

#[test]
fn a_file_over_the_cap_is_refused_from_its_size_without_being_read() {
    let dir = temp_dir("file-cap");
    fs::write(dir.join("a.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n").unwrap();
    // Sparse: 200 MiB on paper, nothing on disk. Read, it would be 200 MiB of NULs (a syntax
    // error); only its metadata can give its exact size.
    fs::File::create(dir.join("huge.yaml")).unwrap().set_len(200 * MI).unwrap();
    // A broken file is not reported either: no file is read when one is over a cap.
    fs::write(dir.join("z-broken.yaml"), "kind: [\n").unwrap();
    let e = load_with_err(std::slice::from_ref(&dir), &with_limits(Some(8 * MI), None, None));
    assert_eq!(e.errors.len(), 1, "{e}");
    let error = &e.errors[0];
    assert_eq!(error.kind, ErrorKind::TooLarge(LimitExceeded::File { size: 200 * MI, limit: 8 * MI }));
    assert_eq!(error.path.as_deref(), Some(dir.join("huge.yaml").as_path()));
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the file is 209715200 bytes (200 MiB), over the limit of 8388608 bytes (8 MiB) per manifest file; it was not read",
            dir.join("huge.yaml").display()
        )
    );
    // kubectl has no cap: without one the file is read (and is not YAML).
    fs::remove_file(dir.join("huge.yaml")).unwrap();
    fs::File::create(dir.join("huge.yaml")).unwrap().set_len(MI).unwrap();
    let e = load_err(std::slice::from_ref(&dir), true);
    assert!(e.errors.iter().all(|e| e.kind == ErrorKind::Syntax), "{e}");
    assert!(e.to_string().contains("huge.yaml"), "{e}");
}

#[test]
fn the_revision_cap_sums_files_in_walk_order() {
    let dir = temp_dir("total-cap");
    let config_map = |name: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{v: \"{}\"}}\n", "x".repeat(500))
    };
    fs::create_dir(dir.join("sub")).unwrap();
    fs::write(dir.join("a.yaml"), config_map("a")).unwrap();
    fs::write(dir.join("sub/b.yaml"), config_map("b")).unwrap();
    fs::write(dir.join("z.yaml"), config_map("z")).unwrap();
    fs::write(dir.join("notes.txt"), "x".repeat(10_000)).unwrap(); // not a manifest: not counted
    let one = config_map("a").len() as u64;
    let e = load_with_err(std::slice::from_ref(&dir), &with_limits(None, None, Some(2 * one + 1)));
    assert_eq!(e.errors.len(), 1, "{e}");
    // a.yaml, then sub/b.yaml, then z.yaml: the third crosses the cap.
    assert_eq!(e.errors[0].path.as_deref(), Some(dir.join("z.yaml").as_path()));
    assert_eq!(e.errors[0].kind, ErrorKind::TooLarge(LimitExceeded::Total { size: 3 * one, limit: 2 * one + 1 }));
    assert!(e.to_string().contains("over the limit of"), "{e}");
    // At the cap exactly, everything loads.
    let loaded =
        load_with(std::slice::from_ref(&dir), true, no_stdin(), &with_limits(Some(one), Some(one), Some(3 * one)))
            .unwrap();
    assert_eq!(names(&loaded), ["a", "b", "z"]);
}

#[test]
fn a_document_over_the_cap_is_refused_with_file_and_document() {
    let dir = temp_dir("document-cap");
    let big =
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: big}}\ndata: {{v: \"{}\"}}\n", "x".repeat(5000));
    fs::write(dir.join("app.yaml"), format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a}}\n---\n{big}"))
        .unwrap();
    let e = load_with_err(std::slice::from_ref(&dir), &with_limits(Some(MI), Some(4096), Some(MI)));
    assert_eq!(e.errors.len(), 1, "{e}");
    let error = &e.errors[0];
    assert_eq!(error.kind, ErrorKind::TooLarge(LimitExceeded::Document { size: big.len() as u64, limit: 4096 }));
    assert_eq!((error.document, error.line), (Some(2), Some(5)));
    assert!(
        e.to_string().starts_with(&format!(
            "{}: document 2: line 5: the document is {} bytes",
            dir.join("app.yaml").display(),
            big.len()
        )),
        "{e}"
    );
}

#[test]
fn standard_input_is_read_up_to_the_cap() {
    let input =
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a}}\ndata: {{v: \"{}\"}}\n", "x".repeat(5000));
    let options = with_limits(Some(1000), None, None);
    let e = load_with(&[PathBuf::from("-")], false, Cursor::new(input.clone().into_bytes()), &options).unwrap_err();
    assert_eq!(e.errors[0].kind, ErrorKind::TooLarge(LimitExceeded::File { size: 1001, limit: 1000 }));
    assert_eq!(e.errors[0].path.as_deref(), Some(Path::new("-")));
    assert_eq!(load(&[PathBuf::from("-")], false, Cursor::new(input.into_bytes())).unwrap().len(), 1);
}

#[test]
fn patch_directives_are_refused_only_when_asked() {
    let dir = temp_dir("directives");
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: prod}\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n        image: a\n        $patch: delete\n";
    fs::write(
        dir.join("a.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ok}}\n---\n{deployment}"),
    )
    .unwrap();
    fs::write(
        dir.join("b.yaml"),
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: s}\n  spec:\n    $retainKeys: [ports]\n",
    )
    .unwrap();
    // kubectl reads them as any other key.
    assert_eq!(load_ok(std::slice::from_ref(&dir), false).len(), 3);
    let options = LoadOptions { reject_patch_directives: true, ..LoadOptions::default() };
    let e = load_with_err(std::slice::from_ref(&dir), &options);
    assert!(e.errors.iter().all(|e| e.kind == ErrorKind::PatchDirective), "{e}");
    let lines: Vec<String> = e.errors.iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 2, "{e}");
    let prefix = format!(
        "{}: document 2: line 5: Deployment.apps prod/web: field spec.template.spec.containers[0].$patch: ",
        dir.join("a.yaml").display()
    );
    assert!(lines[0].starts_with(&prefix), "{}", lines[0]);
    assert!(lines[0].contains("patch directive"), "{}", lines[0]);
    let prefix = format!("{}: document 1: line 1: Service s: field spec.$retainKeys: ", dir.join("b.yaml").display());
    assert!(lines[1].starts_with(&prefix), "{}", lines[1]);
}

#[test]
fn with_a_base_dir_sources_and_errors_name_files_relative_to_it() {
    let base = temp_dir("base-dir");
    let dir = base.join("deploy");
    fs::create_dir_all(dir.join("nested")).unwrap();
    fs::write(dir.join("a.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n").unwrap();
    fs::write(dir.join("nested/b.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n").unwrap();
    let options = LoadOptions { base_dir: Some(base.clone()), ..LoadOptions::default() };
    let loaded = load_with(&[PathBuf::from("deploy")], true, no_stdin(), &options).unwrap();
    let sources: Vec<&Path> = loaded.iter().map(|o| o.source.path.as_path()).collect();
    assert_eq!(sources, [Path::new("deploy/a.yaml"), Path::new("deploy/nested/b.yaml")]);

    fs::write(dir.join("nested/c.yaml"), "kind: [\n").unwrap();
    let e = load_with_err(&[PathBuf::from("deploy")], &options);
    assert_eq!(e.errors.len(), 1, "{e}");
    assert_eq!(e.errors[0].path.as_deref(), Some(Path::new("deploy/nested/c.yaml")));
    let text = e.to_string();
    assert!(text.starts_with("deploy/nested/c.yaml: "), "{text}");
    assert!(!text.contains(&*base.to_string_lossy()), "the base directory leaks into: {text}");

    // A path that is not there is named as given, not as where it was looked for.
    let e = load_with_err(&[PathBuf::from("missing")], &options);
    assert_eq!(e.to_string(), "the path \"missing\" does not exist");
}
