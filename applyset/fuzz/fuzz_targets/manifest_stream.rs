//! The manifest reader on arbitrary bytes: BOM decoding, JSON/YAML sniffing, `---` splitting,
//! libyaml events, go-yaml v2 resolution, aliases and merges, list flattening.
//!
//! Must never panic, overflow the stack or blow up memory (nesting and alias expansion are
//! bounded); every document it returns must be a JSON value within the nesting limit.
//!
//! Run: `cd applyset/fuzz && cargo fuzz run manifest_stream seeds/manifest_stream -- -max_total_time=60`
#![no_main]

use applyset::manifest::{decode_text, document_objects, parse_stream};
use applyset_merge::Value;
use applyset_merge::value::MAX_DEPTH;
use libfuzzer_sys::fuzz_target;

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fuzz_target!(|data: &[u8]| {
    let text = decode_text(data);
    let Ok(documents) = parse_stream(&text) else { return };
    for document in &documents {
        assert!(!document.value.is_null(), "null documents are skipped");
        assert!(depth(&document.value) <= MAX_DEPTH, "nesting limit");
        // What we hold must be JSON that kubectl's parser reads back.
        Value::from_json_str(&document.value.to_json_string()).expect("valid JSON");
        if let Ok(objects) = document_objects(document) {
            for object in objects {
                let kind = object.as_object().and_then(|m| m.get("kind")).and_then(Value::as_str);
                assert!(kind.is_some_and(|k| !k.is_empty()), "objects always have a kind");
            }
        }
    }
});
