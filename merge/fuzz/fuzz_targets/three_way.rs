//! Arbitrary JSON through the whole three-way path: parse three documents, create the patch
//! (with and without overwrite), apply it, and run the JSON-merge path too. Any panic, stack
//! overflow or hang is a bug; errors are fine.
//!
//! Input: three JSON texts separated by NUL bytes. Run from merge/:
//! `cargo +nightly fuzz run three_way -- -max_total_time=600`
#![no_main]

use std::sync::Arc;

use applyset_merge::{
    PatchMeta, Result, Schema, SchemaRef, Value, create_three_way_merge_patch, json_merge,
    strategic_merge_patch,
};
use libfuzzer_sys::fuzz_target;

/// Metadata chosen by the field name's first letter, so that fuzzed documents reach every
/// strategy: `m…` merge lists keyed by `name`, `p…` primitive merge lists, `r…` retainKeys,
/// `x…` replace, `v…` merge,retainKeys keyed by `name`, `k…` merge with no key (malformed),
/// anything else no strategy.
#[derive(Debug)]
struct ByFirstLetter;

impl ByFirstLetter {
    fn meta(key: &str) -> PatchMeta {
        match key.as_bytes().first() {
            Some(b'm') => PatchMeta::new("merge", "name"),
            Some(b'p') => PatchMeta::new("merge", ""),
            Some(b'r') => PatchMeta::new("retainKeys", ""),
            Some(b'x') => PatchMeta::new("replace", ""),
            Some(b'v') => PatchMeta::new("merge,retainKeys", "name"),
            Some(b'k') => PatchMeta::new("merge", ""),
            _ => PatchMeta::default(),
        }
    }
}

impl Schema for ByFirstLetter {
    fn lookup_struct(&self, key: &str) -> Result<(SchemaRef, PatchMeta)> {
        Ok((Arc::new(ByFirstLetter), Self::meta(key)))
    }
    fn lookup_slice(&self, key: &str) -> Result<(SchemaRef, PatchMeta)> {
        Ok((Arc::new(ByFirstLetter), Self::meta(key)))
    }
    fn name(&self) -> String {
        "ByFirstLetter".into()
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |b| *b == 0);
    let mut next = || parts.next().and_then(|p| Value::from_json_slice(p).ok());
    let (Some(original), Some(modified), Some(current)) = (next(), next(), next()) else {
        return;
    };
    for overwrite in [true, false] {
        if let Ok(patch) = create_three_way_merge_patch(&original, &modified, &current, &ByFirstLetter, overwrite) {
            let _ = strategic_merge_patch(&current, &patch, &ByFirstLetter);
        }
    }
    if let Ok(patch) = json_merge::create_three_way(&original, &modified, &current) {
        let _ = json_merge::merge_patch(&current, &patch);
    }
});
