//! SOPS's value cipher (`aes/cipher.go`): `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]` is
//! AES-256-GCM under the file's data key, with a 32-byte IV and the value's key path as
//! additional data, and the clear text's type recorded beside it.

use aes_gcm::aead::consts::{U12, U32};
use aes_gcm::aead::generic_array::GenericArray;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::aes::Aes256;
use aes_gcm::{AesGcm, Nonce};
use base64::Engine as _;
use zeroize::Zeroizing;

use super::tree::Node;

use crate::causes::Chain;

/// The file's data key (AES-256), wiped when dropped.
pub(crate) struct DataKey(Zeroizing<[u8; 32]>);

impl DataKey {
    pub(crate) fn new(bytes: [u8; 32]) -> DataKey {
        DataKey(Zeroizing::new(bytes))
    }
}

/// The prefix SOPS writes before each encrypted value.
pub(crate) const PREFIX: &str = "ENC[AES256_GCM,data:";

/// Why one value does not decrypt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ValueError {
    /// Not SOPS's form (a reason, without the value).
    Malformed(String),
    /// AES-GCM authentication failed.
    Tampered,
}

/// The parts of an encrypted value.
struct Encrypted<'a> {
    data: Vec<u8>,
    iv: Vec<u8>,
    tag: Vec<u8>,
    kind: &'a str,
}

/// Splits `ENC[AES256_GCM,data:D,iv:I,tag:T,type:Y]` as SOPS's greedy regular expression does
/// (`^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]`: each part runs to the last
/// delimiter that still lets the rest match).
fn parse(value: &str) -> Result<Encrypted<'_>, ValueError> {
    let malformed = |what: &str| ValueError::Malformed(what.to_owned());
    let rest = value.strip_prefix(PREFIX).ok_or_else(|| malformed("it is not an ENC[AES256_GCM,…] value"))?;
    let close = rest.rfind(']').ok_or_else(|| malformed("it does not end with ]"))?;
    let rest = &rest[..close];
    let (rest, kind) = rest.rsplit_once(",type:").ok_or_else(|| malformed("it has no type"))?;
    let (rest, tag) = rest.rsplit_once(",tag:").ok_or_else(|| malformed("it has no tag"))?;
    let (data, iv) = rest.rsplit_once(",iv:").ok_or_else(|| malformed("it has no iv"))?;
    if [data, iv, tag, kind].iter().any(|part| part.is_empty()) {
        return Err(malformed("a part of it is empty"));
    }
    let decode = |part: &str, name: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(part)
            .map_err(|e| ValueError::Malformed(format!("its {name} is not base64: {e}", e = Chain(&e))))
    };
    Ok(Encrypted { data: decode(data, "data")?, iv: decode(iv, "iv")?, tag: decode(tag, "tag")?, kind })
}

/// The clear bytes of `value`, authenticated with `aad`.
fn open(encrypted: &Encrypted<'_>, key: &DataKey, aad: &str) -> Result<Vec<u8>, ValueError> {
    if encrypted.tag.len() != 16 {
        return Err(ValueError::Malformed(format!("its tag is {} bytes, not 16", encrypted.tag.len())));
    }
    let mut sealed = Vec::with_capacity(encrypted.data.len() + 16);
    sealed.extend_from_slice(&encrypted.data);
    sealed.extend_from_slice(&encrypted.tag);
    let payload = Payload { msg: &sealed, aad: aad.as_bytes() };
    let key = GenericArray::from_slice(&key.0[..]);
    // SOPS writes 32-byte IVs (Go's NewGCMWithNonceSize); 12 bytes is GCM's standard size.
    let opened = match encrypted.iv.len() {
        32 => AesGcm::<Aes256, U32>::new(key).decrypt(Nonce::<U32>::from_slice(&encrypted.iv), payload),
        12 => AesGcm::<Aes256, U12>::new(key).decrypt(Nonce::<U12>::from_slice(&encrypted.iv), payload),
        other => return Err(ValueError::Malformed(format!("its iv is {other} bytes, not 32"))),
    };
    opened.map_err(|_| ValueError::Tampered)
}

/// Decrypts one value under the key path `aad` (`a:b:` for `a.b`) into a node of its
/// recorded type. An empty string is an empty value (SOPS leaves those unencrypted).
pub(crate) fn decrypt(value: &str, key: &DataKey, aad: &str) -> Result<Node, ValueError> {
    if value.is_empty() {
        return Ok(Node::Str(String::new()));
    }
    let encrypted = parse(value)?;
    let clear = open(&encrypted, key, aad)?;
    typed(encrypted.kind, clear)
}

