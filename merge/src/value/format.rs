//! Serialisation in Go's formats: `encoding/json` (compact, sorted keys, HTML-safe escapes, Go's
//! float text), `%q` and `%v`.

use std::fmt::Write as _;

use super::Value;

pub(super) fn write_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&go_json_float(*f)),
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                super::deeper(|| write_json(item, out));
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(k, out);
                out.push(':');
                super::deeper(|| write_json(item, out));
            }
            out.push('}');
        }
    }
}

/// `json.MarshalIndent(v, "", indent)` as Go writes it, starting `depth` levels in (the caller
/// has written the indentation of the first line): one member or element per line, `"key":
/// value`, empty objects and arrays kept as `{}` and `[]`.
pub(super) fn write_json_indented(v: &Value, indent: &str, depth: usize, out: &mut String) {
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(indent);
        }
    };
    match v {
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                super::deeper(|| write_json_indented(item, indent, depth + 1, out));
            }
            newline(out, depth);
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                write_json_string(k, out);
                out.push_str(": ");
                super::deeper(|| write_json_indented(item, indent, depth + 1, out));
            }
            newline(out, depth);
            out.push('}');
        }
        other => write_json(other, out),
    }
}

/// Go's `%q` (`strconv.Quote`): double quotes, Go's short escapes, `\xNN` for ASCII control
/// bytes and `\uNNNN` for other control characters. kubectl quotes names and paths this way in
/// its messages.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `encoding/json` string escaping (HTML-safe, Go 1.22+ short forms for \b and \f).
pub fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A float as Go's `encoding/json` prints it: shortest round-trip digits, fixed notation for
/// magnitudes in [1e-6, 1e21), otherwise exponent notation with an explicit `+` sign.
pub fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        // Rust's Display is the shortest round-trip representation without an exponent.
        format!("{f}")
    } else {
        exponent_form(f, 0)
    }
}

/// Rust's `{:e}` (shortest digits) rewritten with Go's exponent sign and minimum width.
fn exponent_form(f: f64, min_exp_digits: usize) -> String {
    let text = format!("{f:e}");
    let (mantissa, exp) = text.split_once('e').expect("{:e} always has an exponent");
    let (sign, digits) = match exp.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exp),
    };
    format!("{mantissa}e{sign}{digits:0>min_exp_digits$}")
}

/// Go's `%v` for a float64 (also `strconv.FormatFloat(f, 'g', -1, 64)`): `%g` with the
/// shortest digits, where Go decides on exponent form with precision 6: exponent when the
/// decimal exponent is below -4 or at least 6.
pub fn go_v_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{f:e}");
    let exp: i32 = sci.split_once('e').and_then(|(_, e)| e.parse().ok()).unwrap_or(0);
    if !(-4..6).contains(&exp) { exponent_form(f, 2) } else { format!("{f}") }
}

pub(super) fn write_go_v(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&go_v_float(*f)),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                super::deeper(|| write_go_v(item, out));
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push_str("map[");
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                super::deeper(|| write_go_v(item, out));
            }
            out.push(']');
        }
    }
}
