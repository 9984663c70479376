//! The structure check of post-build substitution: a variable's value may replace a scalar,
//! never add structure. A document is parsed twice, once with the values and once with every
//! variable's `${…}` replaced by a placeholder (`applyset-placeholder-NAME-`, a plain YAML
//! scalar in any context), and the two must have the same *shape*: the same number of YAML
//! documents, the same nesting, the same mapping keys in the same order, the same sequence
//! lengths, and the same scalars except those a placeholder stands in (which may change type:
//! `replicas: ${R}` becomes a number). A value that adds a key (`x, namespace: other` in a flow
//! mapping), a line, an item or a document, or that closes a quote early, fails the check.
//!
//! Only the variables' values are checked: a default (`${VAR:=default}`) is written in git
//! by the manifests' author, and stays in both texts.
//!
//! The shapes come from the loader's own parser (`manifest::yaml::written`: its libyaml events
//! and node tree, in document order; the loader's decoding sorts keys and lets a duplicate key
//! win, which would hide an injected one), and scalars are resolved as the loader resolves them
//! (YAML 1.1), so equal shapes mean equal structures for the loader.

use super::{SubstituteError, Variables, expand, substitute_with};
use crate::manifest::resolve;
use crate::manifest::stream::parse_stream_limited;
use crate::manifest::yaml::written::{Written, documents_as_written};
use applyset_merge::Value;

/// How a document's structure changed; says where (a path of keys written in git) but never
/// what a value holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StructureChange {
    #[error("the document no longer parses as YAML")]
    NoLongerParses,
    #[error("the document parses as YAML only with the values in it")]
    ParsesOnlyWithValues,
    #[error("the document cannot be checked: it does not parse with placeholders for the values")]
    Uncheckable,
    #[error("the YAML documents went from {written} to {now}")]
    Documents { written: usize, now: usize },
    #[error("at {at}: {written} became {now}")]
    Kind { at: String, written: &'static str, now: &'static str },
    #[error("at {at}: the mapping's entries went from {written} to {now}")]
    Entries { at: String, written: usize, now: usize },
    #[error("at {at}: the sequence's items went from {written} to {now}")]
    Items { at: String, written: usize, now: usize },
    #[error("at {at}: text written in git changed")]
    Literal { at: String },
}

/// Checks that the variables' values in `substituted` (`body` with them substituted) keep the
/// structure of `body` (see the module docs); the error names the variables responsible.
pub(super) fn check(
    body: &str,
    substituted: &str,
    vars: &Variables,
    max_document: Option<u64>,
) -> Result<(), SubstituteError> {
    let placeholders = Placeholders::for_text(body);
    let mut used: Vec<&str> = Vec::new();
    let template = substitute_with(body, vars, |resolved, out| {
        if resolved.from_variable {
            if !used.contains(&resolved.name) {
                used.push(resolved.name);
            }
            out.push_str(&placeholders.token(resolved.name));
        } else {
            out.push_str(resolved.value);
        }
    })?;
    if used.is_empty() {
        return Ok(());
    }
    let written = shape_of(&template);
    let change = match (&written, shape_of(substituted)) {
        (Some(written), Some(now)) => match compare_documents(written, &now, &placeholders) {
            Ok(()) => return Ok(()),
            Err(change) => change,
        },
        (Some(_), None) => StructureChange::NoLongerParses,
        (None, Some(_)) => StructureChange::ParsesOnlyWithValues,
        // The loader reports its own syntax error; if it reads what this check cannot (aliases
        // expanding past the check's budget), nothing says the values kept the structure.
        (None, None) if parse_stream_limited(substituted, max_document).is_err() => return Ok(()),
        (None, None) => StructureChange::Uncheckable,
    };
    // Who is responsible: each variable alone with its value, the others placeholders.
    let mut variables: Vec<String> = Vec::new();
    if change != StructureChange::Uncheckable {
        for &name in &used {
            let alone = substitute_with(body, vars, |resolved, out| {
                if resolved.from_variable && resolved.name != name {
                    out.push_str(&placeholders.token(resolved.name));
                } else {
                    out.push_str(resolved.value);
                }
            })?;
            let kept = match (&written, shape_of(&alone)) {
                (Some(written), Some(now)) => compare_documents(written, &now, &placeholders).is_ok(),
                (None, None) => true,
                _ => false,
            };
            if !kept {
                variables.push(name.to_owned());
            }
        }
    }
    // No one value alone: they do it together (a quote opened by one and closed by another).
    if variables.is_empty() {
        variables = used.iter().map(|name| (*name).to_owned()).collect();
    }
    Err(SubstituteError::StructureChanged { variables, change })
}

