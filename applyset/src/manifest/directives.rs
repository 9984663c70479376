//! Strategic-merge-patch directives written in a manifest (the controller's check).
//!
//! kubectl copies a manifest into the patch it sends, so a key such as `$patch: delete` in a
//! container reaches the apiserver as a directive (the container is deleted), and is then kept
//! in the last-applied annotation, from where every later patch of the object carries it and
//! fails (a revert too). Such keys are data a user wrote, never an instruction, so the
//! controller refuses manifests that carry one. The shapes are those the apiserver's strategic
//! merge patch reads as directives (`mergeMap`: `$patch`, `$retainKeys`, and any key starting
//! with `$setElementOrder` or `$deleteFromPrimitiveList`, slash or not). No built-in
//! Kubernetes field has such a name; custom resources (JSON merge patch, where these keys are
//! plain data) are refused too, so that one rule holds for every object.

use std::fmt;

use applyset_merge::Value;

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

/// Whether the apiserver's strategic merge patch would read `key` as a directive.
pub fn is_patch_directive(key: &str) -> bool {
    key == PATCH
        || key == RETAIN_KEYS
        || key.starts_with(SET_ELEMENT_ORDER)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// Where a directive key sits in an object: `spec.template.spec.containers[0].$patch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath(pub Vec<Step>);

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(key) if i == 0 => f.write_str(key)?,
                Step::Key(key) => write!(f, ".{key}")?,
                Step::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// The first patch directive key in `value` (depth first, map keys in order), if any.
pub fn find_patch_directive(value: &Value) -> Option<FieldPath> {
    // An explicit stack: what the loader accepts is at most `MAX_DEPTH` deep, but this check
    // should not rely on it.
    let mut stack: Vec<(Vec<Step>, &Value)> = vec![(Vec::new(), value)];
    while let Some((path, value)) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(key) = map.keys().find(|key| is_patch_directive(key)) {
                    let mut path = path;
                    path.push(Step::Key(key.clone()));
                    return Some(FieldPath(path));
                }
                // Reversed, so that the first key is looked at first.
                for (key, child) in map.iter().rev() {
                    if matches!(child, Value::Object(_) | Value::Array(_)) {
                        let mut child_path = path.clone();
                        child_path.push(Step::Key(key.clone()));
                        stack.push((child_path, child));
                    }
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate().rev() {
                    if matches!(child, Value::Object(_) | Value::Array(_)) {
                        let mut child_path = path.clone();
                        child_path.push(Step::Index(index));
                        stack.push((child_path, child));
                    }
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn value(json: &str) -> Value {
        Value::from_json_str(json).unwrap()
    }

    fn found(json: &str) -> Option<String> {
        find_patch_directive(&value(json)).map(|p| p.to_string())
    }

    #[test]
    fn directive_shapes() {
        for key in [
            "$patch",
            "$retainKeys",
            "$setElementOrder/containers",
            "$setElementOrder",
            "$deleteFromPrimitiveList/finalizers",
            "$deleteFromPrimitiveListX",
        ] {
            assert!(is_patch_directive(key), "{key}");
        }
        for key in ["patch", "$ref", "$schema", "$Patch", "$patches", "a$patch", "$retainKeysX", "", "$"] {
            assert!(!is_patch_directive(key), "{key}");
        }
    }

    #[test]
    fn paths_name_maps_and_list_items_at_any_depth() {
        assert_eq!(found(r#"{"kind":"ConfigMap","data":{"a":"$patch"}}"#), None);
        assert_eq!(found(r#"{"$patch":"replace","kind":"X"}"#).as_deref(), Some("$patch"));
        let deployment = r#"{"kind":"Deployment","spec":{"template":{"spec":{"containers":[
            {"name":"a"},{"name":"b","$patch":"delete"}]}}}}"#;
        assert_eq!(found(deployment).as_deref(), Some("spec.template.spec.containers[1].$patch"));
        assert_eq!(found(r#"{"spec":{"$retainKeys":["a"]}}"#).as_deref(), Some("spec.$retainKeys"));
        assert_eq!(
            found(r#"{"spec":{"$setElementOrder/containers":[{"name":"a"}]}}"#).as_deref(),
            Some("spec.$setElementOrder/containers")
        );
        assert_eq!(
            found(r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}"#).as_deref(),
            Some("metadata.$deleteFromPrimitiveList/finalizers")
        );
        // A list of lists, and a primitive list's `{"$patch": "replace"}` item.
        assert_eq!(found(r#"{"a":[[1,{"b":[{"$patch":"replace"}]}]]}"#).as_deref(), Some("a[0][1].b[0].$patch"));
        // The first in document order (keys sorted) is named.
        assert_eq!(found(r#"{"b":{"$patch":"x"},"a":[{"$retainKeys":[]}]}"#).as_deref(), Some("a[0].$retainKeys"));
    }

    /// A JSON document with keys from a small alphabet that includes directive keys.
    fn arb_value() -> impl Strategy<Value = serde_json::Value> {
        let key = prop::sample::select(vec![
            "a",
            "name",
            "spec",
            "$ref",
            "$patch",
            "$retainKeys",
            "$setElementOrder/a",
            "$deleteFromPrimitiveList/b",
        ]);
        let leaf = prop_oneof![Just(serde_json::Value::Null), any::<i32>().prop_map(serde_json::Value::from)];
        leaf.prop_recursive(6, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                prop::collection::btree_map(key.clone(), inner, 0..4).prop_map(|m| {
                    serde_json::Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                }),
            ]
        })
    }

    /// Every directive key, found by a plain recursive walk.
    fn all_directives(v: &serde_json::Value, path: &mut Vec<Step>, out: &mut Vec<FieldPath>) {
        match v {
            serde_json::Value::Object(map) => {
                for (key, child) in map {
                    path.push(Step::Key(key.clone()));
                    if is_patch_directive(key) {
                        out.push(FieldPath(path.clone()));
                    }
                    all_directives(child, path, out);
                    path.pop();
                }
            }
            serde_json::Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    path.push(Step::Index(index));
                    all_directives(child, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    proptest! {
        #[test]
        fn finds_a_directive_exactly_when_there_is_one(json in arb_value()) {
            let value = value(&json.to_string());
            let mut expected = Vec::new();
            all_directives(&json, &mut Vec::new(), &mut expected);
            match find_patch_directive(&value) {
                None => prop_assert!(expected.is_empty(), "missed {expected:?}"),
                Some(path) => prop_assert!(expected.contains(&path), "{path} is not a directive of {json}"),
            }
        }
    }
}
