//! Why a SOPS file could not be decrypted. No variant holds a value of the file, clear or
//! encrypted: a value is named by its key path (key names are in clear in a SOPS file), a key by
//! its public recipient.

use std::fmt;

/// Why a SOPS-encrypted document could not be decrypted. The caller names the file.
#[derive(Debug, thiserror::Error)]
pub enum SopsError {
    /// The text is not valid in its format.
    #[error("not valid {format}: {message}")]
    Syntax { format: &'static str, message: String },
    /// The `sops` metadata is missing a field or holds one SOPS would refuse.
    #[error("malformed sops metadata: {0}")]
    Metadata(String),
    /// A feature of the file that applyset does not decrypt.
    #[error("{0} is not supported")]
    Unsupported(&'static str),
    /// The data key is wrapped only for key types applyset cannot use.
    #[error("its data key is encrypted only for {kinds}, which applyset cannot decrypt (only age keys are supported)")]
    UnsupportedKeys { kinds: KeyKinds },
    /// No identity given is one of the file's age recipients.
    #[error(
        "no age identity given matches its recipients ({recipients}){also}; the identities given are for {held}",
        recipients = Listed(.recipients),
        also = also_kinds(.others),
        held = Listed(.held),
    )]
    NoMatchingKey { recipients: Vec<String>, others: KeyKinds, held: Vec<String> },
    /// No identity was given at all.
    #[error("it is encrypted with SOPS for {recipients}, and no age identity was given", recipients = Listed(.recipients))]
    NoIdentities { recipients: Vec<String> },
    /// An identity matches a recipient, but its stanza does not give the data key (the `enc`
    /// block was edited or damaged).
    #[error("the data key for age recipient {recipient} does not decrypt (its enc block was changed or damaged)")]
    DataKey {
        recipient: String,
        #[source]
        source: age::DecryptError,
    },
    /// The data key unwrapped is not a 32-byte AES-256 key.
    #[error("the data key for age recipient {recipient} is {len} bytes long, not 32")]
    DataKeyLength { recipient: String, len: usize },
    /// Not enough Shamir shares for the key groups' threshold.
    #[error(
        "its data key is split over {groups} key groups of which {threshold} are needed; only {usable} could be decrypted ({reasons})"
    )]
    Shamir { groups: usize, threshold: usize, usable: usize, reasons: String },
    /// An encrypted value fails AES-GCM authentication: changed after encryption, or
    /// encrypted under another data key.
    #[error("the value at {path} fails authentication: it was tampered with, or encrypted with another data key")]
    ValueTampered { path: KeyPath },
    /// An encrypted value is not in SOPS's `ENC[AES256_GCM,…]` form, or its clear text does
    /// not match its type.
    #[error("the value at {path} is malformed: {reason}")]
    Value { path: KeyPath, reason: String },
    /// The MAC of the decrypted values is not the one recorded: the file was changed after
    /// sops encrypted it.
    #[error("MAC mismatch: the file was changed after sops encrypted it (tampered), or it was edited without sops")]
    MacMismatch,
    /// A decrypted value cannot be written in the file's format (bytes that are not UTF-8).
    #[error("the value at {path} is not UTF-8 text and cannot be written as {format}")]
    NotText { path: KeyPath, format: &'static str },
}

/// The path of a value: its keys from the root, joined with dots (list items share their
/// list's path, as in SOPS's additional data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPath(pub Vec<String>);

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("the top level");
        }
        f.write_str(&self.0.join("."))
    }
}

/// The key types of a file that applyset cannot use, in the order SOPS lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyKinds(pub Vec<&'static str>);

impl fmt::Display for KeyKinds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(", "))
    }
}

fn also_kinds(others: &KeyKinds) -> String {
    if others.0.is_empty() { String::new() } else { format!(" and it has {others} keys, which are not supported") }
}

/// A list of keys for a message, `none` when empty.
struct Listed<'a>(&'a [String]);

impl fmt::Display for Listed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() { f.write_str("none") } else { f.write_str(&self.0.join(", ")) }
    }
}

/// Why an age identity file (or a Secret's `*.agekey` entry) could not be read. The line is
/// named by its number, never quoted: it may be a secret key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("{origin}: line {line} is not an age X25519 identity (AGE-SECRET-KEY-1…): {reason}")]
    NotAnIdentity { origin: String, line: usize, reason: &'static str },
    #[error(
        "{origin}: line {line} is an age plugin identity (AGE-PLUGIN-…); only X25519 identities (AGE-SECRET-KEY-1…) are supported"
    )]
    Plugin { origin: String, line: usize },
    #[error("{origin}: holds no age identity (AGE-SECRET-KEY-1…)")]
    Empty { origin: String },
}
