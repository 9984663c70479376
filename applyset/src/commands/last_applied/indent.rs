//! Go's `json.Indent` (prefix `""`), which `kubectl apply view-last-applied -o json` prints
//! the annotation through: the text is re-spaced, never re-encoded, so key order, number
//! spellings and string escapes stay exactly as the annotation holds them; empty objects and
//! arrays stay `{}` and `[]`; trailing blanks are kept, leading ones dropped. Invalid JSON fails
//! with the message of Go's scanner (`encoding/json/scanner.go`).

/// Why the text is not JSON: Go's `SyntaxError` message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IndentError(String);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    ObjectKey,
    ObjectValue,
    Array,
}

/// The scanner's state: what the next byte may be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    BeginValue,
    /// After `[`.
    BeginValueOrEmpty,
    /// After `{`.
    BeginStringOrEmpty,
    /// After `,` in an object.
    BeginString,
    InString,
    InStringEsc,
    /// Inside `\uXXXX`, with this many hex digits read.
    InStringEscU(u8),
    Neg,
    /// After a leading `0`.
    Zero,
    /// In the integer digits.
    Digits,
    Dot,
    Fraction,
    E,
    ESign,
    Exponent,
    /// Inside `true`, `false` or `null`, this many bytes matched.
    Literal(&'static str, usize),
    EndValue,
    EndTop,
}

/// What a byte was to the scanner (Go's `scan*` codes, as `Indent` needs them).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// Part of a value already begun (string content, digits).
    Continue,
    /// Punctuation or the first byte of a value.
    Other,
    EndObject,
    EndArray,
    SkipSpace,
}

struct Scanner {
    state: State,
    stack: Vec<Container>,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Go's `quoteChar`: the byte as a quoted character.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_owned(),
        b'"' => r#"'"'"#.to_owned(),
        c => {
            let quoted = applyset_merge::value::go_quote(&char::from(c).to_string());
            format!("'{}'", &quoted[1..quoted.len() - 1])
        }
    }
}

fn invalid(c: u8, context: &str) -> IndentError {
    IndentError(format!("invalid character {} {context}", quote_char(c)))
}

