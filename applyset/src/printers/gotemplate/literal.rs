//! Literal constants: Go's `strconv.Unquote`, `strconv.UnquoteChar` and the number rules of
//! `parse.NumberNode`. Errors are the message part of Go's parse error.

use super::error::SyntaxError;
use super::node::Number;

/// `strconv.Unquote` for the double-quoted and raw strings the lexer produced.
pub(super) fn unquote(quoted: &str) -> Result<String, SyntaxError> {
    if let Some(raw) = quoted.strip_prefix('`').and_then(|s| s.strip_suffix('`')) {
        // Go drops carriage returns from raw strings.
        return Ok(raw.replace('\r', ""));
    }
    let Some(mut body) = quoted.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else {
        return Err(SyntaxError::InvalidSyntax);
    };
    let mut bytes = Vec::with_capacity(body.len());
    while !body.is_empty() {
        let (piece, tail) = unquote_char(body, b'"')?;
        match piece {
            Piece::Char(c) => bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            Piece::Byte(b) => bytes.push(b),
        }
        body = tail;
    }
    // `\x` and octal escapes can spell bytes that are not UTF-8, which a Rust string cannot hold.
    String::from_utf8(bytes).map_err(|_| SyntaxError::NotUtf8)
}

/// One decoded unit of a quoted literal.
enum Piece {
    Char(char),
    /// A `\x` or octal escape: a single byte.
    Byte(u8),
}

/// `strconv.UnquoteChar`: decodes the first character or escape of `s`.
fn unquote_char(s: &str, quote: u8) -> Result<(Piece, &str), SyntaxError> {
    let err = || Err(SyntaxError::InvalidSyntax);
    let mut chars = s.chars();
    let Some(c) = chars.next() else { return err() };
    if c as u32 == quote as u32 && (quote == b'\'' || quote == b'"') {
        return err();
    }
    if c != '\\' {
        return Ok((Piece::Char(c), chars.as_str()));
    }
    let Some(esc) = chars.next() else { return err() };
    let rest = chars.as_str();
    let simple = match esc {
        'a' => Some('\u{7}'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\u{b}'),
        '\\' => Some('\\'),
        '\'' | '"' if esc as u32 == quote as u32 => Some(esc),
        _ => None,
    };
    if let Some(c) = simple {
        return Ok((Piece::Char(c), rest));
    }
    match esc {
        'x' | 'u' | 'U' => {
            let n = match esc {
                'x' => 2,
                'u' => 4,
                _ => 8,
            };
            let Some(hex) = rest.get(..n) else { return err() };
            let Ok(value) = u32::from_str_radix(hex, 16) else { return err() };
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return err();
            }
            if esc == 'x' {
                return Ok((Piece::Byte(value as u8), &rest[n..]));
            }
            match char::from_u32(value) {
                Some(c) => Ok((Piece::Char(c), &rest[n..])),
                None => err(),
            }
        }
        '0'..='7' => {
            let digits = format!("{esc}{}", rest.get(..2).unwrap_or(""));
            if digits.len() != 3 || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
                return err();
            }
            let value = u32::from_str_radix(&digits, 8).map_err(|_| SyntaxError::InvalidSyntax)?;
            if value > 255 {
                return err();
            }
            Ok((Piece::Byte(value as u8), &rest[2..]))
        }
        _ => err(),
    }
}

/// `parse.Tree.newNumber`: every interpretation of a numeric or character constant.
pub(super) fn number(text: &str, is_char: bool) -> Result<Number, SyntaxError> {
    if is_char {
        let body = &text[1..];
        let (piece, tail) = unquote_char(body, b'\'')?;
        if tail != "'" {
            return Err(SyntaxError::MalformedCharacter(text.to_owned()));
        }
        let code = match piece {
            Piece::Char(c) => c as u32,
            Piece::Byte(b) => u32::from(b),
        };
        return Ok(Number {
            text: text.into(),
            int: Some(i64::from(code)),
            uint: Some(u64::from(code)),
            float: Some(f64::from(code)),
        });
    }
    if text.ends_with('i') {
        return Err(SyntaxError::Complex(text.to_owned()));
    }
    let mut n = Number { text: text.into(), int: None, uint: None, float: None };
    n.uint = parse_uint(text);
    n.int = parse_int(text);
    if n.int == Some(0) {
        n.uint = Some(0); // -0 is a uint too.
    }
    if let Some(i) = n.int {
        n.float = Some(i as f64);
    } else if let Some(u) = n.uint {
        n.float = Some(u as f64);
    } else {
        let cleaned = text.replace('_', "");
        let lower = cleaned.to_ascii_lowercase();
        let unsigned = lower.trim_start_matches(['+', '-']);
        if unsigned.starts_with("0x") {
            return Err(SyntaxError::HexFloat(text.to_owned()));
        }
        if let Ok(f) = cleaned.parse::<f64>() {
            if !text.contains(['.', 'e', 'E', 'p', 'P']) {
                return Err(SyntaxError::IntegerOverflow(text.to_owned()));
            }
            n.float = Some(f);
            // Go's `float64(int64(f)) == f` test, without relying on out-of-range conversions.
            if f.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
                n.int = Some(f as i64);
            }
            if f.fract() == 0.0 && (0.0..1.844_674_407_370_955_2e19).contains(&f) {
                n.uint = Some(f as u64);
            }
        }
    }
    if n.int.is_none() && n.uint.is_none() && n.float.is_none() {
        return Err(SyntaxError::IllegalNumber(text.to_owned()));
    }
    Ok(n)
}

/// `strconv.ParseUint(text, 0, 64)`.
fn parse_uint(text: &str) -> Option<u64> {
    if text.starts_with(['+', '-']) {
        return None;
    }
    let (radix, digits) = split_radix(text)?;
    u64::from_str_radix(&digits, radix).ok()
}

/// `strconv.ParseInt(text, 0, 64)`.
fn parse_int(text: &str) -> Option<i64> {
    let (negative, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = parse_uint(unsigned)?;
    if negative {
        if magnitude <= 1 << 63 { Some((magnitude as i64).wrapping_neg()) } else { None }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Splits Go's base prefix (`0x`, `0o`, `0b`, legacy octal `0`) and removes digit separators.
fn split_radix(text: &str) -> Option<(u32, String)> {
    let lower = text.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    let digits = digits.trim_start_matches('_');
    if digits.is_empty() || digits.ends_with('_') || digits.contains("__") {
        return None;
    }
    let digits = digits.replace('_', "");
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    Some((radix, digits))
}
