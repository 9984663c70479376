//! Hex text of digests, one form for every place that names something by its hash, and the one
//! HMAC-SHA256 (webhook signatures, hashed Secret annotations).

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The first 8 bytes of `text`'s SHA-256 as 16 hex digits: short enough for a status field,
/// long enough that two different inputs do not meet by chance.
pub fn short_sha256(text: &str) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(text.as_bytes())[..8])
}

/// SHA-256 over several values, each framed by its length (an absent one by a mark of its
/// own), so that no two different sequences of values hash the same bytes: what names a
/// source by its URL, ref and credentials, or an ApplySet's inputs by their paths and ids.
#[derive(Default)]
pub struct Framed(openssl::sha::Sha256);

impl Framed {
    pub fn value(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.update(&(bytes.len() as u64).to_be_bytes());
        self.0.update(bytes);
        self
    }

    pub fn optional(&mut self, bytes: Option<&[u8]>) -> &mut Self {
        match bytes {
            Some(bytes) => self.value(&[1]).value(bytes),
            None => self.value(&[0]),
        }
    }

    pub fn finish(self) -> [u8; 32] {
        self.0.finish()
    }
}

/// HMAC-SHA256 of `message` under `key`; `None` when openssl refuses the key (an empty one).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> Option<Vec<u8>> {
    let key = openssl::pkey::PKey::hmac(key).ok()?;
    let mut signer = openssl::sign::Signer::new(openssl::hash::MessageDigest::sha256(), &key).ok()?;
    signer.update(message).ok()?;
    signer.sign_to_vec().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_and_short_digest() {
        assert_eq!(super::hex(&[0, 15, 255]), "000fff");
        assert_eq!(super::short_sha256(""), "e3b0c44298fc1c14");
    }

    #[test]
    fn framed_values_cannot_be_shifted_between_fields() {
        let digest = |values: &[Option<&[u8]>]| {
            let mut framed = super::Framed::default();
            for value in values {
                framed.optional(*value);
            }
            framed.finish()
        };
        assert_ne!(digest(&[Some(b"ab"), Some(b"c")]), digest(&[Some(b"a"), Some(b"bc")]));
        assert_ne!(digest(&[None, Some(b"")]), digest(&[Some(b""), None]));
        assert_eq!(digest(&[Some(b"x"), None]), digest(&[Some(b"x"), None]));
    }
}
