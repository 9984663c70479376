//! Decryption checked against the real sops: every fixture in `testdata/` was encrypted by
//! sops 3.13.2 for test age keys (`testdata/make-fixtures`), and `*.sops-decrypt.*` is what
//! `sops decrypt` gave back.

use std::path::Path;

use proptest::prelude::*;

use super::*;

const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/sops/testdata");

fn read(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(TESTDATA).join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn keyring(files: &[&str]) -> Keyring {
    let mut keys = Keyring::new();
    for file in files {
        keys.add_identity_file(file, &String::from_utf8(read(file)).unwrap()).unwrap();
    }
    keys
}

fn decrypt_bytes(bytes: &[u8], format: Format, keys: &Keyring) -> Result<Decrypted, SopsError> {
    open(bytes, format)?.expect("a SOPS file").decrypt(keys)
}

fn decrypt(name: &str, keys: &Keyring) -> Result<Decrypted, SopsError> {
    decrypt_bytes(&read(name), Format::of_path(Path::new(name)), keys)
}

/// The clear documents of a decryption and of `sops decrypt`, each read back the same way.
fn same_as_sops(name: &str, keys: &Keyring) {
    let ours = decrypt(&format!("{name}.enc.yaml"), keys).unwrap_or_else(|e| panic!("{name}: {e}"));
    let reference = read(&format!("{name}.sops-decrypt.yaml"));
    assert_eq!(yaml::parse(&ours.text, 10_000).unwrap(), yaml::parse(&reference, 10_000).unwrap(), "{name}");
}

#[test]
fn yaml_fixtures_decrypt_as_sops_does_under_each_rule() {
    let keys = keyring(&["key.txt"]);
    for name in ["all", "regex", "unencrypted-regex", "suffix", "plain-suffix", "mac-only", "multi", "two-recipients"] {
        same_as_sops(name, &keys);
    }
    let clear = decrypt("all.enc.yaml", &keys).unwrap();
    let text = String::from_utf8(clear.text).unwrap();
    assert!(!text.contains("sops:") && !text.contains("ENC["), "{text}");
    assert!(text.contains("password: hunter2-very-secret"), "{text}");
    assert!(clear.cleartexts.iter().any(|v| v == "hunter2-very-secret"));
}

#[test]
fn rules_leave_the_values_they_exclude_in_clear() {
    let encrypted = String::from_utf8(read("regex.enc.yaml")).unwrap();
    assert!(encrypted.contains("name: db") && !encrypted.contains("hunter2"), "only data/stringData encrypted");
    let encrypted = String::from_utf8(read("suffix.enc.yaml")).unwrap();
    assert!(encrypted.contains("user: admin") && !encrypted.contains("abc123"));
    let encrypted = String::from_utf8(read("plain-suffix.enc.yaml")).unwrap();
    assert!(encrypted.contains("url_plain: https://example.com"));
}

#[test]
fn json_dotenv_ini_and_binary_decrypt_as_sops_does() {
    let keys = keyring(&["key.txt"]);
    let json = decrypt("app.enc.json", &keys).unwrap();
    assert_eq!(json::parse(&json.text).unwrap(), json::parse(&read("app.sops-decrypt.json")).unwrap());
    let env = decrypt("app.enc.env", &keys).unwrap();
    assert_eq!(dotenv::parse(&env.text).unwrap(), dotenv::parse(&read("app.sops-decrypt.env")).unwrap());
    assert_eq!(
        String::from_utf8(env.text).unwrap(),
        "DB_USER=admin\nDB_PASSWORD=s3cr3t-pass\nMULTI=line1\\nline2\nEMPTY=\n"
    );
    let ini = decrypt("app.enc.ini", &keys).unwrap();
    assert_eq!(ini::parse(&ini.text).unwrap(), ini::parse(&read("app.sops-decrypt.ini")).unwrap());
    let blob = decrypt("blob.enc.bin", &keys).unwrap();
    assert_eq!(blob.text, read("blob.sops-decrypt.bin"), "the bytes, not UTF-8");
    assert_eq!(blob.text, read("blob.clear.bin"));
}

#[test]
fn shamir_key_groups_need_the_threshold_of_groups() {
    same_as_sops("shamir", &keyring(&["key.txt", "other-key.txt"]));
    let error = decrypt("shamir.enc.yaml", &keyring(&["key.txt"])).unwrap_err();
    assert!(matches!(error, SopsError::Shamir { groups: 2, threshold: 2, usable: 1, .. }), "{error}");
}

#[test]
fn a_key_that_is_not_a_recipient_is_refused_naming_both() {
    let ours = keyring(&["key.txt"]);
    let theirs = keyring(&["other-key.txt"]);
    let error = decrypt("other-only.enc.yaml", &ours).unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, SopsError::NoMatchingKey { .. }), "{text}");
    assert!(text.contains(&theirs.recipients()[0]) && text.contains(&ours.recipients()[0]), "{text}");
    let error = decrypt("all.enc.yaml", &Keyring::new()).unwrap_err();
    assert!(matches!(error, SopsError::NoIdentities { .. }), "{error}");
    assert!(error.to_string().contains(&ours.recipients()[0]));
}

