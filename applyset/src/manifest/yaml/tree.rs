//! The node tree (go-yaml v2's parser.go), built from libyaml's events without recursion.

use std::collections::HashMap;

use applyset_merge::value::MAX_DEPTH;

use super::libyaml::{Event, Parser};
use super::{Mark, YamlError};

pub(super) enum Kind {
    Scalar {
        value: String,
        tag: String,
        implicit: bool,
    },
    Alias {
        target: usize,
        name: String,
    },
    Sequence(Vec<usize>),
    /// Keys and values alternate.
    Mapping(Vec<usize>),
}

pub(super) struct Node {
    pub(super) kind: Kind,
    pub(super) mark: Mark,
}

/// The nodes of one document, in event order, and the root's index.
pub(super) struct Tree {
    pub(super) nodes: Vec<Node>,
    pub(super) root: usize,
}

impl Tree {
    /// Reads the events of one document's root node (the document start already read).
    pub(super) fn read(parser: &mut Parser<'_>) -> Result<Tree, YamlError> {
        let mut nodes: Vec<Node> = Vec::new();
        let mut anchors: HashMap<String, usize> = HashMap::new();
        let mut stack: Vec<usize> = Vec::new();
        let root = loop {
            let (event, mark) = parser.next()?;
            let (kind, anchor, opens) = match event {
                Event::Scalar { anchor, tag, value, implicit } => {
                    (Kind::Scalar { value, tag, implicit }, anchor, false)
                }
                Event::Alias { anchor } => match anchors.get(&anchor) {
                    Some(&target) => (Kind::Alias { target, name: anchor }, None, false),
                    None => {
                        return Err(YamlError::at(mark, format!("unknown anchor '{anchor}' referenced")));
                    }
                },
                Event::SequenceStart { anchor } => (Kind::Sequence(Vec::new()), anchor, true),
                Event::MappingStart { anchor } => (Kind::Mapping(Vec::new()), anchor, true),
                Event::SequenceEnd | Event::MappingEnd => {
                    let done = stack.pop().expect("libyaml balances collection events");
                    if stack.is_empty() {
                        break done;
                    }
                    continue;
                }
                _ => return Err(YamlError::at(mark, "unexpected YAML event")),
            };
            let id = nodes.len();
            nodes.push(Node { kind, mark });
            if let Some(anchor) = anchor {
                // Registered before the children are read, as go-yaml does: an alias inside the
                // anchored node refers to it (and decoding then reports the cycle).
                anchors.insert(anchor, id);
            }
            if let Some(&parent) = stack.last() {
                match &mut nodes[parent].kind {
                    Kind::Sequence(children) | Kind::Mapping(children) => children.push(id),
                    _ => unreachable!("only collections are pushed"),
                }
            }
            if opens {
                if stack.len() >= MAX_DEPTH {
                    return Err(YamlError::at(mark, format!("document is nested deeper than {MAX_DEPTH} levels")));
                }
                stack.push(id);
            } else if stack.is_empty() {
                break id;
            }
        };
        Ok(Tree { nodes, root })
    }
}
