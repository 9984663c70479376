//! The diff engine (spec §4): the patch that turns a left document into a right one, used by
//! the two-way patch and by both passes of the three-way patch.
//!
//! kubectl sorts the left side's scalar merge lists *in place* while diffing them (§4.5), and a
//! later diff of the same document (the conflict check) sees the sorted lists. Documents here
//! are borrowed; a [`SortLog`] records those sorts so the caller can replay them on a copy
//! when (and only when) a later diff needs them.

use std::borrow::Cow;

use super::keys::{FirstIndex, TypedKey, merge_key_value};
use super::order::{is_delete_directive, normalize_slice_order, swap_dedup};
use super::{DIRECTIVE_MARKER, ElemKind, RETAIN_KEYS_DIRECTIVE, gosort, slice_element_type};
use crate::error::{Error, Result};
use crate::meta::Schema;
use crate::value::{Map, Value};

/// The four switches of a diff (spec §4.1).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DiffOptions {
    /// Record additions and changed values.
    pub changes: bool,
    /// Record removals.
    pub deletions: bool,
    /// Generate `$setElementOrder` lists.
    pub set_order: bool,
    /// Build `$retainKeys` for this object (from the metadata of the field that led here).
    pub retain_keys: bool,
}

/// The scalar lists a diff sorted in the left document, by path.
#[derive(Debug, Default)]
pub(crate) struct SortLog {
    enabled: bool,
    path: Vec<PathSegment>,
    sorted: Vec<(Vec<PathSegment>, Vec<Value>)>,
}

#[derive(Debug, Clone)]
enum PathSegment {
    Key(String),
    Index(usize),
}

impl SortLog {
    pub(crate) fn new(enabled: bool) -> SortLog {
        SortLog { enabled, ..SortLog::default() }
    }

    fn enter(&mut self, segment: PathSegment) {
        if self.enabled {
            self.path.push(segment);
        }
    }

    fn leave(&mut self) {
        if self.enabled {
            self.path.pop();
        }
    }

    fn record(&mut self, sorted: &[Value]) {
        if self.enabled {
            self.sorted.push((self.path.clone(), sorted.to_vec()));
        }
    }

    /// Applies the recorded sorts to `doc`, as upstream's in-place sort left it.
    pub(crate) fn replay(self, doc: &mut Map) {
        for (path, list) in self.sorted {
            if let Some(slot) = locate(doc, &path) {
                *slot = Value::Array(list);
            }
        }
    }
}

