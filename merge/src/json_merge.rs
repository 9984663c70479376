//! The three-way JSON merge patch kubectl uses for custom resources, and RFC 7386 application
//! (spec §8).
//!
//! kubectl builds the patch from two RFC 7386 diffs computed by evanphx/json-patch
//! (`CreateMergePatch`): the additions and changes from *current* to *modified* (nulls
//! removed) and the deletions from *original* to *modified* (nulls only), then merges the
//! first onto the second with `MergePatch`.
//!
//! Two number rules are reproduced:
//! * the diff decodes with Go's `encoding/json` into `interface{}`, so every number is a
//!   float64: `1` and `1.0` are equal, integers beyond 2^53 round, and the diff's output is
//!   re-read from Go's float text (see [`create_merge_patch`]);
//! * `MergePatch` keeps the patch's and the document's values as they are.

use crate::{Error, Map, Result, Value};

/// Three-way JSON merge patch (upstream `CreateThreeWayJSONMergePatch`, called without
/// preconditions): `original` is the last-applied configuration, `modified` the new manifest,
/// `current` the live object.
///
/// The patch sets what `modified` adds or changes relative to `current`, and deletes (with
/// `null`) what was removed from `original` to `modified`. Fields that only the live object
/// has are left alone; lists are always replaced whole. A `null` document is treated as `{}`
/// (as Go decodes it); any other non-object is [`Error::BadJsonDoc`].
pub fn create_three_way(original: &Value, modified: &Value, current: &Value) -> Result<Value> {
    let (original, modified, current) = (as_document(original)?, as_document(modified)?, as_document(current)?);

    let additions_and_changes = keep_or_delete_null(&diff_objects(current, modified), false);
    let deletions = keep_or_delete_null(&diff_objects(original, modified), true);

    // Upstream checks the two halves for conflicts. One holds no nulls and the other only
    // nulls, so a shared key can never disagree; the check is kept as a guard.
    if has_conflicts(&additions_and_changes, &deletions) {
        return Err(Error::Conflict {
            patch: Value::Object(additions_and_changes).to_json_string(),
            changed: Value::Object(deletions).to_json_string(),
        });
    }
    let mut patch = deletions;
    merge_objects(&mut patch, &additions_and_changes);
    Ok(Value::Object(patch))
}

/// [`create_three_way`] with the preconditions kubectl's apply passes for custom resources:
/// the patch must not change `apiVersion`, `kind` or `metadata.name`.
///
/// Fails with [`Error::PreconditionFailed`] (`precondition failed for: map[…]`). kubectl means
/// to replace that text with "At least one of apiVersion, kind and name was changed", but its
/// error-type check never matches, so the plain text is what users see (spec §8 step 6).
pub fn create_three_way_for_apply(original: &Value, modified: &Value, current: &Value) -> Result<Value> {
    let patch = create_three_way(original, modified, current)?;
    check_apply_preconditions(&patch)?;
    Ok(patch)
}

/// kubectl's apply preconditions on a JSON merge patch (`RequireKeyUnchanged("apiVersion")`,
/// `RequireKeyUnchanged("kind")`, `RequireMetadataKeyUnchanged("name")`): a key present in the
/// patch means its value changes.
pub fn check_apply_preconditions(patch: &Value) -> Result<()> {
    let Value::Object(map) = patch else {
        return Ok(());
    };
    let changes_name = map.get("metadata").and_then(Value::as_object).is_some_and(|m| m.contains_key("name"));
    if map.contains_key("apiVersion") || map.contains_key("kind") || changes_name {
        return Err(Error::PreconditionFailed(patch.go_v_string()));
    }
    Ok(())
}

/// The RFC 7386 diff from `original` to `modified` (evanphx `CreateMergePatch` on two
/// objects): keys added or changed in `modified` with their new values, keys removed as
/// `null`, objects diffed recursively (and left out when unchanged), every other value —
/// lists included — sent whole when it differs.
///
/// Numbers are compared and emitted as Go's float64: `1` equals `1.0`, and each emitted
/// number is what re-reading Go's float text gives (`9007199254740995` becomes
/// `9007199254740996`; `1e21` stays a float). A `null` document is `{}`.
pub fn create_merge_patch(original: &Value, modified: &Value) -> Result<Value> {
    Ok(Value::Object(diff_objects(as_document(original)?, as_document(modified)?)))
}

