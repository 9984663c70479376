//! N(x): upstream's test-only `sortMergeListsByName`, which every document of the YAML tables
//! goes through before use (conformance README, "Definitions"). Merge lists of maps are
//! sorted by the `%v` string of their merge key (recursing into elements), merge lists of
//! scalars are swap-deduplicated and sorted, `$retainKeys` and `$deleteFromPrimitiveList`
//! lists are sorted, everything else is left alone. Sorting is Go's `sort.Sort` with `<=`.

use applyset_merge::{Error, Map, Result, Schema, Value, gosort};

const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";
const PATCH: &str = "$patch";

pub fn normalize(doc: &Value, schema: &dyn Schema) -> Result<Value> {
    match doc {
        Value::Object(map) => Ok(Value::Object(sort_map(map, schema)?)),
        other => Ok(other.clone()),
    }
}

fn sort_map(map: &Map, schema: &dyn Schema) -> Result<Map> {
    let mut out = Map::new();
    for (key, value) in map {
        let value = if key == RETAIN_KEYS {
            let Value::Array(items) = value else { return Err(Error::BadPatchFormatForRetainKeys) };
            Value::Array(sort_scalars(items.clone()))
        } else if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            let Value::Array(items) = value else { return Err(Error::BadPatchFormatForPrimitiveList) };
            Value::Array(sort_scalars(items.clone()))
        } else if key.starts_with(SET_ELEMENT_ORDER) {
            if !matches!(value, Value::Array(_)) {
                return Err(Error::BadPatchFormatForSetElementOrderList);
            }
            value.clone()
        } else if key == PATCH {
            value.clone()
        } else {
            match value {
                Value::Object(inner) => {
                    let (child, _) = schema.lookup_struct(key)?;
                    Value::Object(sort_map(inner, child.as_ref())?)
                }
                Value::Array(items) => {
                    let (element, meta) = schema.lookup_slice(key)?;
                    if meta.strategy()?.merge {
                        Value::Array(sort_array(items, element.as_ref(), &meta.merge_key)?)
                    } else {
                        value.clone()
                    }
                }
                other => other.clone(),
            }
        };
        out.insert(key.clone(), value);
    }
    Ok(out)
}

fn sort_array(items: &[Value], element: &dyn Schema, merge_key: &str) -> Result<Vec<Value>> {
    let Some(first) = items.first() else { return Ok(Vec::new()) };
    if matches!(first, Value::Array(_)) {
        return Err(Error::NoListOfLists);
    }
    if items.iter().any(|v| !v.same_variant(first)) {
        return Err(Error::ListElementTypesDiffer(Value::Array(items.to_vec()).go_v_string()));
    }
    if !matches!(first, Value::Object(_)) {
        return Ok(sort_scalars(swap_dedup(items.to_vec())));
    }
    let mut sorted = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(map) = item else { unreachable!("checked above") };
        let key = map.get(merge_key).map_or_else(|| "<nil>".to_owned(), Value::go_v_string);
        sorted.push((key, Value::Object(sort_map(map, element)?)));
    }
    gosort::sort_by(&mut sorted, |a, b| a.0 <= b.0);
    Ok(sorted.into_iter().map(|(_, v)| v).collect())
}

fn sort_scalars(items: Vec<Value>) -> Vec<Value> {
    let mut keyed: Vec<(String, Value)> = items.into_iter().map(|v| (v.go_v_string(), v)).collect();
    gosort::sort_by(&mut keyed, |a, b| a.0 <= b.0);
    keyed.into_iter().map(|(_, v)| v).collect()
}

/// Go's `deduplicateScalars` (the quadratic original; test inputs are small).
fn swap_dedup(mut s: Vec<Value>) -> Vec<Value> {
    let mut i = 0;
    while i + 1 < s.len() {
        let mut j = i + 1;
        while j < s.len() {
            if s[i] == s[j] {
                let last = s.pop().expect("non-empty");
                if j < s.len() {
                    s[j] = last;
                }
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}
