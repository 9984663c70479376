//! age identities, and the unwrapping of a file's data key from its age recipient stanzas
//! (with SOPS's Shamir sharing when the file has several key groups).

use std::fmt;
use std::str::FromStr;

use zeroize::Zeroizing;

use super::cipher::DataKey;
use super::error::{KeyError, KeyKinds, SopsError};
use super::metadata::{AgeStanza, KeyGroup, Metadata};

use crate::causes::Chain;

/// The age X25519 identities decryption may use. Its `Debug` shows the public keys only.
#[derive(Clone, Default)]
pub struct Keyring {
    identities: Vec<age::x25519::Identity>,
    /// The public key of each identity, in the same order.
    recipients: Vec<String>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring").field("recipients", &self.recipients).finish()
    }
}

impl Keyring {
    pub fn new() -> Keyring {
        Keyring::default()
    }

    /// Adds the identities of an age identity file (`age-keygen`'s output, a Secret's
    /// `*.agekey` value): `AGE-SECRET-KEY-1…` lines, `#` comments and blank lines. `origin`
    /// names the text in errors (a line is named by its number, never quoted).
    pub fn add_identity_file(&mut self, origin: &str, text: &str) -> Result<usize, KeyError> {
        let mut added = 0;
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line_number = number + 1;
            if line.starts_with("AGE-PLUGIN-") {
                return Err(KeyError::Plugin { origin: origin.to_owned(), line: line_number });
            }
            // bech32 is case-insensitive; age-keygen writes upper case.
            let identity = age::x25519::Identity::from_str(line).map_err(|reason| KeyError::NotAnIdentity {
                origin: origin.to_owned(),
                line: line_number,
                reason,
            })?;
            let public = identity.to_public().to_string();
            if !self.recipients.contains(&public) {
                self.recipients.push(public);
                self.identities.push(identity);
            }
            added += 1;
        }
        if added == 0 {
            return Err(KeyError::Empty { origin: origin.to_owned() });
        }
        Ok(added)
    }

    pub fn is_empty(&self) -> bool {
        self.identities.is_empty()
    }

    /// The public keys (`age1…`) of the identities held.
    pub fn recipients(&self) -> &[String] {
        &self.recipients
    }

    /// A 32-byte key derived from the identities (SHA-256 under a label of its own), for
    /// hashing values that only holders of these identities may check: the CLI's hashed
    /// last-applied annotations of Secrets it decrypted.
    pub fn annotation_key(&self) -> Zeroizing<[u8; 32]> {
        use age::secrecy::ExposeSecret;
        use sha2::Digest;
        let mut order: Vec<usize> = (0..self.identities.len()).collect();
        order.sort_by(|a, b| self.recipients[*a].cmp(&self.recipients[*b]));
        let mut hash = sha2::Sha256::new();
        hash.update(b"applyset.dev/sops-annotation-key");
        for index in order {
            hash.update([0u8]);
            hash.update(self.identities[index].to_string().expose_secret().as_bytes());
        }
        Zeroizing::new(hash.finalize().into())
    }

    /// The file's data key, from its age stanzas.
    pub(crate) fn data_key(&self, metadata: &Metadata) -> Result<DataKey, SopsError> {
        if self.identities.is_empty() {
            let recipients = metadata.recipients();
            if recipients.is_empty() {
                return Err(SopsError::UnsupportedKeys { kinds: other_kinds(&metadata.groups) });
            }
            return Err(SopsError::NoIdentities { recipients });
        }
        if metadata.groups.len() == 1 {
            let share = self.group_share(&metadata.groups[0], metadata)?;
            return into_key(share, &metadata.groups[0]);
        }
        let threshold = metadata.shamir_threshold.max(1);
        let mut shares = Vec::new();
        let mut reasons = Vec::new();
        for (index, group) in metadata.groups.iter().enumerate() {
            match self.group_share(group, metadata) {
                Ok(share) => shares.push(share),
                Err(error) => reasons.push(format!("key group {}: {error}", index + 1, error = Chain(&error))),
            }
        }
        if shares.len() < threshold {
            return Err(SopsError::Shamir {
                groups: metadata.groups.len(),
                threshold,
                usable: shares.len(),
                reasons: reasons.join("; "),
            });
        }
        let combined = super::shamir::combine(&shares).map_err(|reason| SopsError::Shamir {
            groups: metadata.groups.len(),
            threshold,
            usable: shares.len(),
            reasons: reason.to_owned(),
        })?;
        into_key(combined, &metadata.groups[0])
    }

    /// What the group's age stanzas wrap (the data key, or a Shamir share of it): the first
    /// stanza one of the identities opens.
    fn group_share(&self, group: &KeyGroup, metadata: &Metadata) -> Result<Zeroizing<Vec<u8>>, SopsError> {
        let identities = || self.identities.iter().map(|i| i as &dyn age::Identity);
        let mut damaged = None;
        for stanza in &group.age {
            match unwrap(stanza, identities()) {
                Ok(share) => return Ok(share),
                Err(age::DecryptError::NoMatchingKeys) => {}
                // One of ours by its recipient, yet it does not open: the block was edited.
                Err(source) if self.recipients.contains(&stanza.recipient) => {
                    damaged.get_or_insert(SopsError::DataKey { recipient: stanza.recipient.clone(), source });
                }
                Err(_) => {}
            }
        }
        if let Some(error) = damaged {
            return Err(error);
        }
        if group.age.is_empty() {
            return Err(SopsError::UnsupportedKeys { kinds: group.others.clone() });
        }
        Err(SopsError::NoMatchingKey {
            recipients: metadata.recipients(),
            others: other_kinds(&metadata.groups),
            held: self.recipients.clone(),
        })
    }
}

