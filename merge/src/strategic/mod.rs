//! Strategic merge patch: creation (two-way, three-way) and application, as kubectl and the
//! API server compute them (spec §3–§7).
//!
//! * [`diff`]: the patch from one document to another (§4);
//! * [`apply`]: merging a patch into a document, or two patches into one (§6);
//! * [`order`]: the ordering of merged lists and the Go slice effects it depends on (§7);
//! * [`conflict`]: the `--overwrite=false` check (§5 step 6);
//! * [`gosort`] and [`keys`]: Go's sort and Go's notions of equality, which the results
//!   depend on.
//!
//! Every input is checked against [`MAX_DEPTH`] before any recursion, so documents built in
//! code (not only parsed ones) cannot overflow the stack.

mod apply;
mod conflict;
mod diff;
pub mod gosort;
mod keys;
mod order;

use apply::{MergeOptions, merge_map};
use diff::{DiffOptions, SortLog, diff_maps};
use keys::{TypedKey, go_v_lists};

use crate::error::{Error, Result};
use crate::meta::Schema;
use crate::value::{MAX_DEPTH, Map, Value};

pub(crate) const DIRECTIVE_MARKER: &str = "$patch";
pub(crate) const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
pub(crate) const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
pub(crate) const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

/// Two-way patch from `original` to `modified` (upstream `CreateTwoWayMergePatch`), with
/// `$setElementOrder` generation on. Both documents must be objects (`null` counts as `{}`,
/// as it does for Go's decoder).
pub fn create_two_way_merge_patch(original: &Value, modified: &Value, schema: &dyn Schema) -> Result<Value> {
    let original = document_ref(original)?;
    let modified = document_ref(modified)?;
    let opts = DiffOptions { changes: true, deletions: true, set_order: true, retain_keys: false };
    Ok(Value::Object(diff_maps(&original, &modified, schema, opts, &mut SortLog::new(false))?))
}

/// Three-way patch (upstream `CreateThreeWayMergePatch`): `original` is the last-applied
/// configuration, `modified` the new manifest, `current` the live object. With
/// `overwrite == false`, a patch that overlaps changes made from original to current fails
/// with [`crate::Error::Conflict`].
pub fn create_three_way_merge_patch(
    original: &Value,
    modified: &Value,
    current: &Value,
    schema: &dyn Schema,
    overwrite: bool,
) -> Result<Value> {
    let original = document_ref(original)?;
    let modified = document_ref(modified)?;
    let current = document_ref(current)?;
    // The conflict check sees the scalar lists the two passes sorted in place (§4.5).
    let mut current_sorts = SortLog::new(!overwrite);
    let mut original_sorts = SortLog::new(!overwrite);

    // Additions and changes from the live object (nothing the live object has extra is removed)…
    let delta_opts = DiffOptions { changes: true, deletions: false, set_order: true, retain_keys: false };
    let delta = diff_maps(&current, &modified, schema, delta_opts, &mut current_sorts)?;
    // …plus deletions of what the last-applied configuration had and the manifest dropped.
    let deletion_opts = DiffOptions { changes: false, deletions: true, set_order: true, retain_keys: false };
    let deletions = diff_maps(&original, &modified, schema, deletion_opts, &mut original_sorts)?;
    let patch = merge_map(deletions, delta, schema, MergeOptions::MERGE_PATCHES)?;

    if !overwrite {
        let mut original = original.into_owned();
        original_sorts.replay(&mut original);
        let mut current = current.into_owned();
        current_sorts.replay(&mut current);
        let changed_opts = DiffOptions { changes: true, deletions: true, set_order: false, retain_keys: false };
        let changed = diff_maps(&original, &current, schema, changed_opts, &mut SortLog::new(false))?;
        if conflict::maps_have_conflicts(&patch, &changed, schema)? {
            return Err(Error::Conflict {
                patch: Value::Object(patch).to_json_string(),
                changed: Value::Object(changed).to_json_string(),
            });
        }
    }
    Ok(Value::Object(patch))
}

