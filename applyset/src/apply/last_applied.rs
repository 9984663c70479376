//! What the last-applied annotation records, when it is not kubectl's copy of the manifest.
//!
//! [`HashedSecrets`] (the controller's `spec.secrets: Hashed`): a Secret's annotation holds an
//! HMAC-SHA256 of each `data`/`stringData` value instead of the value. The three-way patch
//! needs the original values back: a recorded hash that the manifest's value still produces is
//! that value (unchanged since the last apply); any other stays a hash, so the manifest's new
//! value differs from it and is sent, and a key the manifest dropped is deleted as kubectl
//! deletes it.
//!
//! The hashes are keyed per namespace (a key derived from the controller's key and the Secret's
//! namespace): with one key for all, whoever may read a Secret's annotation in one namespace
//! could confirm guesses of its values by applying candidates in a namespace of their own and
//! comparing hashes.

use std::fmt;

use applyset_merge::Value;
use openssl::error::ErrorStack;
use openssl::pkey::PKey;

/// How an object's configuration is recorded in its annotation, and read back.
pub trait LastAppliedCodec: Send + Sync {
    /// The configuration to record for `configuration` (the manifest as applied, without its
    /// annotation); `None` records it as it is (kubectl).
    fn encode(&self, configuration: &Value) -> Option<Value>;
    /// The original to compute the patch from, given what the annotation recorded and the
    /// manifest being applied.
    fn decode(&self, recorded: Value, manifest: &Value) -> Value;
}

/// A shared [`LastAppliedCodec`].
#[derive(Clone)]
pub struct LastAppliedCodecRef(pub std::sync::Arc<dyn LastAppliedCodec>);

impl fmt::Debug for LastAppliedCodecRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LastAppliedCodec")
    }
}

/// The prefix of a recorded hash.
pub const HASH_PREFIX: &str = "hmac-sha256:";

/// The sections of a Secret that hold values.
const SECTIONS: [&str; 2] = ["data", "stringData"];

/// The first part of a namespace key's derivation message. Hash messages begin with a section
/// name instead, so no hash recorded under the controller's key (legacy annotations anyone may
/// read) is ever a namespace's key.
const DERIVATION_LABEL: &str = "applyset.dev/secret-hash";

/// Secrets' values recorded as HMAC-SHA256 under a key only the controller has, derived per
/// namespace.
pub struct HashedSecrets {
    /// The controller's key: each namespace's key is derived from it, and annotations recorded
    /// before keys were per namespace (hashed under it directly) are still read back.
    key: Vec<u8>,
}

/// HMAC-SHA256 under `key` of `parts` joined by NUL bytes.
fn hmac(key: &[u8], parts: &[&str]) -> Option<Vec<u8>> {
    crate::digest::hmac_sha256(key, parts.join("\0").as_bytes())
}

/// `hmac-sha256:<hex>` of `value` under the key `name` of `section`: the name is part of the
/// message, so two keys with one value do not show as equal. `key` is `None` when deriving it
/// failed.
fn hash(key: Option<&[u8]>, section: &str, name: &str, value: &str) -> String {
    // HMAC with a valid key does not fail; should it, the hash of nothing is recorded and the
    // next apply sends the value again (never the value in the annotation).
    let digest = key.and_then(|key| hmac(key, &[section, name, value])).unwrap_or_default();
    format!("{HASH_PREFIX}{}", crate::digest::hex(&digest))
}

impl HashedSecrets {
    /// A codec for the controller's `key` (refused as openssl refuses it as an HMAC key).
    pub fn new(key: &[u8]) -> Result<HashedSecrets, ErrorStack> {
        PKey::hmac(key)?;
        Ok(HashedSecrets { key: key.to_vec() })
    }

    /// The key of the Secrets of `namespace`: HMAC-SHA256(controller key,
    /// `applyset.dev/secret-hash\0<namespace>`). One HMAC per object, so derived at each use.
    fn namespace_key(&self, namespace: &str) -> Option<Vec<u8>> {
        hmac(&self.key, &[DERIVATION_LABEL, namespace])
    }
}

/// Whether `object` is a core/v1 Secret.
pub fn is_secret(object: &Value) -> bool {
    let Some(map) = object.as_object() else { return false };
    map.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && map.get("kind").and_then(Value::as_str) == Some("Secret")
}

/// The Secret's own namespace: the apply has set the default one on the object before it is
/// encoded or decoded (Secrets are namespaced, so it is always there).
fn namespace_of(object: &Value) -> &str {
    super::object::meta_str(object, "namespace").unwrap_or("")
}