/// The plaintext of a stanza's armored age file.
fn unwrap<'a>(
    stanza: &AgeStanza,
    identities: impl Iterator<Item = &'a dyn age::Identity>,
) -> Result<Zeroizing<Vec<u8>>, age::DecryptError> {
    use std::io::Read;
    let decryptor = age::Decryptor::new_buffered(age::armor::ArmoredReader::new(stanza.enc.as_bytes()))?;
    let mut reader = decryptor.decrypt(identities)?;
    let mut out = Zeroizing::new(Vec::new());
    reader.read_to_end(&mut out)?;
    Ok(out)
}

fn into_key(bytes: Zeroizing<Vec<u8>>, group: &KeyGroup) -> Result<DataKey, SopsError> {
    let key: [u8; 32] = bytes.as_slice().try_into().map_err(|_| SopsError::DataKeyLength {
        recipient: group.age.first().map(|s| s.recipient.clone()).unwrap_or_default(),
        len: bytes.len(),
    })?;
    Ok(DataKey::new(key))
}

/// The non-age key types of all groups, each once.
fn other_kinds(groups: &[KeyGroup]) -> KeyKinds {
    let mut kinds = Vec::new();
    for kind in groups.iter().flat_map(|g| g.others.0.iter()) {
        if !kinds.contains(kind) {
            kinds.push(*kind);
        }
    }
    KeyKinds(kinds)
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDENTITY: &str = "AGE-SECRET-KEY-15PENKN45KCM8Z5CQLGCKGLRN9F9KCRW6NN04HCAW0R992ZKNH8VQ8LCWMW";
    const PUBLIC: &str = "age1fnk8u72n9qt55zqt3ulccpz3na2ppl8sak7dlwfhknynjv4sk46q5kwtmw";

    #[test]
    fn identity_files_as_age_keygen_writes_them() {
        let mut keyring = Keyring::new();
        let file = format!("# created: 2026-11-27T05:34:38Z\n# public key: {PUBLIC}\n{IDENTITY}\n\n");
        assert_eq!(keyring.add_identity_file("key.txt", &file), Ok(1));
        assert_eq!(keyring.recipients(), [PUBLIC.to_owned()]);
        // The same key again is kept once.
        assert_eq!(keyring.add_identity_file("again", IDENTITY), Ok(1));
        assert_eq!(keyring.recipients().len(), 1);
        assert!(!format!("{keyring:?}").contains("SECRET"), "Debug shows public keys only");
        // The derived key depends on the identities, not on their order.
        let other = include_str!("testdata/other-key.txt");
        let mut both = keyring.clone();
        both.add_identity_file("other", other).unwrap();
        let mut reversed = Keyring::new();
        reversed.add_identity_file("other", other).unwrap();
        reversed.add_identity_file("key", IDENTITY).unwrap();
        assert_eq!(*both.annotation_key(), *reversed.annotation_key());
        assert_ne!(*both.annotation_key(), *keyring.annotation_key());
    }

    #[test]
    fn bad_identity_files_are_refused_by_line_without_quoting_it() {
        let mut keyring = Keyring::new();
        let secretish = "AGE-SECRET-KEY-1NOTAVALIDKEY";
        let error =
            keyring.add_identity_file("Secret ns/keys key x.agekey", &format!("# c\n{secretish}\n")).unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with("Secret ns/keys key x.agekey: line 2 is not an age X25519 identity"), "{text}");
        assert!(!text.contains(secretish), "{text}");
        assert!(matches!(
            keyring.add_identity_file("f", "AGE-PLUGIN-YUBIKEY-1XYZ\n"),
            Err(KeyError::Plugin { line: 1, .. })
        ));
        assert_eq!(keyring.add_identity_file("f", "# only comments\n"), Err(KeyError::Empty { origin: "f".into() }));
        assert!(keyring.is_empty());
    }
}
