//! JSON as SOPS's JSON store reads it: one object, keys in document order (duplicates kept),
//! numbers that fit 64-bit integers as integers and every other number as a float
//! (`normalizeJSONNumber`). Written back with the same order.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::error::{KeyPath, SopsError};
use super::tree::Node;

use crate::causes::with_causes;

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        // Beyond int64 Go's json.Number.Int64 fails and SOPS takes the float.
        Ok(i64::try_from(v).map_or(Node::Float(v as f64), Node::Int))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Node>()? {
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }
}

/// The object of a JSON file.
pub(crate) fn parse(text: &[u8]) -> Result<Node, SopsError> {
    let node: Node =
        serde_json::from_slice(text).map_err(|e| SopsError::Syntax { format: "JSON", message: with_causes(&e) })?;
    if !matches!(node, Node::Map(_)) {
        return Err(SopsError::Syntax { format: "JSON", message: "the document is not an object".into() });
    }
    Ok(node)
}

/// The node as indented JSON, keys in their order.
pub(crate) fn emit(node: &Node) -> Result<String, SopsError> {
    let mut out = String::new();
    write(node, 0, &mut out, &mut Vec::new())?;
    out.push('\n');
    Ok(out)
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn write(node: &Node, indent: usize, out: &mut String, path: &mut Vec<String>) -> Result<(), SopsError> {
    let pad = |n: usize| "\t".repeat(n);
    match node {
        Node::Map(entries) if entries.is_empty() => out.push_str("{}"),
        Node::Map(entries) => {
            out.push_str("{\n");
            for (index, (key, value)) in entries.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                out.push_str(&quoted(key));
                out.push_str(": ");
                path.push(key.clone());
                let written = applyset_merge::value::deeper(|| write(value, indent + 1, out, path));
                path.pop();
                written?;
                out.push_str(if index + 1 < entries.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push('}');
        }
        Node::Seq(items) if items.is_empty() => out.push_str("[]"),
        Node::Seq(items) => {
            out.push_str("[\n");
            for (index, item) in items.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                applyset_merge::value::deeper(|| write(item, indent + 1, out, path))?;
                out.push_str(if index + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push(']');
        }
        Node::Null => out.push_str("null"),
        Node::Str(s) | Node::Time(s) => out.push_str(&quoted(s)),
        Node::Bytes(_) => return Err(SopsError::NotText { path: KeyPath(path.clone()), format: "JSON" }),
        Node::Int(i) => out.push_str(&i.to_string()),
        // JSON has no NaN or infinities: SOPS's encoder fails on them too.
        Node::Float(f) if !f.is_finite() => {
            return Err(SopsError::NotText { path: KeyPath(path.clone()), format: "JSON" });
        }
        Node::Float(f) => out.push_str(&applyset_merge::value::go_json_float(*f)),
        Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_order_and_duplicates_as_sops_reads_them() {
        let node =
            parse(br#"{"z": 1, "a": 1.0, "big": 9223372036854775808, "e": 1e3, "a": [true, null, "s"]}"#).unwrap();
        let Node::Map(entries) = &node else { panic!() };
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["z", "a", "big", "e", "a"]);
        assert_eq!(entries[0].1, Node::Int(1));
        assert_eq!(entries[1].1, Node::Float(1.0));
        assert_eq!(entries[2].1, Node::Float(9223372036854775808.0));
        assert!(parse(b"[1]").is_err());
        assert!(parse(b"{").is_err());
    }

    #[test]
    fn written_back_in_order() {
        let node = parse(br#"{"b": {"c": [1, "x"]}, "a": {}, "f": 1.5}"#).unwrap();
        assert_eq!(
            emit(&node).unwrap(),
            "{\n\t\"b\": {\n\t\t\"c\": [\n\t\t\t1,\n\t\t\t\"x\"\n\t\t]\n\t},\n\t\"a\": {},\n\t\"f\": 1.5\n}\n"
        );
    }
}
