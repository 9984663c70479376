//! The chain of causes below an error (`Error::source`, then its source, …): one walk for
//! every place that prints or inspects them.

use std::error::Error;

/// The causes of `error`, nearest first (the error itself excluded).
pub fn causes<'a>(error: &'a (dyn Error + 'static)) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(error.source(), |cause: &&'a (dyn Error + 'static)| (*cause).source())
}

/// `error` and its causes, `: `-separated (a cause whose text the chain already holds, as
/// wrappers often repeat their source's, is not repeated).
pub fn with_causes(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    for cause in causes(error) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{what}")]
    struct Layer {
        what: &'static str,
        #[source]
        source: Option<Box<Layer>>,
    }

    fn chain(whats: &[&'static str]) -> Option<Box<Layer>> {
        whats.iter().rev().fold(None, |source, what| Some(Box::new(Layer { what, source })))
    }

    #[test]
    fn causes_are_walked_nearest_first_and_joined_without_repeats() {
        let error = chain(&["reading part p-1", "connection reset", "reset"]).expect("a chain");
        let texts: Vec<String> = causes(error.as_ref()).map(ToString::to_string).collect();
        assert_eq!(texts, ["connection reset", "reset"]);
        assert_eq!(with_causes(error.as_ref()), "reading part p-1: connection reset");
        assert_eq!(with_causes(chain(&["alone"]).expect("one").as_ref()), "alone");
    }
}
