//! Ordering of merged lists (spec §7) and the Go slice behaviours it depends on (§1.5, §7.4).
//!
//! Every lookup that upstream does with a linear scan ("index of the first equal element")
//! goes through a [`FirstIndex`] built once, so ordering a list is O(n log n).

use std::collections::BTreeSet;

use super::keys::{FirstIndex, KeyMap, TypedKey, go_type_name};
use super::{DIRECTIVE_MARKER, ElemKind};
use crate::error::{Error, Result};
use crate::value::Value;

/// Checks that every element is an object carrying the merge key (upstream
/// `validateMergeKeyInLists`).
pub(crate) fn validate_merge_keys(list: &[Value], merge_key: &str) -> Result<()> {
    for item in list {
        match item {
            Value::Object(m) if m.contains_key(merge_key) => {}
            Value::Object(_) => return Err(Error::no_merge_key(item, merge_key)),
            other => return Err(bad_map_arg(other)),
        }
    }
    Ok(())
}

/// `expected a map[string]interface {}, but received a <T>`.
pub(crate) fn bad_map_arg(received: &Value) -> Error {
    Error::BadArgType { expected: "map[string]interface {}".into(), received: go_type_name(received).into() }
}

pub(crate) fn is_delete_directive(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some("delete"))
}

/// Upstream `normalizeSliceOrder`: stable-sorts `to_sort` by the position of each element's
/// first match in `order`; for maps, `$patch: delete` elements go last in their own order.
pub(crate) fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> Result<Vec<Value>> {
    let mut to_sort = to_sort;
    let mut to_delete = Vec::new();
    let key_name = if kind == ElemKind::Map { merge_key } else { "" };
    if kind == ElemKind::Map {
        validate_merge_keys(&to_sort, merge_key)?;
        validate_merge_keys(order, merge_key)?;
        let (keep, del): (Vec<Value>, Vec<Value>) = to_sort.into_iter().partition(|v| !is_delete_directive(v));
        to_sort = keep;
        to_delete = del;
    }
    let index = FirstIndex::of_list(order, key_name);
    let mut sorted = sort_by_first_index(to_sort, &index, key_name);
    sorted.extend(to_delete);
    Ok(sorted)
}

/// Stable sort by the index of the first equal element in an order list. Upstream's comparator
/// treats elements missing from the order as "less" both ways; kubectl never sorts such
/// elements, and here they keep their relative order at the end.
fn sort_by_first_index(list: Vec<Value>, index: &FirstIndex<'_>, key_name: &str) -> Vec<Value> {
    let mut keyed: Vec<(usize, Value)> =
        list.into_iter().map(|v| (index.get(&TypedKey::of_element(&v, key_name)).unwrap_or(usize::MAX), v)).collect();
    if !keyed.is_sorted_by_key(|(i, _)| *i) {
        keyed.sort_by_key(|(i, _)| *i);
    }
    keyed.into_iter().map(|(_, v)| v).collect()
}

/// The live list's order, as the ordering of a merged list sees it.
pub(crate) enum ServerOrder<'a> {
    /// The keys of the live list's slots.
    Keys(&'a [TypedKey<'a>]),
    /// The first `len` elements of the merged list (in the order given), then `extra`.
    MergedPrefix { len: usize, extra: &'a [TypedKey<'static>] },
}

