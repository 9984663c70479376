//! Merging a patch into a document (spec §6), in the two modes kubectl uses:
//!
//! * parallel mode (`parallel = true`, unmatched nulls ignored): applying a patch as the API
//!   server does; `$deleteFromPrimitiveList` and `$retainKeys` are executed;
//! * patch-merging mode: folding the delta patch into the deletions patch during three-way
//!   creation; directives are copied (and checked for agreement) instead of executed.
//!
//! Documents are consumed and returned, so no subtree is copied more than necessary. Merging
//! list fields is in [`lists`].

mod lists;

use super::keys::{KeySet, TypedKey, go_s_string, go_type_name};
use super::order::{ServerOrder, order_merged};
use super::{
    DELETE_FROM_PRIMITIVE_LIST_PREFIX, DIRECTIVE_MARKER, ElemKind, RETAIN_KEYS_DIRECTIVE, SET_ELEMENT_ORDER_PREFIX,
    merge_key_values_equal, slice_element_type,
};
use crate::error::{Error, Result};
use crate::meta::Schema;
use crate::value::{Map, Value};
use lists::{ListField, LiveView, Reorder, merge_list_field};

#[derive(Debug, Clone, Copy)]
pub(crate) struct MergeOptions {
    /// Execute parallel lists (`$deleteFromPrimitiveList`, `$retainKeys`) instead of copying them.
    pub parallel: bool,
    /// A `null` for a key the document lacks is dropped rather than stored.
    pub ignore_unmatched_nulls: bool,
}

impl MergeOptions {
    pub(crate) const APPLY: MergeOptions = MergeOptions { parallel: true, ignore_unmatched_nulls: true };
    pub(crate) const MERGE_PATCHES: MergeOptions = MergeOptions { parallel: false, ignore_unmatched_nulls: false };
}

/// Upstream `mergeMap`.
pub(crate) fn merge_map(original: Map, mut patch: Map, schema: &dyn Schema, opts: MergeOptions) -> Result<Map> {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || {
        if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
            return match directive.as_str() {
                Some("replace") => {
                    patch.remove(DIRECTIVE_MARKER);
                    Ok(patch)
                }
                Some("delete") => Ok(Map::new()),
                _ => Err(bad_patch_type(directive, &patch)),
            };
        }
        let mut original = original;
        apply_retain_keys(&mut original, &mut patch, opts)?;
        // Ordering directives run before the other keys, so a deletion list for the same field
        // is applied to the already ordered list.
        apply_set_element_order(&mut original, &mut patch, schema, opts)?;

        for (patch_key, patch_value) in patch {
            let (key, is_deletion_list) = if patch_key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
                if !opts.parallel {
                    original.insert(patch_key, patch_value);
                    continue;
                }
                let field = extract_key(&patch_key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)
                    .ok_or(Error::BadPatchFormatForPrimitiveList)?;
                (if field.is_empty() { patch_key.clone() } else { field.to_owned() }, true)
            } else {
                (patch_key, false)
            };

            if patch_value.is_null() {
                original.remove(&key);
                if opts.ignore_unmatched_nulls {
                    continue;
                }
            }
            let current = original.get_mut(&key);
            let same_variant = current.as_ref().is_some_and(|c| c.same_variant(&patch_value));
            let Some(current) = current.filter(|_| same_variant) else {
                // Absent or of another type: the patch value replaces it (deletion lists do nothing).
                if !is_deletion_list {
                    store_stripped(&mut original, key, patch_value, opts);
                }
                continue;
            };
            match current {
                Value::Object(current) => {
                    let Ok(patch_map) = patch_value.into_object() else { unreachable!("same variant") };
                    let merged = schema.lookup_struct(&key).and_then(|(child, meta)| {
                        if meta.strategy()?.replace {
                            Ok(patch_map)
                        } else {
                            merge_map(std::mem::take(current), patch_map, child.as_ref(), opts)
                        }
                    });
                    *current = merged.map_err(|e| e.in_field(&key))?;
                }
                Value::Array(current) => {
                    let Ok(patch_list) = patch_value.into_array() else { unreachable!("same variant") };
                    let merged = schema.lookup_slice(&key).and_then(|(element, meta)| {
                        let field =
                            ListField { strategy: meta.strategy()?, merge_key: &meta.merge_key, is_deletion_list };
                        merge_list_field(
                            std::mem::take(current),
                            patch_list,
                            element.as_ref(),
                            field,
                            opts,
                            Reorder::Always,
                        )
                    });
                    *current = merged.map_err(|e| e.in_field(&key))?.items;
                }
                _ => store_stripped(&mut original, key, patch_value, opts),
            }
        }
        Ok(original)
    })
}