/// Applies a strategic merge patch to `doc` as the API server does (parallel lists merged,
/// unmatched nulls ignored). Lists in `doc` are assumed to come from JSON decoding, which
/// matters only for the order of live scalar lists that contain duplicates (spec §7.4).
pub fn strategic_merge_patch(doc: &Value, patch: &Value, schema: &dyn Schema) -> Result<Value> {
    // Checked before copying: a copy recurses as deep as the document does.
    check_depth(doc)?;
    check_depth(patch)?;
    merge_documents(doc.clone(), patch.clone(), schema)
}

/// [`strategic_merge_patch`] on owned documents: the document is merged in place, so callers
/// that own the live object (just read from the server) pay for no copy of it.
pub fn apply_strategic_merge_patch(doc: Value, patch: Value, schema: &dyn Schema) -> Result<Value> {
    check_depth(&doc)?;
    check_depth(&patch)?;
    merge_documents(doc, patch, schema)
}

fn merge_documents(doc: Value, patch: Value, schema: &dyn Schema) -> Result<Value> {
    let doc = owned_document(doc)?;
    let patch = owned_document(patch)?;
    Ok(Value::Object(merge_map(doc, patch, schema, MergeOptions::APPLY)?))
}

/// An owned document argument, already checked against [`MAX_DEPTH`]; see [`document_ref`].
fn owned_document(v: Value) -> Result<Map> {
    match v.into_object() {
        Ok(m) => Ok(m),
        Err(Value::Null) => Ok(Map::new()),
        _ => Err(Error::BadJsonDoc),
    }
}

/// A document argument: an object (or `null`, which Go decodes into an empty map), not
/// nested deeper than [`MAX_DEPTH`].
fn document_ref(v: &Value) -> Result<std::borrow::Cow<'_, Map>> {
    check_depth(v)?;
    match v {
        Value::Object(m) => Ok(std::borrow::Cow::Borrowed(m)),
        Value::Null => Ok(std::borrow::Cow::Owned(Map::new())),
        _ => Err(Error::BadJsonDoc),
    }
}

/// Depth check before any other traversal (the copies and recursions of the algorithms
/// included). Its own recursion stops at the limit, so it cannot overflow the stack.
fn check_depth(root: &Value) -> Result<()> {
    fn within(v: &Value, remaining: usize) -> bool {
        // One level of a walk over the document: see `value::deeper`.
        crate::value::deeper(move || match v {
            Value::Array(items) => remaining > 0 && items.iter().all(|c| within(c, remaining - 1)),
            Value::Object(map) => remaining > 0 && map.values().all(|c| within(c, remaining - 1)),
            _ => true,
        })
    }
    if within(root, MAX_DEPTH) { Ok(()) } else { Err(Error::TooDeep(MAX_DEPTH)) }
}

/// What the elements of one or more lists are, once checked to be of one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ElemKind {
    Map,
    Scalar,
}

/// Upstream `sliceElementType`: all elements of all lists share one type, which is not a list.
pub(crate) fn slice_element_type(lists: &[&[Value]]) -> Result<ElemKind> {
    let mut first: Option<&Value> = None;
    for v in lists.iter().flat_map(|l| l.iter()) {
        match first {
            None => {
                if matches!(v, Value::Array(_)) {
                    return Err(Error::NoListOfLists);
                }
                first = Some(v);
            }
            Some(f) if !f.same_variant(v) => return Err(Error::ListElementTypesDiffer(go_v_lists(lists))),
            Some(_) => {}
        }
    }
    match first {
        None => Err(Error::NoElements),
        Some(Value::Object(_)) => Ok(ElemKind::Map),
        Some(_) => Ok(ElemKind::Scalar),
    }
}

/// Upstream `mergeKeyValueEqual`: typed equality of the merge-key values of two elements
/// (of the elements themselves when there is no merge key).
pub(crate) fn merge_key_values_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool> {
    if merge_key.is_empty() {
        return Ok(TypedKey::of(left) == TypedKey::of(right));
    }
    fn key_of<'a>(v: &'a Value, merge_key: &str) -> Result<TypedKey<'a>> {
        match v {
            Value::Object(m) => m.get(merge_key).map(TypedKey::of).ok_or_else(|| Error::no_merge_key(v, merge_key)),
            other => Err(order::bad_map_arg(other)),
        }
    }
    Ok(key_of(left, merge_key)? == key_of(right, merge_key)?)
}

#[cfg(test)]
mod tests;