impl Scanner {
    fn step(&mut self, c: u8) -> Result<Scan, IndentError> {
        use State::*;
        match self.state {
            BeginValueOrEmpty if c == b']' => return self.end_value(c),
            BeginStringOrEmpty if c == b'}' => {
                if let Some(top) = self.stack.last_mut() {
                    *top = Container::ObjectValue;
                }
                return self.end_value(c);
            }
            BeginValueOrEmpty | BeginValue | BeginStringOrEmpty | BeginString if is_space(c) => {
                return Ok(Scan::SkipSpace);
            }
            BeginString | BeginStringOrEmpty => {
                if c != b'"' {
                    return Err(invalid(c, "looking for beginning of object key string"));
                }
                self.state = InString;
                return Ok(Scan::Other);
            }
            BeginValue | BeginValueOrEmpty => return self.begin_value(c),
            InString => match c {
                b'"' => self.state = EndValue,
                b'\\' => self.state = InStringEsc,
                c if c < 0x20 => return Err(invalid(c, "in string literal")),
                _ => {}
            },
            InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => self.state = InString,
                b'u' => self.state = InStringEscU(0),
                c => return Err(invalid(c, "in string escape code")),
            },
            InStringEscU(read) => {
                if !c.is_ascii_hexdigit() {
                    return Err(invalid(c, "in \\u hexadecimal character escape"));
                }
                self.state = if read == 3 { InString } else { InStringEscU(read + 1) };
            }
            Neg => match c {
                b'0' => self.state = Zero,
                b'1'..=b'9' => self.state = Digits,
                c => return Err(invalid(c, "in numeric literal")),
            },
            Digits if c.is_ascii_digit() => {}
            Zero | Digits => match c {
                b'.' => self.state = Dot,
                b'e' | b'E' => self.state = E,
                c => return self.end_value(c),
            },
            Dot => {
                if !c.is_ascii_digit() {
                    return Err(invalid(c, "after decimal point in numeric literal"));
                }
                self.state = Fraction;
            }
            Fraction => match c {
                c if c.is_ascii_digit() => {}
                b'e' | b'E' => self.state = E,
                c => return self.end_value(c),
            },
            E => match c {
                b'+' | b'-' => self.state = ESign,
                c if c.is_ascii_digit() => self.state = Exponent,
                c => return Err(invalid(c, "in exponent of numeric literal")),
            },
            ESign => {
                if !c.is_ascii_digit() {
                    return Err(invalid(c, "in exponent of numeric literal"));
                }
                self.state = Exponent;
            }
            Exponent => {
                if !c.is_ascii_digit() {
                    return self.end_value(c);
                }
            }
            Literal(word, matched) => {
                let expected = word.as_bytes()[matched];
                if c != expected {
                    return Err(invalid(c, &format!("in literal {word} (expecting {})", quote_char(expected))));
                }
                self.state = if matched + 1 == word.len() { EndValue } else { Literal(word, matched + 1) };
            }
            EndValue => return self.end_value(c),
            EndTop => {
                if !is_space(c) {
                    return Err(invalid(c, "after top-level value"));
                }
                return Ok(Scan::Other);
            }
        }
        Ok(Scan::Continue)
    }

    fn begin_value(&mut self, c: u8) -> Result<Scan, IndentError> {
        self.state = match c {
            b'{' => {
                self.stack.push(Container::ObjectKey);
                State::BeginStringOrEmpty
            }
            b'[' => {
                self.stack.push(Container::Array);
                State::BeginValueOrEmpty
            }
            b'"' => State::InString,
            b'-' => State::Neg,
            b'0' => State::Zero,
            b'1'..=b'9' => State::Digits,
            b't' => State::Literal("true", 1),
            b'f' => State::Literal("false", 1),
            b'n' => State::Literal("null", 1),
            c => return Err(invalid(c, "looking for beginning of value")),
        };
        Ok(Scan::Other)
    }

    /// After a complete value: what its container allows next.
    fn end_value(&mut self, c: u8) -> Result<Scan, IndentError> {
        let Some(&top) = self.stack.last() else {
            self.state = State::EndTop;
            return self.step(c);
        };
        if is_space(c) {
            self.state = State::EndValue;
            return Ok(Scan::SkipSpace);
        }
        match (top, c) {
            (Container::ObjectKey, b':') => {
                *self.stack.last_mut().expect("an object is open") = Container::ObjectValue;
                self.state = State::BeginValue;
                Ok(Scan::Other)
            }
            (Container::ObjectKey, c) => Err(invalid(c, "after object key")),
            (Container::ObjectValue, b',') => {
                *self.stack.last_mut().expect("an object is open") = Container::ObjectKey;
                self.state = State::BeginString;
                Ok(Scan::Other)
            }
            (Container::ObjectValue, b'}') => {
                self.pop();
                Ok(Scan::EndObject)
            }
            (Container::ObjectValue, c) => Err(invalid(c, "after object key:value pair")),
            (Container::Array, b',') => {
                self.state = State::BeginValue;
                Ok(Scan::Other)
            }
            (Container::Array, b']') => {
                self.pop();
                Ok(Scan::EndArray)
            }
            (Container::Array, c) => Err(invalid(c, "after array element")),
        }
    }

    fn pop(&mut self) {
        self.stack.pop();
        self.state = if self.stack.is_empty() { State::EndTop } else { State::EndValue };
    }

    /// Whether the input may end here (Go's `scanner.eof`).
    fn at_end(&mut self) -> bool {
        match self.state {
            State::EndTop => true,
            // A number ends at the end of the input.
            State::Zero | State::Digits | State::Fraction | State::Exponent if self.stack.is_empty() => true,
            State::EndValue if self.stack.is_empty() => true,
            _ => false,
        }
    }
}

