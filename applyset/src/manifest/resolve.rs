//! go-yaml v2's scalar resolution (`resolve.go` in the `sigs.k8s.io/yaml/goyaml.v2` fork that
//! kubectl 1.33 uses), with the Go `strconv` number parsing it relies on.
//!
//! A plain (unquoted, untagged) scalar is resolved by YAML 1.1 rules: `yes`/`on`/`y` are
//! booleans, `0755` is octal, `1_000` is 1000, `~` is null, and so on. Quoted scalars never come
//! here without a tag: they are strings.

/// A resolved scalar, typed as go-yaml hands it to `sigs.k8s.io/yaml` (the Go type matters for
/// map keys and for the JSON text the value turns into).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    Null,
    Bool(bool),
    /// Go `int`/`int64`.
    Int(i64),
    /// Go `uint64`: an integer above `i64::MAX`.
    Uint(u64),
    Float(f64),
    /// Go `*big.Int`, as decimal digits: an integer too large even for `uint64`.
    Big(String),
    Str(String),
}

pub(crate) const STR_TAG: &str = "tag:yaml.org,2002:str";
pub(crate) const BOOL_TAG: &str = "tag:yaml.org,2002:bool";
pub(crate) const INT_TAG: &str = "tag:yaml.org,2002:int";
pub(crate) const FLOAT_TAG: &str = "tag:yaml.org,2002:float";
pub(crate) const NULL_TAG: &str = "tag:yaml.org,2002:null";
pub(crate) const TIMESTAMP_TAG: &str = "tag:yaml.org,2002:timestamp";
pub(crate) const BINARY_TAG: &str = "tag:yaml.org,2002:binary";
pub(crate) const MERGE_TAG: &str = "tag:yaml.org,2002:merge";

const LONG_TAG_PREFIX: &str = "tag:yaml.org,2002:";

fn short_tag(tag: &str) -> String {
    match tag.strip_prefix(LONG_TAG_PREFIX) {
        Some(rest) => format!("!!{rest}"),
        None => tag.to_owned(),
    }
}

fn resolvable(tag: &str) -> bool {
    matches!(tag, "" | STR_TAG | BOOL_TAG | INT_TAG | FLOAT_TAG | NULL_TAG | TIMESTAMP_TAG)
}

/// A scalar whose text does not read as its explicit tag, worded as go-yaml's: `found` is the
/// tag the text resolves to by itself, `tag` the one written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot decode {} `{input}` as a {}", short_tag(found), short_tag(tag))]
pub(crate) struct TagMismatch {
    found: &'static str,
    input: String,
    tag: String,
}

/// go-yaml v2's `resolve(tag, in)`: `tag` is "" for an untagged plain scalar. Tags go-yaml
/// cannot resolve (`!`, `!foo`, `!!binary`, …) leave the text a string; the caller handles
/// `!!binary`. A value that does not fit its explicit tag is an error, worded as go-yaml's.
pub(crate) fn resolve(tag: &str, input: &str) -> Result<Scalar, TagMismatch> {
    if !resolvable(tag) {
        return Ok(Scalar::Str(input.to_owned()));
    }
    let (rtag, out) = resolve_untyped(tag, input);
    if tag.is_empty() || tag == rtag || tag == STR_TAG {
        return Ok(out);
    }
    if let (FLOAT_TAG, INT_TAG, Scalar::Int(i)) = (tag, rtag, &out) {
        return Ok(Scalar::Float(*i as f64));
    }
    Err(TagMismatch { found: rtag, input: input.to_owned(), tag: tag.to_owned() })
}

/// Whether go-yaml v2 reads `input`, written plainly, as a string (not a bool, number, null or
/// timestamp): the test its encoder makes before writing a string unquoted.
pub(crate) fn reads_as_string(input: &str) -> bool {
    resolve_untyped("", input).0 == STR_TAG
}

fn map_lookup(input: &str) -> Option<(&'static str, Scalar)> {
    Some(match input {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            (BOOL_TAG, Scalar::Bool(true))
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            (BOOL_TAG, Scalar::Bool(false))
        }
        "" | "~" | "null" | "Null" | "NULL" => (NULL_TAG, Scalar::Null),
        ".nan" | ".NaN" | ".NAN" => (FLOAT_TAG, Scalar::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => (FLOAT_TAG, Scalar::Float(f64::INFINITY)),
        "-.inf" | "-.Inf" | "-.INF" => (FLOAT_TAG, Scalar::Float(f64::NEG_INFINITY)),
        _ => return None,
    })
}