/// Applies an RFC 7386 merge patch to `doc` (evanphx `MergePatch`): a `null` member deletes
/// the key; an object merges into an object recursively; anything else replaces the target
/// value. Values written where the target had none (or had a non-object) have their nulls
/// pruned: object members recursively, also inside lists, while `null` list elements stay.
/// A non-object value replacing an object is written verbatim.
///
/// Both `doc` and `patch` must be objects, else [`Error::BadJsonDoc`].
pub fn merge_patch(doc: &Value, patch: &Value) -> Result<Value> {
    let (Value::Object(doc), Value::Object(patch)) = (doc, patch) else {
        return Err(Error::BadJsonDoc);
    };
    let mut merged = doc.clone();
    merge_objects(&mut merged, patch);
    Ok(Value::Object(merged))
}

/// Splits a diff into its deletions or its additions (upstream `keepOrDeleteNullInObj`).
///
/// * `keep_null = true`: only `null` leaves survive, with the objects that lead to them.
/// * `keep_null = false`: `null` leaves are dropped; an object that was explicitly `{}` is a
///   value and kept, an object that becomes empty through filtering is dropped; lists and
///   scalars are kept whole.
pub fn keep_or_delete_null(obj: &Map, keep_null: bool) -> Map {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || {
        let mut filtered = Map::new();
        for (key, value) in obj {
            match value {
                Value::Null if keep_null => {
                    filtered.insert(key.clone(), Value::Null);
                }
                Value::Null => {}
                Value::Object(sub) if sub.is_empty() => {
                    if !keep_null {
                        filtered.insert(key.clone(), Value::Object(Map::new()));
                    }
                }
                Value::Object(sub) => {
                    let sub = keep_or_delete_null(sub, keep_null);
                    if !sub.is_empty() {
                        filtered.insert(key.clone(), Value::Object(sub));
                    }
                }
                _ if keep_null => {}
                _ => {
                    filtered.insert(key.clone(), value.clone());
                }
            }
        }
        filtered
    })
}

// ---------------------------------------------------------------------------------------------
// Diff (evanphx getDiff / matchesValue, on float64 numbers)

/// Go decodes `null` into a map as an empty map; anything else that is not an object fails.
fn as_document(doc: &Value) -> Result<&Map> {
    static EMPTY: Map = Map::new();
    match doc {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(&EMPTY),
        _ => Err(Error::BadJsonDoc),
    }
}

fn diff_objects(a: &Map, b: &Map) -> Map {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || {
        let mut into = Map::new();
        for (key, b_value) in b {
            let Some(a_value) = a.get(key) else {
                into.insert(key.clone(), through_float64(b_value));
                continue;
            };
            match (a_value, b_value) {
                (Value::Object(a_sub), Value::Object(b_sub)) => {
                    let sub = diff_objects(a_sub, b_sub);
                    if !sub.is_empty() {
                        into.insert(key.clone(), Value::Object(sub));
                    }
                }
                // Both null, or equal as Go sees them: nothing to send.
                _ if float64_equal(a_value, b_value) => {}
                _ => {
                    into.insert(key.clone(), through_float64(b_value));
                }
            }
        }
        for key in a.keys() {
            if !b.contains_key(key) {
                into.insert(key.clone(), Value::Null);
            }
        }
        into
    })
}

fn as_float64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// Deep equality after decoding into Go's `interface{}`: numbers compare as float64.
fn float64_equal(a: &Value, b: &Value) -> bool {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || match (a, b) {
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| float64_equal(x, y)),
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, x)| b.get(k).is_some_and(|y| float64_equal(x, y)))
        }
        _ => match (as_float64(a), as_float64(b)) {
            (Some(x), Some(y)) => x == y,
            (None, None) => a == b,
            _ => false,
        },
    })
}