fn bad_patch_type(directive: &Value, map: &Map) -> Error {
    Error::BadPatchType { patch_type: go_s_string(directive), map: Value::Object(map.clone()).go_v_string() }
}

/// Stores a patch value where the document has nothing to merge it with: nulls inside it are
/// dropped (parallel mode) and objects carrying `$patch` vanish (spec §3.1).
fn store_stripped(original: &mut Map, key: String, mut value: Value, opts: MergeOptions) {
    if opts.ignore_unmatched_nulls {
        discard_null_members(&mut value);
    }
    if strip_directives(&mut value) {
        original.insert(key, value);
    } else {
        original.remove(&key);
    }
}

/// Upstream `discardNullValuesFromPatch`: removes null-valued object members at any depth
/// (null list elements stay).
fn discard_null_members(value: &mut Value) {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_null_members);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_null_members),
        _ => {}
    })
}

/// Upstream `removeDirectives`, in place: drops every object carrying `$patch` (members and
/// list elements alike). Returns false when the value itself is such an object.
pub(crate) fn strip_directives(value: &mut Value) -> bool {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || {
        if !has_directive(value) {
            return true;
        }
        match value {
            Value::Object(map) => {
                if map.contains_key(DIRECTIVE_MARKER) {
                    return false;
                }
                map.retain(|_, v| strip_directives(v));
                true
            }
            Value::Array(items) => {
                items.retain_mut(strip_directives);
                true
            }
            _ => true,
        }
    })
}

/// Whether any object inside `value` (or `value` itself) carries `$patch`; a read-only scan,
/// much cheaper than rebuilding the maps.
fn has_directive(value: &Value) -> bool {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || match value {
        Value::Object(map) => map.contains_key(DIRECTIVE_MARKER) || map.values().any(has_directive),
        Value::Array(items) => items.iter().any(has_directive),
        _ => false,
    })
}

/// `<prefix>/<field>` → `field`; `None` when the key is not exactly the prefix plus `/`.
pub(crate) fn extract_key<'a>(key: &'a str, prefix: &str) -> Option<&'a str> {
    let (head, rest) = key.split_once('/')?;
    (head == prefix).then_some(rest)
}

/// Upstream `applyRetainKeysDirective` (spec §3.3).
fn apply_retain_keys(original: &mut Map, patch: &mut Map, opts: MergeOptions) -> Result<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    if !opts.parallel {
        match original.get(RETAIN_KEYS_DIRECTIVE) {
            Some(existing) if *existing != retain => {
                return Err(Error::RetainKeysDisagree(existing.go_v_string(), retain.go_v_string()));
            }
            Some(_) => {}
            None => {
                original.insert(RETAIN_KEYS_DIRECTIVE.to_owned(), retain);
            }
        }
        return Ok(());
    }
    let Ok(list) = retain.into_array() else {
        return Err(Error::BadPatchFormatForRetainKeys);
    };
    let keep: KeySet<TypedKey<'_>> = list.iter().map(TypedKey::of).collect();
    let listed = |k: &str| keep.contains(&TypedKey::Str(k.into()));
    for (k, v) in patch.iter() {
        let exempt =
            v.is_null() || k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) || k.starts_with(SET_ELEMENT_ORDER_PREFIX);
        if !exempt && !listed(k) {
            return Err(Error::BadPatchFormatForRetainKeys);
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// Upstream `mergePatchIntoOriginal` (spec §7.3): every `$setElementOrder/<f>` merges the
/// list `f` of both sides and orders the result; both keys then leave the patch.
fn apply_set_element_order(original: &mut Map, patch: &mut Map, schema: &dyn Schema, opts: MergeOptions) -> Result<()> {
    let directive_keys: Vec<String> =
        patch.keys().filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX)).cloned().collect();
    for directive_key in directive_keys {
        let order = patch.remove(&directive_key).expect("listed above");
        if !opts.parallel {
            // Merging two patches: both must agree on the order; it is kept in the result.
            match original.get(&directive_key) {
                Some(existing) if *existing != order => return Err(Error::BadPatchFormatForSetElementOrderList),
                Some(_) => {}
                None => {
                    original.insert(directive_key.clone(), order.clone());
                }
            }
        }
        let order = match order.into_array() {
            Ok(order) => order,
            Err(order) => return Err(expected_list(&order)),
        };
        let field = extract_key(&directive_key, SET_ELEMENT_ORDER_PREFIX)
            .ok_or(Error::BadPatchFormatForSetElementOrderList)?
            .to_owned();

        merge_ordered_list(original, patch, &field, &order, schema, opts).map_err(|e| e.in_field(&field))?;
    }
    Ok(())
}

