//! Documents as written: the nodes of every document of a stream in document order (keys
//! unsorted, a duplicate key kept, aliases expanded), from the same libyaml events and node
//! tree the loader decodes. Post-build substitution compares two texts' nodes to prove that
//! variables' values added no structure (`manifest::postbuild::shape`): the loader's decoding
//! sorts keys and lets a duplicate win, which would hide an injected one.

use applyset_merge::value::deeper;

use super::YamlError;
use super::libyaml::{Event, Parser};
use super::tree::{Kind, Tree};

/// A node as written; a scalar with its value, its tag (empty: none) and whether it was plain.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Written {
    Scalar {
        value: String,
        tag: String,
        plain: bool,
    },
    Sequence(Vec<Written>),
    /// Keys and values, in document order.
    Mapping(Vec<(Written, Written)>),
}

/// Every document of `text` as written. Aliases are expanded, at most `max_nodes` nodes in all
/// (a "billion laughs" stream fails here instead of filling memory).
pub(crate) fn documents_as_written(text: &str, max_nodes: usize) -> Result<Vec<Written>, YamlError> {
    let mut parser = Parser::new(text.as_bytes());
    match parser.next()? {
        (Event::StreamStart, _) => {}
        (_, mark) => return Err(YamlError::at(mark, "expected the start of a YAML stream")),
    }
    let mut documents = Vec::new();
    let mut budget = max_nodes;
    loop {
        match parser.next()? {
            (Event::StreamEnd, _) => return Ok(documents),
            (Event::DocumentStart, _) => {}
            (_, mark) => return Err(YamlError::at(mark, "expected a YAML document")),
        }
        let tree = Tree::read(&mut parser)?;
        match parser.next()? {
            (Event::DocumentEnd, _) => {}
            (_, mark) => return Err(YamlError::at(mark, "expected the end of the YAML document")),
        }
        documents.push(written(&tree, tree.root, &mut budget)?);
    }
}

/// Node `id` of `tree`, aliases expanded, taking one node of `budget` per node made.
fn written(tree: &Tree, id: usize, budget: &mut usize) -> Result<Written, YamlError> {
    let node = &tree.nodes[id];
    *budget = budget.checked_sub(1).ok_or_else(|| YamlError::at(node.mark, "aliases expand past the node budget"))?;
    // One level of the walk: the stack grows on the heap when it runs low (aliases nest).
    deeper(|| match &node.kind {
        Kind::Scalar { value, tag, implicit } => {
            Ok(Written::Scalar { value: value.clone(), tag: tag.clone(), plain: *implicit })
        }
        Kind::Alias { target, .. } => written(tree, *target, budget),
        Kind::Sequence(children) => {
            children.iter().map(|&child| written(tree, child, budget)).collect::<Result<_, _>>().map(Written::Sequence)
        }
        Kind::Mapping(children) => children
            .chunks(2)
            .map(|pair| Ok((written(tree, pair[0], budget)?, written(tree, pair[1], budget)?)))
            .collect::<Result<_, YamlError>>()
            .map(Written::Mapping),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(value: &str) -> Written {
        Written::Scalar { value: value.into(), tag: String::new(), plain: true }
    }

    #[test]
    fn documents_keep_their_order_duplicates_and_expanded_aliases() {
        let documents = documents_as_written("b: &x 1\na: *x\nb: 2\n---\n- 'q'\n", 1000).expect("parses");
        assert_eq!(
            documents,
            [
                Written::Mapping(vec![
                    (scalar("b"), scalar("1")),
                    (scalar("a"), scalar("1")),
                    (scalar("b"), scalar("2")),
                ]),
                Written::Sequence(vec![Written::Scalar { value: "q".into(), tag: String::new(), plain: false }]),
            ]
        );
        assert!(documents_as_written("a: [1\n", 1000).is_err());
        let laughs = "a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\nd: [*c, *c, *c, *c]\n";
        assert!(documents_as_written(laughs, 100).is_err());
        assert!(documents_as_written(laughs, 1000).is_ok());
    }
}
