//! YAML as SOPS's YAML store reads it (go.yaml.in/yaml/v3 nodes): each document of the stream
//! is a tree; plain scalars resolve by yaml.v3's rules (YAML 1.2 booleans, `0o`/`0x`/`0b`
//! and 1.1-style octal integers, underscores, timestamps), quoted and block scalars are
//! strings, aliases are copies of their anchor. Events come from the libyaml parser the
//! manifest loader uses; the decrypted tree is written back through its emitter.

use std::collections::HashMap;

use applyset_merge::value::MAX_DEPTH;

use super::error::SopsError;
use super::time;
use super::tree::Node;
use crate::manifest::yaml::encode::{float_text, string_style};
use crate::manifest::yaml::libyaml::{Event, Parser};
use crate::manifest::yaml::libyaml_emit::{Emitter, ScalarStyle};

fn syntax(message: impl Into<String>) -> SopsError {
    SopsError::Syntax { format: "YAML", message: message.into() }
}

/// A collection being read.
enum Open {
    Seq(Vec<Node>, Option<String>),
    Map(Vec<(String, Node)>, Option<String>, Option<String>),
}

/// The documents of a YAML stream. Aliases may expand to at most `budget` nodes in all (a
/// "billion laughs" stream is refused).
pub(crate) fn parse(text: &[u8], budget: usize) -> Result<Vec<Node>, SopsError> {
    let mut parser = Parser::new(text);
    let mut documents = Vec::new();
    let mut anchors: HashMap<String, Node> = HashMap::new();
    let mut expanded = 0usize;
    let mut stack: Vec<Open> = Vec::new();
    loop {
        let (event, mark) = parser.next().map_err(|e| syntax(located(&e)))?;
        let at = || format!("line {}", mark.line + 1);
        let (node, anchor) = match event {
            Event::StreamStart | Event::DocumentEnd => continue,
            Event::StreamEnd => return Ok(documents),
            Event::DocumentStart => {
                anchors.clear();
                continue;
            }
            Event::SequenceStart { anchor } | Event::MappingStart { anchor } if stack.len() >= MAX_DEPTH => {
                let _ = anchor;
                return Err(syntax(format!("{}: nested deeper than {MAX_DEPTH} levels", at())));
            }
            Event::SequenceStart { anchor } => {
                stack.push(Open::Seq(Vec::new(), anchor));
                continue;
            }
            Event::MappingStart { anchor } => {
                stack.push(Open::Map(Vec::new(), None, anchor));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(items, anchor)) => (Node::Seq(items), anchor),
                Some(Open::Map(entries, _, anchor)) => (Node::Map(entries), anchor),
                None => return Err(syntax(format!("{}: unbalanced collection", at()))),
            },
            Event::Scalar { anchor, tag, value, implicit } => (scalar(&tag, value, implicit), anchor),
            Event::Alias { anchor } => {
                let target =
                    anchors.get(&anchor).ok_or_else(|| syntax(format!("{}: unknown anchor {anchor:?}", at())))?;
                expanded = expanded.saturating_add(size(target));
                if expanded > budget {
                    return Err(syntax("aliases expand to too many nodes"));
                }
                (target.clone(), None)
            }
        };
        if let Some(anchor) = anchor {
            anchors.insert(anchor, node.clone());
        }
        match stack.last_mut() {
            None => documents.push(node),
            Some(Open::Seq(items, _)) => items.push(node),
            Some(Open::Map(entries, pending, _)) => match pending.take() {
                Some(key) => entries.push((key, node)),
                None => match node {
                    Node::Str(key) => *pending = Some(key),
                    // SOPS refuses trees with keys that are not strings.
                    _ => return Err(syntax(format!("{}: a mapping key that is not a string", at()))),
                },
            },
        }
    }
}