/// A value as Go's diff emits it: numbers become float64, are printed by `encoding/json`, and
/// that text is what the caller reads back. A whole float below 1e21 prints without a fraction
/// or exponent and so reads back as an integer when it fits in i64 (`-0` reads as `0`).
fn through_float64(v: &Value) -> Value {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || {
        match v {
            Value::Int(_) | Value::Float(_) => {
                let f = as_float64(v).expect("a number");
                // 2^63 is exactly representable; the i64 range is [-2^63, 2^63).
                const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
                if f.fract() == 0.0 && f.abs() < 1e21 && (-TWO_POW_63..TWO_POW_63).contains(&f) {
                    Value::Int(f as i64)
                } else {
                    Value::Float(f)
                }
            }
            Value::Array(items) => Value::Array(items.iter().map(through_float64).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, x)| (k.clone(), through_float64(x))).collect()),
            other => other.clone(),
        }
    })
}

/// Upstream `mergepatch.HasConflicts`: a shared key whose values differ in kind or, for
/// scalars, in value; lists conflict unless equal in length and element-wise free of conflicts.
fn has_conflicts(left: &Map, right: &Map) -> bool {
    left.iter().any(|(key, l)| right.get(key).is_some_and(|r| values_conflict(l, r)))
}

fn values_conflict(left: &Value, right: &Value) -> bool {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || match (left, right) {
        (Value::Object(l), Value::Object(r)) => has_conflicts(l, r),
        (Value::Object(_), _) => true,
        (Value::Array(l), Value::Array(r)) => l.len() != r.len() || l.iter().zip(r).any(|(x, y)| values_conflict(x, y)),
        (Value::Array(_), _) => true,
        _ => left != right,
    })
}

// ---------------------------------------------------------------------------------------------
// Application (evanphx mergeDocs / merge / pruneNulls)

fn merge_objects(doc: &mut Map, patch: &Map) {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || {
        for (key, patch_value) in patch {
            if patch_value.is_null() {
                doc.remove(key);
                continue;
            }
            match doc.get_mut(key) {
                Some(Value::Object(target)) => match patch_value {
                    Value::Object(sub_patch) => merge_objects(target, sub_patch),
                    // A non-object replacing an object is written as it is, nulls included.
                    _ => {
                        doc.insert(key.clone(), patch_value.clone());
                    }
                },
                // Absent, null or not an object: the patch value, with its nulls pruned.
                _ => {
                    doc.insert(key.clone(), without_nulls(patch_value));
                }
            }
        }
    })
}