fn locate<'a>(doc: &'a mut Map, path: &[PathSegment]) -> Option<&'a mut Value> {
    let (PathSegment::Key(first), rest) = path.split_first()? else { return None };
    let mut v = doc.get_mut(first)?;
    for segment in rest {
        v = match (v, segment) {
            (Value::Object(m), PathSegment::Key(k)) => m.get_mut(k)?,
            (Value::Array(items), PathSegment::Index(i)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Upstream `diffMaps`.
pub(crate) fn diff_maps(
    left: &Map,
    right: &Map,
    schema: &dyn Schema,
    opts: DiffOptions,
    log: &mut SortLog,
) -> Result<Map> {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || {
        let mut patch = Map::new();
        let mut retain_list = Vec::new();

        for (key, right_value) in right {
            if opts.retain_keys && !right_value.is_null() {
                retain_list.push(Value::String(key.clone()));
            }
            let Some(left_value) = left.get(key) else {
                if opts.changes {
                    patch.insert(key.clone(), right_value.clone());
                }
                continue;
            };
            if key == DIRECTIVE_MARKER {
                match (left_value, right_value) {
                    (Value::String(l), Value::String(r)) => {
                        if l != r {
                            patch.insert(key.clone(), right_value.clone());
                        }
                    }
                    _ => return Err(Error::BadSpecialKeyValue),
                }
                continue;
            }
            if !left_value.same_variant(right_value) {
                if opts.changes {
                    patch.insert(key.clone(), right_value.clone());
                }
                continue;
            }
            match (left_value, right_value) {
                (Value::Object(l), Value::Object(r)) => {
                    log.enter(PathSegment::Key(key.clone()));
                    diff_map_field(key, l, r, &mut patch, schema, opts, log).map_err(|e| e.in_field(key))?;
                    log.leave();
                }
                (Value::Array(l), Value::Array(r)) => {
                    log.enter(PathSegment::Key(key.clone()));
                    diff_list_field(key, l, r, &mut patch, schema, opts, log).map_err(|e| e.in_field(key))?;
                    log.leave();
                }
                (l, r) => {
                    if opts.changes && *l != *r {
                        patch.insert(key.clone(), r.clone());
                    }
                }
            }
        }

        if opts.deletions {
            for key in left.keys() {
                if !right.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
        }
        // $retainKeys is only worth sending when something changes or a key must be cleared.
        if !retain_list.is_empty() && (!patch.is_empty() || has_additional_non_null_key(left, right)) {
            // Keys of a BTreeMap are already in byte order, which is the %v-string order.
            patch.insert(RETAIN_KEYS_DIRECTIVE.to_owned(), Value::Array(retain_list));
        }
        Ok(patch)
    })
}

/// Upstream `hasAdditionalNewField`: does `left` have a non-null key that `right` lacks?
fn has_additional_non_null_key(left: &Map, right: &Map) -> bool {
    left.iter().any(|(k, v)| !v.is_null() && !right.contains_key(k))
}

/// Both sides hold objects (upstream `handleMapDiff`).
fn diff_map_field(
    key: &str,
    left: &Map,
    right: &Map,
    patch: &mut Map,
    schema: &dyn Schema,
    mut opts: DiffOptions,
    log: &mut SortLog,
) -> Result<()> {
    let (child, meta) = match schema.lookup_struct(key) {
        Ok(found) => found,
        // Missing metadata only matters when there is a difference to describe.
        Err(_) if *left == *right => return Ok(()),
        Err(e) => return Err(e),
    };
    let strategy = meta.strategy()?;
    opts.retain_keys = strategy.retain_keys;
    if strategy.replace {
        // Replace-strategy objects are re-sent even when unchanged (spec §4.3).
        if opts.changes {
            patch.insert(key.to_owned(), Value::Object(right.clone()));
        }
        return Ok(());
    }
    let sub = diff_maps(left, right, child.as_ref(), opts, log)?;
    if !sub.is_empty() {
        patch.insert(key.to_owned(), Value::Object(sub));
    }
    Ok(())
}

/// Both sides hold lists (upstream `handleSliceDiff`).
fn diff_list_field(
    key: &str,
    left: &[Value],
    right: &[Value],
    patch: &mut Map,
    schema: &dyn Schema,
    mut opts: DiffOptions,
    log: &mut SortLog,
) -> Result<()> {
    let (element, meta) = match schema.lookup_slice(key) {
        Ok(found) => found,
        Err(_) if left == right => return Ok(()),
        Err(e) => return Err(e),
    };
    let strategy = meta.strategy()?;
    if !strategy.merge {
        if opts.changes && left != right {
            patch.insert(key.to_owned(), Value::Array(right.to_vec()));
        }
        return Ok(());
    }
    opts.retain_keys = strategy.retain_keys;
    let lists = diff_lists(left, right, element.as_ref(), &meta.merge_key, opts, log)?;
    if !lists.patch.is_empty() {
        patch.insert(key.to_owned(), Value::Array(lists.patch));
    }
    if !lists.deletions.is_empty() {
        patch.insert(format!("{}/{key}", super::DELETE_FROM_PRIMITIVE_LIST_PREFIX), Value::Array(lists.deletions));
    }
    if !lists.order.is_empty() {
        patch.insert(format!("{}/{key}", super::SET_ELEMENT_ORDER_PREFIX), Value::Array(lists.order));
    }
    Ok(())
}

/// What a merge list contributes to a patch: the list itself, the parallel deletion list
/// (scalars) and the `$setElementOrder` list.
#[derive(Default)]
struct ListDiff {
    patch: Vec<Value>,
    deletions: Vec<Value>,
    order: Vec<Value>,
}

/// Upstream `diffLists`.
fn diff_lists(
    left: &[Value],
    right: &[Value],
    schema: &dyn Schema,
    merge_key: &str,
    opts: DiffOptions,
    log: &mut SortLog,
) -> Result<ListDiff> {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || {
        if left.is_empty() {
            // Nothing to merge with: the whole new list is the patch (no sEO, no validation).
            if right.is_empty() || !opts.changes {
                return Ok(ListDiff::default());
            }
            return Ok(ListDiff { patch: right.to_vec(), ..ListDiff::default() });
        }
        match slice_element_type(&[left, right])? {
            ElemKind::Map => diff_lists_of_maps(left, right, schema, merge_key, opts, log),
            ElemKind::Scalar => {
                // Upstream sorts `left` in place and then compares the sorted list with `right`:
                // an unsorted but unchanged list still gets an sEO (§4.5).
                let mut sorted_left = left.to_vec();
                sort_scalars_by_v_string(&mut sorted_left);
                log.record(&sorted_left);
                let (adds, deletions) = diff_lists_of_scalars(&sorted_left, right, opts);
                let patch = normalize_slice_order(adds, right, merge_key, ElemKind::Scalar)?;
                let wanted = (opts.deletions && !deletions.is_empty()) || (opts.changes && sorted_left != right);
                let order = if opts.set_order && wanted { right.to_vec() } else { Vec::new() };
                Ok(ListDiff { patch, deletions, order })
            }
        }
    })
}

/// Sorts `s` in place by the `%v` string of each element (Go `sort.Sort`, `a <= b`).
pub(crate) fn sort_scalars_by_v_string(s: &mut Vec<Value>) {
    let mut keyed: Vec<(String, Value)> = std::mem::take(s).into_iter().map(|v| (v.go_v_string(), v)).collect();
    gosort::sort_by(&mut keyed, |a, b| a.0 <= b.0);
    s.extend(keyed.into_iter().map(|(_, v)| v));
}

/// Upstream `diffListsOfScalars`: a merge walk over both lists sorted by `%v` string (`left`
/// comes sorted).
fn diff_lists_of_scalars(left: &[Value], right: &[Value], opts: DiffOptions) -> (Vec<Value>, Vec<Value>) {
    let mut right_sorted = right.to_vec();
    sort_scalars_by_v_string(&mut right_sorted);
    let left_strings: Vec<String> = left.iter().map(Value::go_v_string).collect();
    let right_strings: Vec<String> = right_sorted.iter().map(Value::go_v_string).collect();

    let (mut i, mut j) = (0, 0);
    let mut adds = Vec::new();
    let mut deletions = Vec::new();
    while i < left.len() || j < right_sorted.len() {
        let in_left = i < left.len();
        let in_right = j < right_sorted.len();
        if in_left && in_right && left_strings[i] == right_strings[j] {
            i += 1;
            j += 1;
        } else if !in_left || (in_right && left_strings[i] > right_strings[j]) {
            if opts.changes {
                adds.push(right_sorted[j].clone());
            }
            j += 1;
        } else {
            if opts.deletions {
                deletions.push(left[i].clone());
            }
            i += 1;
        }
    }
    (adds, swap_dedup(deletions))
}

/// Upstream `diffListsOfMaps` + the map half of `diffLists`: both lists ordered by the `%v`
/// string of their merge-key values (Go's unstable sort, so duplicate keys pair up as upstream
/// pairs them), walked in step, elements present on both sides diffed recursively; then the
/// patch items ordered as in `right`, delete directives last, and the `$setElementOrder`.
/// Merge-key values are looked up once per element.
fn diff_lists_of_maps(
    left: &[Value],
    right: &[Value],
    schema: &dyn Schema,
    merge_key: &str,
    opts: DiffOptions,
    log: &mut SortLog,
) -> Result<ListDiff> {
    let left_keys: Vec<Option<&Value>> = left.iter().map(|v| merge_key_value(v, merge_key)).collect();
    let right_keys: Vec<Option<&Value>> = right.iter().map(|v| merge_key_value(v, merge_key)).collect();
    let left_order = sorted_by_v_string(&left_keys);
    let right_order = sorted_by_v_string(&right_keys);

    let mut out = MapListPatch::new(&right_keys);
    let (mut i, mut j) = (0, 0);
    while i < left_order.len() || j < right_order.len() {
        let in_left = i < left_order.len();
        let in_right = j < right_order.len();
        // Both current elements must carry the key; upstream checks them as it reaches them.
        if in_left && left_keys[left_order[i].1].is_none() {
            return Err(missing_merge_key(&left[left_order[i].1], merge_key));
        }
        if in_right && right_keys[right_order[j].1].is_none() {
            return Err(missing_merge_key(&right[right_order[j].1], merge_key));
        }
        let both_at = in_left && in_right;
        if both_at && left_order[i].0 == right_order[j].0 {
            let (li, rj) = (left_order[i].1, right_order[j].1);
            let key = right_keys[rj].expect("checked");
            if let Some(sub) = diff_matched_element((li, &left[li]), &right[rj], key, schema, merge_key, opts, log)? {
                out.push(key, sub);
            }
            i += 1;
            j += 1;
        } else if !in_left || (in_right && left_order[i].0 > right_order[j].0) {
            if opts.changes {
                let rj = right_order[j].1;
                out.push(right_keys[rj].expect("checked"), right[rj].clone());
            }
            j += 1;
        } else {
            if opts.deletions {
                out.deletions.push(delete_directive(merge_key, left_keys[left_order[i].1].expect("checked")));
            }
            i += 1;
        }
    }
    let patch = out.into_patch();

    let order_same = left.len() == right.len()
        && left_keys.iter().zip(&right_keys).all(|(l, r)| typed_eq(l.expect("checked"), r.expect("checked")));
    let wanted = (opts.changes && (!patch.is_empty() || !order_same)) || (opts.deletions && !patch.is_empty());
    let order = if opts.set_order && wanted { set_element_order(&right_keys, merge_key) } else { Vec::new() };
    Ok(ListDiff { patch, deletions: Vec::new(), order })
}

/// The patch of an element present on both sides, `(index, element)` on the left: its diff with
/// the merge key added, or `None` when there is no difference.
fn diff_matched_element(
    (index_in_left, left): (usize, &Value),
    right: &Value,
    key: &Value,
    schema: &dyn Schema,
    merge_key: &str,
    opts: DiffOptions,
    log: &mut SortLog,
) -> Result<Option<Value>> {
    let (Value::Object(l), Value::Object(r)) = (left, right) else {
        unreachable!("elements with a merge key are objects");
    };
    log.enter(PathSegment::Index(index_in_left));
    let mut sub = diff_maps(l, r, schema, opts, log).map_err(|e| e.in_element(merge_key, key))?;
    log.leave();
    if sub.is_empty() {
        return Ok(None);
    }
    sub.insert(merge_key.to_owned(), key.clone());
    Ok(Some(Value::Object(sub)))
}

/// The patch of a list of objects as the walk builds it.
struct MapListPatch<'a> {
    right_keys: &'a [Option<&'a Value>],
    /// Patch items with the position of their key's first occurrence in `right`.
    items: Vec<(usize, Value)>,
    /// Delete directives, in walk order.
    delete_items: Vec<Value>,
    /// `$patch: delete` for the elements only on the left.
    deletions: Vec<Value>,
    first_in_right: Option<FirstIndex<'a>>,
}

