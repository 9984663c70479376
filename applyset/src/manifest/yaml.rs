//! One YAML document to a JSON [`Value`], as `sigs.k8s.io/yaml.Unmarshal` (go-yaml v2 +
//! YAML-to-JSON conversion) does it for kubectl.
//!
//! Events come from libyaml (the `unsafe-libyaml` translation): go-yaml v2 is itself a Go port
//! of libyaml, so the two accept the same syntax and report the same problems ("mapping values
//! are not allowed in this context"). On top of the events this module rebuilds go-yaml v2's
//! node tree (`tree`) and decoder (`decode`): YAML 1.1 scalar resolution
//! ([`super::resolve`]), anchors and aliases (with go-yaml's alias-expansion ratio limit), `<<`
//! merge keys, non-string keys turned into strings, duplicate keys (last wins). Numbers then go
//! through the JSON text Go would write and are read back with kubectl's "preserve ints" rule,
//! so `1.0` becomes the integer 1.
//!
//! Nesting is bounded by [`MAX_DEPTH`](applyset_merge::value::MAX_DEPTH): the tree is built
//! without recursion, and the decoder only recurses over a tree it has checked.
//!
//! All unsafe code is in `libyaml`, the one module that drives libyaml's C-style parser API;
//! everything it hands out is owned Rust data.
//!
//! # The YAML stacks, and why this one
//!
//! Every YAML text the tool reads is read here, because what it reads (manifests, kustomization
//! files, SOPS files, and post-build substitution's structure check, `written`) is what
//! kubectl, kustomize and Flux read with go-yaml v2: YAML 1.1 (`yes` is true, `0755` octal),
//! go-yaml's merge keys, alias limits and error words. No general YAML library reads that way,
//! so this module is its own parser on libyaml's events, and its own encoder ([`to_go_yaml`]:
//! kubectl's `-o yaml`, `last-applied`).
//!
//! Two other libraries remain, each for one job: `serde_yaml_ng` writes the tool's own typed
//! values where no kubectl text is mimicked (`applyset crd`, the fleet commands' `-o yaml`,
//! `diff`'s objects) and reads test fixtures of them; `serde-saphyr` is kube's own, for the
//! kubeconfig it loads, and is not used here.

mod decode;
pub(crate) mod encode;
pub(crate) mod libyaml;
pub(crate) mod libyaml_emit;
#[cfg(test)]
mod tests;
mod tree;
pub(crate) mod written;

use applyset_merge::Value;
pub use encode::to_go_yaml;

use super::limits::LimitExceeded;
use libyaml::{Event, Parser};

/// A problem in one YAML document; `line`/`column` are 1-based and relative to the text given
/// to [`parse_document`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct YamlError {
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
    /// Set when aliases expand past the budget (not a syntax error).
    pub too_large: Option<LimitExceeded>,
    /// The line go-yaml v2 names in its message (`yaml: line N: …`), when it names one: not
    /// always [`line`](Self::line) (see `libyaml::parse_error`).
    pub go_line: Option<usize>,
}

impl YamlError {
    fn at(mark: Mark, message: impl Into<String>) -> Self {
        YamlError {
            line: Some(mark.line + 1),
            column: Some(mark.column + 1),
            message: message.into(),
            too_large: None,
            go_line: None,
        }
    }

    /// The error as `sigs.k8s.io/yaml` words it for kubectl.
    pub fn go_message(&self) -> String {
        match self.go_line {
            Some(line) => format!("error converting YAML to JSON: yaml: line {line}: {}", self.message),
            None => format!("error converting YAML to JSON: yaml: {}", self.message),
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Mark {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

/// Parses the first YAML document of `text` (go-yaml's `Unmarshal` reads only the first; the
/// caller has already split the stream on `---` lines). An empty stream is `Null`.
#[cfg(test)]
pub(crate) fn parse_document(text: &str) -> Result<Value, YamlError> {
    parse_document_limited(text, None)
}

/// [`parse_document`] where what aliases add (string bytes, plus one per node) may not exceed
/// `alias_budget`. go-yaml's ratio check only stops deep "billion laughs" trees, and only once
/// a document has 1,000 nodes: a long string aliased a few hundred times passes it, and each
/// alias is a copy here.
pub(crate) fn parse_document_limited(text: &str, alias_budget: Option<u64>) -> Result<Value, YamlError> {
    let mut parser = Parser::new(text.as_bytes());
    let (first, mark) = parser.next()?;
    if !matches!(first, Event::StreamStart) {
        return Err(YamlError::at(mark, "expected the start of a YAML stream"));
    }
    match parser.next()? {
        (Event::StreamEnd, _) => return Ok(Value::Null),
        (Event::DocumentStart, _) => {}
        (_, mark) => return Err(YamlError::at(mark, "expected a YAML document")),
    }
    let tree = tree::Tree::read(&mut parser)?;
    // go-yaml expects the document end event: reading it surfaces errors right after the root
    // node (e.g. a second root value), but nothing after it is looked at.
    match parser.next()? {
        (Event::DocumentEnd, _) => {}
        (_, mark) => return Err(YamlError::at(mark, "expected the end of the YAML document")),
    }
    decode::Decoder::new(&tree.nodes, alias_budget).value(tree.root, 1)
}
