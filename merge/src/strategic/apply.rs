//! Merging a patch into a document (spec §6), in the two modes kubectl uses:
//!
//! * parallel mode (`parallel = true`, unmatched nulls ignored): applying a patch as the API
//!   server does; `$deleteFromPrimitiveList` and `$retainKeys` are executed;
//! * patch-merging mode: folding the delta patch into the deletions patch during three-way
//!   creation; directives are copied (and checked for agreement) instead of executed.
//!
//! Documents are consumed and returned, so no subtree is copied more than necessary.

use super::keys::{KeyHashState, KeyMap, KeySet, PositionIndex, TypedKey, go_s_string, go_type_name};
use super::order::{ServerOrder, go_decoded_capacity, order_merged, swap_dedup_in_place};
use super::{
    DELETE_FROM_PRIMITIVE_LIST_PREFIX, DIRECTIVE_MARKER, ElemKind, RETAIN_KEYS_DIRECTIVE, SET_ELEMENT_ORDER_PREFIX,
    merge_key_values_equal, slice_element_type,
};
use crate::error::{Error, Result};
use crate::meta::{Schema, Strategy};
use crate::value::{Map, Value};

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
        match (current, patch_value) {
            (Value::Object(current), Value::Object(patch_map)) => {
                let merged = schema.lookup_struct(&key).and_then(|(child, meta)| {
                    if meta.strategy()?.replace {
                        Ok(patch_map)
                    } else {
                        merge_map(std::mem::take(current), patch_map, child.as_ref(), opts)
                    }
                });
                *current = merged.map_err(|e| e.in_field(&key))?;
            }
            (Value::Array(current), Value::Array(patch_list)) => {
                let merged = schema.lookup_slice(&key).and_then(|(element, meta)| {
                    merge_list_field(
                        std::mem::take(current),
                        patch_list,
                        element.as_ref(),
                        meta.strategy()?,
                        &meta.merge_key,
                        is_deletion_list,
                        opts,
                        Reorder::Always,
                    )
                });
                *current = merged.map_err(|e| e.in_field(&key))?.items;
            }
            (_, scalar) => store_stripped(&mut original, key, scalar, opts),
        }
    }
    Ok(original)
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
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_null_members);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_null_members),
        _ => {}
    }
}

/// Upstream `removeDirectives`, in place: drops every object carrying `$patch` (members and
/// list elements alike). Returns false when the value itself is such an object.
pub(crate) fn strip_directives(value: &mut Value) -> bool {
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
}