/// The first document of `body` with every `${…}` (resolvable or not) as a placeholder, and the
/// placeholders: for a document that does not parse as written (`{name: ${NAME}}` does not:
/// `{` ends a plain scalar in a flow mapping), to find its object and its opt-out.
pub(super) fn template_document(body: &str, max_document: Option<u64>) -> Option<(Value, Placeholders)> {
    let placeholders = Placeholders::for_text(body);
    let text = expand(body, |reference, out| {
        let name_end = reference.find(|c: char| !(c == '_' || c.is_ascii_alphanumeric())).unwrap_or(reference.len());
        out.push_str(&placeholders.token(&reference[..name_end]));
        Ok(())
    })
    .ok()?;
    let document = parse_stream_limited(&text, max_document).ok()?.into_iter().next()?;
    Some((document.value, placeholders))
}

/// The placeholder scalars of one document: a prefix the document does not contain, then the
/// variable's name, then `-` (not a name character, so the name can be read back).
pub(super) struct Placeholders {
    prefix: String,
}

impl Placeholders {
    fn for_text(text: &str) -> Self {
        let mut prefix = String::from("applyset-placeholder-");
        while text.contains(&prefix) {
            prefix.push_str("x-");
        }
        Placeholders { prefix }
    }

    fn token(&self, name: &str) -> String {
        format!("{}{name}-", self.prefix)
    }

    fn stands_in(&self, text: &str) -> bool {
        text.contains(&self.prefix)
    }

    /// `text` with each placeholder written back as the `${NAME}` it stands for.
    pub(super) fn restored(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(&self.prefix) {
            out.push_str(&rest[..at]);
            let after = &rest[at + self.prefix.len()..];
            let end = after.find('-').unwrap_or(after.len());
            out.push_str(&format!("${{{}}}", &after[..end]));
            rest = after.get(end + 1..).unwrap_or("");
        }
        out.push_str(rest);
        out
    }
}

/// One YAML node as libyaml read it, in document order.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Scalar(Scalar),
    Sequence(Vec<Node>),
    Mapping(Vec<(Node, Node)>),
    /// A node with a custom tag (`!tag`).
    Tagged(String, Box<Node>),
}

/// A scalar as the loader resolves it; floats by their bits so that `.nan` equals itself.
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Null,
    Bool(bool),
    Int(i128),
    Float(u64),
    Text(String),
}

impl Node {
    fn kind(&self) -> &'static str {
        match self {
            Node::Scalar(_) => "a scalar",
            Node::Sequence(_) => "a sequence",
            Node::Mapping(_) => "a mapping",
            Node::Tagged(..) => "a tagged node",
        }
    }
}

/// The documents of `text`, or `None` when it does not parse.
fn shape_of(text: &str) -> Option<Vec<Node>> {
    // Aliases are expanded: a budget well above any manifest's nodes, far below a "billion laughs".
    let max_nodes = text.len().saturating_mul(16).max(100_000);
    documents_as_written(text, max_nodes).ok().map(|documents| documents.iter().map(node).collect())
}

fn node(written: &Written) -> Node {
    match written {
        Written::Scalar { value, tag, plain } => scalar(value, tag, *plain),
        Written::Sequence(items) => Node::Sequence(items.iter().map(node).collect()),
        Written::Mapping(entries) => {
            Node::Mapping(entries.iter().map(|(key, value)| (node(key), node(value))).collect())
        }
    }
}

