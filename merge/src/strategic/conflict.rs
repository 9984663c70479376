//! The `--overwrite=false` check of three-way creation (spec §5 step 6, upstream
//! `MergingMapsHaveConflicts`): does the patch touch something that changed from the
//! last-applied configuration to the live object?

use std::collections::HashMap;

use super::diff::sort_scalars_by_v_string;
use super::keys::go_s_string;
use super::order::swap_dedup;
use super::{DIRECTIVE_MARKER, ElemKind, RETAIN_KEYS_DIRECTIVE, slice_element_type};
use crate::error::{Error, Result};
use crate::meta::{Schema, Strategy, Untyped};
use crate::value::{Map, Value};

pub(crate) fn maps_have_conflicts(patch: &Map, changed: &Map, schema: &dyn Schema) -> Result<bool> {
    object_pair_conflict(patch, changed, schema, Strategy::default())
}

fn fields_conflict(
    left: &Value,
    right: &Value,
    schema: &dyn Schema,
    strategy: Strategy,
    merge_key: &str,
) -> Result<bool> {
    match left {
        Value::Object(l) => {
            let Value::Object(r) = right else { return Ok(true) };
            object_pair_conflict(l, r, schema, strategy)
        }
        Value::Array(l) => {
            let Value::Array(r) = right else { return Ok(true) };
            lists_conflict(l, r, schema, strategy, merge_key)
        }
        scalar => Ok(scalar != right),
    }
}

fn object_pair_conflict(left: &Map, right: &Map, schema: &dyn Schema, strategy: Strategy) -> Result<bool> {
    let (lm, rm) = (left.get(DIRECTIVE_MARKER), right.get(DIRECTIVE_MARKER));
    // A directive acts on the whole object: one side having it, or a different one, conflicts.
    if (lm.is_some() || rm.is_some()) && lm != rm {
        return Ok(true);
    }
    if strategy.replace {
        return Ok(false);
    }
    objects_conflict(left, right, schema)
}

fn objects_conflict(left: &Map, right: &Map, schema: &dyn Schema) -> Result<bool> {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || {
        for (key, l) in left {
            if key == DIRECTIVE_MARKER || key == RETAIN_KEYS_DIRECTIVE {
                continue;
            }
            let Some(r) = right.get(key) else { continue };
            let conflict = match l {
                Value::Array(_) => {
                    let (child, meta) = schema.lookup_slice(key)?;
                    fields_conflict(l, r, child.as_ref(), meta.strategy()?, &meta.merge_key)?
                }
                Value::Object(_) => {
                    let (child, meta) = schema.lookup_struct(key)?;
                    fields_conflict(l, r, child.as_ref(), meta.strategy()?, &meta.merge_key)?
                }
                _ => fields_conflict(l, r, &Untyped, Strategy::default(), "")?,
            };
            if conflict {
                return Ok(true);
            }
        }
        Ok(false)
    })
}

fn lists_conflict(
    left: &[Value],
    right: &[Value],
    schema: &dyn Schema,
    strategy: Strategy,
    merge_key: &str,
) -> Result<bool> {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || {
        let kind = slice_element_type(&[left, right])?;
        if strategy.merge {
            // Merging scalar lists never conflict; lists of maps are compared by merge key.
            if kind != ElemKind::Map {
                return Ok(false);
            }
            let l = index_by_merge_key(left, merge_key)?;
            let r = index_by_merge_key(right, merge_key)?;
            for (key, lv) in &l {
                if let Some(rv) = r.get(key)
                    && fields_conflict(lv, rv, schema, Strategy::default(), "")?
                {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
        if left.len() != right.len() {
            return Ok(true);
        }
        let (mut left, mut right) = (left.to_vec(), right.to_vec());
        if kind != ElemKind::Map {
            left = swap_dedup(left);
            sort_scalars_by_v_string(&mut left);
            right = swap_dedup(right);
            sort_scalars_by_v_string(&mut right);
        }
        for (l, r) in left.iter().zip(&right) {
            if fields_conflict(l, r, schema, Strategy::default(), "")? {
                return Ok(true);
            }
        }
        Ok(false)
    })
}

/// Upstream `sliceOfMapsToMapOfMaps`: elements indexed by `fmt.Sprintf("%s", key)`.
fn index_by_merge_key<'a>(list: &'a [Value], merge_key: &str) -> Result<HashMap<String, &'a Value>> {
    let mut out = HashMap::with_capacity(list.len());
    for v in list {
        let Value::Object(m) = v else {
            return Err(Error::Invalid(format!(
                "invalid element type in merging list:{}",
                Value::Array(list.to_vec()).go_v_string()
            )));
        };
        let Some(key) = m.get(merge_key) else {
            return Err(Error::Invalid(format!(
                "cannot find merge key `{merge_key}` in merging list element:{}",
                v.go_v_string()
            )));
        };
        out.insert(go_s_string(key), v);
    }
    Ok(out)
}