/// `all.enc.yaml` with `from` replaced by `to` (once).
fn edited(name: &str, from: &str, to: &str) -> Vec<u8> {
    let text = String::from_utf8(read(name)).unwrap();
    assert!(text.contains(from), "{name} holds {from:?}");
    text.replacen(from, to, 1).into_bytes()
}

#[test]
fn tampering_is_refused() {
    let keys = keyring(&["key.txt"]);
    let try_it = |bytes: Vec<u8>| decrypt_bytes(&bytes, Format::Yaml, &keys).map(|_| ()).unwrap_err();
    // A clear value under encrypted_regex changed: only the MAC sees it.
    assert!(matches!(try_it(edited("regex.enc.yaml", "name: db", "name: dc")), SopsError::MacMismatch));
    // A clear value removed.
    assert!(matches!(try_it(edited("regex.enc.yaml", "        app: db\n", "")), SopsError::MacMismatch));
    // lastmodified changed: the MAC no longer opens.
    let text = String::from_utf8(read("all.enc.yaml")).unwrap();
    let stamp = text.split("lastmodified: \"").nth(1).unwrap()[..20].to_owned();
    let moved = stamp.replace('Z', "+00:01");
    assert!(matches!(try_it(edited("all.enc.yaml", &stamp, &moved)), SopsError::MacMismatch));
    // A value moved under another key fails authentication (its path is its additional data).
    let secret = text.lines().find(|l| l.trim_start().starts_with("password: ENC[")).unwrap();
    let port = text.lines().find(|l| l.trim_start().starts_with("port: ENC[")).unwrap();
    let swapped = text.replacen(port, &secret.replacen("password", "port", 1), 1);
    let error = decrypt_bytes(swapped.as_bytes(), Format::Yaml, &keys).unwrap_err();
    assert!(matches!(&error, SopsError::ValueTampered { path } if path.to_string() == "stringData.port"), "{error}");
    // A value not in SOPS's form where the rule says encrypted.
    let error = try_it(edited("all.enc.yaml", "replicas: ENC[", "replicas: 4\nx: ENC["));
    assert!(matches!(error, SopsError::Value { .. }), "{error}");
}

#[test]
fn an_enc_block_that_does_not_open_names_its_recipient() {
    let keys = keyring(&["key.txt"]);
    let text = String::from_utf8(read("all.enc.yaml")).unwrap();
    let line = text.lines().find(|l| l.trim_start().starts_with("YWdl")).unwrap();
    let damaged = text.replacen(line, &line.replacen("YWdl", "YWdm", 1), 1);
    let error = decrypt_bytes(damaged.as_bytes(), Format::Yaml, &keys).unwrap_err();
    assert!(matches!(&error, SopsError::DataKey { recipient, .. } if *recipient == keys.recipients()[0]), "{error}");
}

#[test]
fn other_key_types_are_refused_by_name() {
    let text = String::from_utf8(read("all.enc.yaml")).unwrap();
    let start = text.find("    age:\n").unwrap();
    let end = text.find("    lastmodified:").unwrap();
    let pgp = "    pgp:\n        - created_at: \"2026-11-27T05:34:38Z\"\n          enc: x\n          fp: ABCDEF\n    hc_vault:\n        - vault_address: https://vault\n          engine_path: sops\n          key_name: k\n          created_at: \"2026-11-27T05:34:38Z\"\n          enc: x\n";
    let replaced = format!("{}{pgp}{}", &text[..start], &text[end..]);
    let error = decrypt_bytes(replaced.as_bytes(), Format::Yaml, &keyring(&["key.txt"])).unwrap_err();
    assert_eq!(
        error.to_string(),
        "its data key is encrypted only for HashiCorp Vault, PGP, which applyset cannot decrypt (only age keys are supported)"
    );
    let missing = format!("{}{}", &text[..start], &text[end..]);
    let error = decrypt_bytes(missing.as_bytes(), Format::Yaml, &keyring(&["key.txt"])).unwrap_err();
    assert_eq!(error.to_string(), "malformed sops metadata: No keys found in file");
}

