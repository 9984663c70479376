//! The ref advertisement of a smart-HTTP git server (`GET <repo>/info/refs?service=
//! git-upload-pack`, protocol v0/v1), read from the answer the redirect check already has.
//!
//! A listing that finds nothing new then costs one request at the git host instead of two
//! (the check's and libgit2's own). Anything this reader does not fully understand gives
//! `None`, and the caller connects with libgit2 as before: the advertisement is an
//! optimisation, never the only way to list.

/// The refs a server advertised, and the branch its HEAD points at (the `symref`
/// capability), when it said.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Advertisement {
    pub(crate) refs: Vec<(String, [u8; 20])>,
    pub(crate) head: Option<String>,
}

/// The pkt-line `# service=git-upload-pack` a smart server starts with.
const SERVICE_LINE: &[u8] = b"# service=git-upload-pack";

/// Parse the body of a smart `info/refs` answer; `None` unless it is a complete v0/v1
/// advertisement of SHA-1 objects.
pub(crate) fn parse(body: &[u8]) -> Option<Advertisement> {
    let mut lines = PktLines { rest: body };
    // The service announcement, then a flush.
    if lines.next()?.map(trim_newline) != Some(SERVICE_LINE) || lines.next()?.is_some() {
        return None;
    }
    let mut ad = Advertisement::default();
    let mut first = true;
    loop {
        let Some(line) = lines.next()? else {
            // The closing flush: nothing may follow it.
            return lines.rest.is_empty().then_some(ad);
        };
        let line = trim_newline(line);
        let (line, capabilities) = match line.iter().position(|b| *b == 0) {
            Some(nul) if first => (&line[..nul], Some(&line[nul + 1..])),
            Some(_) => return None,
            None if first => return None,
            None => (line, None),
        };
        first = false;
        if let Some(caps) = capabilities {
            let caps = std::str::from_utf8(caps).ok()?;
            if caps.split(' ').any(|c| c.starts_with("object-format=") && c != "object-format=sha1") {
                return None;
            }
            ad.head = caps.split(' ').filter_map(|c| c.strip_prefix("symref=HEAD:")).next().map(str::to_string);
        }
        let (oid, name) = line.split_at_checked(40)?;
        let name = name.strip_prefix(b" ")?;
        let oid = hex_oid(oid)?;
        let name = std::str::from_utf8(name).ok()?;
        if name.is_empty() || name.contains(['\0', ' ', '\n']) {
            return None;
        }
        // An empty repository advertises only its capabilities under this name.
        if name == "capabilities^{}" {
            continue;
        }
        ad.refs.push((name.to_string(), oid));
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

fn hex_oid(hex: &[u8]) -> Option<[u8; 20]> {
    let mut oid = [0u8; 20];
    for (byte, pair) in oid.iter_mut().zip(hex.chunks_exact(2)) {
        let text = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(text, 16).ok()?;
    }
    (hex.len() == 40).then_some(oid)
}

/// pkt-lines: `Some(Some(data))` for a data line, `Some(None)` for a flush, `None` when the
/// input is malformed or ends before a whole line.
struct PktLines<'a> {
    rest: &'a [u8],
}

impl<'a> PktLines<'a> {
    fn next(&mut self) -> Option<Option<&'a [u8]>> {
        let (len, after) = self.rest.split_at_checked(4)?;
        let len = usize::from_str_radix(std::str::from_utf8(len).ok()?, 16).ok()?;
        if len == 0 {
            self.rest = after;
            return Some(None);
        }
        let (data, rest) = after.split_at_checked(len.checked_sub(4).filter(|n| *n > 0)?)?;
        self.rest = rest;
        Some(Some(data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(data: &str) -> String {
        format!("{:04x}{data}", data.len() + 4)
    }

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";

    fn body(lines: &[String]) -> Vec<u8> {
        let mut out = pkt("# service=git-upload-pack\n") + "0000";
        for l in lines {
            out += &pkt(l);
        }
        out += "0000";
        out.into_bytes()
    }

    #[test]
    fn reads_refs_and_the_head_symref() {
        let ad = parse(&body(&[
            format!("{A} HEAD\0multi_ack thin-pack symref=HEAD:refs/heads/main agent=git/2.43\n"),
            format!("{A} refs/heads/main\n"),
            format!("{B} refs/tags/v1\n"),
            format!("{A} refs/tags/v1^{{}}\n"),
        ]))
        .unwrap();
        assert_eq!(ad.head.as_deref(), Some("refs/heads/main"));
        let names: Vec<&str> = ad.refs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["HEAD", "refs/heads/main", "refs/tags/v1", "refs/tags/v1^{}"]);
        assert_eq!(ad.refs[2].1, [0x22; 20]);
    }

    #[test]
    fn an_empty_repository_has_no_refs() {
        let zero = "0".repeat(40);
        let ad = parse(&body(&[format!("{zero} capabilities^{{}}\0agent=git/2\n")])).unwrap();
        assert_eq!(ad, Advertisement::default());
    }

    proptest::proptest! {
        /// Whatever refs a server advertises (names without NUL, space or newline), written as
        /// pkt-lines they read back the same, in order, with HEAD's branch; and any cut or
        /// flipped byte of that body is refused or read without a panic.
        #[test]
        fn an_advertisement_reads_back_as_written(
            refs in proptest::collection::vec(("[a-zA-Z0-9/._^{}-]{1,40}", proptest::array::uniform20(0u8..)), 1..20),
            head in proptest::option::of("refs/heads/[a-z]{1,10}"),
            flip in 0usize..4096,
        ) {
            let hex = |oid: &[u8; 20]| oid.iter().map(|b| format!("{b:02x}")).collect::<String>();
            let capabilities = head.as_ref().map(|h| format!("symref=HEAD:{h}")).unwrap_or_default();
            let lines: Vec<String> = refs
                .iter()
                .enumerate()
                .map(|(i, (name, oid))| {
                    if i == 0 { format!("{} {name}\0{capabilities}\n", hex(oid)) } else { format!("{} {name}\n", hex(oid)) }
                })
                .collect();
            let written = body(&lines);
            let read = parse(&written).expect("its own writing reads");
            let expected: Vec<(String, [u8; 20])> =
                refs.iter().filter(|(name, _)| name != "capabilities^{}").cloned().collect();
            proptest::prop_assert_eq!(read.refs, expected);
            proptest::prop_assert_eq!(read.head, head);
            let mut flipped = written.clone();
            let at = flip % flipped.len();
            flipped[at] ^= 0x41;
            let _ = parse(&flipped);
        }
    }

    #[test]
    fn anything_not_fully_understood_is_refused() {
        let good = body(&[format!("{A} HEAD\0symref=HEAD:refs/heads/main\n")]);
        assert!(parse(&good).is_some());
        // Cut anywhere: refused.
        for cut in 0..good.len() {
            assert_eq!(parse(&good[..cut]), None, "cut at {cut}");
        }
        let refused = [
            // No service line (a dumb server's file, or protocol v2).
            format!("{A}\tHEAD\n").into_bytes(),
            (pkt("version 2\n") + "0000").into_bytes(),
            // SHA-256 objects.
            body(&[format!("{} HEAD\0object-format=sha256\n", "a".repeat(40))]),
            // Not hex, short oid, no name, capabilities past the first line.
            body(&[format!("{} HEAD\0\n", "z".repeat(40))]),
            body(&[format!("{} HEAD\0\n", &A[..39])]),
            body(&[format!("{A} \0\n")]),
            body(&[format!("{A} HEAD\0\n"), format!("{B} refs/heads/x\0caps\n")]),
            // Data after the closing flush.
            [body(&[format!("{A} HEAD\0\n")]), b"0008abcd".to_vec()].concat(),
        ];
        for body in refused {
            assert_eq!(parse(&body), None, "{}", String::from_utf8_lossy(&body));
        }
    }
}
