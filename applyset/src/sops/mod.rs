//! SOPS decryption, pure: the bytes of a file in, its clear text out.
//!
//! A file is SOPS-encrypted when its `sops` metadata is there: a top-level `sops` mapping in
//! the first YAML document or in a JSON object (also the JSON envelope of a binary file),
//! `sops_…` keys in a dotenv file, a `[sops]` section in an INI file. [`open`] finds it;
//! [`Envelope::decrypt`] then does what `sops decrypt` does, checked against the real tool's
//! output (see `tests.rs` and its fixtures):
//!
//! 1. the data key is unwrapped from an `age` recipient stanza ([`Keyring`]); with several key
//!    groups each gives a Shamir share (`shamir.rs`);
//! 2. every value the file's rule says was encrypted (`encrypted_regex`,
//!    `unencrypted_regex`, `encrypted_suffix`, `unencrypted_suffix`, default
//!    `_unencrypted` suffix) is AES-256-GCM-decrypted with its key path as additional data,
//!    restoring its type (`cipher.rs`);
//! 3. the MAC (SHA-512 over the clear values in document order, or only the encrypted ones
//!    with `mac_only_encrypted`) must equal the one recorded, itself encrypted under the data
//!    key with `lastmodified` as additional data. Nothing decrypted leaves before this check.
//!
//! Refused, with a [`SopsError`]: no identity matching an age recipient (the recipients and
//! the identities' public keys named), a recipient's stanza that does not open, a value that
//! fails authentication, a MAC mismatch, keys of other types only (PGP, AWS/GCP/Azure/Huawei
//! KMS, HashiCorp Vault: named), comment-based rules, malformed metadata. No error holds a
//! value of the file.
//!
//! Why these crates: the data key is wrapped in an age file, and `age` (rage's library, by
//! age's co-designer) reads the same format as the Go reference, X25519 identities and the
//! armor included, so no age cryptography is written here. The values use AES-GCM with a
//! 32-byte nonce, which RustCrypto's `aes-gcm` supports through its nonce-size parameter
//! (OpenSSL's binding could too, but with more unsafe-adjacent plumbing for no gain). The
//! SOPS envelope itself (tree walk, rules, MAC, the four stores' readings of their formats)
//! has no maintained Rust crate, so it is here, following SOPS 3.13's Go source.

mod cipher;
mod dotenv;
mod error;
mod ini;
mod json;
mod keys;
mod metadata;
mod shamir;
#[cfg(test)]
mod tests;
mod time;
mod tree;
mod yaml;

use std::fmt;
use std::path::Path;

pub use error::{KeyError, KeyKinds, KeyPath, SopsError};
pub use keys::Keyring;
use metadata::Metadata;
use tree::{Node, Walk};

/// The key that holds the metadata.
const METADATA_KEY: &str = "sops";

/// The formats SOPS stores, as `sops` picks them by a file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
    Dotenv,
    Ini,
    /// Any other file: a JSON envelope whose `data` holds the file's bytes.
    Binary,
}

impl Format {
    /// The format `sops` would use for `path` (`.yaml`/`.yml`, `.json`, `.env`, `.ini`, else
    /// binary).
    pub fn of_path(path: &Path) -> Format {
        let name = path.to_string_lossy();
        if name.ends_with(".yaml") || name.ends_with(".yml") {
            Format::Yaml
        } else if name.ends_with(".json") {
            Format::Json
        } else if name.ends_with(".env") {
            Format::Dotenv
        } else if name.ends_with(".ini") {
            Format::Ini
        } else {
            Format::Binary
        }
    }

    /// The format of a manifest kubectl reads: JSON when its name says so, else YAML.
    pub fn of_manifest(path: &Path) -> Format {
        if Format::of_path(path) == Format::Json { Format::Json } else { Format::Yaml }
    }
}

/// A SOPS-encrypted file, read but not decrypted.
pub struct Envelope {
    format: Format,
    /// The documents without their metadata (dotenv: one map of its keys; INI: one map of
    /// its sections; binary: one map holding `data`).
    documents: Vec<Node>,
    metadata: Node,
}

/// What decryption gives: the file's clear text in its format (YAML and JSON without their
/// `sops` key), and each decrypted string, for callers to keep out of their messages. Its
/// `Debug` shows neither.
pub struct Decrypted {
    pub text: Vec<u8>,
    pub cleartexts: Vec<String>,
}

impl fmt::Debug for Decrypted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Decrypted({} bytes, {} values)", self.text.len(), self.cleartexts.len())
    }
}