/// Whether any object inside `value` (or `value` itself) carries `$patch`; a read-only scan,
/// much cheaper than rebuilding the maps.
fn has_directive(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.contains_key(DIRECTIVE_MARKER) || map.values().any(has_directive),
        Value::Array(items) => items.iter().any(has_directive),
        _ => false,
    }
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
    let Value::Array(list) = retain else {
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
        let Value::Array(order) = order else {
            return Err(expected_list(&order));
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
            let Value::Array(stripped) = stripped else { unreachable!("still a list") };
            (stripped, LiveView::Keys(Vec::new()))
        }
        (Some(live), Some(patch_items)) => {
            // The ordering below supersedes the merge's own (`Reorder::IfAmbiguous`).
            let merged = merge_list_field(
                live,
                patch_items,
                element.as_ref(),
                strategy,
                merge_key,
                false,
                opts,
                Reorder::IfAmbiguous,
            )?;
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
            Some(Value::Array(items)) => Ok(Some(items)),
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

/// The result of merging two lists, plus what the caller's view of its *live* list shows
/// afterwards: upstream mutates the live list's storage in place (spec §7.4).
pub(crate) struct MergedList {
    pub items: Vec<Value>,
    pub live_view: LiveView,
}

pub(crate) enum LiveView {
    /// The live list was not touched (handed back, for the caller to read).
    Unchanged(Vec<Value>),
    /// The keys of the live list's slots after the merge.
    Keys(Vec<TypedKey<'static>>),
    /// The live list's slots show the first `len` merged items (returned unordered), then
    /// `extra`.
    MergedPrefix { len: usize, extra: Vec<TypedKey<'static>> },
}

/// Whether a merge must order its result. Upstream always does; when a `$setElementOrder`
/// orders the list again right after, the first ordering only matters for elements with
/// equal keys, so it is skipped when all keys are distinct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reorder {
    Always,
    IfAmbiguous,
}

/// Upstream `mergeSliceHandler`: merge lists (and deletion lists) element-wise, others are
/// replaced by the patch list verbatim.
#[allow(clippy::too_many_arguments)]
fn merge_list_field(
    live: Vec<Value>,
    patch: Vec<Value>,
    element: &dyn Schema,
    strategy: Strategy,
    merge_key: &str,
    is_deletion_list: bool,
    opts: MergeOptions,
    reorder: Reorder,
) -> Result<MergedList> {
    if strategy.merge || is_deletion_list {
        merge_list(live, patch, element, merge_key, is_deletion_list, opts, reorder)
    } else {
        Ok(MergedList { items: patch, live_view: LiveView::Unchanged(live) })
    }
}

/// Upstream `mergeSlice`.
fn merge_list(
    live: Vec<Value>,
    patch: Vec<Value>,
    element: &dyn Schema,
    merge_key: &str,
    is_deletion_list: bool,
    opts: MergeOptions,
    reorder: Reorder,
) -> Result<MergedList> {
    if live.is_empty() && patch.is_empty() {
        return Ok(MergedList { items: Vec::new(), live_view: LiveView::Unchanged(live) });
    }
    match slice_element_type(&[&live, &patch])? {
        ElemKind::Scalar => {
            if opts.parallel && is_deletion_list {
                let doomed: KeySet<TypedKey<'_>> = patch.iter().map(TypedKey::of).collect();
                let kept = live.into_iter().filter(|v| !doomed.contains(&TypedKey::of(v))).collect();
                return Ok(MergedList { items: kept, live_view: LiveView::Keys(Vec::new()) });
            }
            merge_scalar_lists(live, patch, reorder)
        }
        ElemKind::Map => {
            if merge_key.is_empty() {
                return Err(Error::NoMergeKeyForList(element.name()));
            }
            merge_map_lists(live, patch, element, merge_key, opts, reorder)
        }
    }
}

/// Scalars: the union of both lists (Go's swap-dedup of `live ++ patch`), then ordered.
fn merge_scalar_lists(live: Vec<Value>, patch: Vec<Value>, reorder: Reorder) -> Result<MergedList> {
    let n = live.len();
    // `append(live, patch...)` writes into the live list's storage when it has room; the
    // dedup then rewrites the live list's own slots if it holds duplicates (spec §7.4).
    // Live lists here come from JSON decoding, whose capacity follows Go's append growth.
    let shares_storage = go_decoded_capacity(n) >= n + patch.len();
    let live_has_duplicates = {
        let mut seen = KeySet::with_capacity_and_hasher(n, KeyHashState::default());
        !live.iter().all(|v| seen.insert(TypedKey::of(v)))
    };
    // Without duplicates the live elements keep the first n slots, in order.
    let live_keys = if live_has_duplicates && !shares_storage { owned_keys(&live, "") } else { Vec::new() };
    let mut buffer = live;
    buffer.extend(patch.iter().cloned());
    let len = swap_dedup_in_place(&mut buffer);
    let view = match (live_has_duplicates, shares_storage) {
        (false, _) => LiveView::MergedPrefix { len: n, extra: Vec::new() },
        (true, true) => LiveView::Keys(owned_keys(&buffer[..n], "")),
        (true, false) => LiveView::Keys(live_keys),
    };
    buffer.truncate(len);
    // After the dedup all elements are distinct: a later $setElementOrder decides alone.
    if reorder == Reorder::IfAmbiguous {
        return Ok(MergedList { items: buffer, live_view: view });
    }
    let server_order = match &view {
        LiveView::Keys(keys) => ServerOrder::Keys(keys),
        _ => ServerOrder::MergedPrefix { len: n, extra: &[] },
    };
    let items = order_merged(buffer, &patch, server_order, "", ElemKind::Scalar)?;
    Ok(MergedList { items, live_view: LiveView::Keys(Vec::new()) })
}

/// Lists of objects merged by key: `$patch` elements first (deletions, replace), then each
/// plain patch element merges into the first live element with the same key or is appended.
fn merge_map_lists(
    live: Vec<Value>,
    patch: Vec<Value>,
    element: &dyn Schema,
    merge_key: &str,
    opts: MergeOptions,
    reorder: Reorder,
) -> Result<MergedList> {
    let n = live.len();
    let mut alive = vec![true; n];
    let mut distinct_keys = true;
    let mut stale: Vec<TypedKey<'static>> = Vec::new();
    let mut replace = false;
    let mut plain = Vec::with_capacity(patch.len());
    {
        // Positions of each merge-key value (elements without the key never match).
        let mut positions: KeyMap<TypedKey<'_>, Vec<usize>> = KeyMap::default();
        for (i, v) in live.iter().enumerate() {
            match v.as_object().and_then(|m| m.get(merge_key)) {
                Some(k) => {
                    let at = positions.entry(TypedKey::of(k)).or_default();
                    at.push(i);
                    distinct_keys &= at.len() == 1;
                }
                None => distinct_keys = false,
            }
        }
        // Special elements. Deleting shifts the live list's tail left inside its storage;
        // the slot freed at the end keeps a copy of the element that was last at that time.
        let mut last_alive = n.checked_sub(1);
        for item in patch {
            let Value::Object(map) = &item else { unreachable!("element kind checked") };
            let Some(directive) = map.get(DIRECTIVE_MARKER) else {
                plain.push(item);
                continue;
            };
            match directive.as_str() {
                Some("delete") => {
                    let key = map.get(merge_key).ok_or_else(|| Error::no_merge_key(&item, merge_key))?;
                    for pos in positions.remove(&TypedKey::of(key).into_owned()).unwrap_or_default() {
                        let last = last_alive.expect("a live element is being deleted");
                        stale.push(TypedKey::of_element(&live[last], merge_key).into_owned());
                        alive[pos] = false;
                        last_alive = (0..=last).rev().find(|&i| alive[i]);
                    }
                }
                Some("replace") => replace = true,
                Some("merge") => return Err(Error::MergeInList),
                _ => return Err(bad_patch_type(directive, map)),
            }
        }
    }
    let deleted = stale.len();
    let mut working: Vec<Value> = live.into_iter().zip(&alive).filter(|(_, a)| **a).map(|(v, _)| v).collect();
    let survivors = working.len();
    // The live list's n slots show: survivors, the first appended items (written into the
    // freed slots), then the stale copies still there (slot n-d+j was left by deletion d-1-j).
    let stale_after = |appended: usize| -> Vec<TypedKey<'static>> {
        (appended.min(deleted)..deleted).map(|j| stale[deleted - 1 - j].clone()).collect()
    };

    if replace {
        // The result is the plain patch elements, ordered by the first position of their key
        // among themselves (this groups duplicates); the live storage only saw the deletions.
        let mut view = owned_keys(&working, merge_key);
        view.extend(stale_after(0));
        let len = plain.len();
        let items = order_merged(plain, &[], ServerOrder::MergedPrefix { len, extra: &[] }, merge_key, ElemKind::Map)?;
        return Ok(MergedList { items, live_view: LiveView::Keys(view) });
    }

    // First position of each key in the working list (survivors, then appended items).
    let mut index = PositionIndex::new();
    for i in 0..working.len() {
        if let Some(k) = working[i].as_object().and_then(|m| m.get(merge_key)) {
            index.insert(&TypedKey::of(k), i, &working, merge_key);
        }
    }
    let mut patch_order = Vec::with_capacity(plain.len());
    let mut appended = 0;
    for item in plain {
        let Value::Object(map) = item else { unreachable!("element kind checked") };
        let Some(key_value) = map.get(merge_key).cloned() else {
            return Err(Error::no_merge_key(&Value::Object(map), merge_key));
        };
        let key = TypedKey::of(&key_value);
        match index.get(&key, &working, merge_key) {
            Some(i) => {
                let Value::Object(target) = &mut working[i] else { unreachable!("element kind checked") };
                *target = merge_map(std::mem::take(target), map, element, opts)
                    .map_err(|e| e.in_element(merge_key, &key_value))?;
            }
            None => {
                working.push(Value::Object(map));
                index.insert(&key, working.len() - 1, &working, merge_key);
                appended += 1;
            }
        }
        let mut order_entry = Map::new();
        order_entry.insert(merge_key.to_owned(), key_value);
        patch_order.push(Value::Object(order_entry));
    }
    drop(index);

    let visible = survivors + appended.min(deleted);
    if reorder == Reorder::IfAmbiguous && distinct_keys {
        // Unordered: the caller orders, reading the live view off the returned list.
        return Ok(MergedList {
            items: working,
            live_view: LiveView::MergedPrefix { len: visible, extra: stale_after(appended) },
        });
    }
    let view = if reorder == Reorder::IfAmbiguous {
        let mut keys = owned_keys(&working[..visible], merge_key);
        keys.extend(stale_after(appended));
        LiveView::Keys(keys)
    } else {
        LiveView::Keys(Vec::new())
    };
    let server_order = ServerOrder::MergedPrefix { len: survivors, extra: &[] };
    let items = order_merged(working, &patch_order, server_order, merge_key, ElemKind::Map)?;
    Ok(MergedList { items, live_view: view })
}
