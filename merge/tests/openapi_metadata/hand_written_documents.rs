//! Resolution rules, on hand-written documents.

use applyset_merge::openapi::OpenApi;
use applyset_merge::{Error, PatchMeta};

use super::{json, lookup_error, lookup_slice, lookup_struct, meta, openapi};

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
