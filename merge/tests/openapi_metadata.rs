//! Patch metadata read from OpenAPI v2 and v3 documents: the upstream strategicpatch testdata
//! (`shared/conformance/strategicpatch/testdata`), hand-written fragments for the rules the
//! testdata does not reach, and the Kubernetes v1.33 apps/v1 document.

use std::path::PathBuf;

use applyset_merge::meta::Strategy;
use applyset_merge::openapi::{OpenApi, OpenApiVersion};
use applyset_merge::{Error, PatchMeta, SchemaRef, Value};

// ---------------------------------------------------------------------------------------------
// Loading

fn conformance_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/strategicpatch");
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

// ---------------------------------------------------------------------------------------------
// Resolution rules, on hand-written documents.

#[test]
fn v3_unresolvable_ref_fails_with_the_ref_text() {
    let doc = openapi(
        r##"{"openapi":"3.0.0","components":{"schemas":{"T":{"properties":{
            "a":{"$ref":"#/components/schemas/Missing"},
            "b":{"allOf":[{"$ref":"#/components/schemas/Gone"}],"x-kubernetes-patch-strategy":"merge"},
            "c":{"type":"array","items":{"$ref":"#/components/schemas/Lost"}},
            "d":{"$ref":"#/definitions/Elsewhere"}
        }}}}}"##,
    );
    let t = doc.schema("T").unwrap();
    assert_eq!(lookup_error(t.lookup_struct("a")), "unable to resolve #/components/schemas/Missing in OpenAPI V3");
    assert_eq!(lookup_error(t.lookup_slice("b")), "unable to resolve #/components/schemas/Gone in OpenAPI V3");
    assert_eq!(lookup_error(t.lookup_slice("c")), "unable to resolve #/components/schemas/Lost in OpenAPI V3");
    // A struct lookup of `c` does not look at `items`, so nothing needs resolving.
    assert!(t.lookup_struct("c").is_ok());
    assert_eq!(lookup_error(t.lookup_struct("d")), "unable to resolve #/definitions/Elsewhere in OpenAPI V3");
}

#[test]
fn v3_resolves_all_of_first_and_only_one_level() {
    let doc = openapi(
        r##"{"openapi":"3.0.0","components":{"schemas":{
            "Root":{"properties":{
                "viaAllOf":{"allOf":[{"$ref":"#/components/schemas/Leaf"},{"$ref":"#/components/schemas/Other"}],
                            "x-kubernetes-patch-strategy":"replace"},
                "inlineAllOf":{"allOf":[{"properties":{"x":{"x-kubernetes-patch-strategy":"merge"}}}]},
                "inline":{"properties":{"y":{"x-kubernetes-patch-merge-key":"k"}}},
                "alias":{"$ref":"#/components/schemas/Alias"},
                "emptyProps":{"properties":{}},
                "tuple":{"type":"array","items":[{"type":"string"}]}
            }},
            "Leaf":{"properties":{"leaf":{"type":"string"}}},
            "Other":{"properties":{"other":{"type":"string"}}},
            "Alias":{"allOf":[{"$ref":"#/components/schemas/Leaf"}]}
        }}}"##,
    );
    let root = doc.schema("Root").unwrap();
    // The extensions are those of the property; the child is allOf[0] resolved.
    let (leaf, leaf_meta) = lookup_struct(&root, "viaAllOf");
    assert_eq!(leaf_meta, meta("replace", ""));
    assert!(leaf.lookup_struct("leaf").is_ok());
    assert_eq!(lookup_error(leaf.lookup_struct("other")), r#"unable to find api field "other""#);
    // Inline schemas (in allOf[0] or directly) are used as they are.
    assert_eq!(lookup_struct(&lookup_struct(&root, "inlineAllOf").0, "x").1, meta("merge", ""));
    assert_eq!(lookup_slice(&lookup_struct(&root, "inline").0, "y").1, meta("", "k"));
    // A component that is itself an `allOf` alias is not resolved further: it has no properties.
    let (alias, _) = lookup_struct(&root, "alias");
    assert_eq!(lookup_error(alias.lookup_struct("leaf")), r#"unable to find api field "leaf""#);
    // Empty `properties` behaves like none.
    let (empty, _) = lookup_struct(&root, "emptyProps");
    assert_eq!(lookup_error(empty.lookup_struct("z")), r#"unable to find api field "z""#);
    // `items` as a list of schemas leaves an unknown node: permissive below.
    let (tuple_element, _) = lookup_slice(&root, "tuple");
    assert_eq!(lookup_struct(&tuple_element, "anything").1, PatchMeta::default());
}

#[test]
fn malformed_extensions_are_reported() {
    let doc = openapi(
        r##"{"openapi":"3.0.0","components":{"schemas":{"T":{"properties":{
            "a":{"x-kubernetes-patch-strategy":1},
            "b":{"x-kubernetes-patch-strategy":"merge,replace"}
        }}}}}"##,
    );
    let t = doc.schema("T").unwrap();
    let err = t.lookup_struct("a").unwrap_err();
    assert_eq!(err, Error::BadArgType { expected: "string".into(), received: "int64".into() });
    // Two strategies without retainKeys are read as declared; interpreting them fails.
    let (_, b) = lookup_struct(&t, "b");
    assert_eq!(b.strategy().unwrap_err().to_string(), "unexpected patch strategy: [merge replace]");
}

