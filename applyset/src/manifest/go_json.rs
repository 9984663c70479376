//! The syntax error Go's `encoding/json` decoder reports for a JSON value, in its words.
//!
//! kubectl reads JSON streams with `json.Decoder`; when a value is malformed (and the YAML
//! fallback fails too) it prints the decoder's error: `json: offset N: invalid character 'x'
//! <where>`, or `unexpected EOF` when the stream ends inside a value. serde_json finds the same
//! errors but words them differently, so this module re-scans the value with the states of
//! Go's scanner (`encoding/json/scanner.go`) to name the first bad byte as Go does.

use applyset_merge::value::MAX_DEPTH;

/// Go's message for the first syntax error of the JSON value starting at `start` in `text`
/// (`offset` counts from the start of the stream, as the decoder's does). `None` when the
/// value has no syntax error (serde rejected it for another reason).
pub(super) fn syntax_error(text: &[u8], start: usize) -> Option<String> {
    let mut scanner = Scanner { stack: Vec::new() };
    let mut i = start;
    let mut state = State::Value;
    loop {
        let Some(&c) = text.get(i) else { return Some("unexpected EOF".to_owned()) };
        match scanner.step(state, c) {
            Step::Next(next) => state = next,
            Step::Done => return None,
            Step::Error(context) => {
                return Some(format!("json: offset {}: invalid character {} {context}", i + 1, quote_char(c)));
            }
        }
        i += 1;
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before a value (blanks allowed).
    Value,
    /// After `[`: a value or `]`.
    ArrayFirst,
    /// After `{`: a key string or `}`.
    ObjectFirst,
    /// After `,` in an object: a key string.
    ObjectKey,
    /// After a key: `:`.
    Colon,
    /// After a complete value: what the enclosing container allows.
    AfterValue,
    /// Inside a string; `key` tells whether it is an object key.
    InString { key: bool },
    /// After `\` in a string.
    Escape { key: bool },
    /// Inside `\uXXXX`: how many hex digits are still due.
    Unicode { key: bool, left: u8 },
    /// After `-`.
    Minus,
    /// After a leading `0`.
    Zero,
    /// In the integer digits.
    Digits,
    /// After `.`.
    Dot,
    /// In the fraction digits.
    Fraction,
    /// After `e`/`E`.
    Exponent,
    /// After the exponent's sign.
    ExponentSign,
    /// In the exponent digits.
    ExponentDigits,
    /// Inside `true`/`false`/`null`: the literal and how far it matched.
    Literal { word: &'static str, at: usize },
}

enum Step {
    Next(State),
    /// The top-level value ended.
    Done,
    /// The byte is invalid here; Go's description of where.
    Error(String),
}

struct Scanner {
    stack: Vec<Container>,
}

fn is_blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

impl Scanner {
    fn step(&mut self, state: State, c: u8) -> Step {
        use State::*;
        match state {
            Value | ArrayFirst => {
                if is_blank(c) {
                    return Step::Next(state);
                }
                if state == ArrayFirst && c == b']' {
                    self.stack.pop();
                    return self.after_value();
                }
                self.begin_value(c)
            }
            ObjectFirst | ObjectKey => match c {
                _ if is_blank(c) => Step::Next(state),
                b'}' if state == ObjectFirst => {
                    self.stack.pop();
                    self.after_value()
                }
                b'"' => Step::Next(InString { key: true }),
                _ => Step::Error("looking for beginning of object key string".into()),
            },
            Colon => match c {
                _ if is_blank(c) => Step::Next(Colon),
                b':' => Step::Next(Value),
                _ => Step::Error("after object key".into()),
            },
            AfterValue => {
                if is_blank(c) {
                    return Step::Next(AfterValue);
                }
                match (self.stack.last(), c) {
                    (Some(Container::Object), b',') => Step::Next(ObjectKey),
                    (Some(Container::Object), b'}') | (Some(Container::Array), b']') => {
                        self.stack.pop();
                        self.after_value()
                    }
                    (Some(Container::Array), b',') => Step::Next(Value),
                    (Some(Container::Object), _) => Step::Error("after object key:value pair".into()),
                    (Some(Container::Array), _) => Step::Error("after array element".into()),
                    (None, _) => Step::Done,
                }
            }
            InString { key } => match c {
                b'"' if key => Step::Next(Colon),
                b'"' => self.after_value(),
                b'\\' => Step::Next(Escape { key }),
                0..0x20 => Step::Error("in string literal".into()),
                _ => Step::Next(state),
            },
            Escape { key } => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => Step::Next(InString { key }),
                b'u' => Step::Next(Unicode { key, left: 4 }),
                _ => Step::Error("in string escape code".into()),
            },
            Unicode { key, left } => match c {
                _ if c.is_ascii_hexdigit() => {
                    Step::Next(if left == 1 { InString { key } } else { Unicode { key, left: left - 1 } })
                }
                _ => Step::Error("in \\u hexadecimal character escape".into()),
            },
            Minus => match c {
                b'0' => Step::Next(Zero),
                b'1'..=b'9' => Step::Next(Digits),
                _ => Step::Error("in numeric literal".into()),
            },
            Zero | Digits => match c {
                b'0'..=b'9' if state == Digits => Step::Next(Digits),
                b'.' => Step::Next(Dot),
                b'e' | b'E' => Step::Next(Exponent),
                _ => self.end_of_number(c),
            },
            Dot => match c {
                b'0'..=b'9' => Step::Next(Fraction),
                _ => Step::Error("after decimal point in numeric literal".into()),
            },
            Fraction => match c {
                b'0'..=b'9' => Step::Next(Fraction),
                b'e' | b'E' => Step::Next(Exponent),
                _ => self.end_of_number(c),
            },
            Exponent => match c {
                b'+' | b'-' => Step::Next(ExponentSign),
                b'0'..=b'9' => Step::Next(ExponentDigits),
                _ => Step::Error("in exponent of numeric literal".into()),
            },
            ExponentSign => match c {
                b'0'..=b'9' => Step::Next(ExponentDigits),
                _ => Step::Error("in exponent of numeric literal".into()),
            },
            ExponentDigits => match c {
                b'0'..=b'9' => Step::Next(ExponentDigits),
                _ => self.end_of_number(c),
            },
            Literal { word, at } => {
                let expected = word.as_bytes()[at];
                if c != expected {
                    return Step::Error(format!("in literal {word} (expecting {})", quote_char(expected)));
                }
                if at + 1 == word.len() { self.after_value() } else { Step::Next(Literal { word, at: at + 1 }) }
            }
        }
    }

    fn begin_value(&mut self, c: u8) -> Step {
        match c {
            b'{' => self.push(Container::Object, State::ObjectFirst),
            b'[' => self.push(Container::Array, State::ArrayFirst),
            b'"' => Step::Next(State::InString { key: false }),
            b'-' => Step::Next(State::Minus),
            b'0' => Step::Next(State::Zero),
            b'1'..=b'9' => Step::Next(State::Digits),
            b't' => Step::Next(State::Literal { word: "true", at: 1 }),
            b'f' => Step::Next(State::Literal { word: "false", at: 1 }),
            b'n' => Step::Next(State::Literal { word: "null", at: 1 }),
            _ => Step::Error("looking for beginning of value".into()),
        }
    }

    /// Opens a container: Go's decoder refuses more than [`MAX_DEPTH`] open at once.
    fn push(&mut self, container: Container, next: State) -> Step {
        self.stack.push(container);
        if self.stack.len() > MAX_DEPTH { Step::Error("exceeded max depth".into()) } else { Step::Next(next) }
    }

    /// A value just ended: at the top level the stream's value is complete.
    fn after_value(&mut self) -> Step {
        if self.stack.is_empty() { Step::Done } else { Step::Next(State::AfterValue) }
    }

    /// A number ends at the first byte that cannot continue it; that byte is then read in the
    /// state after the value.
    fn end_of_number(&mut self, c: u8) -> Step {
        match self.after_value() {
            Step::Next(state) => self.step(state, c),
            other => other,
        }
    }
}

/// Go's `quoteChar`: a byte as a quoted character (`'x'`, `'\n'`, `'\''`).
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_owned(),
        b'"' => "'\"'".to_owned(),
        b'\n' => r"'\n'".to_owned(),
        b'\r' => r"'\r'".to_owned(),
        b'\t' => r"'\t'".to_owned(),
        b'\\' => r"'\\'".to_owned(),
        0x07 => r"'\a'".to_owned(),
        0x08 => r"'\b'".to_owned(),
        0x0C => r"'\f'".to_owned(),
        0x0B => r"'\v'".to_owned(),
        0x20..0x7F => format!("'{}'", c as char),
        0..0x20 | 0x7F => format!(r"'\x{c:02x}'"),
        // Go converts the byte to the rune U+0080..U+00FF, printable from U+00A1 on.
        0x80..0xA1 | 0xAD => format!(r"'\u{c:04x}'"),
        _ => format!("'{}'", char::from(c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> Option<String> {
        syntax_error(text.as_bytes(), 0)
    }

    #[test]
    fn go_words_each_state() {
        // Each as Go's `json.Decoder` words it (checked with Go 1.26; offset = bytes read, the
        // bad byte included), prefixed with the offset as kubectl's stream decoder does.
        let cases = [
            (r#"{"b": [}"#, "json: offset 8: invalid character '}' looking for beginning of value"),
            (r#"{"b": 1 "c"}"#, "json: offset 9: invalid character '\"' after object key:value pair"),
            (r#"{"b" 1}"#, "json: offset 6: invalid character '1' after object key"),
            ("{1}", "json: offset 2: invalid character '1' looking for beginning of object key string"),
            (r#"{"a":1,}"#, "json: offset 8: invalid character '}' looking for beginning of object key string"),
            ("[1 2]", "json: offset 4: invalid character '2' after array element"),
            ("[1,]", "json: offset 4: invalid character ']' looking for beginning of value"),
            ("[-x]", "json: offset 3: invalid character 'x' in numeric literal"),
            ("[1.x]", "json: offset 4: invalid character 'x' after decimal point in numeric literal"),
            ("[1ex]", "json: offset 4: invalid character 'x' in exponent of numeric literal"),
            ("[tru]", "json: offset 5: invalid character ']' in literal true (expecting 'e')"),
            ("[\"a\nb\"]", r"json: offset 4: invalid character '\n' in string literal"),
            (r#"["\q"]"#, "json: offset 4: invalid character 'q' in string escape code"),
            (r#"["\u12x4"]"#, r"json: offset 7: invalid character 'x' in \u hexadecimal character escape"),
            ("[']", r"json: offset 2: invalid character '\'' looking for beginning of value"),
            ("[\x01]", r"json: offset 2: invalid character '\x01' looking for beginning of value"),
            ("[\u{85}]", r"json: offset 2: invalid character 'Â' looking for beginning of value"),
        ];
        for (text, want) in cases {
            assert_eq!(error(text).as_deref(), Some(want), "{text}");
        }
        assert_eq!(error(r#"{"a": [1, 2"#).as_deref(), Some("unexpected EOF"));
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert_eq!(
            error(&deep),
            Some(format!("json: offset {}: invalid character '[' exceeded max depth", MAX_DEPTH + 1))
        );
        assert_eq!(error(&format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH))), None);
        assert_eq!(error(r#"{"a": [1, 2.5e-3, true, null, "x\u00e9"]} trailing"#), None);
    }

    #[test]
    fn offsets_count_from_the_start_of_the_stream() {
        let text = "{\"a\": 1}\n{\"b\": [}\n";
        assert_eq!(
            syntax_error(text.as_bytes(), 9).as_deref(),
            Some("json: offset 17: invalid character '}' looking for beginning of value")
        );
    }
}
