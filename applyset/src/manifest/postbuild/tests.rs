//! Substitution, and the structure check of variables' values ([`super::shape`]).

use super::*;

fn vars(pairs: &[(&str, &str)]) -> Variables {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

#[test]
fn braces_defaults_escapes_and_bare_dollars() {
    let v = vars(&[("REPLICAS", "3"), ("EMPTY", ""), ("REGION", "eu")]);
    assert_eq!(substitute_text("replicas: ${REPLICAS}", &v).unwrap(), "replicas: 3");
    assert_eq!(substitute_text("r: ${MISSING:=2} e: ${EMPTY:-x} z: ${REGION:=us}", &v).unwrap(), "r: 2 e: x z: eu");
    assert_eq!(
        substitute_text("keep $${REGION} and $HOME and $ alone", &v).unwrap(),
        "keep ${REGION} and $HOME and $ alone"
    );
    assert_eq!(substitute_text("x: ${MISSING}", &v), Err(SubstituteError::Undefined("MISSING".into())));
    assert_eq!(substitute_text("x: ${EMPTY}", &v).unwrap(), "x: ", "set but empty is a value");
    assert!(matches!(substitute_text("x: ${REGION^}", &v), Err(SubstituteError::Unsupported(_))));
    assert_eq!(substitute_text("x: ${REGION", &v), Err(SubstituteError::Unclosed));
    assert!(valid_name("_A1") && !valid_name("1A") && !valid_name("A-B") && !valid_name(""));
}

#[test]
fn documents_are_typed_after_substitution_and_opt_outs_kept() {
    let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: ${REPLICAS}\n  note: \"${REPLICAS}\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: script\n  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata:\n  run: echo ${UNDEFINED}\n";
    let substituted = substitute_stream(text, &vars(&[("REPLICAS", "3")]), None).unwrap();
    let docs = parse_stream_limited(&substituted, None).unwrap();
    let spec = docs[0].value.as_object().unwrap()["spec"].as_object().unwrap().clone();
    assert_eq!(spec["replicas"], Value::Int(3), "unquoted: a number");
    assert_eq!(spec["note"], Value::String("3".into()), "quoted: a string");
    let data = docs[1].value.as_object().unwrap()["data"].as_object().unwrap().clone();
    assert_eq!(data["run"], Value::String("echo ${UNDEFINED}".into()), "opted out, even of strictness");
}

#[test]
fn an_undefined_variable_names_the_document_and_object() {
    let text = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: \"${NOPE}\"}\n";
    let error = substitute_stream(text, &Variables::new(), None).unwrap_err().to_string();
    assert_eq!(
        error,
        "document 2: configmap/b: ${NOPE} has no value (spec.postBuild.substitute or substituteFrom) and no default"
    );
    assert_eq!(substitute_stream("a: 1\n--- \nb: $${X}\n", &Variables::new(), None).unwrap(), "a: 1\n--- \nb: ${X}\n");
}

/// One ConfigMap document with `data` written as given (block context).
fn config_map(data: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n{data}")
}

/// The error substituting `text` with `pairs`, as the loader reports it.
fn refusal(text: &str, pairs: &[(&str, &str)]) -> String {
    match substitute_stream(text, &vars(pairs), None) {
        Ok(substituted) => panic!("accepted:\n{substituted}"),
        Err(error) => error.to_string(),
    }
}

fn parsed(text: &str) -> Vec<Value> {
    parse_stream_limited(text, None).unwrap().into_iter().map(|doc| doc.value).collect()
}

const FLOW_ATTACK: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${NAME}}\ndata: {k: v}\n";

#[test]
fn a_value_adding_a_key_to_a_flow_mapping_is_refused_naming_the_variable_not_the_value() {
    let error = refusal(FLOW_ATTACK, &[("NAME", "x, namespace: other")]);
    assert_eq!(
        error,
        "document 2: configmap/${NAME}: the value of ${NAME} changes the document's YAML structure (at metadata: \
         the mapping's entries went from 1 to 2); set spec.postBuild.allowStructuralValues to allow it"
    );
    assert!(!error.contains("other") && !error.contains("x,"), "{error}");
}

#[test]
fn allow_structural_values_lets_the_value_through() {
    let mut allowed = vars(&[("NAME", "x, namespace: other")]);
    allowed.allow_structural_values = true;
    let docs = parsed(&substitute_stream(FLOW_ATTACK, &allowed, None).unwrap());
    let metadata = docs[1].as_object().unwrap()["metadata"].as_object().unwrap().clone();
    assert_eq!(metadata["namespace"], Value::String("other".into()));
}