fn resolve_untyped(tag: &str, input: &str) -> (&'static str, Scalar) {
    let hint = match input.as_bytes().first() {
        None => b'N',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        Some(_) => 0,
    };
    if hint != 0 && tag != STR_TAG && tag != BINARY_TAG {
        if let Some(found) = map_lookup(input) {
            return found;
        }
        match hint {
            b'.' => {
                if let Some(f) = parse_float(input) {
                    return (FLOAT_TAG, Scalar::Float(f));
                }
            }
            b'D' | b'S' => {
                if (tag.is_empty() || tag == TIMESTAMP_TAG) && is_timestamp(input) {
                    // Decoded into interface{}, go-yaml v2 keeps a timestamp as its text.
                    return (TIMESTAMP_TAG, Scalar::Str(input.to_owned()));
                }
                let plain: String = input.chars().filter(|&c| c != '_').collect();
                if let Ok(i) = parse_int(&plain, 0) {
                    return (INT_TAG, Scalar::Int(i));
                }
                let uint_err = match parse_uint(&plain, 0) {
                    Ok(u) => return (INT_TAG, Scalar::Uint(u)),
                    Err(e) => e,
                };
                if let Some(f) = is_yaml_style_float(&plain).then(|| parse_float(&plain)).flatten() {
                    return (FLOAT_TAG, Scalar::Float(f));
                }
                if let Some(digits) = plain.strip_prefix("0b") {
                    if let Ok(i) = parse_int(digits, 2) {
                        return (INT_TAG, Scalar::Int(i));
                    }
                    if let Ok(u) = parse_uint(digits, 2) {
                        return (INT_TAG, Scalar::Uint(u));
                    }
                } else if let Some(i) =
                    plain.strip_prefix("-0b").and_then(|digits| parse_int(&format!("-{digits}"), 2).ok())
                {
                    return (INT_TAG, Scalar::Int(i));
                }
                if let Some(decimal) = (uint_err == NumError::Range).then(|| big_int_decimal(&plain)).flatten() {
                    return (INT_TAG, Scalar::Big(decimal));
                }
            }
            _ => {}
        }
    }
    (STR_TAG, Scalar::Str(input.to_owned()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumError {
    Syntax,
    Range,
}

/// Go's `strconv.ParseUint(s, base, 64)` for base 0 (prefix-detected) or an explicit base.
/// Underscores are not accepted (go-yaml removes them before parsing).
pub(crate) fn parse_uint(s: &str, base: u32) -> Result<u64, NumError> {
    if s.is_empty() {
        return Err(NumError::Syntax);
    }
    let bytes = s.as_bytes();
    let (base, digits) = if base == 0 {
        if bytes[0] == b'0' {
            let lower = bytes.get(1).map(|b| b.to_ascii_lowercase());
            match lower {
                Some(b'b') if bytes.len() >= 3 => (2, &bytes[2..]),
                Some(b'o') if bytes.len() >= 3 => (8, &bytes[2..]),
                Some(b'x') if bytes.len() >= 3 => (16, &bytes[2..]),
                _ => (8, &bytes[1..]),
            }
        } else {
            (10, bytes)
        }
    } else {
        (base, bytes)
    };
    let mut n: u64 = 0;
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'a'..=b'z' | b'A'..=b'Z' => u32::from(c.to_ascii_lowercase() - b'a') + 10,
            _ => return Err(NumError::Syntax),
        };
        if d >= base {
            return Err(NumError::Syntax);
        }
        n = n.checked_mul(u64::from(base)).and_then(|n| n.checked_add(u64::from(d))).ok_or(NumError::Range)?;
    }
    Ok(n)
}

/// Go's `strconv.ParseInt(s, base, 64)`.
pub(crate) fn parse_int(s: &str, base: u32) -> Result<i64, NumError> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let un = parse_uint(rest, base)?;
    if !neg {
        i64::try_from(un).map_err(|_| NumError::Range)
    } else if un <= 1u64 << 63 {
        Ok((un as i64).wrapping_neg())
    } else {
        Err(NumError::Range)
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
pub(crate) fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` for the decimal forms go-yaml can hand it; `None` on a
/// syntax error or overflow (Go reports ±Inf with a range error, which go-yaml treats as "not
/// a float").
fn parse_float(s: &str) -> Option<f64> {
    let cleaned;
    let text = if s.contains('_') {
        if !underscores_ok(s) {
            return None;
        }
        cleaned = s.replace('_', "");
        cleaned.as_str()
    } else {
        s
    };
    let body = text.trim_start_matches(['+', '-']);
    // Rust also accepts "inf"/"nan"/"infinity"; go-yaml only gets here with a leading digit,
    // sign or dot, and Go's own spelling of those is handled by the resolve map.
    if body.is_empty() || !(body.as_bytes()[0].is_ascii_digit() || body.as_bytes()[0] == b'.') {
        return None;
    }
    if text.len() - body.len() > 1 {
        return None;
    }
    let f: f64 = text.parse().ok()?;
    f.is_finite().then_some(f)
}

/// Go's `underscoreOK` for decimal literals: underscores only between digits.
fn underscores_ok(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let mut saw = '^';
    for c in s.chars() {
        if c.is_ascii_digit() {
            saw = '0';
            continue;
        }
        if c == '_' {
            if saw != '0' {
                return false;
            }
            saw = '_';
            continue;
        }
        if saw == '_' {
            return false;
        }
        saw = '!';
    }
    saw != '_'
}

/// `big.Int.SetString(s, 0)` rendered as decimal digits, for an unsigned literal with valid
/// digits (the only kind that reaches it).
fn big_int_decimal(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let (base, digits): (u32, &[u8]) = if bytes.first() == Some(&b'0') && bytes.len() >= 2 {
        match bytes[1].to_ascii_lowercase() {
            b'b' => (2, &bytes[2..]),
            b'o' => (8, &bytes[2..]),
            b'x' => (16, &bytes[2..]),
            _ => (8, &bytes[1..]),
        }
    } else {
        (10, bytes)
    };
    if digits.is_empty() {
        return None;
    }
    // Little-endian limbs of 10^9.
    let mut limbs: Vec<u64> = vec![0];
    for &c in digits {
        let d = char::from(c).to_digit(base)?;
        let mut carry = u64::from(d);
        for limb in &mut limbs {
            let v = *limb * u64::from(base) + carry;
            *limb = v % 1_000_000_000;
            carry = v / 1_000_000_000;
        }
        while carry > 0 {
            limbs.push(carry % 1_000_000_000);
            carry /= 1_000_000_000;
        }
    }
    let mut out = limbs.last().copied().unwrap_or(0).to_string();
    for limb in limbs.iter().rev().skip(1) {
        out.push_str(&format!("{limb:09}"));
    }
    Some(out)
}

/// go-yaml's `parseTimestamp`: the layouts `2006-1-2T15:4:5.999999999Z07:00` (also with `t`),
/// `2006-1-2 15:4:5.999999999` and `2006-1-2`, with Go's field range checks.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let mut i = 5;
    // One or two digits, as Go's non-padded layout fields accept.
    let num = |i: &mut usize| -> Option<u32> {
        let start = *i;
        while *i < b.len() && *i - start < 2 && b[*i].is_ascii_digit() {
            *i += 1;
        }
        (*i > start).then(|| s[start..*i].parse().ok()).flatten()
    };
    let year: u32 = s[..4].parse().unwrap_or(0);
    let Some(month) = num(&mut i) else { return false };
    if b.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    let Some(day) = num(&mut i) else { return false };
    if !is_date(year, month, day) {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let sep = b[i];
    if !matches!(sep, b'T' | b't' | b' ') {
        return false;
    }
    i += 1;
    let Some(hour) = num(&mut i) else { return false };
    if b.get(i) != Some(&b':') {
        return false;
    }
    i += 1;
    let Some(minute) = num(&mut i) else { return false };
    if b.get(i) != Some(&b':') {
        return false;
    }
    i += 1;
    let Some(second) = num(&mut i) else { return false };
    if hour > 23 || minute > 59 || second > 59 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    if sep == b' ' {
        return i == b.len();
    }
    is_zone(&s[i..])
}

/// Go's day-of-month range check, leap years included.
fn is_date(year: u32, month: u32, day: u32) -> bool {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    day != 0 && day <= days
}

/// The `Z07:00` of a layout: `Z` or `±hh:mm`.
fn is_zone(zone: &str) -> bool {
    let z = zone.as_bytes();
    zone == "Z"
        || (z.len() == 6
            && matches!(z[0], b'+' | b'-')
            && z[1..3].iter().all(u8::is_ascii_digit)
            && z[3] == b':'
            && z[4..6].iter().all(u8::is_ascii_digit))
}

/// Go's `base64.StdEncoding.DecodeString`, which skips `\r` and `\n`.
pub(crate) fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let clean: Vec<u8> = s.bytes().filter(|&b| b != b'\n' && b != b'\r').collect();
    if !clean.len().is_multiple_of(4) {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    let chunks = clean.len() / 4;
    for (n, chunk) in clean.chunks(4).enumerate() {
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && n + 1 != chunks) {
            return None;
        }
        let mut acc = 0u32;
        for &c in &chunk[..4 - pad] {
            acc = (acc << 6) | value(c)?;
        }
        acc <<= 6 * pad as u32;
        let bytes = [(acc >> 16) as u8, (acc >> 8) as u8, acc as u8];
        // Go rejects non-zero bits left over in a padded quantum.
        if (pad == 1 && bytes[2] != 0) || (pad == 2 && bytes[1] != 0) {
            return None;
        }
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// `strconv.FormatFloat(f, 'g', -1, 32)` with go-yaml's `.inf`/`-.inf`/`.nan` spellings: how
/// `sigs.k8s.io/yaml` turns a float map key into a string.
pub(crate) fn float_key(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    let x = f as f32;
    if x.is_infinite() {
        return if x > 0.0 { ".inf".into() } else { "-.inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
