//! Merging a list field (spec §7): lists of scalars as a union, lists of objects by merge key
//! with their `$patch` elements; other lists are replaced. What the caller's view of the live
//! list shows afterwards ([`LiveView`]) is tracked, because upstream merges in place.

use super::{MergeOptions, bad_patch_type, merge_map, owned_keys};
use crate::error::{Error, Result};
use crate::meta::{Schema, Strategy};
use crate::strategic::keys::{KeyHashState, KeyMap, KeySet, PositionIndex, TypedKey};
use crate::strategic::order::{ServerOrder, go_decoded_capacity, order_merged, swap_dedup_in_place};
use crate::strategic::{DIRECTIVE_MARKER, ElemKind, slice_element_type};
use crate::value::{Map, Value};

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
pub(super) enum Reorder {
    Always,
    IfAmbiguous,
}

/// How one list field merges: its strategy and merge key (from the schema), and whether the
/// patch list is a deletion list (`$deleteFromPrimitiveList`).
#[derive(Debug, Clone, Copy)]
pub(super) struct ListField<'a> {
    pub(super) strategy: Strategy,
    pub(super) merge_key: &'a str,
    pub(super) is_deletion_list: bool,
}

/// Upstream `mergeSliceHandler`: merge lists (and deletion lists) element-wise, others are
/// replaced by the patch list verbatim.
pub(super) fn merge_list_field(
    live: Vec<Value>,
    patch: Vec<Value>,
    element: &dyn Schema,
    field: ListField<'_>,
    opts: MergeOptions,
    reorder: Reorder,
) -> Result<MergedList> {
    let ListField { strategy, merge_key, is_deletion_list } = field;
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
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || {
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
    })
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
    let SpecialElements { alive, distinct_keys, stale, replace, plain } = special_elements(&live, patch, merge_key)?;
    let mut working: Vec<Value> = live.into_iter().zip(&alive).filter(|(_, a)| **a).map(|(v, _)| v).collect();
    let survivors = working.len();

    if replace {
        // The result is the plain patch elements, ordered by the first position of their key
        // among themselves (this groups duplicates); the live storage only saw the deletions.
        let mut view = owned_keys(&working, merge_key);
        view.extend(stale.after(0));
        let len = plain.len();
        let items = order_merged(plain, &[], ServerOrder::MergedPrefix { len, extra: &[] }, merge_key, ElemKind::Map)?;
        return Ok(MergedList { items, live_view: LiveView::Keys(view) });
    }

    let (patch_order, appended) = merge_plain_elements(&mut working, plain, element, merge_key, opts)?;
    // The live list's n slots show: survivors, the first appended items (written into the
    // freed slots), then the stale copies still there.
    let visible = survivors + appended.min(stale.len());
    if reorder == Reorder::IfAmbiguous && distinct_keys {
        // Unordered: the caller orders, reading the live view off the returned list.
        return Ok(MergedList {
            items: working,
            live_view: LiveView::MergedPrefix { len: visible, extra: stale.after(appended) },
        });
    }
    let view = if reorder == Reorder::IfAmbiguous {
        let mut keys = owned_keys(&working[..visible], merge_key);
        keys.extend(stale.after(appended));
        LiveView::Keys(keys)
    } else {
        LiveView::Keys(Vec::new())
    };
    let server_order = ServerOrder::MergedPrefix { len: survivors, extra: &[] };
    let items = order_merged(working, &patch_order, server_order, merge_key, ElemKind::Map)?;
    Ok(MergedList { items, live_view: view })
}

/// What the `$patch` elements of a list of objects do to the live list, and the plain
/// elements left to merge.
struct SpecialElements {
    /// Which live elements survive the deletions.
    alive: Vec<bool>,
    /// Whether every live element has the merge key, each with a value of its own.
    distinct_keys: bool,
    stale: StaleSlots,
    /// A `$patch: replace` element: the plain elements replace the list.
    replace: bool,
    /// The patch's other elements, in order.
    plain: Vec<Value>,
}

/// Deleting shifts the live list's tail left inside its storage; the slot freed at the end
/// keeps a copy of the element that was last at that time. Entry `i` is what deletion `i` left.
struct StaleSlots(Vec<TypedKey<'static>>);

impl StaleSlots {
    fn len(&self) -> usize {
        self.0.len()
    }

    /// What the freed slots still show once `appended` items were written into the first of
    /// them (slot n-d+j was left by deletion d-1-j).
    fn after(&self, appended: usize) -> Vec<TypedKey<'static>> {
        let deleted = self.0.len();
        (appended.min(deleted)..deleted).map(|j| self.0[deleted - 1 - j].clone()).collect()
    }
}

/// Executes the `$patch` elements of `patch` (deletions by merge key, `replace`) against
/// `live`, and sets the plain elements apart.
fn special_elements(live: &[Value], patch: Vec<Value>, merge_key: &str) -> Result<SpecialElements> {
    let (mut positions, distinct_keys) = key_positions(live, merge_key);
    let mut alive = vec![true; live.len()];
    let mut stale = Vec::new();
    let mut replace = false;
    let mut plain = Vec::with_capacity(patch.len());
    let mut last_alive = live.len().checked_sub(1);
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
    Ok(SpecialElements { alive, distinct_keys, stale: StaleSlots(stale), replace, plain })
}

/// Positions of each merge-key value in `live` (elements without the key never match), and
/// whether every element has a key no other element has.
fn key_positions<'a>(live: &'a [Value], merge_key: &str) -> (KeyMap<TypedKey<'a>, Vec<usize>>, bool) {
    let mut positions: KeyMap<TypedKey<'_>, Vec<usize>> = KeyMap::default();
    let mut distinct_keys = true;
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
    (positions, distinct_keys)
}

/// Merges each plain patch element into the first element of `working` with the same key, or
/// appends it. Returns the patch's keys in order (`{merge_key: value}` objects, the order the
/// result follows) and how many elements were appended.
fn merge_plain_elements(
    working: &mut Vec<Value>,
    plain: Vec<Value>,
    element: &dyn Schema,
    merge_key: &str,
    opts: MergeOptions,
) -> Result<(Vec<Value>, usize)> {
    // First position of each key in the working list (survivors, then appended items).
    let mut index = PositionIndex::new();
    for i in 0..working.len() {
        if let Some(k) = working[i].as_object().and_then(|m| m.get(merge_key)) {
            index.insert(&TypedKey::of(k), i, working, merge_key);
        }
    }
    let mut patch_order = Vec::with_capacity(plain.len());
    let mut appended = 0;
    for item in plain {
        let Ok(map) = item.into_object() else { unreachable!("element kind checked") };
        let Some(key_value) = map.get(merge_key).cloned() else {
            return Err(Error::no_merge_key(&Value::Object(map), merge_key));
        };
        let key = TypedKey::of(&key_value);
        match index.get(&key, working, merge_key) {
            Some(i) => {
                let Value::Object(target) = &mut working[i] else { unreachable!("element kind checked") };
                *target = merge_map(std::mem::take(target), map, element, opts)
                    .map_err(|e| e.in_element(merge_key, &key_value))?;
            }
            None => {
                working.push(Value::Object(map));
                index.insert(&key, working.len() - 1, working, merge_key);
                appended += 1;
            }
        }
        let mut order_entry = Map::new();
        order_entry.insert(merge_key.to_owned(), key_value);
        patch_order.push(Value::Object(order_entry));
    }
    Ok((patch_order, appended))
}
