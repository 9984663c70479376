//! The rules of the spec that are easiest to get wrong (§15), with the exact values of its
//! [H] and [T] examples (§13 edge-case numbers in the test names' comments).

use std::sync::Arc;

use super::{create_three_way_merge_patch, create_two_way_merge_patch, strategic_merge_patch};
use crate::error::{Error, Result};
use crate::json_merge;
use crate::meta::{PatchMeta, Schema, SchemaRef};
use crate::value::{MAX_DEPTH, Map, Value};

/// Patch metadata by field name alone, with the strategies and keys of the built-in types
/// these examples use (spec §2.3). Unknown fields are untyped.
#[derive(Debug)]
struct ByName;

fn meta_of(key: &str) -> PatchMeta {
    match key {
        "containers" | "initContainers" | "env" | "imagePullSecrets" => PatchMeta::new("merge", "name"),
        "volumes" => PatchMeta::new("merge,retainKeys", "name"),
        "ports" => PatchMeta::new("merge", "containerPort"),
        "finalizers" => PatchMeta::new("merge", ""),
        "strategy" => PatchMeta::new("retainKeys", ""),
        _ => PatchMeta::default(),
    }
}

impl Schema for ByName {
    fn lookup_struct(&self, key: &str) -> Result<(SchemaRef, PatchMeta)> {
        Ok((Arc::new(ByName), meta_of(key)))
    }
    fn lookup_slice(&self, key: &str) -> Result<(SchemaRef, PatchMeta)> {
        Ok((Arc::new(ByName), meta_of(key)))
    }
    fn name(&self) -> String {
        "object".into()
    }
}

/// `error` and its source, as a report prints them.
fn reported(error: &Error) -> String {
    match std::error::Error::source(error) {
        Some(cause) => format!("{error}: {cause}"),
        None => error.to_string(),
    }
}