/// How many nodes an alias copies.
fn size(node: &Node) -> usize {
    match node {
        Node::Map(entries) => 1 + entries.iter().map(|(_, v)| 1 + size(v)).sum::<usize>(),
        Node::Seq(items) => 1 + items.iter().map(size).sum::<usize>(),
        _ => 1,
    }
}

fn located(error: &crate::manifest::yaml::YamlError) -> String {
    match error.line {
        Some(line) => format!("line {line}: {}", error.message),
        None => error.message.clone(),
    }
}

/// A scalar as yaml.v3 decodes it into an `interface{}`.
fn scalar(tag: &str, value: String, plain: bool) -> Node {
    let short = tag.strip_prefix("tag:yaml.org,2002:").map(|t| format!("!!{t}"));
    match short.as_deref() {
        // Quoted, block, or tagged as a string: a string.
        _ if !plain && tag.is_empty() => Node::Str(value),
        Some("!!str") => Node::Str(value),
        Some("!!binary") => match crate::manifest::resolve::decode_base64(&value) {
            Some(bytes) => String::from_utf8(bytes).map_or_else(|e| Node::Bytes(e.into_bytes()), Node::Str),
            None => Node::Str(value),
        },
        None if !tag.is_empty() && tag != "!" => Node::Str(value),
        _ => resolve(value),
    }
}