/// `json.Indent(dst, text, "", indent)`.
pub fn go_indent(text: &str, indent: &str) -> Result<String, IndentError> {
    let mut scanner = Scanner { state: State::BeginValue, stack: Vec::new() };
    let mut out = String::with_capacity(text.len() * 2);
    let mut need_indent = false;
    let mut depth = 0usize;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(indent);
        }
    };
    for (at, c) in text.bytes().enumerate() {
        let scan = scanner.step(c)?;
        if scan == Scan::SkipSpace {
            continue;
        }
        if need_indent && scan != Scan::EndObject && scan != Scan::EndArray {
            need_indent = false;
            depth += 1;
            newline(&mut out, depth);
        }
        // Bytes are copied as UTF-8 sequences: a multi-byte character is only ever inside a
        // string, where every byte continues it.
        let one = |out: &mut String| {
            if text.is_char_boundary(at) {
                let rest = &text[at..];
                out.push_str(&rest[..char_len(rest)]);
            }
        };
        if scan == Scan::Continue {
            one(&mut out);
            continue;
        }
        match c {
            b'{' | b'[' => {
                need_indent = true;
                out.push(char::from(c));
            }
            b',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            b':' => out.push_str(": "),
            b'}' | b']' => {
                if need_indent {
                    need_indent = false;
                } else {
                    depth = depth.saturating_sub(1);
                    newline(&mut out, depth);
                }
                out.push(char::from(c));
            }
            _ => one(&mut out),
        }
    }
    if !scanner.at_end() {
        return Err(IndentError("unexpected end of JSON input".to_owned()));
    }
    Ok(out)
}

/// The byte length of the character `text` starts with.
fn char_len(text: &str) -> usize {
    text.chars().next().map_or(0, char::len_utf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indent(text: &str) -> String {
        go_indent(text, "  ").unwrap_or_else(|e| format!("error: {e}"))
    }

    #[test]
    fn respaces_without_reencoding() {
        assert_eq!(
            indent("{\"b\":1.50,\"a\":[1,{}],\"c\":\"\\u003cé\\n\",\"d\":[],\"e\":{\"f\":null}}\n"),
            "{\n  \"b\": 1.50,\n  \"a\": [\n    1,\n    {}\n  ],\n  \"c\": \"\\u003cé\\n\",\n  \"d\": [],\n  \"e\": {\n    \"f\": null\n  }\n}\n"
        );
        assert_eq!(indent("  { \"a\" : true }  "), "{\n  \"a\": true\n}  ", "leading blanks dropped, trailing kept");
        assert_eq!(indent("-1.5e+3"), "-1.5e+3");
        assert_eq!(indent("\"{,:}[\""), "\"{,:}[\"", "punctuation inside strings stays");
    }

    #[test]
    fn invalid_json_fails_with_gos_messages() {
        assert_eq!(indent(""), "error: unexpected end of JSON input");
        assert_eq!(indent("{\"a\":1"), "error: unexpected end of JSON input");
        assert_eq!(indent("x"), "error: invalid character 'x' looking for beginning of value");
        assert_eq!(indent("{a}"), "error: invalid character 'a' looking for beginning of object key string");
        assert_eq!(indent("{\"a\" 1}"), "error: invalid character '1' after object key");
        assert_eq!(indent("{\"a\":1 2}"), "error: invalid character '2' after object key:value pair");
        assert_eq!(indent("[1 2]"), "error: invalid character '2' after array element");
        assert_eq!(indent("{} x"), "error: invalid character 'x' after top-level value");
        assert_eq!(indent("tru"), "error: unexpected end of JSON input");
        assert_eq!(indent("trux"), "error: invalid character 'x' in literal true (expecting 'e')");
        assert_eq!(indent("1.x"), "error: invalid character 'x' after decimal point in numeric literal");
        assert_eq!(indent("\"\\x\""), "error: invalid character 'x' in string escape code");
        assert_eq!(indent("\"a\nb\""), "error: invalid character '\\n' in string literal");
        assert_eq!(indent("{'a':1}"), "error: invalid character '\\'' looking for beginning of object key string");
    }
}