#[test]
fn v2_model_errors_fail_the_whole_document() {
    let cases = [
        (r##"{"a":{"$ref":"#/definitions/Missing"}}"##, r#"SchemaError(T.a): unknown model in reference: "Missing""#),
        (r##"{"a":{"type":"array"}}"##, "SchemaError(T.a): array should have exactly one sub-item"),
        (
            r##"{"a":{"type":["string","integer"]}}"##,
            "SchemaError(T.a): definitions with multiple types aren't supported",
        ),
        (r##"{"a":{"type":"file"}}"##, r#"SchemaError(T.a): Unknown primitive type: "file""#),
        (
            r##"{"a":{"$ref":"#/definitions/T","type":"object"}}"##,
            "SchemaError(T.a): definition reference can't have a type",
        ),
    ];
    for (properties, expected) in cases {
        let text = format!(r#"{{"swagger":"2.0","definitions":{{"T":{{"properties":{properties}}}}}}}"#);
        let err = OpenApi::from_document(json(&text)).unwrap_err();
        assert_eq!(err.to_string(), format!("OpenAPI: {expected}"), "{properties}");
    }
}

#[test]
fn v2_lookups_follow_references_and_type_less_kinds() {
    let doc = openapi(
        r##"{"swagger":"2.0","definitions":{
            "Root":{"type":"object","properties":{
                "alias":{"$ref":"#/definitions/Alias"},
                "list":{"type":"array","items":{"$ref":"#/definitions/Alias"},
                        "x-kubernetes-patch-strategy":"merge","x-kubernetes-patch-merge-key":"id"},
                "inline":{"properties":{"inner":{"type":"string","x-kubernetes-patch-strategy":"replace"}}},
                "bad":{"type":"string","x-kubernetes-patch-merge-key":["id"]}
            }},
            "Alias":{"$ref":"#/definitions/Target"},
            "Target":{"properties":{"id":{"type":"string"}}}
        }}"##,
    );
    let root = doc.schema("Root").unwrap();
    // Chains of references end at the Kind; its own path names the definition.
    let (alias, _) = lookup_struct(&root, "alias");
    assert!(alias.lookup_struct("id").is_ok());
    assert_eq!(lookup_error(alias.lookup_struct("nope")), r#"unable to find api field "nope" in Target"#);
    let (element, list_meta) = lookup_slice(&root, "list");
    assert_eq!(list_meta, meta("merge", "id"));
    assert!(element.lookup_struct("id").is_ok());
    // An inline Kind (no `type`, with `properties`) is looked into with its path.
    let (inline, _) = lookup_struct(&root, "inline");
    assert_eq!(lookup_struct(&inline, "inner").1, meta("replace", ""));
    assert_eq!(lookup_error(inline.lookup_struct("nope")), r#"unable to find api field "nope" in Root.inline"#);
    // Upstream's slice visitor looks the same key up again inside an inline Kind field.
    assert_eq!(lookup_error(root.lookup_slice("inline")), r#"unable to find api field "inline" in Root.inline"#);
    // A non-string extension is upstream's bad-argument error.
    assert_eq!(root.lookup_struct("bad").unwrap_err().to_string(), "expected a string, but received a []interface {}");
    // A definition that is an alias is also usable as a root.
    assert!(doc.schema("Alias").unwrap().lookup_struct("id").is_ok());
}

#[test]
fn v2_strategic_merge_support_comes_from_consumes() {
    let doc = openapi(
        r##"{"swagger":"2.0",
            "paths":{
                "/api/v1/namespaces/{namespace}/configmaps/{name}":{"patch":{
                    "consumes":["application/json-patch+json","application/merge-patch+json","application/strategic-merge-patch+json"],
                    "x-kubernetes-group-version-kind":{"group":"","version":"v1","kind":"ConfigMap"}}},
                "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}":{"patch":{
                    "consumes":["application/json-patch+json","application/merge-patch+json"],
                    "x-kubernetes-group-version-kind":{"group":"example.com","version":"v1","kind":"Widget"}}}
            },
            "definitions":{
                "io.k8s.api.core.v1.ConfigMap":{"type":"object","properties":{"data":{"type":"object","additionalProperties":{"type":"string"}}},
                    "x-kubernetes-group-version-kind":[{"group":"","version":"v1","kind":"ConfigMap"}]},
                "com.example.v1.Widget":{"type":"object","properties":{"spec":{"type":"object"}},
                    "x-kubernetes-group-version-kind":[{"group":"example.com","version":"v1","kind":"Widget"}]}
            }}"##,
    );
    assert!(doc.supports_strategic_merge("", "v1", "ConfigMap"));
    assert!(!doc.supports_strategic_merge("example.com", "v1", "Widget"));
    assert!(!doc.supports_strategic_merge("", "v1", "Secret"));
    let config_map = doc.schema_for_gvk("", "v1", "ConfigMap").unwrap();
    assert_eq!(lookup_error(lookup_struct(&config_map, "data").0.lookup_struct("k")), "expected kind, but got map");
    assert!(doc.schema_for_gvk("example.com", "v1", "Widget").is_some());
}

// ---------------------------------------------------------------------------------------------
// A hand-written core/v1 + apps/v1 v3 fragment, shaped like what the API server serves.

const APPS_FRAGMENT: &str = r##"{
  "openapi": "3.0.0",
  "paths": {
    "/apis/apps/v1/namespaces/{namespace}/deployments/{name}": {
      "patch": {
        "x-kubernetes-group-version-kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
        "requestBody": {"content": {
          "application/apply-patch+yaml": {}, "application/json-patch+json": {},
          "application/merge-patch+json": {}, "application/strategic-merge-patch+json": {}
        }}
      }
    },
    "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}": {
      "patch": {
        "x-kubernetes-group-version-kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
        "requestBody": {"content": {"application/json-patch+json": {}, "application/merge-patch+json": {}}}
      }
    },
    "/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}": {
      "patch": {"x-kubernetes-group-version-kind": {"group": "example.com", "version": "v1", "kind": "Gadget"}}
    }
  },
  "components": {"schemas": {
    "io.k8s.api.apps.v1.Deployment": {
      "type": "object",
      "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "default": {}},
        "spec": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}], "default": {}}
      },
      "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    },
    "io.k8s.api.apps.v1.DeploymentSpec": {
      "type": "object",
      "properties": {
        "replicas": {"type": "integer", "format": "int32"},
        "selector": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"},
        "strategy": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}], "default": {},
                     "x-kubernetes-patch-strategy": "retainKeys"},
        "template": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec"}], "default": {}}
      }
    },
    "io.k8s.api.apps.v1.DeploymentStrategy": {
      "type": "object",
      "properties": {"type": {"type": "string"}, "rollingUpdate": {"type": "object"}}
    },
    "io.k8s.api.core.v1.PodTemplateSpec": {
      "type": "object",
      "properties": {
        "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "default": {}},
        "spec": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}], "default": {}}
      }
    },
    "io.k8s.api.core.v1.PodSpec": {
      "type": "object",
      "properties": {
        "containers": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}], "default": {}},
                       "x-kubernetes-list-map-keys": ["name"], "x-kubernetes-list-type": "map",
                       "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"},
        "tolerations": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Toleration"}], "default": {}},
                        "x-kubernetes-list-type": "atomic"},
        "volumes": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Volume"}], "default": {}},
                    "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge,retainKeys"},
        "nodeSelector": {"type": "object", "additionalProperties": {"type": "string", "default": ""}}
      }
    },
    "io.k8s.api.core.v1.Container": {
      "type": "object",
      "properties": {
        "name": {"type": "string", "default": ""},
        "image": {"type": "string"},
        "args": {"type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "atomic"},
        "env": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.EnvVar"}], "default": {}},
                "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"},
        "ports": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.ContainerPort"}], "default": {}},
                  "x-kubernetes-list-map-keys": ["containerPort", "protocol"], "x-kubernetes-list-type": "map",
                  "x-kubernetes-patch-merge-key": "containerPort", "x-kubernetes-patch-strategy": "merge"},
        "resources": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.ResourceRequirements"}], "default": {}}
      }
    },
    "io.k8s.api.core.v1.EnvVar": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"}}},
    "io.k8s.api.core.v1.ContainerPort": {"type": "object", "properties": {"containerPort": {"type": "integer"}, "protocol": {"type": "string"}}},
    "io.k8s.api.core.v1.ResourceRequirements": {
      "type": "object",
      "properties": {"limits": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}}}
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
    "io.k8s.api.core.v1.Toleration": {"type": "object", "properties": {"key": {"type": "string"}}},
    "io.k8s.api.core.v1.Volume": {"type": "object", "properties": {"name": {"type": "string"}}},
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector": {"type": "object", "properties": {"matchLabels": {"type": "object"}}},
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
      "type": "object",
      "properties": {
        "name": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
        "finalizers": {"type": "array", "items": {"type": "string", "default": ""},
                       "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge"}
      }
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions": {
      "type": "object", "properties": {"dryRun": {"type": "array", "items": {"type": "string"}}},
      "x-kubernetes-group-version-kind": [{"group": "", "kind": "DeleteOptions", "version": "v1"},
                                          {"group": "apps", "kind": "DeleteOptions", "version": "v1"}]
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions_v2": {
      "type": "object", "properties": {"propagationPolicy": {"type": "string"}},
      "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "DeleteOptions", "version": "v1"}]
    }
  }}
}"##;

