//! One file's bytes to its documents, as kubectl's `StreamVisitor` reads them
//! (`k8s.io/apimachinery/pkg/util/yaml.YAMLOrJSONDecoder`).
//!
//! * The bytes are decoded with a BOM override: a UTF-8 BOM is dropped, a UTF-16 (LE/BE) BOM
//!   switches to UTF-16; otherwise UTF-8, invalid sequences replaced by U+FFFD.
//! * If the first non-blank character (within the first 4096 bytes) is `{`, the stream is a
//!   sequence of JSON values. When a JSON value fails to parse, the rest of the stream (from
//!   the end of the last good value, after blanks up to the first newline) is read as YAML
//!   instead; if its first YAML document fails too, the JSON error is reported.
//! * Otherwise it is YAML, split on lines that start with `---` (the rest of such a line may
//!   only be blanks or a `#` comment). Each piece is parsed on its own.
//! * Empty and `null` documents are skipped.

use std::iter::{Enumerate, Peekable};
use std::str::Split;

use applyset_merge::Value;

use super::limits::LimitExceeded;
use super::{go_json, yaml};

use crate::causes::with_causes;

/// How far kubectl looks for the `{` that makes a stream JSON.
const SNIFF_BYTES: usize = 4096;

/// A document of a stream. `number` counts the `---`-separated pieces of a YAML stream from 1
/// (including empty or comment-only ones, but not an empty piece before a leading `---`), or
/// the values of a JSON stream; `line` is the 1-based line where the document starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub number: usize,
    pub line: usize,
    pub value: Value,
    /// The JSON text kubectl holds for the document: the value's own text for JSON streams,
    /// Go's serialisation of the converted YAML otherwise. Used in messages.
    pub raw: String,
}

/// Why a stream could not be read. Reading stops at the first such error, as in kubectl.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentError {
    pub document: usize,
    /// 1-based position in the stream, when known.
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
    /// Set when the document is over the per-document cap (not a syntax error).
    pub too_large: Option<LimitExceeded>,
    /// The error as kubectl's stream decoder words it (what follows `error parsing FILE: `).
    pub go_message: String,
}

impl DocumentError {
    fn too_large(document: usize, line: usize, limit: LimitExceeded) -> Self {
        let message = limit.to_string();
        DocumentError {
            document,
            line: Some(line),
            column: None,
            go_message: message.clone(),
            message,
            too_large: Some(limit),
        }
    }
}

/// The documents of a stream up to the first one that cannot be read, and that one's error:
/// kubectl applies the documents before a syntax error and skips the rest of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    pub documents: Vec<Document>,
    pub error: Option<DocumentError>,
}

/// Decodes a file's bytes to text the way kubectl's reader does (BOM-aware, lossy UTF-8).
pub fn decode_text(bytes: &[u8]) -> String {
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return String::from_utf8_lossy(rest).into_owned();
    }
    let utf16 = |rest: &[u8], le: bool| {
        let units: Vec<u16> = rest
            .chunks(2)
            .map(|c| match (c, le) {
                ([a, b], true) => u16::from_le_bytes([*a, *b]),
                ([a, b], false) => u16::from_be_bytes([*a, *b]),
                _ => 0xFFFD, // a dangling odd byte
            })
            .collect();
        String::from_utf16_lossy(&units)
    };
    if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        return utf16(rest, true);
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        return utf16(rest, false);
    }
    String::from_utf8_lossy(bytes).into_owned()
}

/// [`decode_text`] without a copy of the common case: UTF-8 without a BOM, valid.
pub fn decode_text_owned(bytes: Vec<u8>) -> String {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) || bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return decode_text(&bytes);
    }
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The non-empty, non-null documents of one stream (already decoded text).
pub fn parse_stream(text: &str) -> Result<Vec<Document>, DocumentError> {
    parse_stream_limited(text, None)
}

/// [`parse_stream`], refusing a document whose text is over `max_document` bytes before it
/// is parsed, and one whose aliases expand to more than that.
pub fn parse_stream_limited(text: &str, max_document: Option<u64>) -> Result<Vec<Document>, DocumentError> {
    let stream = parse_stream_partial(text, max_document);
    match stream.error {
        Some(error) => Err(error),
        None => Ok(stream.documents),
    }
}

/// [`parse_stream_limited`], keeping the documents read before an error.
pub fn parse_stream_partial(text: &str, max_document: Option<u64>) -> Stream {
    let mut documents = Vec::new();
    let result = if looks_like_json(text) {
        json_stream(text, max_document, &mut documents)
    } else {
        yaml_stream(text, 0, 0, None, max_document, &mut documents)
    };
    Stream { documents, error: result.err() }
}