#[test]
fn a_value_adding_lines_items_or_documents_is_refused() {
    let block = config_map("  k: ${V}\n");
    let error = refusal(&block, &[("V", "a\nb: c")]);
    assert!(error.contains("document 1: configmap/cm: the value of ${V} changes"), "{error}");
    assert!(error.contains("(at the top level: the mapping's entries went from 4 to 5)"), "{error}");

    // A carriage return is a line break to YAML (the controller drops only newlines).
    let error = refusal(&block, &[("V", "a\rb: c")]);
    assert!(error.contains("the mapping's entries went from 4 to 5"), "{error}");

    let error = refusal(&block, &[("V", "[a, b]")]);
    assert!(error.contains("(at data.k: a scalar became a sequence)"), "{error}");
    let error = refusal(&block, &[("V", "{a: b}")]);
    assert!(error.contains("(at data.k: a scalar became a mapping)"), "{error}");

    let list = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\nargs:\n- ${ITEM}\n";
    let error = refusal(list, &[("ITEM", "a\n- b")]);
    assert!(error.contains("the value of ${ITEM} changes the document's YAML structure (at args: the sequence's items went from 1 to 2)"), "{error}");

    let error = refusal(&block, &[("V", "a\n---\nkind: Secret")]);
    assert!(error.contains("(the YAML documents went from 1 to 2)"), "{error}");

    // Out of its quotes: block context has no room for a second key on the line.
    let quoted = config_map("  k: \"${V}\"\n");
    let error = refusal(&quoted, &[("V", "a\", evil: \"b")]);
    assert!(
        error.contains(
            "the value of ${V} changes the document's YAML structure (the document no longer parses as YAML)"
        ),
        "{error}"
    );
    assert!(!error.contains("evil"), "{error}");
}

#[test]
fn a_key_written_in_git_may_not_change_nor_a_value_written_in_git() {
    // A quote opened in one value eats the key after it, and the mapping keeps its size.
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: ${A}, b: ${B}}\n";
    let error = refusal(text, &[("A", "x, namespace: \"y"), ("B", "\"")]);
    assert!(error.contains("the values of ${A} and ${B} change"), "{error}");
    // A duplicate key after a literal would win in the loader: the literal's place changed.
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: prod, name: ${N}}\n";
    let error = refusal(text, &[("N", "x, namespace: evil")]);
    assert!(error.contains("at metadata: the mapping's entries went from 2 to 3"), "{error}");
}

#[test]
fn only_the_variables_responsible_are_named_and_paths_show_placeholders() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${NAME}\n  labels:\n    ${KEY}: ${TEAM}\n";
    let error = refusal(text, &[("NAME", "web"), ("KEY", "team"), ("TEAM", "[a]")]);
    assert!(
        error.contains(
            "document 1: configmap/${NAME}: the value of ${TEAM} changes the document's YAML structure (at metadata.labels.${KEY}: a scalar became a sequence)"
        ),
        "{error}"
    );
}

#[test]
fn scalar_values_pass_and_take_their_yaml_type() {
    let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ${NAME}, labels: {${KEY}: ${TEAM}}}\nspec:\n  replicas: ${REPLICAS}\n  paused: ${PAUSED}\n  note: \"${NOTE}\"\n  single: '${NOTE}'\n  image: repo:${TAG}\n  description: ${WORDS}\n  args: [${ARG}, --flag]\n  list:\n  - ${ARG}\n  script: |\n    echo ${NOTE}\n  empty: ${EMPTY}\n  # ${WORDS} in a comment\n";
    let values = [
        ("NAME", "web"),
        ("KEY", "team"),
        ("TEAM", "blue"),
        ("REPLICAS", "3"),
        ("PAUSED", "false"),
        ("NOTE", "a: b, [c] {d} # e"),
        ("TAG", "1.27"),
        ("WORDS", "hello big world"),
        ("ARG", "--port=80"),
        ("EMPTY", ""),
    ];
    let docs = parsed(&substitute_stream(text, &vars(&values), None).unwrap());
    let spec = docs[0].as_object().unwrap()["spec"].as_object().unwrap().clone();
    assert_eq!(spec["replicas"], Value::Int(3));
    assert_eq!(spec["paused"], Value::Bool(false));
    assert_eq!(spec["note"], Value::String("a: b, [c] {d} # e".into()));
    assert_eq!(spec["single"], Value::String("a: b, [c] {d} # e".into()));
    assert_eq!(spec["image"], Value::String("repo:1.27".into()));
    assert_eq!(spec["description"], Value::String("hello big world".into()));
    assert_eq!(spec["empty"], Value::Null);
    // Defaults are the author's, written in git: not checked.
    let defaulted = config_map("  k: ${LIST:=[a, b]}\n");
    let docs = parsed(&substitute_stream(&defaulted, &Variables::new(), None).unwrap());
    assert!(matches!(docs[0].as_object().unwrap()["data"].as_object().unwrap()["k"], Value::Array(_)));
}

#[test]
fn an_opted_out_document_is_neither_substituted_nor_checked() {
    // `{name: ${NAME}, …}` does not parse as written: the opt-out is read with placeholders.
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${NAME}, annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}}\n";
    let kept = substitute_stream(text, &vars(&[("NAME", "x, namespace: other")]), None).unwrap();
    assert_eq!(kept, text);
}

proptest::proptest! {
    /// Any alphanumeric value keeps every shape: block and flow values, keys, items, quoted,
    /// inside longer scalars, block scalars; so do words with spaces, dots and dashes between.
    #[test]
    fn alphanumeric_values_keep_the_structure(a in "[A-Za-z0-9]{1,12}", b in "[A-Za-z0-9]([A-Za-z0-9 ._-]{0,10}[A-Za-z0-9])?") {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${A}, labels: {${A}: ${B}}}\ndata:\n  ${A}: ${B}\n  q: \"${A} ${B}\"\n  s: '${B}'\n  flow: [${A}, {k: ${B}}]\n  image: repo:${A}\n  block: |\n    ${B}\nitems:\n- ${A}\n- k: ${B}\n";
        let result = substitute_stream(text, &vars(&[("A", &a), ("B", &b)]), None);
        proptest::prop_assert!(result.is_ok(), "{a:?} {b:?}: {result:?}");
    }
}
