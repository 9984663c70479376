//! The key of hashed Secret annotations (`spec.secrets: Hashed`): one per controller, in a
//! Secret of its own namespace that it creates with 32 random bytes when it is missing. Every
//! replica reads the same key, so a new leader reads back what the last one recorded. Values
//! are hashed under keys derived from it per namespace (see [`crate::apply::last_applied`]).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};

use crate::cluster::list::{error_text, is_status};

/// The key's entry in the Secret.
const KEY: &str = "key";
/// The shortest key accepted (HMAC-SHA256's block of security).
const MIN_KEY_LEN: usize = 32;

/// Why the key of hashed Secret annotations is not available (`place` is `Secret ns/name`).
#[derive(Debug, thiserror::Error)]
pub enum HashKeyError {
    #[error("{place}")]
    Unusable { place: String, source: ShortKey },
    /// The apiserver's answer, in kubectl's words, is part of the message: the client error is
    /// kept as data (not as a source, whose text a report would print a second time).
    #[error("reading the hash key {place}: {}", error_text(.error))]
    Read { place: String, error: kube::Error },
    #[error("making a hash key")]
    Random(#[source] openssl::error::ErrorStack),
    /// As [`HashKeyError::Read`].
    #[error("creating the hash key {place}: {}", error_text(.error))]
    Create { place: String, error: kube::Error },
    #[error("the hash key {place} was created and is gone again")]
    Vanished { place: String },
    /// OpenSSL refused the key as an HMAC key.
    #[error("the hash key")]
    Codec(#[source] openssl::error::ErrorStack),
}

/// A key Secret whose key is too short (or missing).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("data.{KEY} must hold at least {MIN_KEY_LEN} bytes (it holds {held})")]
pub struct ShortKey {
    held: usize,
}

/// The key in `namespace/name`, created when the Secret does not exist.
pub async fn load_or_create(client: &Client, namespace: &str, name: &str) -> Result<Vec<u8>, HashKeyError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let place = format!("Secret {namespace}/{name}");
    for _ in 0..2 {
        match api.get_opt(name).await {
            Ok(Some(secret)) => return key_of(&secret).map_err(|source| HashKeyError::Unusable { place, source }),
            Ok(None) => {}
            Err(error) => return Err(HashKeyError::Read { place, error }),
        }
        let mut key = vec![0u8; MIN_KEY_LEN];
        openssl::rand::rand_bytes(&mut key).map_err(HashKeyError::Random)?;
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some(BTreeMap::from([(crate::keys::MANAGED_BY_LABEL.to_owned(), "applyset".to_owned())])),
                ..ObjectMeta::default()
            },
            type_: Some("Opaque".into()),
            data: Some(BTreeMap::from([(KEY.to_owned(), ByteString(key.clone()))])),
            ..Secret::default()
        };
        match api.create(&PostParams::default(), &secret).await {
            Ok(_) => {
                tracing::info!(secret = %place, "created the key of hashed Secret annotations");
                return Ok(key);
            }
            // Another replica created it meanwhile: read theirs.
            Err(error) if is_status(&error, 409) => continue,
            Err(error) => return Err(HashKeyError::Create { place, error }),
        }
    }
    Err(HashKeyError::Vanished { place })
}

fn key_of(secret: &Secret) -> Result<Vec<u8>, ShortKey> {
    let key = secret.data.as_ref().and_then(|d| d.get(KEY)).map(|k| k.0.clone()).unwrap_or_default();
    if key.len() < MIN_KEY_LEN {
        return Err(ShortKey { held: key.len() });
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_or_missing_key_is_refused() {
        let with = |bytes: &[u8]| Secret {
            data: Some(BTreeMap::from([(KEY.to_owned(), ByteString(bytes.to_vec()))])),
            ..Secret::default()
        };
        assert_eq!(key_of(&with(&[7; 32])), Ok(vec![7; 32]));
        assert_eq!(key_of(&with(&[7; 31])), Err(ShortKey { held: 31 }));
        assert_eq!(ShortKey { held: 31 }.to_string(), "data.key must hold at least 32 bytes (it holds 31)");
        assert!(key_of(&Secret::default()).is_err());
    }
}
