//! The SOPS reader on arbitrary bytes, in each of its five formats: metadata detection, the
//! YAML/JSON/dotenv/INI/binary stores, the metadata (age stanzas, key groups, rules, dates),
//! and decryption with the test key of `src/sops/testdata` (its encrypted fixtures are the
//! seeds, so mutations reach the stanza unwrapping, the value cipher and the MAC).
//!
//! Must never panic, overflow the stack or blow up memory (YAML nesting and aliases are
//! bounded). A mutated file is refused unless its MAC still matches (the fuzzer cannot forge
//! one), and whatever decrypts is clear text: read again, it carries no `sops` metadata.
//!
//! Run: `cd applyset/fuzz && cargo +nightly fuzz run sops_envelope seeds/sops_envelope -- -max_total_time=60`
#![no_main]

use std::sync::OnceLock;

use applyset::sops::{Format, Keyring, open};
use libfuzzer_sys::fuzz_target;

const FORMATS: [Format; 5] = [Format::Yaml, Format::Json, Format::Dotenv, Format::Ini, Format::Binary];

fn keyring() -> &'static Keyring {
    static KEYS: OnceLock<Keyring> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys = Keyring::new();
        keys.add_identity_file("key.txt", include_str!("../../src/sops/testdata/key.txt")).expect("the test key");
        keys
    })
}

// The first byte picks the format, so that each seed keeps its own.
fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else { return };
    let format = FORMATS[usize::from(selector) % FORMATS.len()];
    let Ok(Some(envelope)) = open(bytes, format) else { return };
    let _ = envelope.recipients();
    let Ok(decrypted) = envelope.decrypt(keyring()) else { return };
    // What a successful decryption gives is clear text: read again, it is not an envelope.
    if matches!(format, Format::Yaml | Format::Json) {
        assert!(
            !matches!(open(&decrypted.text, format), Ok(Some(_))),
            "decrypted text still carries sops metadata"
        );
    }
});
