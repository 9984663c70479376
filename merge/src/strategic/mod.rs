//! Strategic merge patch: creation (two-way, three-way) and application.

use crate::{Result, Schema, Value};

/// Two-way patch from `original` to `modified` (upstream `CreateTwoWayMergePatch`), with
/// `$setElementOrder` generation on. Both documents must be objects.
pub fn create_two_way_merge_patch(original: &Value, modified: &Value, schema: &dyn Schema) -> Result<Value> {
    let _ = (original, modified, schema);
    todo!("strategic merge engine")
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
    let _ = (original, modified, current, schema, overwrite);
    todo!("strategic merge engine")
}

/// Applies a strategic merge patch to `doc` as the API server does (parallel lists merged,
/// unmatched nulls ignored).
pub fn strategic_merge_patch(doc: &Value, patch: &Value, schema: &dyn Schema) -> Result<Value> {
    let _ = (doc, patch, schema);
    todo!("strategic merge engine")
}
