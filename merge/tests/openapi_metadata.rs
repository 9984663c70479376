//! Patch metadata read from OpenAPI v2 and v3 documents: the upstream strategicpatch testdata
//! (`merge/tests/conformance/strategicpatch/testdata`), hand-written fragments for the rules the
//! testdata does not reach, and the Kubernetes v1.33 apps/v1 document.

use std::path::PathBuf;

use applyset_merge::meta::Strategy;
use applyset_merge::openapi::{OpenApi, OpenApiVersion};
use applyset_merge::{Error, PatchMeta, SchemaRef, Value};

// Resolution rules, on hand-written documents.
#[path = "openapi_metadata/hand_written_documents.rs"]
mod hand_written_documents;
// A hand-written apps/v1 v3 fragment and the real apps/v1 document of Kubernetes v1.33.
#[path = "openapi_metadata/kubernetes_documents.rs"]
mod kubernetes_documents;

// ---------------------------------------------------------------------------------------------
// Loading

fn conformance_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/strategicpatch");
    assert!(dir.is_dir(), "conformance data not found at {}", dir.display());
    dir
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The upstream testdata. The v2 merge-item file has a trailing comma, so (like upstream)
/// every file goes through a YAML parser.
fn testdata(file: &str) -> OpenApi {
    let text = read(conformance_dir().join("testdata").join(file));
    let doc: Value = serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    OpenApi::from_document(doc).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn json(text: &str) -> Value {
    Value::from_json_str(text).unwrap_or_else(|e| panic!("bad test JSON: {e}\n{text}"))
}

fn openapi(text: &str) -> OpenApi {
    OpenApi::from_document(json(text)).unwrap()
}

/// The two forms of the `mergeItem` schema that the strategic conformance tables use.
fn merge_items() -> [(OpenApiVersion, SchemaRef); 2] {
    let v2 = testdata("swagger-merge-item.json");
    let v3 = testdata("swagger-merge-item-v3.json");
    assert_eq!(v2.version(), OpenApiVersion::V2);
    assert_eq!(v3.version(), OpenApiVersion::V3);
    [(OpenApiVersion::V2, v2.schema("mergeItem").unwrap()), (OpenApiVersion::V3, v3.schema("mergeItem").unwrap())]
}

// ---------------------------------------------------------------------------------------------
// Assertion helpers

fn meta(strategy: &str, merge_key: &str) -> PatchMeta {
    PatchMeta::new(strategy, merge_key)
}

#[track_caller]
fn lookup_struct(schema: &SchemaRef, key: &str) -> (SchemaRef, PatchMeta) {
    schema.lookup_struct(key).unwrap_or_else(|e| panic!("lookup_struct({key}) on {}: {e}", schema.name()))
}

#[track_caller]
fn lookup_slice(schema: &SchemaRef, key: &str) -> (SchemaRef, PatchMeta) {
    schema.lookup_slice(key).unwrap_or_else(|e| panic!("lookup_slice({key}) on {}: {e}", schema.name()))
}

#[track_caller]
fn lookup_error(result: applyset_merge::Result<(SchemaRef, PatchMeta)>) -> String {
    match result {
        Ok((schema, meta)) => panic!("expected an error, got {schema:?} {meta:?}"),
        Err(e @ Error::Lookup(_)) => e.to_string(),
        Err(e) => panic!("expected a lookup error, got {e:?}"),
    }
}

/// Follows a path of struct lookups, with `[]` suffix meaning a slice lookup.
#[track_caller]
fn walk(root: &SchemaRef, path: &[&str]) -> (SchemaRef, PatchMeta) {
    let mut current = (root.clone(), PatchMeta::default());
    for step in path {
        current = match step.strip_suffix("[]") {
            Some(key) => lookup_slice(&current.0, key),
            None => lookup_struct(&current.0, step),
        };
    }
    current
}

// ---------------------------------------------------------------------------------------------
// The upstream testdata: every field the conformance README lists, in both versions.

#[test]
fn merge_item_fields_have_the_declared_metadata() {
    for (version, item) in merge_items() {
        // Both lookups read the same extensions; a slice lookup of a map or primitive field
        // fails in v2 (`expected slice, but got …`), so those are only looked up as structs.
        let check = |key: &str, expected: PatchMeta, as_slice: bool| {
            assert_eq!(lookup_struct(&item, key).1, expected, "{version:?} struct {key}");
            if as_slice {
                assert_eq!(lookup_slice(&item, key).1, expected, "{version:?} slice {key}");
            }
        };
        check("mergingList", meta("merge", "name"), true);
        check("retainKeysMergingList", meta("merge,retainKeys", "name"), true);
        check("mergingIntList", meta("merge", ""), true);
        check("replacingItem", meta("replace", ""), true);
        check("retainKeysMap", meta("retainKeys", ""), true);
        check("nonMergingList", meta("", ""), true);
        check("nonMergingIntList", meta("", ""), true);
        check("jsonItem", meta("", ""), true);
        check("simpleMap", meta("", ""), false);
        check("name", meta("", ""), false);

        let strategy = lookup_slice(&item, "retainKeysMergingList").1.strategy().unwrap();
        assert_eq!(strategy, Strategy { merge: true, replace: false, retain_keys: true }, "{version:?}");
        let strategy = lookup_struct(&item, "retainKeysMap").1.strategy().unwrap();
        assert_eq!(strategy, Strategy { merge: false, replace: false, retain_keys: true }, "{version:?}");
    }
}

#[test]
fn merge_item_ptr_is_an_object_field_with_merge_and_key() {
    for (version, item) in merge_items() {
        // v2: `$ref` + extensions on the field; v3: `allOf: [{$ref}]` + extensions.
        let (ptr, ptr_meta) = lookup_struct(&item, "mergeItemPtr");
        assert_eq!(ptr_meta, meta("merge", "name"), "{version:?}");
        // The child is mergeItem itself, so its fields resolve.
        assert_eq!(lookup_slice(&ptr, "mergingList").1, meta("merge", "name"), "{version:?}");
        // The sort cases put a list under mergeItemPtr: a slice lookup must work too.
        let (element, element_meta) = lookup_slice(&item, "mergeItemPtr");
        assert_eq!(element_meta, meta("merge", "name"), "{version:?}");
        assert_eq!(lookup_struct(&element, "name").1, meta("", ""), "{version:?}");
    }
}

#[test]
fn list_elements_and_object_children_resolve_through_refs() {
    for (version, item) in merge_items() {
        // mergingList items: v2 `$ref`, v3 `allOf: [{$ref}]` → mergeItem, recursively.
        let (element, _) = walk(&item, &["mergingList[]", "mergingList[]", "mergingList[]"]);
        assert_eq!(lookup_struct(&element, "retainKeysMap").1, meta("retainKeys", ""), "{version:?}");
        // retainKeysMergingList items: a plain `$ref` in both.
        let (element, _) = lookup_slice(&item, "retainKeysMergingList");
        assert_eq!(lookup_slice(&element, "mergingIntList").1, meta("merge", ""), "{version:?}");
        // nonMergingList items are mergeItem too, even though the list is atomic.
        let (element, _) = lookup_slice(&item, "nonMergingList");
        assert_eq!(lookup_slice(&element, "mergingList").1, meta("merge", "name"), "{version:?}");
        // retainKeysMap → retainKeysMergeItem, whose fields have their own metadata.
        let (retain, _) = lookup_struct(&item, "retainKeysMap");
        assert_eq!(lookup_slice(&retain, "mergingList").1, meta("merge", "name"), "{version:?}");
        assert_eq!(lookup_struct(&retain, "value").1, meta("", ""), "{version:?}");
        // replacingItem → RawExtension, which has a `Raw` field.
        let (raw, _) = lookup_struct(&item, "replacingItem");
        assert_eq!(lookup_struct(&raw, "Raw").1, meta("", ""), "{version:?}");
    }
}

#[test]
fn unknown_fields_fail_with_the_provider_text() {
    let [(_, v2), (_, v3)] = merge_items();
    assert_eq!(lookup_error(v2.lookup_struct("unknown")), r#"unable to find api field "unknown" in mergeItem"#);
    assert_eq!(lookup_error(v2.lookup_slice("unknown")), r#"unable to find api field "unknown" in mergeItem"#);
    assert_eq!(lookup_error(v3.lookup_struct("unknown")), r#"unable to find api field "unknown""#);
    assert_eq!(lookup_error(v3.lookup_slice("unknown")), r#"unable to find api field "unknown""#);
    // Field names are case-sensitive in OpenAPI (unlike the Go struct provider).
    assert_eq!(lookup_error(v3.lookup_slice("MergingList")), r#"unable to find api field "MergingList""#);
    // The v2 path names the definition the field was looked up in.
    let (retain, _) = lookup_struct(&v2, "retainKeysMap");
    assert_eq!(lookup_error(retain.lookup_struct("nope")), r#"unable to find api field "nope" in retainKeysMergeItem"#);
}

#[test]
fn json_item_is_arbitrary_in_v2_and_opaque_in_v3() {
    let [(_, v2), (_, v3)] = merge_items();
    // v2: no `type`, no `properties` → Arbitrary: everything below is permissive.
    let (json_item, _) = lookup_struct(&v2, "jsonItem");
    let (nested, nested_meta) = lookup_struct(&json_item, "nested");
    assert_eq!(nested_meta, PatchMeta::default());
    assert_eq!(lookup_slice(&nested, "deeper").1, PatchMeta::default());
    assert_eq!(lookup_struct(&walk(&nested, &["a", "b[]", "c"]).0, "d").1, PatchMeta::default());
    // v3: the property schema has no `properties`, so looking into it fails.
    let (json_item, _) = lookup_struct(&v3, "jsonItem");
    assert_eq!(lookup_error(json_item.lookup_struct("nested")), r#"unable to find api field "nested""#);
    assert_eq!(lookup_error(json_item.lookup_slice("nested")), r#"unable to find api field "nested""#);
}

#[test]
fn maps_lists_and_primitives_cannot_be_looked_into() {
    let [(_, v2), (_, v3)] = merge_items();
    // simpleMap is `type: object` + `additionalProperties`: a Map in v2, no properties in v3.
    let (map, _) = lookup_struct(&v2, "simpleMap");
    assert_eq!(lookup_error(map.lookup_struct("k")), "expected kind, but got map");
    assert_eq!(lookup_error(map.lookup_slice("k")), "expected slice, but got map");
    let (map, _) = lookup_struct(&v3, "simpleMap");
    assert_eq!(lookup_error(map.lookup_struct("k")), r#"unable to find api field "k""#);
    // A struct lookup of a list field returns the array node itself.
    let (list, _) = lookup_struct(&v2, "mergingList");
    assert_eq!(lookup_error(list.lookup_struct("name")), "expected kind, but got slice");
    let (list, _) = lookup_struct(&v3, "mergingList");
    assert_eq!(lookup_error(list.lookup_struct("name")), r#"unable to find api field "name""#);
    // Primitives.
    let (name, _) = lookup_struct(&v2, "name");
    assert_eq!(lookup_error(name.lookup_struct("x")), "expected kind, but got primitive");
    assert_eq!(lookup_error(v2.lookup_slice("name")), "expected slice, but got primitive");
    assert_eq!(lookup_error(v2.lookup_slice("simpleMap")), "expected slice, but got map");
    let (int_element, _) = lookup_slice(&v2, "mergingIntList");
    assert_eq!(lookup_error(int_element.lookup_struct("x")), "expected kind, but got primitive");
    let (name, _) = lookup_struct(&v3, "name");
    assert_eq!(lookup_error(name.lookup_struct("x")), r#"unable to find api field "x""#);
}

#[test]
fn v2_additional_properties_string_is_an_arbitrary_value() {
    // Quirk 2 of the testdata: `"additionalProperties": "object"` plus `items`, no `type`.
    let v2 = testdata("swagger-merge-item.json");
    let retain = v2.schema("retainKeysMergeItem").unwrap();
    let (simple_map, simple_meta) = lookup_struct(&retain, "simpleMap");
    assert_eq!(simple_meta, PatchMeta::default());
    assert_eq!(lookup_struct(&simple_map, "anything").1, PatchMeta::default());
    assert_eq!(lookup_slice(&retain, "simpleMap").1, PatchMeta::default());
}

#[test]
fn strict_json_copy_reads_like_the_original() {
    let text = read(conformance_dir().join("testdata-strict-json/swagger-merge-item.json"));
    let strict = OpenApi::from_document(json(&text)).unwrap().schema("mergeItem").unwrap();
    let [(_, yaml), _] = merge_items();
    for key in ["mergingList", "retainKeysMergingList", "mergingIntList", "mergeItemPtr", "jsonItem"] {
        assert_eq!(lookup_slice(&strict, key).1, lookup_slice(&yaml, key).1, "{key}");
    }
}

#[test]
fn schema_names_are_the_upstream_texts() {
    let [(_, v2), (_, v3)] = merge_items();
    // Used in `cannot merge lists without merge key for <name>`.
    assert_eq!(lookup_slice(&v2, "mergingList").0.name(), r#"Reference to "mergeItem""#);
    assert_eq!(lookup_slice(&v2, "mergingIntList").0.name(), "integer (int32)");
    assert_eq!(lookup_struct(&v2, "mergingList").0.name(), r#"Array of Reference to "mergeItem""#);
    assert_eq!(lookup_struct(&v2, "simpleMap").0.name(), "Map of string");
    assert_eq!(lookup_struct(&v2, "jsonItem").0.name(), "Arbitrary value (primitive, object or array)");
    assert_eq!(lookup_slice(&v3, "mergingList").0.name(), "Struct");
    assert_eq!(lookup_slice(&v3, "mergingIntList").0.name(), "integer");
    assert_eq!(lookup_struct(&v3, "simpleMap").0.name(), "object");
}

#[test]
fn precision_items_load_in_both_versions() {
    for file in ["swagger-precision-item.json", "swagger-precision-item-v3.json"] {
        let item = testdata(file).schema("precisionItem").unwrap();
        for key in ["name", "int32", "int64", "float32", "float64"] {
            assert_eq!(lookup_struct(&item, key).1, PatchMeta::default(), "{file} {key}");
        }
        assert!(item.lookup_struct("missing").is_err(), "{file}");
    }
}

#[test]
fn testdata_gvks_and_unknown_names() {
    for file in ["swagger-merge-item.json", "swagger-merge-item-v3.json"] {
        let doc = testdata(file);
        let by_gvk = doc.schema_for_gvk("fake-group", "some-version", "mergeItem").expect(file);
        assert_eq!(lookup_slice(&by_gvk, "mergingList").1, meta("merge", "name"), "{file}");
        assert!(doc.schema_for_gvk("fake-group", "some-version", "retainKeysMergeItem").is_some(), "{file}");
        assert!(doc.schema_for_gvk("fake-group", "other-version", "mergeItem").is_none(), "{file}");
        assert!(doc.schema_for_gvk("", "some-version", "mergeItem").is_none(), "{file}");
        // `paths` is empty: no kind offers strategic merge patch.
        assert!(!doc.supports_strategic_merge("fake-group", "some-version", "mergeItem"), "{file}");
        let err = doc.schema("noSuchItem").unwrap_err();
        assert!(err.to_string().contains(r#""noSuchItem""#), "{file}: {err}");
    }
}