fn json(text: &str) -> Value {
    Value::from_json_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Three-way patch (overwrite) and its application to `current`, as text.
fn three_way(original: &str, modified: &str, current: &str) -> (String, String) {
    let current = json(current);
    let patch = create_three_way_merge_patch(&json(original), &json(modified), &current, &ByName, true).unwrap();
    let result = strategic_merge_patch(&current, &patch, &ByName).unwrap();
    (patch.to_json_string(), result.to_json_string())
}

fn pod(containers: &str) -> String {
    format!(r#"{{"spec":{{"template":{{"spec":{{"containers":{containers}}}}}}}}}"#)
}

/// Applies `patch`; an error is returned without its location (the text kubectl prints).
fn apply(doc: &str, patch: &str) -> Result<String> {
    strategic_merge_patch(&json(doc), &json(patch), &ByName).map(|v| v.to_json_string()).map_err(|e| e.cause().clone())
}

#[test]
fn deleting_and_adding_next_to_a_server_only_item_follows_go_slice_aliasing() {
    // §13.17: live [a,b,c], patch deletes b and adds d. A naive port gives [a,d,c].
    let (patch, result) = three_way(
        &pod(r#"[{"name":"a"},{"name":"b"}]"#),
        &pod(r#"[{"name":"a"},{"name":"d","image":"d"}]"#),
        &pod(r#"[{"name":"a"},{"name":"b"},{"name":"c"}]"#),
    );
    assert_eq!(
        patch,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"d"}],"containers":[{"image":"d","name":"d"},{"$patch":"delete","name":"b"}]}}}}"#
    );
    assert_eq!(result, pod(r#"[{"name":"a"},{"name":"c"},{"image":"d","name":"d"}]"#));
}

#[test]
fn new_items_go_ahead_of_server_only_items() {
    // §13.18 [H c36].
    let (patch, result) = three_way(
        &pod(r#"[{"name":"a"}]"#),
        &pod(r#"[{"name":"a"},{"name":"d"}]"#),
        &pod(r#"[{"name":"a"},{"name":"b"},{"name":"c"}]"#),
    );
    assert_eq!(
        patch,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"d"}],"containers":[{"name":"d"}]}}}}"#
    );
    assert_eq!(result, pod(r#"[{"name":"a"},{"name":"d"},{"name":"b"},{"name":"c"}]"#));
    // Without $setElementOrder, new items come first [H n3].
    assert_eq!(
        apply(r#"{"containers":[{"name":"a"}]}"#, r#"{"containers":[{"name":"b"}]}"#).unwrap(),
        r#"{"containers":[{"name":"b"},{"name":"a"}]}"#
    );
}

#[test]
fn unsorted_unchanged_finalizers_get_a_set_element_order_every_time() {
    // §13.7 [H c40]: the in-place sort of the live list makes it differ from the manifest.
    let doc = r#"{"metadata":{"finalizers":["b.io/x","a.io/y"]}}"#;
    assert_eq!(three_way(doc, doc, doc).0, r#"{"metadata":{"$setElementOrder/finalizers":["b.io/x","a.io/y"]}}"#);
    let sorted = r#"{"metadata":{"finalizers":["a.io/y","b.io/x"]}}"#;
    assert_eq!(three_way(sorted, sorted, sorted).0, "{}");
    // Lists of maps are not affected [H c40c].
    let maps = pod(r#"[{"name":"b"},{"name":"a"}]"#);
    assert_eq!(three_way(&maps, &maps, &maps).0, "{}");
}

#[test]
fn delete_from_primitive_list_is_sorted_then_swap_deduplicated() {
    // §13.13 [H c34, c34b].
    let doc = r#"{"metadata":{"finalizers":["b","a","c","a"]}}"#;
    let (patch, result) = three_way(doc, r#"{"metadata":{"finalizers":["z"]}}"#, doc);
    assert_eq!(
        patch,
        r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a","c","b"],"$setElementOrder/finalizers":["z"],"finalizers":["z"]}}"#
    );
    assert_eq!(result, r#"{"metadata":{"finalizers":["z"]}}"#);
    let doc = r#"{"metadata":{"finalizers":["x9","x10","x2","x2"]}}"#;
    let patch = create_two_way_merge_patch(&json(doc), &json(r#"{"metadata":{"finalizers":[]}}"#), &ByName).unwrap();
    assert_eq!(patch.to_json_string(), r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["x10","x2","x9"]}}"#);
}

#[test]
fn finalizers_behave_as_an_ordered_set() {
    // §13.10 [H c05].
    let (patch, result) = three_way(
        r#"{"metadata":{"finalizers":["a.io/x","b.io/y"]}}"#,
        r#"{"metadata":{"finalizers":["c.io/z","a.io/x"]}}"#,
        r#"{"metadata":{"finalizers":["a.io/x","ctrl.io/q","b.io/y"]}}"#,
    );
    assert_eq!(
        patch,
        r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["b.io/y"],"$setElementOrder/finalizers":["c.io/z","a.io/x"],"finalizers":["c.io/z"]}}"#
    );
    assert_eq!(result, r#"{"metadata":{"finalizers":["c.io/z","a.io/x","ctrl.io/q"]}}"#);
    // §13.12 [H c30]: dropping one of two duplicates removes the value entirely.
    let (patch, result) = three_way(
        r#"{"metadata":{"finalizers":["a","a"]}}"#,
        r#"{"metadata":{"finalizers":["a"]}}"#,
        r#"{"metadata":{"finalizers":["a","a"]}}"#,
    );
    assert_eq!(
        patch,
        r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"],"$setElementOrder/finalizers":["a"]}}"#
    );
    assert_eq!(result, r#"{"metadata":{"finalizers":[]}}"#);
}

#[test]
fn nulls_are_kept_in_patches_and_dropped_where_nothing_is_replaced() {
    // §13.5 [H c35]: a null in both last-applied and manifest keeps deleting.
    let (patch, result) = three_way(
        r#"{"spec":{"paused":null}}"#,
        r#"{"spec":{"paused":null}}"#,
        r#"{"spec":{"paused":true,"replicas":2}}"#,
    );
    assert_eq!(patch, r#"{"spec":{"paused":null}}"#);
    assert_eq!(result, r#"{"spec":{"replicas":2}}"#);
    // §13.42: nested nulls of a new subtree stay in the patch, not in the result.
    let (patch, result) = three_way("{}", r#"{"complex":{"nested":null,"nested2":"foo"}}"#, "{}");
    assert_eq!(patch, r#"{"complex":{"nested":null,"nested2":"foo"}}"#);
    assert_eq!(result, r#"{"complex":{"nested2":"foo"}}"#);
    // §13.47 [H n1-n3]: replaced lists keep element nulls; so does an appended merge element.
    assert_eq!(
        apply(r#"{"tolerations":[{"key":"a"}]}"#, r#"{"tolerations":[{"key":"b","value":null}]}"#).unwrap(),
        r#"{"tolerations":[{"key":"b","value":null}]}"#
    );
    assert_eq!(
        apply("{}", r#"{"tolerations":[{"key":"b","value":null}]}"#).unwrap(),
        r#"{"tolerations":[{"key":"b"}]}"#
    );
    assert_eq!(
        apply(r#"{"containers":[{"name":"a"}]}"#, r#"{"containers":[{"name":"b","image":null}]}"#).unwrap(),
        r#"{"containers":[{"image":null,"name":"b"},{"name":"a"}]}"#
    );
    // A null deletion list deletes the field [H].
    assert_eq!(
        apply(r#"{"finalizers":["a"],"x":1}"#, r#"{"$deleteFromPrimitiveList/finalizers":null}"#).unwrap(),
        r#"{"x":1}"#
    );
}

#[test]
fn retain_keys_is_emitted_for_changes_and_for_keys_to_clear() {
    // §13.30 [H c10] and §13.31 [H c29].
    let live = r#"{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%"}}}}"#;
    let (patch, result) = three_way(
        r#"{"spec":{"strategy":{"type":"RollingUpdate"}}}"#,
        r#"{"spec":{"strategy":{"type":"Recreate"}}}"#,
        live,
    );
    assert_eq!(patch, r#"{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}"#);
    assert_eq!(result, r#"{"spec":{"strategy":{"type":"Recreate"}}}"#);
    let same = r#"{"spec":{"strategy":{"type":"RollingUpdate"}}}"#;
    assert_eq!(three_way(same, same, live).0, r#"{"spec":{"strategy":{"$retainKeys":["type"]}}}"#);
    // §13.4 [H c04]: null keys are not listed.
    let (patch, _) = three_way(
        r#"{"spec":{"strategy":{"type":"Recreate"}}}"#,
        r#"{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}"#,
        r#"{"spec":{"strategy":{"type":"Recreate","rollingUpdate":{"maxSurge":"25%"}}}}"#,
    );
    assert_eq!(patch, r#"{"spec":{"strategy":{"$retainKeys":["type"],"rollingUpdate":null}}}"#);
    // §13.29 [H c09]: each element of a merge,retainKeys list.
    let o = r#"{"spec":{"template":{"spec":{"volumes":[{"name":"data","emptyDir":{}}]}}}}"#;
    let m = r#"{"spec":{"template":{"spec":{"volumes":[{"name":"data","configMap":{"name":"cm"}}]}}}}"#;
    assert_eq!(
        three_way(o, m, o).0,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/volumes":[{"name":"data"}],"volumes":[{"$retainKeys":["configMap","name"],"configMap":{"name":"cm"},"emptyDir":null,"name":"data"}]}}}}"#
    );
    // §13.45: a patch key missing from $retainKeys is rejected.
    assert_eq!(
        apply(r#"{"strategy":{}}"#, r#"{"strategy":{"$retainKeys":["type"],"rollingUpdate":{}}}"#),
        Err(Error::BadPatchFormatForRetainKeys)
    );
}

#[test]
fn equal_merge_keys_pair_up_in_go_insertion_sort_order() {
    // §13.21 [H c08]: ports merge by containerPort only.
    let c = |ports: &str| pod(&format!(r#"[{{"name":"dns","ports":{ports}}}]"#));
    let one = c(r#"[{"containerPort":53,"protocol":"TCP"}]"#);
    let two = c(r#"[{"containerPort":53,"protocol":"TCP"},{"containerPort":53,"protocol":"UDP"}]"#);
    let (patch, result) = three_way(&one, &two, &one);
    assert_eq!(
        patch,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"dns"}],"containers":[{"$setElementOrder/ports":[{"containerPort":53},{"containerPort":53}],"name":"dns","ports":[{"containerPort":53,"protocol":"UDP"},{"containerPort":53,"protocol":"TCP"}]}]}}}}"#
    );
    assert_eq!(result, one);
}

#[test]
fn duplicate_merge_keys_in_a_manifest_fail_on_apply() {
    // §13.26 [H e01].
    let env = |items: &str| pod(&format!(r#"[{{"name":"app","env":{items}}}]"#));
    let o = env(r#"[{"name":"C","value":"0"}]"#);
    let m = env(r#"[{"name":"B","value":"1"},{"name":"C","value":"2"},{"name":"B","value":"3"}]"#);
    let patch = create_three_way_merge_patch(&json(&o), &json(&m), &json(&o), &ByName, true).unwrap();
    assert!(
        patch
            .to_json_string()
            .contains(r#""env":[{"name":"B","value":"3"},{"name":"B","value":"1"},{"name":"C","value":"2"}]"#)
    );
    let err = strategic_merge_patch(&json(&o), &patch, &ByName).unwrap_err();
    assert!(reported(&err).contains("doesn't match $setElementOrder list"), "{err}");
}

#[test]
fn typed_merge_keys_pair_in_the_diff_but_not_in_apply() {
    // §13.27 [H c33]: "80" and 80 render alike for the diff, differ for apply.
    let c = |port: &str| pod(&format!(r#"[{{"name":"web","ports":[{{"containerPort":{port}}}]}}]"#));
    let (patch, result) = three_way(&c("80"), &c(r#""80""#), &c("80"));
    assert!(patch.contains(r#""ports":[{"containerPort":"80"}]"#), "{patch}");
    assert!(result.contains(r#""ports":[{"containerPort":"80"},{"containerPort":80}]"#), "{result}");
}

#[test]
fn overwrite_false_conflicts_with_any_overlapping_change() {
    // §13.9 [H e03b, e03c].
    let err = create_three_way_merge_patch(
        &json(r#"{"metadata":{"annotations":{}},"spec":{"replicas":2}}"#),
        &json(r#"{"metadata":{"annotations":{"LA":"NEW"}},"spec":{"replicas":3}}"#),
        &json(r#"{"metadata":{"annotations":{"LA":"OLD"}},"spec":{"replicas":2}}"#),
        &ByName,
        false,
    )
    .unwrap_err();
    assert!(err.is_conflict() && err.to_string().contains("conflict"), "{err}");
    let patch = create_three_way_merge_patch(
        &json(r#"{"spec":{"replicas":2}}"#),
        &json(r#"{"spec":{"replicas":3}}"#),
        &json(r#"{"spec":{"replicas":2,"paused":true}}"#),
        &ByName,
        false,
    )
    .unwrap();
    assert_eq!(patch.to_json_string(), r#"{"spec":{"replicas":3}}"#);
}

#[test]
fn apply_side_directives() {
    // §13.44, §13.46.
    assert_eq!(
        apply(
            r#"{"containers":[{"name":"a","x":1},{"name":"b"}]}"#,
            r#"{"containers":[{"$patch":"replace"},{"name":"c"},{"name":"a","y":2}]}"#
        )
        .unwrap(),
        r#"{"containers":[{"name":"c"},{"name":"a","y":2}]}"#
    );
    // Duplicate keys in a replacing list are grouped by their first position (stable sort).
    assert_eq!(
        apply(
            r#"{"containers":[{"name":"x"}]}"#,
            r#"{"containers":[{"$patch":"replace"},{"name":"a","v":1},{"name":"b"},{"name":"a","v":2}]}"#
        )
        .unwrap(),
        r#"{"containers":[{"name":"a","v":1},{"name":"a","v":2},{"name":"b"}]}"#
    );
    assert_eq!(apply(r#"{"m":{"a":1}}"#, r#"{"m":{"$patch":"delete"}}"#).unwrap(), r#"{"m":{}}"#);
    assert_eq!(apply("{}", r#"{"m":{"$patch":"replace","a":1}}"#).unwrap(), "{}");
    assert_eq!(
        apply(r#"{"m":{"a":"b"}}"#, r#"{"m":{"$patch":"merge","c":"d"}}"#).unwrap_err().to_string(),
        "unknown patch type: merge in map: map[$patch:merge c:d]"
    );
    assert_eq!(
        apply(r#"{"containers":[{"name":"a"}]}"#, r#"{"containers":[{"$patch":"merge"}]}"#),
        Err(Error::MergeInList)
    );
    assert_eq!(
        apply(r#"{"args":["x","y","x"]}"#, r#"{"$deleteFromPrimitiveList/args":["x"]}"#).unwrap(),
        r#"{"args":["y"]}"#
    );
    assert_eq!(
        apply(r#"{"args":["x"]}"#, r#"{"$deleteFromPrimitiveListX/args":["x"]}"#),
        Err(Error::BadPatchFormatForPrimitiveList)
    );
    assert_eq!(
        apply(r#"{"finalizers":["a"]}"#, r#"{"$setElementOrder/finalizers":"a"}"#).unwrap_err().to_string(),
        "expected a []interface {}, but received a string"
    );
}

#[test]
fn mixed_element_types_are_rejected() {
    // §13.14 [H e06].
    let doc = r#"{"metadata":{"finalizers":["a",1]}}"#;
    let err = create_three_way_merge_patch(
        &json(doc),
        &json(r#"{"metadata":{"finalizers":["a"]}}"#),
        &json(doc),
        &ByName,
        true,
    )
    .unwrap_err();
    assert_eq!(err.cause().to_string(), "list element types are not identical: [[a 1] [a]]");
    assert_eq!(err.path(), Some("metadata.finalizers"));
    assert_eq!(err.to_string(), "metadata.finalizers");
    assert_eq!(reported(&err), "metadata.finalizers: list element types are not identical: [[a 1] [a]]");
}

#[test]
fn errors_name_the_field_path_down_to_the_list_element() {
    let o = pod(r#"[{"name":"app","env":[{"name":"A","value":"1"}]}]"#);
    let m = pod(r#"[{"name":"app","env":[{"value":"1"}]}]"#);
    let err = create_three_way_merge_patch(&json(&o), &json(&m), &json(&o), &ByName, true).unwrap_err();
    assert_eq!(err.path(), Some("spec.template.spec.containers[name=app].env"));
    assert_eq!(err.cause().to_string(), "map: map[value:1] does not contain declared merge key: name");

    let err = strategic_merge_patch(
        &json(&o),
        &json(r#"{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"$patch":"merge"}]}]}}}}"#),
        &ByName,
    )
    .unwrap_err();
    assert_eq!(err.path(), Some("spec.template.spec.containers[name=app].env"));
    assert_eq!(*err.cause(), Error::MergeInList);
}

#[test]
fn non_object_documents_are_rejected() {
    assert_eq!(create_two_way_merge_patch(&json("[]"), &json("{}"), &ByName), Err(Error::BadJsonDoc));
    assert_eq!(strategic_merge_patch(&json("{}"), &json("1"), &ByName), Err(Error::BadJsonDoc));
}

/// A value nested `levels` deep around `leaf`, built without recursion.
fn nested_around(levels: usize, leaf: Value) -> Value {
    let mut v = leaf;
    for _ in 0..levels {
        let mut m = Map::new();
        m.insert("a".into(), v);
        v = Value::Object(m);
    }
    v
}

#[test]
fn documents_nested_to_the_limit_merge_on_a_small_stack() {
    // Tokio's worker threads have 2 MiB stacks; run on one explicitly so the bound is what we
    // claim. Go's limit (what the apiserver stores) is `MAX_DEPTH` levels; the documents here are
    // objects nested one level less, so that the leaf is the last level.
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let too_deep = nested_around(MAX_DEPTH + 1, Value::Int(1));
            let original = nested_around(MAX_DEPTH - 1, Value::Int(1));
            let modified = nested_around(MAX_DEPTH - 1, Value::Int(2));
            assert_eq!(create_two_way_merge_patch(&too_deep, &original, &ByName), Err(Error::TooDeep(MAX_DEPTH)));
            assert_eq!(
                create_three_way_merge_patch(&original, &original, &too_deep, &ByName, false),
                Err(Error::TooDeep(MAX_DEPTH))
            );
            assert_eq!(strategic_merge_patch(&original, &too_deep, &ByName), Err(Error::TooDeep(MAX_DEPTH)));
            // The leaf changed, nothing else: the patch is the path down to it.
            let patch = create_three_way_merge_patch(&original, &modified, &original, &ByName, false).unwrap();
            assert_eq!(patch, modified);
            assert_eq!(strategic_merge_patch(&original, &patch, &ByName).unwrap(), modified);
            assert_eq!(json_merge::create_three_way(&original, &modified, &original).unwrap(), modified);
            assert_eq!(json_merge::merge_patch(&original, &patch).unwrap(), modified);
        })
        .unwrap()
        .join()
        .unwrap();
}

/// A container with `n` env entries, every `changed_every`-th value changed.
fn env_doc(n: usize, changed_every: usize) -> Value {
    let env: Vec<String> = (0..n)
        .map(|i| {
            let suffix = if changed_every > 0 && i % changed_every == 0 { "x" } else { "" };
            format!(r#"{{"name":"VAR_{i:05}","value":"v{i}{suffix}"}}"#)
        })
        .collect();
    json(&pod(&format!(r#"[{{"name":"app","env":[{}]}}]"#, env.join(","))))
}

#[test]
fn large_keyed_lists_are_not_quadratic() {
    // 16,000 entries: upstream Go takes seconds; here it is well under a second even
    // unoptimised (the release-mode budget, 50 ms, is checked by the criterion bench).
    let original = env_doc(16_000, 0);
    let modified = env_doc(16_000, 7);
    let start = std::time::Instant::now();
    let patch = create_three_way_merge_patch(&original, &modified, &original, &ByName, true).unwrap();
    let result = strategic_merge_patch(&original, &patch, &ByName).unwrap();
    assert_eq!(result, modified);
    assert!(start.elapsed() < std::time::Duration::from_secs(5), "{:?}", start.elapsed());
}
