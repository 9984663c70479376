//! SOPS's tree and its walk (`sops.go`): every leaf in document order, with the path of map
//! keys above it (list items add nothing), is decrypted when the file's rule says it was
//! encrypted, and its clear bytes feed the MAC (all leaves, or only the encrypted ones with
//! `mac_only_encrypted`). Comments are not part of the tree: they carry no value and SOPS
//! leaves them out of the MAC.

use std::borrow::Cow;

use applyset_merge::value::deeper;
use regex::Regex;
use sha2::{Digest, Sha512};

use super::cipher::{self, DataKey, ValueError};
use super::error::{KeyPath, SopsError};

/// A document as SOPS's stores read it: maps keep their order (the MAC depends on it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Map(Vec<(String, Node)>),
    Seq(Vec<Node>),
    Null,
    Str(String),
    /// A decrypted `str` or `bytes` value that is not UTF-8 (a binary file's content).
    Bytes(Vec<u8>),
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A YAML timestamp, as Go's `MarshalText` writes it.
    Time(String),
}

impl Node {
    /// The value of `key` in a map.
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Removes every entry `key` of a map, returning the first.
    pub(crate) fn take(&mut self, key: &str) -> Option<Node> {
        let Node::Map(entries) = self else { return None };
        let mut found = None;
        entries.retain_mut(|(k, v)| {
            if k != key {
                return true;
            }
            if found.is_none() {
                found = Some(std::mem::replace(v, Node::Null));
            }
            false
        });
        found
    }

