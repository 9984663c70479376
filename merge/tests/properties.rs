//! Properties of kubectl's three-way patch, checked on generated documents:
//! after applying the patch to `current`,
//! * fields absent from both original and modified keep their live value (other writers win);
//! * every field of modified is present with modified's value (the manifest wins);
//! * fields of original that modified dropped are gone (apply deletes what it owned).
//!
//! Documents share one shape so that every path is always a leaf or always an object:
//! top-level scalars `a`..`d`, nested objects `m`/`n` with scalar leaves `x`..`z`, an atomic
//! list `args`, and a primitive merge list `fin` (finalizer-like ordered set).

use std::collections::BTreeSet;
use std::sync::Arc;

use applyset_merge::{
    Map, PatchMeta, Result, Schema, SchemaRef, Untyped, Value, create_three_way_merge_patch, strategic_merge_patch,
};
use proptest::prelude::*;

#[derive(Debug)]
struct DocSchema;

impl Schema for DocSchema {
    fn lookup_struct(&self, _key: &str) -> Result<(SchemaRef, PatchMeta)> {
        Ok((Arc::new(Untyped), PatchMeta::default()))
    }
    fn lookup_slice(&self, key: &str) -> Result<(SchemaRef, PatchMeta)> {
        let meta = if key == "fin" { PatchMeta::new("merge", "") } else { PatchMeta::default() };
        Ok((Arc::new(Untyped), meta))
    }
    fn name(&self) -> String {
        "DocSchema".into()
    }
}

const TOP_LEAVES: [&str; 4] = ["a", "b", "c", "d"];
const OBJECTS: [&str; 2] = ["m", "n"];
const NESTED_LEAVES: [&str; 3] = ["x", "y", "z"];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        (-3i64..3).prop_map(Value::Int),
        "[a-c]{0,2}".prop_map(Value::String),
    ]
}

fn leaves(keys: &'static [&'static str]) -> impl Strategy<Value = Map> {
    proptest::collection::vec(proptest::option::of(scalar()), keys.len())
        .prop_map(move |values| keys.iter().zip(values).filter_map(|(k, v)| v.map(|v| (k.to_string(), v))).collect())
}

/// Distinct finalizer-like strings in any order (duplicates have their own, tested, oddities).
fn set_list() -> impl Strategy<Value = Vec<Value>> {
    proptest::collection::btree_set("[p-u]", 0..5)
        .prop_map(|set| set.into_iter().map(Value::String).collect::<Vec<_>>())
        .prop_shuffle()
}

fn document() -> impl Strategy<Value = Value> {
    (
        leaves(&TOP_LEAVES),
        leaves(&NESTED_LEAVES),
        leaves(&NESTED_LEAVES),
        proptest::option::of(proptest::collection::vec(scalar(), 0..3)),
        proptest::option::of(set_list()),
    )
        .prop_map(|(mut top, m, n, args, fin)| {
            // The nested objects are always present, so deletions happen at leaves only.
            top.insert("m".into(), Value::Object(m));
            top.insert("n".into(), Value::Object(n));
            if let Some(args) = args {
                top.insert("args".into(), Value::Array(args));
            }
            if let Some(fin) = fin {
                top.insert("fin".into(), Value::Array(fin));
            }
            Value::Object(top)
        })
}

/// Every leaf path of a document with its value (lists count as leaves, except `fin`, whose
/// members count one by one as `fin/<member>`).
fn leaf_paths(doc: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let top = doc.as_object().unwrap();
    for (k, v) in top {
        match (k.as_str(), v) {
            (obj, Value::Object(inner)) if OBJECTS.contains(&obj) => {
                for (ik, iv) in inner {
                    out.push((format!("{k}/{ik}"), iv.clone()));
                }
            }
            ("fin", Value::Array(items)) => {
                for item in items {
                    out.push((format!("fin/{}", item.as_str().unwrap()), Value::Bool(true)));
                }
            }
            _ => out.push((k.clone(), v.clone())),
        }
    }
    out
}

fn lookup(doc: &Value, path: &str) -> Option<Value> {
    leaf_paths(doc).into_iter().find(|(p, _)| p == path).map(|(_, v)| v)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn three_way_patch_respects_ownership(o in document(), m in document(), c in document()) {
        let patch = create_three_way_merge_patch(&o, &m, &c, &DocSchema, true).unwrap();
        let result = strategic_merge_patch(&c, &patch, &DocSchema).unwrap();

        let in_o: BTreeSet<_> = leaf_paths(&o).into_iter().map(|(p, _)| p).collect();
        let in_m: BTreeSet<_> = leaf_paths(&m).into_iter().map(|(p, _)| p).collect();
        // The `fin` list as a whole disappears when modified drops it and original had it.
        let fin_dropped = o.as_object().unwrap().contains_key("fin") && !m.as_object().unwrap().contains_key("fin");

        for (path, value) in leaf_paths(&m) {
            prop_assert_eq!(lookup(&result, &path), Some(value), "modified's field {} missing; patch {}", path, patch);
        }
        for path in in_o.difference(&in_m) {
            prop_assert_eq!(lookup(&result, path), None, "dropped field {} still there; patch {}", path, patch);
        }
        for (path, value) in leaf_paths(&c) {
            if in_o.contains(&path) || in_m.contains(&path) || (fin_dropped && path.starts_with("fin/")) {
                continue;
            }
            prop_assert_eq!(lookup(&result, &path), Some(value), "foreign field {} touched; patch {}", path, patch);
        }
    }

    #[test]
    fn applying_the_same_manifest_twice_changes_nothing_the_second_time(o in document(), m in document(), c in document()) {
        let patch = create_three_way_merge_patch(&o, &m, &c, &DocSchema, true).unwrap();
        let once = strategic_merge_patch(&c, &patch, &DocSchema).unwrap();
        // After an apply, last-applied is the manifest itself.
        let again = create_three_way_merge_patch(&m, &m, &once, &DocSchema, true).unwrap();
        let twice = strategic_merge_patch(&once, &again, &DocSchema).unwrap();
        prop_assert_eq!(once, twice);
    }
}