/// Merges list `field` of both sides and orders it by its `$setElementOrder` list.
fn merge_ordered_list(
    original: &mut Map,
    patch: &mut Map,
    field: &str,
    order: &[Value],
    schema: &dyn Schema,
    opts: MergeOptions,
) -> Result<()> {
    let original_list = take_list(original, field)?;
    let patch_list = take_list(patch, field)?;
    let (element, meta) = schema.lookup_slice(field)?;
    let strategy = meta.strategy()?;
    let merge_key = meta.merge_key.as_str();
    validate_against_order(patch_list.as_deref().unwrap_or(&[]), order, merge_key)?;

    // The element kind upstream reads from the live list (after the merge) and the patch
    // list; the merge keeps element types, so the inputs give the same answer.
    let kind = slice_element_type(&[original_list.as_deref().unwrap_or(&[]), patch_list.as_deref().unwrap_or(&[])]);
    let key_name = |kind: ElemKind| if kind == ElemKind::Map { merge_key } else { "" };

    let (merged, view) = match (original_list, patch_list) {
        (None, None) => return Ok(()),
        (Some(live), None) => {
            let view = LiveView::MergedPrefix { len: live.len(), extra: Vec::new() };
            (live, view)
        }
        (None, Some(patch_items)) => {
            let mut stripped = Value::Array(patch_items);
            strip_directives(&mut stripped);
            let Ok(stripped) = stripped.into_array() else { unreachable!("still a list") };
            (stripped, LiveView::Keys(Vec::new()))
        }
        (Some(live), Some(patch_items)) => {
            // The ordering below supersedes the merge's own (`Reorder::IfAmbiguous`).
            let field = ListField { strategy, merge_key, is_deletion_list: false };
            let merged = merge_list_field(live, patch_items, element.as_ref(), field, opts, Reorder::IfAmbiguous)?;
            let view = match merged.live_view {
                LiveView::Unchanged(live) => {
                    LiveView::Keys(kind.as_ref().map(|k| owned_keys(&live, key_name(*k))).unwrap_or_default())
                }
                view => view,
            };
            (merged.items, view)
        }
    };

    let kind = kind?;
    let server_order = match &view {
        LiveView::Keys(keys) => ServerOrder::Keys(keys),
        LiveView::MergedPrefix { len, extra } => ServerOrder::MergedPrefix { len: *len, extra },
        LiveView::Unchanged(_) => unreachable!("replaced above"),
    };
    let both = order_merged(merged, order, server_order, merge_key, kind)?;
    original.insert(field.to_owned(), Value::Array(both));
    Ok(())
}

fn expected_list(v: &Value) -> Error {
    Error::BadArgType { expected: "[]interface {}".into(), received: go_type_name(v).into() }
}

/// Removes and returns the list under `field`; a non-list is an error (and stays in place).
fn take_list(map: &mut Map, field: &str) -> Result<Option<Vec<Value>>> {
    match map.get(field) {
        None => Ok(None),
        Some(Value::Array(_)) => match map.remove(field) {
            Some(items) => Ok(items.into_array().ok()),
            _ => unreachable!(),
        },
        Some(other) => Err(expected_list(other)),
    }
}

fn owned_keys(list: &[Value], key_name: &str) -> Vec<TypedKey<'static>> {
    list.iter().map(|v| TypedKey::of_element(v, key_name).into_owned()).collect()
}

/// Upstream `validatePatchWithSetOrderList`: the patch list's plain elements must appear in
/// the order list as a subsequence (compared by merge key, or by value for scalars).
fn validate_against_order(patch_list: &[Value], order: &[Value], merge_key: &str) -> Result<()> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let mut plain: Vec<&Value> = Vec::with_capacity(patch_list.len());
    for v in patch_list {
        if !merge_key.is_empty() {
            if !matches!(v, Value::Object(_)) {
                return Err(super::order::bad_map_arg(v));
            }
            if super::order::is_delete_directive(v) {
                continue;
            }
        }
        plain.push(v);
    }
    let (mut p, mut o) = (0, 0);
    while p < plain.len() && o < order.len() {
        if matches!(plain[p], Value::Object(m) if m.contains_key(DIRECTIVE_MARKER)) {
            p += 1;
            continue;
        }
        if merge_key_values_equal(plain[p], &order[o], merge_key)? {
            p += 1;
        }
        o += 1;
    }
    if p < plain.len() && o >= order.len() {
        return Err(Error::SetElementOrderMismatch {
            patch_list: Value::Array(patch_list.to_vec()).go_v_string(),
            order_list: Value::Array(order.to_vec()).go_v_string(),
        });
    }
    Ok(())
}