/// yaml.v3's `resolve` for a plain scalar.
fn resolve(value: String) -> Node {
    match value.as_str() {
        "true" | "True" | "TRUE" => return Node::Bool(true),
        "false" | "False" | "FALSE" => return Node::Bool(false),
        "" | "~" | "null" | "Null" | "NULL" => return Node::Null,
        ".nan" | ".NaN" | ".NAN" => return Node::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Node::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Node::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match value.as_bytes()[0] {
        b'.' => match value.parse::<f64>() {
            Ok(f) => Node::Float(f),
            Err(_) => Node::Str(value),
        },
        b'0'..=b'9' | b'+' | b'-' => {
            if let Some(timestamp) = time::yaml_timestamp(&value) {
                return Node::Time(timestamp);
            }
            let plain = value.replace('_', "");
            if let Some(i) = go_parse_int(&plain) {
                return Node::Int(i);
            }
            if crate::manifest::resolve::is_yaml_style_float(&plain)
                && let Ok(f) = plain.parse::<f64>()
            {
                return Node::Float(f);
            }
            Node::Str(value)
        }
        _ => Node::Str(value),
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)` (sign, then `0x`/`0o`/`0b`/`0` prefixes), and yaml.v3's
/// own `0b`/`0o` fallbacks, which the first already covers.
fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, body) = if let Some(rest) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        (16, rest)
    } else if let Some(rest) = digits.strip_prefix("0o").or_else(|| digits.strip_prefix("0O")) {
        (8, rest)
    } else if let Some(rest) = digits.strip_prefix("0b").or_else(|| digits.strip_prefix("0B")) {
        (2, rest)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u64::from_str_radix(body, radix).ok()?;
    if negative { 0i64.checked_sub_unsigned(magnitude) } else { i64::try_from(magnitude).ok() }
}

/// The documents as YAML, in their key order, separated by `---` lines.
pub(crate) fn emit(documents: &[Node]) -> Result<String, SopsError> {
    let mut out = String::new();
    for (index, document) in documents.iter().enumerate() {
        let mut emitter = Emitter::new();
        write(&mut emitter, document, &mut Vec::new())?;
        let text = emitter.finish().ok_or_else(|| syntax("the decrypted document cannot be written as YAML"))?;
        if index > 0 {
            out.push_str("---\n");
        }
        out.push_str(&text);
    }
    Ok(out)
}

fn write(emitter: &mut Emitter, node: &Node, path: &mut Vec<String>) -> Result<(), SopsError> {
    match node {
        Node::Map(entries) => {
            emitter.mapping_start();
            for (key, value) in entries {
                emitter.scalar(key, string_style(key));
                path.push(key.clone());
                let written = applyset_merge::value::deeper(|| write(emitter, value, path));
                path.pop();
                written?;
            }
            emitter.mapping_end();
        }
        Node::Seq(items) => {
            emitter.sequence_start();
            for item in items {
                applyset_merge::value::deeper(|| write(emitter, item, path))?;
            }
            emitter.sequence_end();
        }
        Node::Null => emitter.scalar("null", ScalarStyle::Plain),
        Node::Str(s) => emitter.scalar(s, string_style(s)),
        Node::Bytes(_) => {
            return Err(SopsError::NotText { path: super::error::KeyPath(path.clone()), format: "YAML" });
        }
        Node::Int(i) => emitter.scalar(&i.to_string(), ScalarStyle::Plain),
        Node::Float(f) if f.is_nan() => emitter.scalar(".nan", ScalarStyle::Plain),
        Node::Float(f) if f.is_infinite() => {
            emitter.scalar(if *f > 0.0 { ".inf" } else { "-.inf" }, ScalarStyle::Plain)
        }
        Node::Float(f) => emitter.scalar(&float_text(*f), ScalarStyle::Plain),
        Node::Bool(b) => emitter.scalar(if *b { "true" } else { "false" }, ScalarStyle::Plain),
        Node::Time(t) => emitter.scalar(t, ScalarStyle::Plain),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Node {
        parse(text.as_bytes(), 1000).unwrap().remove(0)
    }

    #[test]
    fn plain_scalars_resolve_as_yaml_v3() {
        let doc = one(
            "a: 1_000\nb: 0x10\nc: 017\nd: 0o17\ne: .5\nf: 1e3\ng: yes\nh: True\ni: ~\nj: '3'\nk: 2024-01-02\nl: -0b11\nm: 9223372036854775808\n",
        );
        let get = |k: &str| doc.get(k).unwrap().clone();
        assert_eq!(get("a"), Node::Int(1000));
        assert_eq!(get("b"), Node::Int(16));
        assert_eq!(get("c"), Node::Int(15));
        assert_eq!(get("d"), Node::Int(15));
        assert_eq!(get("e"), Node::Float(0.5));
        assert_eq!(get("f"), Node::Float(1000.0));
        assert_eq!(get("g"), Node::Str("yes".into()), "YAML 1.2 booleans only");
        assert_eq!(get("h"), Node::Bool(true));
        assert_eq!(get("i"), Node::Null);
        assert_eq!(get("j"), Node::Str("3".into()));
        assert_eq!(get("k"), Node::Time("2024-01-02T00:00:00Z".into()));
        assert_eq!(get("l"), Node::Int(-3));
        assert_eq!(get("m"), Node::Float(9223372036854775808.0));
    }

    #[test]
    fn streams_aliases_and_order() {
        let docs = parse(b"z: &x [1, 2]\na: *x\n---\nb: c\n", 1000).unwrap();
        assert_eq!(docs.len(), 2);
        let Node::Map(entries) = &docs[0] else { panic!() };
        assert_eq!(entries[0].0, "z", "document order is kept");
        assert_eq!(docs[0].get("a"), docs[0].get("z"));
        assert!(parse(b"a: &x [1]\nb: [*x, *x, *x]\n", 3).is_err(), "over the alias budget");
        assert!(parse(b"1: x\n", 10).is_err(), "an integer key");
        assert!(parse(b"a: [\n", 10).is_err());
    }

    #[test]
    fn written_back_in_key_order() {
        let docs =
            parse(b"b: 1\na: 'yes'\nlist: [x, 1.5, true, null]\nt: 2024-01-02\n---\nc: |\n  two\n  lines\n", 100)
                .unwrap();
        let text = emit(&docs).unwrap();
        assert_eq!(
            text,
            "b: 1\na: \"yes\"\nlist:\n- x\n- 1.5\n- true\n- null\nt: 2024-01-02T00:00:00Z\n---\nc: |\n  two\n  lines\n"
        );
    }
}