/// A scalar as the loader types it; one with a tag of its own (`!secret x`) is tagged.
fn scalar(value: &str, tag: &str, plain: bool) -> Node {
    if !tag.is_empty() && !tag.starts_with("tag:yaml.org,2002:") {
        return Node::Tagged(tag.to_owned(), Box::new(Node::Scalar(Scalar::Text(value.to_owned()))));
    }
    if tag.is_empty() && !plain {
        return Node::Scalar(Scalar::Text(value.to_owned()));
    }
    Node::Scalar(match resolve::resolve(tag, value) {
        Ok(resolve::Scalar::Null) => Scalar::Null,
        Ok(resolve::Scalar::Bool(b)) => Scalar::Bool(b),
        Ok(resolve::Scalar::Int(i)) => Scalar::Int(i.into()),
        Ok(resolve::Scalar::Uint(u)) => Scalar::Int(u.into()),
        Ok(resolve::Scalar::Float(f)) => Scalar::Float(f.to_bits()),
        Ok(resolve::Scalar::Big(digits)) => Scalar::Text(digits),
        Ok(resolve::Scalar::Str(text)) => Scalar::Text(text),
        // A tag the value does not fit (`!!int x`): the loader refuses it; as text here.
        Err(_) => Scalar::Text(value.to_owned()),
    })
}

fn compare_documents(written: &[Node], now: &[Node], placeholders: &Placeholders) -> Result<(), StructureChange> {
    if written.len() != now.len() {
        return Err(StructureChange::Documents { written: written.len(), now: now.len() });
    }
    let mut path = Path { placeholders, segments: Vec::new() };
    written.iter().zip(now).try_for_each(|(written, now)| path.compare(written, now))
}

/// Where the comparison is, as keys written in git (placeholders shown as `${NAME}`).
struct Path<'a> {
    placeholders: &'a Placeholders,
    segments: Vec<String>,
}

impl Path<'_> {
    fn at(&self) -> String {
        if self.segments.is_empty() { "the top level".to_owned() } else { self.segments.concat() }
    }

    fn compare(&mut self, written: &Node, now: &Node) -> Result<(), StructureChange> {
        match (written, now) {
            (Node::Scalar(Scalar::Text(text)), Node::Scalar(_)) if self.placeholders.stands_in(text) => Ok(()),
            (Node::Scalar(written), Node::Scalar(now)) if written == now => Ok(()),
            (Node::Scalar(_), Node::Scalar(_)) => Err(StructureChange::Literal { at: self.at() }),
            (Node::Sequence(written), Node::Sequence(now)) => {
                if written.len() != now.len() {
                    return Err(StructureChange::Items { at: self.at(), written: written.len(), now: now.len() });
                }
                for (index, (written, now)) in written.iter().zip(now).enumerate() {
                    self.segments.push(format!("[{index}]"));
                    self.compare(written, now)?;
                    self.segments.pop();
                }
                Ok(())
            }
            (Node::Mapping(written), Node::Mapping(now)) => {
                if written.len() != now.len() {
                    return Err(StructureChange::Entries { at: self.at(), written: written.len(), now: now.len() });
                }
                for ((written_key, written), (now_key, now)) in written.iter().zip(now) {
                    let key = match written_key {
                        Node::Scalar(Scalar::Text(text)) => self.placeholders.restored(text),
                        Node::Scalar(_) => "(key)".to_owned(),
                        other => format!("({} key)", other.kind().trim_start_matches("a ")),
                    };
                    let separator = if self.segments.is_empty() { "" } else { "." };
                    self.segments.push(format!("{separator}{key}"));
                    self.compare(written_key, now_key)?;
                    self.compare(written, now)?;
                    self.segments.pop();
                }
                Ok(())
            }
            (Node::Tagged(written_tag, written), Node::Tagged(now_tag, now)) if written_tag == now_tag => {
                self.compare(written, now)
            }
            _ => Err(StructureChange::Kind { at: self.at(), written: written.kind(), now: now.kind() }),
        }
    }
}
