//! The three-way JSON merge patch kubectl uses for custom resources, and RFC 7386 application.

use crate::{Result, Value};

/// Three-way JSON merge patch (upstream `CreateThreeWayJSONMergePatch`).
pub fn create_three_way(original: &Value, modified: &Value, current: &Value) -> Result<Value> {
    let _ = (original, modified, current);
    todo!("json merge patch")
}

/// Applies an RFC 7386 merge patch to `doc`.
pub fn merge_patch(doc: &Value, patch: &Value) -> Result<Value> {
    let _ = (doc, patch);
    todo!("json merge patch")
}
