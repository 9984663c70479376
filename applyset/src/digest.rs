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
}