/// Upstream's ordering of a merged list (`partition…ByPresentInList`, then
/// `normalizeElementOrder` + `mergeSortedSlice`): items present in `patch_order` follow that
/// order, server-only items follow the live list, and the two are interleaved so that a
/// server-only item is emitted just before the first patch item that follows it in the live
/// list. Partitioning is by merge key when `merge_key` is set, by value otherwise; sorting is
/// by merge key for lists of maps. Each element is looked up once per index.
pub(crate) fn order_merged(
    merged: Vec<Value>,
    patch_order: &[Value],
    server_order: ServerOrder<'_>,
    merge_key: &str,
    kind: ElemKind,
) -> Result<Vec<Value>> {
    // Partition keys: merge-key values (every merged element and order entry must have one).
    if !merge_key.is_empty() {
        validate_merge_keys(&merged, merge_key)?;
        if let Some(i) = patch_order.iter().position(|v| !matches!(v, Value::Object(_))) {
            return Err(Error::Invalid(format!("value for key {i} is not a map")));
        }
    }
    let sort_key = if kind == ElemKind::Map { merge_key } else { "" };
    if kind == ElemKind::Map {
        validate_merge_keys(patch_order, merge_key)?;
    }

    // Where each element goes, computed while `merged` is borrowed: its position in the patch
    // order (`None`: server-only) and in the live list.
    let patch_at: Vec<Option<usize>> = {
        let patch_index = FirstIndex::of_list(patch_order, merge_key);
        let sort_index = (sort_key != merge_key).then(|| FirstIndex::of_list(patch_order, sort_key));
        merged
            .iter()
            .map(|v| {
                patch_index.get(&TypedKey::of_element(v, merge_key)).map(|at| match &sort_index {
                    None => at,
                    Some(index) => index.get(&TypedKey::of_element(v, sort_key)).unwrap_or(usize::MAX),
                })
            })
            .collect()
    };
    let server_at: Vec<Option<usize>> = if patch_at.iter().any(Option::is_none) {
        let index = match server_order {
            ServerOrder::Keys(keys) => FirstIndex::of_keys(keys),
            ServerOrder::MergedPrefix { len, extra } => FirstIndex::new(
                merged[..len.min(merged.len())]
                    .iter()
                    .map(|v| TypedKey::of_element(v, sort_key))
                    .chain(extra.iter().map(TypedKey::reborrow)),
            ),
        };
        merged.iter().map(|v| index.get(&TypedKey::of_element(v, sort_key))).collect()
    } else {
        // No server-only items: nothing to interleave.
        Vec::new()
    };

    // For maps, `$patch: delete` elements are taken out and go last (upstream
    // `normalizeSliceOrder`).
    let mut in_order: Vec<Placed> = Vec::with_capacity(merged.len());
    let mut server_only: Vec<Placed> = Vec::new();
    let (mut deletes_in_order, mut deletes_server_only) = (Vec::new(), Vec::new());
    for (i, v) in merged.into_iter().enumerate() {
        let live_at = server_at.get(i).copied().flatten();
        let is_delete = kind == ElemKind::Map && is_delete_directive(&v);
        match (patch_at[i], is_delete) {
            (Some(_), true) => deletes_in_order.push(Placed { at: usize::MAX, live_at, value: v }),
            (None, true) => deletes_server_only.push(Placed { at: usize::MAX, live_at, value: v }),
            (Some(at), false) => in_order.push(Placed { at, live_at, value: v }),
            (None, false) => server_only.push(Placed { at: live_at.unwrap_or(usize::MAX), live_at, value: v }),
        }
    }
    let in_order = stable_by_position(in_order, deletes_in_order);
    if server_only.is_empty() && deletes_server_only.is_empty() {
        return Ok(in_order.into_iter().map(|p| p.value).collect());
    }
    let server_only = stable_by_position(server_only, deletes_server_only);
    Ok(merge_sorted(server_only, in_order))
}

/// An element with its sort position and its position in the live list.
struct Placed {
    at: usize,
    live_at: Option<usize>,
    value: Value,
}

/// Stable sort by position (elements missing from the order list, `usize::MAX`, keep their
/// relative order at the end), then the delete directives.
fn stable_by_position(mut placed: Vec<Placed>, deletes: Vec<Placed>) -> Vec<Placed> {
    if !placed.is_sorted_by_key(|p| p.at) {
        placed.sort_by_key(|p| p.at);
    }
    placed.extend(deletes);
    placed
}

/// Upstream `mergeSortedSlice`: a server-only item goes first only when both it and the next
/// patch item are in the live list and it comes earlier there.
fn merge_sorted(left: Vec<Placed>, right: Vec<Placed>) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    while let (Some(l), Some(r)) = (left.peek(), right.peek()) {
        let take_left = matches!((l.live_at, r.live_at), (Some(a), Some(b)) if a < b);
        out.push(if take_left { left.next() } else { right.next() }.expect("peeked").value);
    }
    out.extend(left.map(|p| p.value));
    out.extend(right.map(|p| p.value));
    out
}

/// Go's `deduplicateScalars` over `buf`: for each position, later equal elements are
/// overwritten by the current last element and the slice shrinks. Returns the new length;
/// like Go, slots past it keep their old contents (callers may observe them, §7.4).
/// O(n log n): positions of each value are indexed instead of rescanned.
pub(crate) fn swap_dedup_in_place(buf: &mut [Value]) -> usize {
    let n = buf.len();
    if n < 2 {
        return n;
    }
    let mut keys: Vec<TypedKey<'static>> = buf.iter().map(|v| TypedKey::of(v).into_owned()).collect();
    let mut positions: KeyMap<TypedKey<'static>, BTreeSet<usize>> = KeyMap::default();
    for (i, k) in keys.iter().enumerate() {
        positions.entry(k.clone()).or_default().insert(i);
    }
    if positions.len() == n {
        return n;
    }
    let mut last = n - 1;
    let mut i = 0;
    while i < last {
        let key = keys[i].clone();
        while i < last {
            let next = positions[&key].range(i + 1..=last).next().copied();
            let Some(p) = next else { break };
            // s[p] = s[last]; shrink by one; re-test p.
            let moved = keys[last].clone();
            positions.get_mut(&key).expect("indexed").remove(&p);
            positions.get_mut(&moved).expect("indexed").remove(&last);
            if p != last {
                buf[p] = buf[last].clone();
                keys[p] = moved.clone();
                positions.get_mut(&moved).expect("indexed").insert(p);
            }
            last -= 1;
        }
        i += 1;
    }
    last + 1
}