impl LastAppliedCodec for HashedSecrets {
    fn encode(&self, configuration: &Value) -> Option<Value> {
        if !is_secret(configuration) {
            return None;
        }
        let key = self.namespace_key(namespace_of(configuration));
        let mut recorded = configuration.clone();
        let root = recorded.as_object_mut()?;
        for section in SECTIONS {
            if let Some(Value::Object(values)) = root.get_mut(section) {
                for (name, value) in values.iter_mut() {
                    if let Value::String(text) = value {
                        *value = Value::String(hash(key.as_deref(), section, name, text));
                    }
                }
            }
        }
        Some(recorded)
    }

    /// A hash reads back as the manifest's value when that value produces it under the
    /// namespace's key or, for annotations recorded before keys were per namespace, under the
    /// controller's key, so the apply after an upgrade rewrites such an annotation with the
    /// namespace's hashes from an original that is still the values.
    fn decode(&self, recorded: Value, manifest: &Value) -> Value {
        if !is_secret(manifest) {
            return recorded;
        }
        let key = self.namespace_key(namespace_of(manifest));
        let mut original = recorded;
        let Some(root) = original.as_object_mut() else { return original };
        for section in SECTIONS {
            let current = manifest.as_object().and_then(|m| m.get(section)).and_then(Value::as_object);
            let Some(Value::Object(values)) = root.get_mut(section) else { continue };
            for (name, value) in values.iter_mut() {
                let Value::String(recorded_hash) = value else { continue };
                let now = current.and_then(|c| c.get(name)).and_then(Value::as_str);
                if let Some(now) = now
                    && recorded_hash.starts_with(HASH_PREFIX)
                    && [key.as_deref(), Some(self.key.as_slice())]
                        .into_iter()
                        .flatten()
                        .any(|key| hash(Some(key), section, name, now) == *recorded_hash)
                {
                    *value = Value::String(now.to_owned());
                }
            }
        }
        original
    }
}

