//! Hex text of digests, one form for every place that names something by its hash.

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

#[cfg(test)]
mod tests {
    #[test]
    fn hex_and_short_digest() {
        assert_eq!(super::hex(&[0, 15, 255]), "000fff");
        assert_eq!(super::short_sha256(""), "e3b0c44298fc1c14");
    }
}