fn looks_like_json(text: &str) -> bool {
    let mut end = text.len().min(SNIFF_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].trim_start().starts_with('{')
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1
}

fn json_stream(text: &str, max_document: Option<u64>, docs: &mut Vec<Document>) -> Result<(), DocumentError> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<&serde_json::value::RawValue>();
    let mut number = 0;
    let mut last_end = 0;
    loop {
        match values.next() {
            None => return Ok(()),
            Some(Ok(raw)) => {
                number += 1;
                let end = values.byte_offset();
                let raw = raw.get();
                let start = end - raw.len();
                last_end = end;
                if raw == "null" {
                    continue;
                }
                // The value's text was only scanned so far (a borrowed slice): converting it
                // is what costs memory.
                if let Some(limit) = max_document
                    && raw.len() as u64 > limit
                {
                    let exceeded = LimitExceeded::Document { size: raw.len() as u64, limit };
                    return Err(DocumentError::too_large(number, line_of(text, start), exceeded));
                }
                let value = Value::from_json_str(raw).map_err(|e| DocumentError {
                    document: number,
                    line: Some(line_of(text, start)),
                    column: None,
                    go_message: go_json::syntax_error(text.as_bytes(), start).unwrap_or_else(|| e.0.clone()),
                    message: e.0,
                    too_large: None,
                })?;
                docs.push(Document { number, line: line_of(text, start), value, raw: raw.to_owned() });
            }
            Some(Err(e)) => {
                let message = if e.is_eof() { "unexpected EOF".to_owned() } else { strip_position(&with_causes(&e)) };
                let json_error = DocumentError {
                    document: number + 1,
                    line: Some(e.line()),
                    // serde_json says column 0 at the start of a line (e.g. at EOF).
                    column: Some(e.column()).filter(|&c| c > 0),
                    go_message: go_json::syntax_error(text.as_bytes(), last_end).unwrap_or_else(|| message.clone()),
                    message,
                    too_large: None,
                };
                // kubectl's fallback: read the rest as YAML; a failure of its first document
                // reports the JSON error.
                let start = last_end + leading_blanks_through_newline(&text[last_end..]);
                if start >= text.len() {
                    return Err(json_error);
                }
                let line_offset = line_of(text, start) - 1;
                return yaml_stream(&text[start..], line_offset, number, Some(json_error), max_document, docs);
            }
        }
    }
}

/// The length of the blanks `rest` starts with, up to and including the first newline: what
/// kubectl's JSON-to-YAML fallback skips.
fn leading_blanks_through_newline(rest: &str) -> usize {
    let mut skip = 0;
    for (i, b) in rest.bytes().enumerate() {
        if !b.is_ascii_whitespace() && b != 0x0B {
            skip = i;
            break;
        }
        if b == b'\n' {
            skip = i + 1;
            break;
        }
        skip = i + 1;
    }
    skip
}

/// serde_json appends " at line L column C"; positions are reported separately.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// kubectl's `YAMLReader` + `YAMLToJSONDecoder`. `line_offset` is the number of lines before
/// `text` in the file; document numbers continue after `number`. With `first_error`, a failure
/// of the first piece reports that error instead (the JSON fallback).
fn yaml_stream(
    text: &str,
    line_offset: usize,
    mut number: usize,
    mut first_error: Option<DocumentError>,
    max_document: Option<u64>,
    docs: &mut Vec<Document>,
) -> Result<(), DocumentError> {
    let mut piece = String::new();
    let mut piece_start = 0;
    let mut lines = text.split('\n').enumerate().peekable();
    while let Some((index, mut line)) = lines.next() {
        let last = lines.peek().is_none();
        if last && line.is_empty() {
            break;
        }
        if !last {
            line = line.strip_suffix('\r').unwrap_or(line);
        }
        if let Some(rest) = line.strip_prefix("---") {
            let rest = rest.trim();
            if !rest.is_empty() && !rest.starts_with('#') {
                let message = format!("invalid Yaml document separator: {rest}");
                let error = DocumentError {
                    document: number + 1,
                    line: Some(line_offset + index + 1),
                    column: None,
                    go_message: message.clone(),
                    message,
                    too_large: None,
                };
                return Err(first_error.unwrap_or(error));
            }
            if !piece.is_empty() {
                number += 1;
                yaml_document(&piece, line_offset + piece_start, number, first_error.take(), max_document, docs)?;
                piece.clear();
                continue;
            }
            // A separator that starts a piece stays in it (YAML's explicit document start).
        }
        if piece.is_empty() {
            piece_start = index;
        }
        piece.push_str(line);
        piece.push('\n');
        if let Some(limit) = max_document
            && piece.len() as u64 > limit
        {
            let exceeded = LimitExceeded::Document { size: measure_document(piece.len() as u64, &mut lines), limit };
            return Err(DocumentError::too_large(number + 1, line_offset + piece_start + 1, exceeded));
        }
    }
    if !piece.is_empty() {
        number += 1;
        yaml_document(&piece, line_offset + piece_start, number, first_error.take(), max_document, docs)?;
    }
    Ok(())
}