    /// The bytes SOPS hashes for a leaf (`sops.ToBytes`); `None` for what it skips.
    fn mac_bytes(&self) -> Option<Cow<'_, [u8]>> {
        Some(match self {
            Node::Str(s) | Node::Time(s) => Cow::Borrowed(s.as_bytes()),
            Node::Bytes(b) => Cow::Borrowed(b),
            Node::Int(i) => Cow::Owned(i.to_string().into_bytes()),
            Node::Float(f) => Cow::Owned(go_float_text(*f).into_bytes()),
            Node::Bool(true) => Cow::Borrowed(b"True"),
            Node::Bool(false) => Cow::Borrowed(b"False"),
            Node::Null | Node::Map(_) | Node::Seq(_) => return None,
        })
    }
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`: the shortest digits that read back, without
/// an exponent (which is what Rust's `Display` writes for finite floats).
pub(crate) fn go_float_text(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_owned()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf".to_owned() } else { "-Inf".to_owned() }
    } else {
        format!("{f}")
    }
}

/// Which leaves were encrypted: SOPS allows one rule per file, `_unencrypted` suffix when none
/// is set (`metadata.ToInternal`).
#[derive(Debug)]
pub(crate) enum Rule {
    UnencryptedSuffix(String),
    EncryptedSuffix(String),
    UnencryptedRegex(Regex),
    EncryptedRegex(Regex),
}

impl Rule {
    /// `Tree.shouldBeEncrypted` for a leaf under `path` (any key of the path counts).
    fn encrypts(&self, path: &[String]) -> bool {
        match self {
            Rule::UnencryptedSuffix(suffix) => !path.iter().any(|k| k.ends_with(suffix.as_str())),
            Rule::EncryptedSuffix(suffix) => path.iter().any(|k| k.ends_with(suffix.as_str())),
            Rule::UnencryptedRegex(regex) => !path.iter().any(|k| regex.is_match(k)),
            Rule::EncryptedRegex(regex) => path.iter().any(|k| regex.is_match(k)),
        }
    }
}

/// One decryption walk over a file's documents.
pub(crate) struct Walk<'a> {
    rule: &'a Rule,
    key: &'a DataKey,
    mac_only_encrypted: bool,
    hash: Sha512,
    /// The clear text of every decrypted string, to keep out of messages.
    pub(crate) cleartexts: Vec<String>,
}

/// The 32 bytes SOPS hashes first with `mac_only_encrypted`, so that such a MAC never equals
/// one over all values (`sops.MACOnlyEncryptedInitialization`).
const MAC_ONLY_ENCRYPTED_INIT: [u8; 32] = [
    0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b, 0x0b, 0x97, 0x5b,
    0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69,
];

impl<'a> Walk<'a> {
    pub(crate) fn new(rule: &'a Rule, key: &'a DataKey, mac_only_encrypted: bool) -> Walk<'a> {
        let mut hash = Sha512::new();
        if mac_only_encrypted {
            hash.update(MAC_ONLY_ENCRYPTED_INIT);
        }
        Walk { rule, key, mac_only_encrypted, hash, cleartexts: Vec::new() }
    }

    /// Decrypts a document in place (its root is a map, as SOPS requires).
    pub(crate) fn document(&mut self, root: &mut Node) -> Result<(), SopsError> {
        let Node::Map(entries) = root else { return Ok(()) };
        let mut path = Vec::new();
        self.map(entries, &mut path)
    }

    fn map(&mut self, entries: &mut [(String, Node)], path: &mut Vec<String>) -> Result<(), SopsError> {
        for (key, value) in entries {
            path.push(key.clone());
            let walked = deeper(|| self.node(value, path));
            path.pop();
            walked?;
        }
        Ok(())
    }

    fn node(&mut self, node: &mut Node, path: &mut Vec<String>) -> Result<(), SopsError> {
        match node {
            Node::Map(entries) => self.map(entries, path),
            Node::Seq(items) => {
                for item in items {
                    deeper(|| self.node(item, path))?;
                }
                Ok(())
            }
            // SOPS neither encrypts nor hashes a null.
            Node::Null => Ok(()),
            leaf => self.leaf(leaf, path),
        }
    }

    fn leaf(&mut self, leaf: &mut Node, path: &[String]) -> Result<(), SopsError> {
        let encrypted = self.rule.encrypts(path);
        if encrypted {
            let Node::Str(value) = &*leaf else {
                return Err(SopsError::Value {
                    path: KeyPath(path.to_vec()),
                    reason: "it is not encrypted although the file's rules say it should be".into(),
                });
            };
            let aad = format!("{}:", path.join(":"));
            *leaf = cipher::decrypt(value, self.key, &aad).map_err(|error| match error {
                ValueError::Tampered => SopsError::ValueTampered { path: KeyPath(path.to_vec()) },
                ValueError::Malformed(reason) => SopsError::Value { path: KeyPath(path.to_vec()), reason },
            })?;
            if let Node::Str(clear) = &*leaf {
                self.cleartexts.push(clear.clone());
            }
        }
        if (!self.mac_only_encrypted || encrypted)
            && let Some(bytes) = leaf.mac_bytes()
        {
            self.hash.update(&bytes);
        }
        Ok(())
    }

    /// The MAC of the values walked, as SOPS records it (upper-case hex of SHA-512).
    pub(crate) fn mac(self) -> String {
        self.hash.finalize().iter().map(|b| format!("{b:02X}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn rules_look_at_every_key_of_the_path() {
        let default = Rule::UnencryptedSuffix("_unencrypted".into());
        assert!(default.encrypts(&path(&["data", "password"])));
        assert!(!default.encrypts(&path(&["note_unencrypted", "x"])));
        let regex = Rule::EncryptedRegex(Regex::new("^(data|stringData)$").unwrap());
        assert!(regex.encrypts(&path(&["stringData", "password"])));
        assert!(!regex.encrypts(&path(&["metadata", "name"])));
        // Unanchored, as Go's regexp.Match.
        let unencrypted = Rule::UnencryptedRegex(Regex::new("meta").unwrap());
        assert!(!unencrypted.encrypts(&path(&["metadata", "name"])));
        assert!(Rule::EncryptedSuffix("_secret".into()).encrypts(&path(&["db_secret"])));
    }

    #[test]
    fn mac_bytes_as_sops_to_bytes() {
        assert_eq!(Node::Int(-3).mac_bytes().unwrap().as_ref(), b"-3");
        assert_eq!(Node::Float(1000.0).mac_bytes().unwrap().as_ref(), b"1000");
        assert_eq!(Node::Float(0.1).mac_bytes().unwrap().as_ref(), b"0.1");
        assert_eq!(Node::Float(1e21).mac_bytes().unwrap().as_ref(), b"1000000000000000000000");
        assert_eq!(Node::Bool(true).mac_bytes().unwrap().as_ref(), b"True");
        assert_eq!(Node::Null.mac_bytes(), None);
        assert_eq!(go_float_text(f64::NEG_INFINITY), "-Inf");
    }

    #[test]
    fn take_removes_every_entry_of_the_key() {
        let mut map =
            Node::Map(vec![("sops".into(), Node::Int(1)), ("a".into(), Node::Null), ("sops".into(), Node::Int(2))]);
        assert_eq!(map.take("sops"), Some(Node::Int(1)));
        assert_eq!(map, Node::Map(vec![("a".into(), Node::Null)]));
    }
}