/// `stringData` folded into `data` (base64), as the apiserver stores it: live Secrets have no
/// `stringData`, so a manifest with one would be patched again at every apply. A `stringData`
/// key wins over the same `data` key, as on the apiserver.
pub fn fold_string_data(object: &mut Value) {
    use base64::Engine as _;
    if !is_secret(object) {
        return;
    }
    let Some(root) = object.as_object_mut() else { return };
    let Some(Ok(strings)) = root.remove("stringData").map(Value::into_object) else { return };
    let data = root.entry("data".to_owned()).or_insert_with(|| Value::Object(Default::default()));
    if !matches!(data, Value::Object(_)) {
        *data = Value::Object(Default::default());
    }
    let Value::Object(data) = data else { return };
    for (name, value) in strings {
        if let Some(text) = value.as_str() {
            data.insert(name, Value::String(base64::engine::general_purpose::STANDARD.encode(text)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::object::{modified_configuration, modified_configuration_with, set_annotation_value};
    use crate::keys::LAST_APPLIED_ANNOTATION;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn json(text: &str) -> Value {
        Value::from_json_str(text).unwrap()
    }

    fn secret_in(namespace: &str, data: &str) -> Value {
        json(&format!(
            r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"s","namespace":"{namespace}"}},"data":{data}}}"#
        ))
    }

    fn secret(data: &str) -> Value {
        secret_in("team-a", data)
    }

    fn data_of(object: &Value, name: &str) -> String {
        object.as_object().unwrap()["data"].as_object().unwrap()[name].as_str().unwrap().to_owned()
    }

    /// What the controller recorded before keys were per namespace: hashes under its own key.
    fn legacy_encode(codec: &HashedSecrets, configuration: &Value) -> Value {
        let mut recorded = configuration.clone();
        let data = recorded.as_object_mut().unwrap().get_mut("data").unwrap().as_object_mut().unwrap();
        for (name, value) in data.iter_mut() {
            *value = Value::String(hash(Some(&codec.key), "data", name, value.as_str().unwrap()));
        }
        recorded
    }

    #[test]
    fn the_annotation_holds_hashes_and_unchanged_values_read_back() {
        let codec = HashedSecrets::new(KEY).unwrap();
        let manifest = secret(r#"{"password":"aHVudGVyMg==","same":"aHVudGVyMg=="}"#);
        let recorded = codec.encode(&manifest).unwrap();
        let text = recorded.to_json_string();
        assert!(!text.contains("aHVudGVyMg=="), "no value recorded: {text}");
        let (password, same) = (data_of(&recorded, "password"), data_of(&recorded, "same"));
        assert!(password.starts_with(HASH_PREFIX) && password.len() == HASH_PREFIX.len() + 64, "{password}");
        assert_ne!(password, same, "the key name is part of the message");
        assert_eq!(codec.encode(&manifest), Some(recorded.clone()), "deterministic: a no-op records the same");

        // Unchanged: the original is the manifest's value; changed or removed: the hash stays.
        assert_eq!(codec.decode(recorded.clone(), &manifest), manifest);
        let changed = secret(r#"{"password":"bmV3","same":"aHVudGVyMg=="}"#);
        assert_eq!(data_of(&codec.decode(recorded.clone(), &changed), "password"), password);
        let other_key = HashedSecrets::new(b"another key").unwrap();
        assert_eq!(other_key.decode(recorded.clone(), &manifest), recorded, "another key reads nothing back");
    }

    #[test]
    fn equal_values_hash_differently_in_each_namespace_and_stably_in_one() {
        let codec = HashedSecrets::new(KEY).unwrap();
        let data = r#"{"password":"aHVudGVyMg=="}"#;
        let (a, b) = (secret_in("team-a", data), secret_in("team-b", data));
        let (in_a, in_b) = (codec.encode(&a).unwrap(), codec.encode(&b).unwrap());
        assert_ne!(data_of(&in_a, "password"), data_of(&in_b, "password"), "no oracle across namespaces");
        assert_ne!(data_of(&in_a, "password"), hash(Some(&codec.key), "data", "password", "aHVudGVyMg=="));
        // Stable: another codec with the same key (a new leader) records the same.
        let again = HashedSecrets::new(KEY).unwrap();
        assert_eq!(again.encode(&a), Some(in_a.clone()));
        // One namespace's hash copied into another's annotation reads back as nothing.
        assert_eq!(codec.decode(in_a.clone(), &b), in_a);
        assert_eq!(codec.decode(in_b.clone(), &b), b);
    }

    #[test]
    fn legacy_hashes_read_back_and_only_the_annotation_is_rewritten() {
        let codec = HashedSecrets::new(KEY).unwrap();
        let manifest = secret(r#"{"password":"aHVudGVyMg==","token":"dG9r"}"#);
        // The live Secret as the controller left it before: the values, hashes under its key.
        let (plain_text, mut live) = modified_configuration(&manifest);
        let configuration = json(&plain_text);
        let legacy = legacy_encode(&codec, &configuration);
        set_annotation_value(&mut live, LAST_APPLIED_ANNOTATION, &(legacy.to_json_string() + "\n"));

        let original = codec.decode(legacy.clone(), &manifest);
        assert_eq!(original, configuration, "the legacy hashes read back as the values");
        let (new_text, modified) = modified_configuration_with(&manifest, Some(&codec));
        assert_ne!(new_text, legacy.to_json_string() + "\n", "rewritten with the namespace's hashes");
        let patch =
            applyset_merge::create_three_way_merge_patch(&original, &modified, &live, &applyset_merge::Untyped, true)
                .unwrap();
        let mut annotation_only = json(r#"{"metadata":{"annotations":{}}}"#);
        set_annotation_value(&mut annotation_only, LAST_APPLIED_ANNOTATION, &new_text);
        assert_eq!(patch, annotation_only, "no value is sent: {}", patch.to_json_string());
    }

    #[test]
    fn a_changed_value_reads_back_under_neither_key() {
        let codec = HashedSecrets::new(KEY).unwrap();
        let before = secret(r#"{"password":"b2xk"}"#);
        let after = secret(r#"{"password":"bmV3"}"#);
        let legacy = legacy_encode(&codec, &before);
        let current = codec.encode(&before).unwrap();
        assert_eq!(codec.decode(legacy.clone(), &after), legacy);
        assert_eq!(codec.decode(current.clone(), &after), current);
        // A key the manifest dropped stays a hash, so the patch deletes it.
        let dropped = json(r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"team-a"}}"#);
        assert_eq!(codec.decode(legacy.clone(), &dropped), legacy);
    }

    #[test]
    fn only_secrets_are_hashed_and_plain_annotations_read_as_they_are() {
        let codec = HashedSecrets::new(b"k").unwrap();
        let config_map =
            json(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"a"},"data":{"a":"b"}}"#);
        assert_eq!(codec.encode(&config_map), None);
        assert_eq!(codec.decode(config_map.clone(), &config_map), config_map);
        // What `kubectl apply` wrote: values in clear are an original like any other.
        let plain = secret(r#"{"a":"Yg=="}"#);
        assert_eq!(codec.decode(plain.clone(), &secret(r#"{"a":"Yw=="}"#)), plain);
    }

    #[test]
    fn string_data_folds_into_data_and_wins() {
        let mut object = json(
            r#"{"apiVersion":"v1","kind":"Secret","data":{"a":"eA==","b":"eQ=="},"stringData":{"a":"hunter2","c":"z"}}"#,
        );
        fold_string_data(&mut object);
        assert_eq!(
            object.to_json_string(),
            r#"{"apiVersion":"v1","data":{"a":"aHVudGVyMg==","b":"eQ==","c":"eg=="},"kind":"Secret"}"#
        );
    }
}