/// Decodes one document of a YAML stream, numbered `number`, whose first line is line
/// `first_line` (0-based) of the file; a `null` document adds nothing. With `first_error`, a
/// failure other than a size limit reports that error instead (the JSON fallback).
fn yaml_document(
    piece: &str,
    first_line: usize,
    number: usize,
    first_error: Option<DocumentError>,
    max_document: Option<u64>,
    docs: &mut Vec<Document>,
) -> Result<(), DocumentError> {
    match yaml::parse_document_limited(piece, max_document) {
        Ok(Value::Null) => Ok(()),
        Ok(value) => {
            let raw = value.to_json_string();
            docs.push(Document { number, line: first_line + 1, value, raw });
            Ok(())
        }
        Err(e) if e.too_large.is_some() => Err(DocumentError {
            document: number,
            line: e.line.map(|l| l + first_line),
            column: e.column,
            go_message: e.message.clone(),
            message: e.message,
            too_large: e.too_large,
        }),
        Err(e) => Err(first_error.unwrap_or(DocumentError {
            document: number,
            line: e.line.map(|l| l + first_line),
            column: e.column,
            go_message: e.go_message(),
            message: e.message,
            too_large: None,
        })),
    }
}

/// The size of a document over the limit: the `read` bytes, plus the rest of it up to the next
/// separator line, which is only measured.
fn measure_document(read: u64, lines: &mut Peekable<Enumerate<Split<'_, char>>>) -> u64 {
    let mut size = read;
    while let Some((_, next)) = lines.next_if(|(_, next)| !next.starts_with("---")) {
        size += next.len() as u64 + u64::from(lines.peek().is_some());
    }
    size
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<String> {
        parse_stream(text).unwrap().into_iter().map(|d| d.raw).collect()
    }

    fn numbers(text: &str) -> Vec<(usize, usize)> {
        parse_stream(text).unwrap().into_iter().map(|d| (d.number, d.line)).collect()
    }

    #[test]
    fn yaml_documents_split_on_separator_lines() {
        let text = "# header\n---\na: 1\n--- # comment\n\n---\n~\n---\nb: 2\n---   \nc: [\n  3]\n";
        assert_eq!(values(text), [r#"{"a":1}"#, r#"{"b":2}"#, r#"{"c":[3]}"#]);
        assert_eq!(numbers(text), [(2, 3), (5, 9), (6, 11)]);
        // A leading separator stays part of the first piece.
        assert_eq!(numbers("---\na: 1\n---\nb: 2"), [(1, 1), (2, 4)]);
        // `---` inside a block scalar still splits, as in kubectl.
        assert_eq!(values("a: |\n  x\n---\n  z\n"), [r#"{"a":"x\n"}"#, r#""z""#]);
    }

    #[test]
    fn crlf_lines() {
        assert_eq!(values("a: 1\r\n---\r\nb: \"x\"\r\n"), [r#"{"a":1}"#, r#"{"b":"x"}"#]);
    }

    #[test]
    fn invalid_separator() {
        let e = parse_stream("a: 1\n--- b: 2\n").unwrap_err();
        assert_eq!(e.message, "invalid Yaml document separator: b: 2");
        assert_eq!((e.document, e.line), (1, Some(2)));
        assert_eq!(parse_stream("a: 1\n----\n").unwrap_err().message, "invalid Yaml document separator: -");
        assert_eq!(parse_stream("--- !tag\na: 1\n").unwrap_err().message, "invalid Yaml document separator: !tag");
    }

    #[test]
    fn yaml_error_positions_are_file_lines() {
        let e = parse_stream("a: 1\n---\nb: 1\nc: d: e\n").unwrap_err();
        assert_eq!(e.document, 2);
        assert_eq!((e.line, e.column), (Some(4), Some(5)));
        assert_eq!(e.message, "mapping values are not allowed in this context");
    }

    #[test]
    fn json_streams() {
        assert_eq!(values("  {\"a\": 1.0}\n{\"b\":[1, 2]}null{}"), [r#"{"a": 1.0}"#, r#"{"b":[1, 2]}"#, "{}"]);
        let docs = parse_stream("{\"a\": 1.0}").unwrap();
        assert_eq!(docs[0].value.to_json_string(), r#"{"a":1}"#);
        assert!(matches!(docs[0].value.as_object().unwrap()["a"], Value::Float(_)));
        // JSON followed by YAML switches to YAML.
        assert_eq!(values("{\"a\": 1}\n---\nb: yes\n"), [r#"{"a": 1}"#, r#"{"b":true}"#]);
        // A first value that is only YAML (flow mapping, trailing comma) is read as YAML.
        assert_eq!(values("{a: yes, b: 0755,}\n"), [r#"{"a":true,"b":493}"#]);
        // Trailing comment after JSON.
        assert_eq!(values("{\"a\": 1}\n# done\n"), [r#"{"a": 1}"#]);
        // When YAML fails too, the JSON error is reported.
        let e = parse_stream("{\"a\": 1}\n{\"b\": [}\n").unwrap_err();
        assert_eq!(e.document, 2);
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("expected value"), "{}", e.message);
        assert_eq!(parse_stream("{\"a\": 1").unwrap_err().message, "unexpected EOF");
    }

    #[test]
    fn json_sniffing_looks_past_blanks_only() {
        assert_eq!(values("\n\n   {\"a\": 1}"), [r#"{"a": 1}"#]);
        assert_eq!(values("# c\n{\"a\": 1}"), [r#"{"a":1}"#]);
    }

    #[test]
    fn byte_order_marks() {
        assert_eq!(decode_text(b"\xEF\xBB\xBFa: 1"), "a: 1");
        let le: Vec<u8> = [0xFF, 0xFE].into_iter().chain("a: é".encode_utf16().flat_map(u16::to_le_bytes)).collect();
        assert_eq!(decode_text(&le), "a: é");
        let be: Vec<u8> = [0xFE, 0xFF].into_iter().chain("a: é".encode_utf16().flat_map(u16::to_be_bytes)).collect();
        assert_eq!(decode_text(&be), "a: é");
        assert_eq!(decode_text(b"a: \xFF"), "a: \u{FFFD}");
    }

    #[test]
    fn json_nested_past_gos_limit_is_an_error() {
        use applyset_merge::value::MAX_DEPTH;
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let nested = |levels: usize| "{\"a\":".repeat(levels) + "1" + &"}".repeat(levels);
                assert!(parse_stream(&nested(MAX_DEPTH)).is_ok());
                let e = parse_stream(&nested(MAX_DEPTH + 1)).unwrap_err();
                assert_eq!(
                    e.go_message,
                    format!("json: offset {}: invalid character '{{' exceeded max depth", 5 * MAX_DEPTH + 1)
                );
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn documents_over_the_cap_are_refused_before_parsing() {
        let small = "a: 1\n";
        let big = format!("b: \"{}\"\n# trailing comment\n", "x".repeat(200));
        let text = format!("{small}---\n{big}---\nc: [\n");
        // Without a cap, the broken third document is the error.
        assert_eq!(parse_stream(&text).unwrap_err().document, 3);
        let e = parse_stream_limited(&text, Some(100)).unwrap_err();
        assert_eq!((e.document, e.line), (2, Some(3)));
        // The whole document is measured (its lines and their newlines), the separator not.
        let size = big.len() as u64;
        assert_eq!(e.too_large, Some(LimitExceeded::Document { size, limit: 100 }));
        assert!(
            e.message.starts_with(&format!("the document is {size} bytes, over the limit of 100 bytes")),
            "{}",
            e.message
        );
        // At the cap is fine.
        assert_eq!(values(&format!("{small}---\n{big}")).len(), 2);
        assert!(parse_stream_limited(&format!("{small}---\n{big}"), Some(size)).is_ok());
        // JSON values are measured on their text.
        let json = format!("{{\"a\": 1}}\n{{\"b\": \"{}\"}}", "y".repeat(200));
        let e = parse_stream_limited(&json, Some(100)).unwrap_err();
        assert_eq!((e.document, e.line), (2, Some(2)));
        assert_eq!(e.too_large, Some(LimitExceeded::Document { size: 209, limit: 100 }));
        // A syntax error is not a size error.
        assert_eq!(parse_stream_limited("a: [\n", Some(100)).unwrap_err().too_large, None);
    }

    #[test]
    fn owned_decoding_matches_decode_text() {
        for bytes in [&b"a: 1"[..], b"\xEF\xBB\xBFa: 1", b"\xFF\xFEa\x00", b"\xFE\xFF\x00a", b"a: \xFF", b""] {
            assert_eq!(decode_text_owned(bytes.to_vec()), decode_text(bytes));
        }
    }
}