#[test]
fn files_without_sops_metadata_are_not_envelopes() {
    for (text, format) in [
        ("apiVersion: v1\nkind: ConfigMap\n", Format::Yaml),
        ("sops: a string\n", Format::Yaml),
        ("sops:\n  unrelated: x\n", Format::Yaml),
        ("a: [unclosed\nsops:\n", Format::Yaml),
        ("{\"sops\": 1}", Format::Json),
        ("SOPS_X=1\nsops_other=2\n", Format::Dotenv),
        ("[sops]\nx = 1\n", Format::Ini),
        ("sops: {mac: x}", Format::Binary),
    ] {
        assert!(open(text.as_bytes(), format).unwrap().is_none(), "{text}");
    }
    assert!(open(&read("all.enc.yaml"), Format::Yaml).unwrap().is_some());
    assert!(open(&read("app.enc.env"), Format::Dotenv).unwrap().is_some());
    let recipients = open(&read("two-recipients.enc.yaml"), Format::Yaml).unwrap().unwrap().recipients();
    assert_eq!(recipients.len(), 2);
}

#[test]
fn no_error_quotes_a_clear_or_encrypted_value() {
    let ours = keyring(&["key.txt"]);
    let text = String::from_utf8(read("all.enc.yaml")).unwrap();
    let secret = text.lines().find(|l| l.trim_start().starts_with("password: ENC[")).unwrap();
    let port = text.lines().find(|l| l.trim_start().starts_with("port: ENC[")).unwrap();
    let swapped = text.replacen(port, &secret.replacen("password", "port", 1), 1);
    let cases = [
        decrypt("all.enc.yaml", &keyring(&["other-key.txt"])).unwrap_err(),
        decrypt_bytes(&edited("regex.enc.yaml", "name: db", "name: dc"), Format::Yaml, &ours).unwrap_err(),
        decrypt_bytes(swapped.as_bytes(), Format::Yaml, &ours).unwrap_err(),
    ];
    for error in cases {
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains("hunter2") && !shown.contains("ENC[") && !shown.contains("AGE-SECRET"), "{shown}");
    }
}

/// A fixture: its name, format, bytes, and the values it decrypts to.
type Decryptable = (String, Format, Vec<u8>, Vec<String>);

/// The fixtures of each format with their decrypted values (decrypted once).
fn fixture_decryptions() -> &'static [Decryptable] {
    static DONE: std::sync::OnceLock<Vec<Decryptable>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let keys = keyring(&["key.txt"]);
        ["all.enc.yaml", "regex.enc.yaml", "app.enc.json", "app.enc.env", "app.enc.ini"]
            .iter()
            .map(|name| {
                let format = Format::of_path(Path::new(name));
                let bytes = read(name);
                let clear = decrypt_bytes(&bytes, format, &keys).unwrap().cleartexts;
                (name.to_string(), format, bytes, clear)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Any change of one byte of an encrypted file either is refused or decrypts every
    /// encrypted value to what it was. (SOPS's MAC covers values, not key names: a key above
    /// clear or empty values may be renamed unnoticed, by sops as here, so the whole text is
    /// not compared.)
    #[test]
    fn a_changed_byte_never_yields_other_clear_values(which in 0usize..5, at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let (name, format, bytes, clear) = &fixture_decryptions()[which];
        let (format, mut bytes) = (*format, bytes.clone());
        let index = at.index(bytes.len());
        bytes[index] = byte;
        let keys = keyring(&["key.txt"]);
        if let Ok(Some(envelope)) = open(&bytes, format)
            && let Ok(decrypted) = envelope.decrypt(&keys)
        {
            prop_assert_eq!(&decrypted.cleartexts, clear, "{} at {}", name, index);
        }
    }

    /// Arbitrary text never panics a reader.
    #[test]
    fn arbitrary_text_is_read_or_refused(text in ".{0,200}", format in 0usize..5) {
        let format = [Format::Yaml, Format::Json, Format::Dotenv, Format::Ini, Format::Binary][format];
        let with_metadata = format!("{text}\nsops:\n  mac: x\n  lastmodified: y\n");
        for candidate in [text.as_bytes(), with_metadata.as_bytes()] {
            if let Ok(Some(envelope)) = open(candidate, format) {
                let _ = envelope.decrypt(&Keyring::new());
            }
        }
    }
}