/// The clear text as its recorded type (`aes.Cipher.Decrypt`'s switch).
fn typed(kind: &str, clear: Vec<u8>) -> Result<Node, ValueError> {
    let text = |clear: Vec<u8>| {
        String::from_utf8(clear).map_err(|_| ValueError::Malformed(format!("its {kind} clear text is not UTF-8")))
    };
    let mismatch = || ValueError::Malformed(format!("its clear text is not of type {kind}"));
    Ok(match kind {
        "str" => match String::from_utf8(clear) {
            Ok(s) => Node::Str(s),
            // Go strings are bytes: a binary file's content need not be UTF-8.
            Err(e) => Node::Bytes(e.into_bytes()),
        },
        "bytes" => Node::Bytes(clear),
        "int" => Node::Int(go_atoi(&text(clear)?).ok_or_else(mismatch)?),
        "float" => Node::Float(text(clear)?.parse::<f64>().map_err(|_| mismatch())?),
        "bool" => Node::Bool(go_parse_bool(&text(clear)?).ok_or_else(mismatch)?),
        "time" => {
            let text = text(clear)?;
            super::time::rfc3339(&text).ok_or_else(mismatch)?;
            Node::Time(text)
        }
        // Comments are not part of the tree applyset reads (they carry no value and no MAC).
        "comment" => Node::Str(text(clear)?),
        other => return Err(ValueError::Malformed(format!("its type {other:?} is unknown"))),
    })
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits, within 64 bits.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Go's `strconv.ParseBool`.
pub(crate) fn go_parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use aes_gcm::aead::AeadInPlace;

    use super::*;

    /// Encrypts as SOPS does (for tests: a fixed IV).
    pub(crate) fn seal(clear: &[u8], kind: &str, key: &DataKey, aad: &str) -> String {
        let iv = [7u8; 32];
        let cipher = AesGcm::<Aes256, U32>::new(GenericArray::from_slice(&key.0[..]));
        let mut buffer = clear.to_vec();
        let tag = cipher.encrypt_in_place_detached(Nonce::<U32>::from_slice(&iv), aad.as_bytes(), &mut buffer).unwrap();
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        format!("{PREFIX}{},iv:{},tag:{},type:{kind}]", b64(&buffer), b64(&iv), b64(&tag))
    }

    #[test]
    fn values_decrypt_to_their_recorded_types() {
        let key = DataKey::new([3; 32]);
        let cases = [
            ("str", "hunter2", Node::Str("hunter2".into())),
            ("int", "-42", Node::Int(-42)),
            ("float", "1.5", Node::Float(1.5)),
            ("bool", "True", Node::Bool(true)),
            ("bool", "False", Node::Bool(false)),
            ("time", "2024-01-02T00:00:00Z", Node::Time("2024-01-02T00:00:00Z".into())),
            ("bytes", "\u{0}\u{1}", Node::Bytes(vec![0, 1])),
        ];
        for (kind, clear, expected) in cases {
            let sealed = seal(clear.as_bytes(), kind, &key, "a:b:");
            assert_eq!(decrypt(&sealed, &key, "a:b:"), Ok(expected), "{kind}");
        }
        assert_eq!(decrypt("", &key, "a:"), Ok(Node::Str(String::new())));
    }

    #[test]
    fn another_path_or_key_or_a_changed_byte_fails_authentication() {
        let key = DataKey::new([3; 32]);
        let sealed = seal(b"hunter2", "str", &key, "a:b:");
        assert_eq!(decrypt(&sealed, &key, "a:c:"), Err(ValueError::Tampered));
        assert_eq!(decrypt(&sealed, &DataKey::new([4; 32]), "a:b:"), Err(ValueError::Tampered));
        let flipped = sealed.replacen("data:", "data:A", 1);
        assert!(decrypt(&flipped, &key, "a:b:").is_err());
    }

    #[test]
    fn malformed_values_are_refused_without_quoting_them() {
        let key = DataKey::new([3; 32]);
        for bad in
            ["plain", "ENC[AES256_GCM,data:AAAA,iv:AAAA,tag:AAAA]", "ENC[AES256_GCM,data:!!,iv:AA==,tag:AA==,type:str]"]
        {
            match decrypt(bad, &key, "a:") {
                Err(ValueError::Malformed(reason)) => assert!(!reason.contains(bad), "{reason}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        let sealed = seal(b"x", "int", &key, "a:");
        assert_eq!(
            decrypt(&sealed, &key, "a:"),
            Err(ValueError::Malformed("its clear text is not of type int".into()))
        );
        let sealed = seal(b"x", "color", &key, "a:");
        assert!(matches!(decrypt(&sealed, &key, "a:"), Err(ValueError::Malformed(_))));
    }

    #[test]
    fn go_number_and_bool_parsing() {
        assert_eq!(go_atoi("+7"), Some(7));
        assert_eq!(go_atoi("1_000"), None);
        assert_eq!(go_atoi(""), None);
        assert_eq!(go_parse_bool("T"), Some(true));
        assert_eq!(go_parse_bool("yes"), None);
    }
}