/// Upstream `pruneNulls`: drops null object members at every depth, inside lists too, but
/// keeps null list elements.
fn without_nulls(v: &Value) -> Value {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || match v {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(_, x)| !x.is_null()).map(|(k, x)| (k.clone(), without_nulls(x))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        Value::from_json_str(text).unwrap()
    }

    #[test]
    fn numbers_diff_as_float64() {
        // 1 and 1.0 are the same float64: no change.
        assert_eq!(create_merge_patch(&json(r#"{"a":1}"#), &json(r#"{"a":1.0}"#)).unwrap(), json("{}"));
        // Two integers that round to the same float64 are equal too.
        let same = create_merge_patch(&json(r#"{"a":9007199254740996}"#), &json(r#"{"a":9007199254740995}"#));
        assert_eq!(same.unwrap(), json("{}"));
        // Emitted numbers are re-read from Go's float text [H j02].
        let patch = create_merge_patch(&json("{}"), &json(r#"{"big":9007199254740995,"e":1e21,"f":2.5,"w":3.0}"#));
        assert_eq!(patch.unwrap().to_json_string(), r#"{"big":9007199254740996,"e":1e+21,"f":2.5,"w":3}"#);
        assert_eq!(through_float64(&Value::Float(-0.0)), Value::Int(0));
        assert_eq!(through_float64(&Value::Float(1e19)), Value::Float(1e19));
        assert_eq!(through_float64(&Value::Int(i64::MIN)), Value::Int(i64::MIN));
    }

    #[test]
    fn three_way_leaves_server_fields_and_replaces_lists() {
        // [H j01]
        let original = json(r#"{"spec":{"list":[{"name":"a","v":1}],"map":{"k1":1,"k2":2},"keep":"k"}}"#);
        let modified = json(r#"{"spec":{"list":[{"name":"a","v":2}],"map":{"k1":1}}}"#);
        let current = json(
            r#"{"spec":{"list":[{"name":"a","v":1,"extra":true},{"name":"b"}],"map":{"k1":1,"k2":2,"k3":3},"keep":"k","serverField":"s"},"status":{"ok":true}}"#,
        );
        let patch = create_three_way(&original, &modified, &current).unwrap();
        assert_eq!(patch.to_json_string(), r#"{"spec":{"keep":null,"list":[{"name":"a","v":2}],"map":{"k2":null}}}"#);
        let result = merge_patch(&current, &patch).unwrap();
        assert_eq!(
            result,
            json(
                r#"{"spec":{"list":[{"name":"a","v":2}],"map":{"k1":1,"k3":3},"serverField":"s"},"status":{"ok":true}}"#
            )
        );
    }

    #[test]
    fn null_kept_in_original_and_modified_does_not_delete() {
        // [H j03]
        let both = json(r#"{"spec":{"a":null}}"#);
        let patch = create_three_way(&both, &both, &json(r#"{"spec":{"a":5,"b":1}}"#)).unwrap();
        assert_eq!(patch, json("{}"));
    }

    #[test]
    fn explicit_nulls_in_new_subtrees_are_sent_and_pruned_on_apply() {
        // [H j04]
        let current = json(r#"{"spec":{"b":1}}"#);
        let modified = json(r#"{"spec":{"b":1,"a":null,"nested":{"x":null,"z":1}}}"#);
        let patch = create_three_way(&current, &modified, &current).unwrap();
        assert_eq!(patch.to_json_string(), r#"{"spec":{"a":null,"nested":{"x":null,"z":1}}}"#);
        assert_eq!(merge_patch(&current, &patch).unwrap(), json(r#"{"spec":{"b":1,"nested":{"z":1}}}"#));
    }

    #[test]
    fn merge_patch_prunes_only_where_the_target_is_not_an_object() {
        let doc = json(r#"{"obj":{"a":1},"scalar":1,"nul":null}"#);
        let patch = json(
            r#"{"obj":[{"x":null},null],"scalar":{"y":null,"z":[{"w":null},null]},"nul":{"q":null},"new":[[{"n":null}]]}"#,
        );
        let merged = merge_patch(&doc, &patch).unwrap();
        assert_eq!(merged, json(r#"{"obj":[{"x":null},null],"scalar":{"z":[{},null]},"nul":{},"new":[[{}]]}"#));
    }

    #[test]
    fn non_objects_are_rejected() {
        assert_eq!(merge_patch(&json("[]"), &json("{}")), Err(Error::BadJsonDoc));
        assert_eq!(merge_patch(&json("{}"), &json("null")), Err(Error::BadJsonDoc));
        assert_eq!(create_three_way(&json("{}"), &json("1"), &json("{}")), Err(Error::BadJsonDoc));
        // A null document decodes as an empty object in Go.
        assert_eq!(create_three_way(&Value::Null, &json(r#"{"a":1}"#), &Value::Null).unwrap(), json(r#"{"a":1}"#));
    }

    #[test]
    fn apply_preconditions() {
        let current = json(r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}"#);
        let renamed = json(r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"v"}}"#);
        let err = create_three_way_for_apply(&current, &renamed, &current).unwrap_err();
        assert_eq!(err.to_string(), "precondition failed for: map[metadata:map[name:v]]");
        let moved = json(r#"{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"}}"#);
        assert!(matches!(create_three_way_for_apply(&current, &moved, &current), Err(Error::PreconditionFailed(_))));
        let labelled =
            json(r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"a":"b"}}}"#);
        let patch = create_three_way_for_apply(&current, &labelled, &current).unwrap();
        assert_eq!(patch.to_json_string(), r#"{"metadata":{"labels":{"a":"b"}}}"#);
    }

    #[test]
    fn conflict_check_matches_upstream() {
        let obj = |t: &str| json(t).as_object().unwrap().clone();
        assert!(!has_conflicts(&obj(r#"{"a":{"b":1}}"#), &obj(r#"{"a":{"c":null}}"#)));
        assert!(has_conflicts(&obj(r#"{"a":{"b":1}}"#), &obj(r#"{"a":null}"#)));
        assert!(has_conflicts(&obj(r#"{"a":[1]}"#), &obj(r#"{"a":[1,2]}"#)));
        assert!(!has_conflicts(&obj(r#"{"a":[1,2]}"#), &obj(r#"{"a":[1,2]}"#)));
        assert!(has_conflicts(&obj(r#"{"a":1}"#), &obj(r#"{"a":2}"#)));
    }
}