/// The file's envelope when it is SOPS-encrypted, `None` when it is not (including text that
/// does not parse in its format: the caller's own reading reports that).
pub fn open(bytes: &[u8], format: Format) -> Result<Option<Envelope>, SopsError> {
    if !contains(bytes, METADATA_KEY.as_bytes()) {
        return Ok(None);
    }
    let is_metadata = |node: &Node| ["mac", "lastmodified", "version"].iter().any(|f| node.get(f).is_some());
    let envelope = match format {
        Format::Yaml => {
            let Ok(mut documents) = yaml::parse(bytes, bytes.len().saturating_mul(10).max(10_000)) else {
                return Ok(None);
            };
            let Some(metadata) = documents.first().and_then(|d| d.get(METADATA_KEY)).filter(|m| is_metadata(m)) else {
                return Ok(None);
            };
            let metadata = metadata.clone();
            for document in &mut documents {
                document.take(METADATA_KEY);
            }
            // SOPS refuses a document that is a list or a scalar (an empty one is nothing).
            documents.retain(|d| !matches!(d, Node::Null));
            if documents.iter().any(|d| !matches!(d, Node::Map(_))) {
                return Err(SopsError::Syntax {
                    format: "YAML",
                    message: "a document that is not a mapping cannot be decrypted".into(),
                });
            }
            Envelope { format, documents, metadata }
        }
        Format::Json | Format::Binary => {
            let Ok(mut document) = json::parse(bytes) else { return Ok(None) };
            let Some(metadata) = document.take(METADATA_KEY).filter(is_metadata) else { return Ok(None) };
            if format == Format::Binary && document.get("data").is_none() {
                return Err(SopsError::Syntax { format: "binary", message: "it has no data key".into() });
            }
            Envelope { format, documents: vec![document], metadata }
        }
        Format::Dotenv => {
            let Ok((entries, flat)) = dotenv::parse(bytes) else { return Ok(None) };
            if !flat.iter().any(|(k, _)| matches!(k.as_str(), "mac" | "lastmodified" | "version")) {
                return Ok(None);
            }
            Envelope { format, documents: vec![Node::Map(entries)], metadata: metadata::unflatten(flat)? }
        }
        Format::Ini => {
            let Ok(mut sections) = ini::parse(bytes) else { return Ok(None) };
            let Some(index) = sections.iter().position(|(name, section)| name == METADATA_KEY && is_metadata(section))
            else {
                return Ok(None);
            };
            let (_, Node::Map(flat)) = sections.remove(index) else { unreachable!("sections are maps") };
            sections.retain(|(name, _)| name != METADATA_KEY);
            // Newlines in metadata values are written as `\n`.
            let flat = flat
                .into_iter()
                .map(|(k, v)| match v {
                    Node::Str(s) => (k, Node::Str(s.replace("\\n", "\n"))),
                    other => (k, other),
                })
                .collect();
            Envelope { format, documents: vec![Node::Map(sections)], metadata: metadata::unflatten(flat)? }
        }
    };
    Ok(Some(envelope))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

impl Envelope {
    /// The public keys of the file's age recipients (for a refusal that names them).
    pub fn recipients(&self) -> Vec<String> {
        Metadata::read(&self.metadata).map(|m| m.recipients()).unwrap_or_default()
    }

    /// Decrypts the file with `keys` (see the module docs).
    pub fn decrypt(mut self, keys: &Keyring) -> Result<Decrypted, SopsError> {
        let metadata = Metadata::read(&self.metadata)?;
        let key = keys.data_key(&metadata)?;
        let mut walk = Walk::new(&metadata.rule, &key, metadata.mac_only_encrypted);
        for document in &mut self.documents {
            walk.document(document)?;
        }
        let recorded = match cipher::decrypt(&metadata.mac, &key, &metadata.last_modified) {
            Ok(Node::Str(mac)) => mac,
            _ => return Err(SopsError::MacMismatch),
        };
        let cleartexts = std::mem::take(&mut walk.cleartexts);
        if recorded != walk.mac() {
            return Err(SopsError::MacMismatch);
        }
        let text = self.emit()?;
        Ok(Decrypted { text, cleartexts })
    }

    fn emit(self) -> Result<Vec<u8>, SopsError> {
        let mut documents = self.documents;
        Ok(match self.format {
            Format::Yaml => yaml::emit(&documents)?.into_bytes(),
            Format::Json => json::emit(&documents[0])?.into_bytes(),
            Format::Dotenv => match &documents[0] {
                Node::Map(entries) => dotenv::emit(entries)?.into_bytes(),
                _ => unreachable!("a dotenv file is one map"),
            },
            Format::Ini => match &documents[0] {
                Node::Map(sections) => ini::emit(sections)?.into_bytes(),
                _ => unreachable!("an INI file is one map of sections"),
            },
            Format::Binary => match documents[0].take("data") {
                Some(Node::Str(text)) => text.into_bytes(),
                Some(Node::Bytes(bytes)) => bytes,
                _ => {
                    return Err(SopsError::Syntax { format: "binary", message: "its data is not a string".into() });
                }
            },
        })
    }
}
