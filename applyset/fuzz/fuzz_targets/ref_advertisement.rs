//! The ref advertisement reader (the body of a smart-HTTP `info/refs` answer, read from an
//! untrusted server before libgit2 connects) on arbitrary bytes.
//!
//! Must never panic or read past its input. Whatever it accepts is well formed: every ref name
//! non-empty without NUL, space or newline; and written back as pkt-lines it reads the same
//! (refs, order and HEAD's branch).
//!
//! Run: `cd applyset/fuzz && cargo +nightly fuzz run ref_advertisement seeds/ref_advertisement -- -max_total_time=60`
#![no_main]

use applyset::source::read_ref_advertisement;
use libfuzzer_sys::fuzz_target;

fn pkt(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(format!("{:04x}", data.len() + 4).as_bytes());
    out.extend_from_slice(data);
}

/// The canonical body of these refs: the service line, a flush, the refs (capabilities on the
/// first, or on the empty repository's placeholder), a flush.
fn write(refs: &[(String, [u8; 20])], head: Option<&str>) -> Vec<u8> {
    let mut out = Vec::new();
    pkt(&mut out, b"# service=git-upload-pack\n");
    out.extend_from_slice(b"0000");
    let capabilities = head.map(|h| format!("symref=HEAD:{h}")).unwrap_or_default();
    let hex = |oid: &[u8; 20]| oid.iter().map(|b| format!("{b:02x}")).collect::<String>();
    if refs.is_empty() {
        pkt(&mut out, format!("{} capabilities^{{}}\0{capabilities}\n", "0".repeat(40)).as_bytes());
    }
    for (index, (name, oid)) in refs.iter().enumerate() {
        let line = if index == 0 {
            format!("{} {name}\0{capabilities}\n", hex(oid))
        } else {
            format!("{} {name}\n", hex(oid))
        };
        pkt(&mut out, line.as_bytes());
    }
    out.extend_from_slice(b"0000");
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((refs, head)) = read_ref_advertisement(data) else { return };
    for (name, _) in &refs {
        assert!(!name.is_empty() && !name.contains(['\0', ' ', '\n']), "a ref name {name:?}");
    }
    // A HEAD name with a space would not survive the capability list: such a head is not
    // written back (the reader takes it as given).
    let head = head.filter(|h| !h.contains([' ', '\0', '\n']));
    let again = read_ref_advertisement(&write(&refs, head.as_deref())).expect("its own writing reads");
    assert_eq!(again.0, refs);
    assert_eq!(again.1, head);
});