impl<'a> MapListPatch<'a> {
    fn new(right_keys: &'a [Option<&'a Value>]) -> Self {
        MapListPatch {
            right_keys,
            items: Vec::new(),
            delete_items: Vec::new(),
            deletions: Vec::new(),
            first_in_right: None,
        }
    }

    /// Adds the patch item for the element with merge-key value `key`. Delete directives go
    /// after the other items, in walk order (upstream `normalizeSliceOrder`).
    fn push(&mut self, key: &Value, item: Value) {
        if is_delete_directive(&item) {
            self.delete_items.push(item);
            return;
        }
        let right_keys = self.right_keys;
        let first = self.first_in_right.get_or_insert_with(|| typed_index(right_keys)).get(&TypedKey::of(key));
        self.items.push((first.unwrap_or(usize::MAX), item));
    }

    /// Upstream `normalizeSliceOrder(patch, modified)`: stable by first position in `right`,
    /// then the delete directives, then the deletions.
    fn into_patch(mut self) -> Vec<Value> {
        self.items.sort_by_key(|(at, _)| *at);
        let mut patch: Vec<Value> = self.items.into_iter().map(|(_, v)| v).collect();
        patch.extend(self.delete_items);
        patch.extend(self.deletions);
        patch
    }
}

/// `{merge_key: key, $patch: delete}`.
fn delete_directive(merge_key: &str, key: &Value) -> Value {
    let mut directive = Map::new();
    directive.insert(merge_key.to_owned(), key.clone());
    directive.insert(DIRECTIVE_MARKER.to_owned(), Value::String("delete".into()));
    Value::Object(directive)
}