fn pod_spec(deployment: &SchemaRef) -> SchemaRef {
    walk(deployment, &["spec", "template", "spec"]).0
}

#[test]
fn deployment_metadata_from_a_v3_fragment() {
    let apps = openapi(APPS_FRAGMENT);
    let deployment = apps.schema_for_gvk("apps", "v1", "Deployment").expect("Deployment by GVK");
    let pod = pod_spec(&deployment);

    let (container, containers_meta) = lookup_slice(&pod, "containers");
    assert_eq!(containers_meta, meta("merge", "name"));
    assert_eq!(lookup_slice(&container, "env").1, meta("merge", "name"));
    // Only the single patch merge key counts; list-map-keys are ignored.
    assert_eq!(lookup_slice(&container, "ports").1, meta("merge", "containerPort"));
    assert_eq!(lookup_slice(&container, "args").1, PatchMeta::default());
    // list-type without a patch strategy: atomic.
    assert_eq!(lookup_slice(&pod, "tolerations").1, PatchMeta::default());
    assert_eq!(lookup_slice(&pod, "volumes").1, meta("merge,retainKeys", "name"));
    let (env_var, _) = lookup_slice(&container, "env");
    assert!(env_var.lookup_struct("value").is_ok());

    assert_eq!(walk(&deployment, &["spec", "strategy"]).1, meta("retainKeys", ""));
    assert_eq!(walk(&deployment, &["metadata", "finalizers[]"]).1, meta("merge", ""));
    assert_eq!(walk(&deployment, &["spec", "template", "metadata", "finalizers[]"]).1, meta("merge", ""));
    // Maps merge key by key, but cannot be looked into (values that are objects would fail).
    let (labels, _) = walk(&deployment, &["metadata", "labels"]);
    assert_eq!(lookup_error(labels.lookup_struct("app")), r#"unable to find api field "app""#);
    let (limits, _) = walk(&container, &["resources", "limits"]);
    assert_eq!(lookup_error(limits.lookup_struct("cpu")), r#"unable to find api field "cpu""#);
    assert_eq!(lookup_error(deployment.lookup_struct("status")), r#"unable to find api field "status""#);

    // The same node by name.
    let by_name = apps.schema("io.k8s.api.apps.v1.Deployment").unwrap();
    assert_eq!(lookup_slice(&pod_spec(&by_name), "containers").1, meta("merge", "name"));
}

#[test]
fn gvk_index_and_strategic_merge_support_from_a_v3_fragment() {
    let apps = openapi(APPS_FRAGMENT);
    assert!(apps.supports_strategic_merge("apps", "v1", "Deployment"));
    // A custom resource: merge patch only, so kubectl skips OpenAPI and uses JSON merge patch.
    assert!(!apps.supports_strategic_merge("example.com", "v1", "Widget"));
    // A PATCH operation without requestBody: malformed, not supported.
    assert!(!apps.supports_strategic_merge("example.com", "v1", "Gadget"));
    assert!(!apps.supports_strategic_merge("apps", "v1", "StatefulSet"));
    assert!(!apps.supports_strategic_merge("", "v1", "Deployment"));

    assert!(apps.schema_for_gvk("apps", "v1", "StatefulSet").is_none());
    assert!(apps.schema_for_gvk("apps", "v2", "Deployment").is_none());
    // Several schemas claim apps/v1 DeleteOptions: the greatest name wins, every time.
    let options = apps.schema_for_gvk("apps", "v1", "DeleteOptions").unwrap();
    assert!(options.lookup_struct("propagationPolicy").is_ok());
    let core_options = apps.schema_for_gvk("", "v1", "DeleteOptions").unwrap();
    assert!(core_options.lookup_struct("dryRun").is_ok());
}

// ---------------------------------------------------------------------------------------------
// The real apps/v1 document of Kubernetes v1.33 (fixture shared with the seed scenarios).

#[test]
fn kubernetes_apps_v1_document() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/openapi/apps-v1.json");
    let apps = OpenApi::from_document(json(&read(path))).unwrap();
    assert_eq!(apps.version(), OpenApiVersion::V3);
    for kind in ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"] {
        assert!(apps.supports_strategic_merge("apps", "v1", kind), "{kind}");
        assert!(apps.schema_for_gvk("apps", "v1", kind).is_some(), "{kind}");
    }
    let deployment = apps.schema_for_gvk("apps", "v1", "Deployment").unwrap();
    let pod = pod_spec(&deployment);
    let (container, containers_meta) = lookup_slice(&pod, "containers");
    assert_eq!(containers_meta, meta("merge", "name"));
    assert_eq!(lookup_slice(&container, "env").1, meta("merge", "name"));
    assert_eq!(lookup_slice(&container, "ports").1, meta("merge", "containerPort"));
    assert_eq!(lookup_slice(&container, "volumeMounts").1, meta("merge", "mountPath"));
    assert_eq!(lookup_slice(&pod, "volumes").1, meta("merge,retainKeys", "name"));
    assert_eq!(lookup_slice(&pod, "tolerations").1, PatchMeta::default());
    assert_eq!(walk(&deployment, &["spec", "strategy"]).1, meta("retainKeys", ""));
    assert_eq!(walk(&deployment, &["metadata", "finalizers[]"]).1, meta("merge", ""));
    assert_eq!(walk(&deployment, &["metadata", "ownerReferences[]"]).1, meta("merge", "uid"));
    assert_eq!(walk(&deployment, &["status", "conditions[]"]).1, meta("merge", "type"));
}
