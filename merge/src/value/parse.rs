//! Parsing with Go's rules (sigs.k8s.io/json): a hand-written parser, because serde_json types
//! `-0` as a float, and so that nesting is bounded by [`MAX_DEPTH`] without recursion surprises.

use super::{MAX_DEPTH, Map, ParseError, Value};

pub(super) struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Parser<'a> {
        Parser { bytes, pos: 0, depth: 0 }
    }

    pub(super) fn parse_document(mut self) -> Result<Value, ParseError> {
        self.skip_whitespace();
        if self.pos >= self.bytes.len() {
            return Err(self.error("EOF while parsing a value"));
        }
        let v = self.parse_value()?;
        self.skip_whitespace();
        if self.pos < self.bytes.len() {
            return Err(self.error("trailing characters"));
        }
        Ok(v)
    }

    /// An error message with serde_json-style position information.
    fn error(&self, what: &str) -> ParseError {
        let consumed = &self.bytes[..self.pos.min(self.bytes.len())];
        let line = consumed.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = consumed.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        ParseError(format!("{what} at line {line} column {column}"))
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn expect_literal(&mut self, literal: &str, value: Value) -> Result<Value, ParseError> {
        if self.bytes[self.pos..].starts_with(literal.as_bytes()) {
            self.pos += literal.len();
            Ok(value)
        } else {
            Err(self.error("expected value"))
        }
    }

    fn parse_value(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            Some(b'{') => self.nested(Self::parse_object),
            Some(b'[') => self.nested(Self::parse_array),
            Some(b'"') => self.parse_string().map(Value::String),
            Some(b't') => self.expect_literal("true", Value::Bool(true)),
            Some(b'f') => self.expect_literal("false", Value::Bool(false)),
            Some(b'n') => self.expect_literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.parse_number(),
            Some(_) => Err(self.error("expected value")),
            None => Err(self.error("EOF while parsing a value")),
        }
    }

    fn nested(&mut self, parse: fn(&mut Self) -> Result<Value, ParseError>) -> Result<Value, ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("exceeded max depth"));
        }
        let v = super::deeper(|| parse(self))?;
        self.depth -= 1;
        Ok(v)
    }

    fn parse_array(&mut self) -> Result<Value, ParseError> {
        self.pos += 1; // [
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_whitespace();
            items.push(self.parse_value()?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                Some(_) => return Err(self.error("expected `,` or `]`")),
                None => return Err(self.error("EOF while parsing a list")),
            }
        }
    }

    fn parse_object(&mut self) -> Result<Value, ParseError> {
        self.pos += 1; // {
        let mut map = Map::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error("key must be a string"));
            }
            let key = self.parse_string()?;
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:`"));
            }
            self.pos += 1;
            self.skip_whitespace();
            let value = self.parse_value()?;
            // A repeated key: the last one wins, as in Go.
            map.insert(key, value);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                Some(_) => return Err(self.error("expected `,` or `}`")),
                None => return Err(self.error("EOF while parsing an object")),
            }
        }
    }

    fn parse_string(&mut self) -> Result<String, ParseError> {
        self.pos += 1; // opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            let start = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.extend_from_slice(&self.bytes[start..self.pos]);
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    // Go replaces invalid UTF-8 with U+FFFD.
                    return Ok(match String::from_utf8(out) {
                        Ok(s) => s,
                        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
                    });
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let escaped = match self.peek() {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.pos += 1;
                            let c = self.parse_unicode_escape()?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                            continue;
                        }
                        _ => return Err(self.error("invalid escape")),
                    };
                    self.pos += 1;
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(escaped.encode_utf8(&mut buf).as_bytes());
                }
                Some(_) => {
                    return Err(self.error("control character (\\u0000-\\u001F) found while parsing a string"));
                }
                None => return Err(self.error("EOF while parsing a string")),
            }
        }
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = self.bytes.get(self.pos..self.pos + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        let v = u16::from_str_radix(text, 16).ok()?;
        self.pos += 4;
        Some(v)
    }

    /// `\uXXXX`, with surrogate pairs; a lone surrogate becomes U+FFFD (Go's rule).
    fn parse_unicode_escape(&mut self) -> Result<char, ParseError> {
        let first = self.hex4().ok_or_else(|| self.error("invalid unicode escape"))?;
        if !(0xD800..0xDC00).contains(&first) {
            return Ok(char::from_u32(first as u32).unwrap_or('\u{fffd}'));
        }
        if self.bytes[self.pos..].starts_with(b"\\u") {
            let save = self.pos;
            self.pos += 2;
            if let Some(second) = self.hex4()
                && (0xDC00..0xE000).contains(&second)
            {
                let c = 0x10000 + (((first as u32) - 0xD800) << 10) + ((second as u32) - 0xDC00);
                return Ok(char::from_u32(c).unwrap_or('\u{fffd}'));
            }
            self.pos = save;
        }
        Ok('\u{fffd}')
    }

    /// Go's number rules: an integer literal that fits in i64 is an `Int` (so `-0` is
    /// `Int(0)`); anything with a fraction or exponent, or too large, is a `Float`.
    fn parse_number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.skip_digits(),
            _ => return Err(self.error("invalid number")),
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            integer = false;
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("invalid number"));
            }
            self.skip_digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            integer = false;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("invalid number"));
            }
            self.skip_digits();
        }
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).expect("ASCII");
        if integer && let Ok(i) = text.parse::<i64>() {
            return Ok(Value::Int(i));
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Value::Float(f)),
            _ => Err(self.error("number out of range")),
        }
    }

    fn skip_digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }
}