/// The `$setElementOrder` list of a list of objects: the merge keys of `right`, in order.
fn set_element_order(right_keys: &[Option<&Value>], merge_key: &str) -> Vec<Value> {
    right_keys
        .iter()
        .map(|k| {
            let mut m = Map::new();
            m.insert(merge_key.to_owned(), k.cloned().unwrap_or(Value::Null));
            Value::Object(m)
        })
        .collect()
}

/// Positions ordered by the `%v` string of each key (Go `sort.Sort`, `<=`); elements without
/// the key sort as Go's `%v` of nil.
fn sorted_by_v_string<'a>(keys: &[Option<&'a Value>]) -> Vec<(Cow<'a, str>, usize)> {
    let mut keyed: Vec<(Cow<'a, str>, usize)> =
        keys.iter().enumerate().map(|(i, k)| (k.map_or(Cow::Borrowed("<nil>"), v_string), i)).collect();
    gosort::sort_by(&mut keyed, |a, b| a.0 <= b.0);
    keyed
}

fn typed_index<'a>(keys: &[Option<&'a Value>]) -> FirstIndex<'a> {
    FirstIndex::new(keys.iter().map(|k| k.map_or(TypedKey::Null, TypedKey::of)))
}

fn typed_eq(a: &Value, b: &Value) -> bool {
    TypedKey::of(a) == TypedKey::of(b)
}

/// Go's `%v` of a merge-key value, without copying strings.
fn v_string(v: &Value) -> Cow<'_, str> {
    match v {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.go_v_string()),
    }
}

fn missing_merge_key(v: &Value, merge_key: &str) -> Error {
    match v {
        Value::Object(_) => Error::no_merge_key(v, merge_key),
        other => super::order::bad_map_arg(other),
    }
}
