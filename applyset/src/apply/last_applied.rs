//! What the last-applied annotation records, when it is not kubectl's copy of the manifest.
//!
//! [`HashedSecrets`] (the controller's `spec.secrets: Hashed`): a Secret's annotation holds an
//! HMAC-SHA256 of each `data`/`stringData` value instead of the value. The three-way patch
//! needs the original values back: a recorded hash that the manifest's value still produces is
//! that value (unchanged since the last apply); any other stays a hash, so the manifest's new
//! value differs from it and is sent, and a key the manifest dropped is deleted as kubectl
//! deletes it.

use std::fmt;

use applyset_merge::Value;
use openssl::hash::MessageDigest;
use openssl::pkey::PKey;
use openssl::sign::Signer;

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

/// Secrets' values recorded as HMAC-SHA256 under a key only the controller has.
pub struct HashedSecrets {
    key: PKey<openssl::pkey::Private>,
}

impl HashedSecrets {
    pub fn new(key: &[u8]) -> Result<HashedSecrets, openssl::error::ErrorStack> {
        Ok(HashedSecrets { key: PKey::hmac(key)? })
    }

    /// `hmac-sha256:<hex>` of `value` under the key `name` of `section`: the name is part of
    /// the message, so two keys with one value do not show as equal.
    fn hash(&self, section: &str, name: &str, value: &str) -> String {
        let mut message = Vec::with_capacity(section.len() + name.len() + value.len() + 2);
        for part in [section.as_bytes(), b"\0", name.as_bytes(), b"\0", value.as_bytes()] {
            message.extend_from_slice(part);
        }
        // HMAC with a valid key does not fail; should it, the hash of nothing is recorded and
        // the next apply sends the value again (never the value in the annotation).
        let digest = Signer::new(MessageDigest::sha256(), &self.key)
            .and_then(|mut signer| signer.sign_oneshot_to_vec(&message))
            .unwrap_or_default();
        format!("{HASH_PREFIX}{}", crate::digest::hex(&digest))
    }
}

/// Whether `object` is a core/v1 Secret.
pub fn is_secret(object: &Value) -> bool {
    let Some(map) = object.as_object() else { return false };
    map.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && map.get("kind").and_then(Value::as_str) == Some("Secret")
}

impl LastAppliedCodec for HashedSecrets {
    fn encode(&self, configuration: &Value) -> Option<Value> {
        if !is_secret(configuration) {
            return None;
        }
        let mut recorded = configuration.clone();
        let root = recorded.as_object_mut()?;
        for section in SECTIONS {
            if let Some(Value::Object(values)) = root.get_mut(section) {
                for (name, value) in values.iter_mut() {
                    if let Value::String(text) = value {
                        *value = Value::String(self.hash(section, name, text));
                    }
                }
            }
        }
        Some(recorded)
    }

    fn decode(&self, recorded: Value, manifest: &Value) -> Value {
        if !is_secret(manifest) {
            return recorded;
        }
        let mut original = recorded;
        let Some(root) = original.as_object_mut() else { return original };
        for section in SECTIONS {
            let current = manifest.as_object().and_then(|m| m.get(section)).and_then(Value::as_object);
            let Some(Value::Object(values)) = root.get_mut(section) else { continue };
            for (name, value) in values.iter_mut() {
                let Value::String(hash) = value else { continue };
                let now = current.and_then(|c| c.get(name)).and_then(Value::as_str);
                if let Some(now) = now
                    && hash.starts_with(HASH_PREFIX)
                    && self.hash(section, name, now) == *hash
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

    fn json(text: &str) -> Value {
        Value::from_json_str(text).unwrap()
    }

    fn secret(data: &str) -> Value {
        json(&format!(r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"s"}},"data":{data}}}"#))
    }

    #[test]
    fn the_annotation_holds_hashes_and_unchanged_values_read_back() {
        let codec = HashedSecrets::new(b"0123456789abcdef0123456789abcdef").unwrap();
        let manifest = secret(r#"{"password":"aHVudGVyMg==","same":"aHVudGVyMg=="}"#);
        let recorded = codec.encode(&manifest).unwrap();
        let text = recorded.to_json_string();
        assert!(!text.contains("aHVudGVyMg=="), "no value recorded: {text}");
        let data = recorded.as_object().unwrap()["data"].as_object().unwrap().clone();
        let (password, same) = (data["password"].as_str().unwrap(), data["same"].as_str().unwrap());
        assert!(password.starts_with(HASH_PREFIX) && password.len() == HASH_PREFIX.len() + 64, "{password}");
        assert_ne!(password, same, "the key name is part of the message");
        assert_eq!(codec.encode(&manifest), Some(recorded.clone()), "deterministic: a no-op records the same");

        // Unchanged: the original is the manifest's value; changed or removed: the hash stays.
        assert_eq!(codec.decode(recorded.clone(), &manifest), manifest);
        let changed = secret(r#"{"password":"bmV3","same":"aHVudGVyMg=="}"#);
        let original = codec.decode(recorded.clone(), &changed);
        assert_eq!(original.as_object().unwrap()["data"].as_object().unwrap()["password"].as_str(), Some(password));
        let other_key = HashedSecrets::new(b"another key").unwrap();
        assert_eq!(other_key.decode(recorded.clone(), &manifest), recorded, "another key reads nothing back");
    }

    #[test]
    fn only_secrets_are_hashed_and_plain_annotations_read_as_they_are() {
        let codec = HashedSecrets::new(b"k").unwrap();
        let config_map = json(r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"}}"#);
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
