//! A JSON value written as YAML the way `sigs.k8s.io/yaml.Marshal` writes it for kubectl's
//! `-o yaml`: Go's JSON text of the value is read back by go-yaml v2 (so a whole-number float
//! becomes an integer) and encoded by go-yaml v2's encoder — keys in its "natural" order,
//! strings plain unless YAML 1.1 would read them as something else, multi-line strings as
//! literal blocks — through libyaml's emitter, which go-yaml v2 is a port of.

use applyset_merge::Value;
use applyset_merge::value::{deeper, go_json_float, go_v_float};

use super::libyaml_emit::{Emitter, ScalarStyle};
use crate::manifest::resolve::{Scalar, reads_as_string, resolve};

/// The YAML text of `value`, or `None` if libyaml refuses it (a scalar over 2 GiB).
pub fn to_go_yaml(value: &Value) -> Option<String> {
    let mut emitter = Emitter::new();
    emit(&mut emitter, value);
    emitter.finish()
}

fn emit(emitter: &mut Emitter, value: &Value) {
    match value {
        Value::Null => emitter.scalar("null", ScalarStyle::Plain),
        Value::Bool(b) => emitter.scalar(if *b { "true" } else { "false" }, ScalarStyle::Plain),
        Value::Int(i) => emitter.scalar(&i.to_string(), ScalarStyle::Plain),
        Value::Float(f) => emitter.scalar(&float_text(*f), ScalarStyle::Plain),
        Value::String(s) => emitter.scalar(s, string_style(s)),
        Value::Array(items) => {
            emitter.sequence_start();
            for item in items {
                deeper(|| emit(emitter, item));
            }
            emitter.sequence_end();
        }
        Value::Object(map) => {
            emitter.mapping_start();
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| key_order(a, b));
            for key in keys {
                emitter.scalar(key, string_style(key));
                deeper(|| emit(emitter, &map[key]));
            }
            emitter.mapping_end();
        }
    }
}

/// A float as go-yaml prints what it read from Go's JSON text of it: `3.0` is the text `3`, an
/// integer; `1e21` stays a float and is printed with `%g`'s shortest digits.
pub(crate) fn float_text(f: f64) -> String {
    let json = go_json_float(f);
    match resolve("", &json) {
        Ok(Scalar::Int(i)) => i.to_string(),
        Ok(Scalar::Uint(u)) => u.to_string(),
        Ok(Scalar::Float(f)) => go_v_float(f),
        _ => json,
    }
}

/// go-yaml v2's choice for a string: a literal block when it holds a newline, plain when YAML
/// 1.1 reads it back as the same string, double-quoted otherwise (libyaml may still pick single
/// quotes for a plain scalar it cannot write plainly, such as `a: b` or ` x`).
pub(crate) fn string_style(s: &str) -> ScalarStyle {
    if s.contains('\n') {
        ScalarStyle::Literal
    } else if reads_as_string(s) && !is_base60_float(s) {
        ScalarStyle::Plain
    } else {
        ScalarStyle::DoubleQuoted
    }
}

/// YAML 1.1's sexagesimal float (`1:20`, `-3:25:45.5`), which go-yaml v2 quotes although its own
/// resolver reads it as a string: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
fn is_base60_float(s: &str) -> bool {
    let bytes = s.as_bytes();
    let mut i = usize::from(matches!(bytes.first(), Some(b'+' | b'-')));
    if !bytes.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    while bytes.get(i).is_some_and(|b| b.is_ascii_digit() || *b == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while bytes.get(i) == Some(&b':') {
        i += 1;
        // `[0-5]?[0-9]`: one digit, or two where the first is 0-5.
        match (bytes.get(i), bytes.get(i + 1)) {
            (Some(b'0'..=b'5'), Some(b'0'..=b'9')) => i += 2,
            (Some(b'0'..=b'9'), _) => i += 1,
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        while bytes.get(i).is_some_and(|b| b.is_ascii_digit() || *b == b'_') {
            i += 1;
        }
    }
    i == bytes.len()
}

/// go-yaml v2's `keyList.Less` for two string keys: rune by rune; letters sort after
/// non-letters; runs of digits compare as numbers (`a2` before `a10`). Letters and digits are
/// Rust's Unicode `alphabetic`/ASCII digits where Go asks `unicode.IsLetter`/`IsDigit`, which
/// differ only for rare non-ASCII characters.
///
/// This "less" is not always transitive (`"0x1" < "1" < "0010" < "0x1"`). go-yaml sorts keys
/// taken from a Go map, in Go's random map order, so for such key sets kubectl's own output
/// changes from run to run (seen with sigs.k8s.io/yaml); here it is one stable order.
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    if key_less(a, b) {
        Ordering::Less
    } else if key_less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn key_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            // A zero after non-zero digits is part of a number, not a leading zero.
            if ar[..i].iter().rev().take_while(|c| c.is_ascii_digit()).any(|&c| c != '0') {
                an = 1;
                bn = 1;
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an.wrapping_mul(10).wrapping_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn.wrapping_mul(10).wrapping_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_go_yaml_natural_order() {
        let mut keys = vec!["b", "a10", "a2", "A", "_x", "a", "1", "10", "9", "a02", "a1"];
        keys.sort_by(|a, b| key_order(a, b));
        // As sigs.k8s.io/yaml (go-yaml v2) orders them.
        assert_eq!(keys, ["_x", "1", "9", "10", "A", "a", "a1", "a2", "a02", "a10", "b"]);
    }

    #[test]
    fn base60_floats() {
        for yes in ["1:20", "-3:25:45.5", "+1_0:0", "190:20:30.15"] {
            assert!(is_base60_float(yes), "{yes}");
        }
        for no in ["1:", "1:60", ":20", "a:1", "1:20x", "120"] {
            assert!(!is_base60_float(no), "{no}");
        }
    }

    #[test]
    fn floats_read_back_through_json_text() {
        assert_eq!(float_text(3.0), "3");
        assert_eq!(float_text(-0.0), "0");
        assert_eq!(float_text(1.5), "1.5");
        assert_eq!(float_text(1e21), "1e+21");
        assert_eq!(float_text(1e20), "1e+20");
        assert_eq!(float_text(1e19), "10000000000000000000");
        assert_eq!(float_text(0.000001), "1e-06");
    }
}