pub(crate) fn swap_dedup(mut list: Vec<Value>) -> Vec<Value> {
    let len = swap_dedup_in_place(&mut list);
    list.truncate(len);
    list
}

/// Capacity of a Go `[]interface{}` of length `n` built by appending one element at a time,
/// as `encoding/json` decodes arrays (Go ≥ 1.22 growth and allocator size classes).
pub(crate) fn go_decoded_capacity(n: usize) -> usize {
    let mut cap = 0usize;
    while cap < n {
        cap = grow_capacity(cap, cap + 1);
    }
    cap
}

fn grow_capacity(old_cap: usize, new_len: usize) -> usize {
    const THRESHOLD: usize = 256;
    const ELEM: usize = 16; // sizeof(interface{})
    let double = old_cap * 2;
    let mut new_cap = old_cap;
    if new_len > double {
        new_cap = new_len;
    } else if old_cap < THRESHOLD {
        new_cap = double;
    } else {
        while new_cap < new_len {
            new_cap += (new_cap + 3 * THRESHOLD) >> 2;
        }
    }
    round_up_size(new_cap * ELEM) / ELEM
}

/// Go's `roundupsize` for a pointer-bearing allocation (malloc header above 512 bytes).
fn round_up_size(size: usize) -> usize {
    const SIZE_CLASSES: [usize; 68] = [
        0, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416,
        448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456,
        4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432,
        19072, 20480, 21760, 24576, 27264, 28672, 32768,
    ];
    const MAX_SMALL: usize = 32768;
    const HEADER: usize = 8;
    const PAGE: usize = 8192;
    let header = if size > 512 { HEADER } else { 0 };
    let req = size + header;
    if size <= MAX_SMALL - HEADER {
        let class = SIZE_CLASSES.iter().copied().find(|&c| c >= req).unwrap_or(MAX_SMALL);
        class - header
    } else {
        (size + PAGE - 1) & !(PAGE - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(items: &[&str]) -> Vec<Value> {
        items.iter().map(|x| Value::String((*x).into())).collect()
    }

    #[test]
    fn swap_dedup_perturbs_order_like_go() {
        assert_eq!(swap_dedup(s(&["a", "a", "b", "c"])), s(&["a", "c", "b"]));
        assert_eq!(swap_dedup(s(&["a", "b", "a", "a"])), s(&["a", "b"]));
        assert_eq!(swap_dedup(s(&["x", "y", "z"])), s(&["x", "y", "z"]));
        assert_eq!(swap_dedup(s(&["a", "b", "b", "a", "c", "b"])), s(&["a", "b", "c"]));
    }

    /// The quadratic original, to cross-check the indexed version.
    fn reference(mut v: Vec<Value>) -> Vec<Value> {
        let mut length = v.len() as isize - 1;
        let mut i = 0isize;
        while i < length {
            let mut j = i + 1;
            while j <= length {
                if v[i as usize] == v[j as usize] {
                    v[j as usize] = v[length as usize].clone();
                    v.truncate(length as usize);
                    length -= 1;
                    j -= 1;
                }
                j += 1;
            }
            i += 1;
        }
        v
    }

    #[test]
    fn swap_dedup_matches_reference() {
        let mut seed = 7u64;
        for _ in 0..300 {
            let len = (seed % 20) as usize;
            let v: Vec<Value> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    Value::Int(((seed >> 33) % 5) as i64)
                })
                .collect();
            assert_eq!(swap_dedup(v.clone()), reference(v.clone()), "{v:?}");
        }
    }

    #[test]
    fn decoded_capacity_follows_go_growth() {
        assert_eq!(go_decoded_capacity(0), 0);
        assert_eq!(go_decoded_capacity(1), 1);
        assert_eq!(go_decoded_capacity(3), 4);
        assert_eq!(go_decoded_capacity(5), 8);
        assert_eq!(go_decoded_capacity(32), 32);
        assert_eq!(go_decoded_capacity(33), 71);
    }
}
