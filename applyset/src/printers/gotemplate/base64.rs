//! `base64.StdEncoding.DecodeString`, reporting Go's `CorruptInputError` offset.

fn decode_byte(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

fn is_newline(b: u8) -> bool {
    b == b'\n' || b == b'\r'
}

/// Decodes padded standard base64 (newlines ignored); the error is the offending byte offset.
pub(super) fn decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    loop {
        // One quantum: Go's `decodeQuantum`.
        let mut dbuf = [0u8; 4];
        let mut dlen = 4;
        let mut j = 0;
        let mut trailing_error = None;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(si - j);
            }
            let input = src[si];
            si += 1;
            if let Some(d) = decode_byte(input) {
                dbuf[j] = d;
                j += 1;
                continue;
            }
            if is_newline(input) {
                continue;
            }
            if input != b'=' {
                return Err(si - 1);
            }
            match j {
                0 | 1 => return Err(si - 1),
                2 => {
                    while si < src.len() && is_newline(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(src.len());
                    }
                    if src[si] != b'=' {
                        return Err(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && is_newline(src[si]) {
                si += 1;
            }
            if si < src.len() {
                trailing_error = Some(si);
            }
            dlen = j;
            break;
        }
        let value = u32::from(dbuf[0]) << 18 | u32::from(dbuf[1]) << 12 | u32::from(dbuf[2]) << 6 | u32::from(dbuf[3]);
        let bytes = [(value >> 16) as u8, (value >> 8) as u8, value as u8];
        out.extend_from_slice(&bytes[..dlen - 1]);
        if let Some(at) = trailing_error {
            return Err(at);
        }
        if dlen < 4 {
            return Ok(out);
        }
    }
}
