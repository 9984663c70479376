//! The chain of causes below an error (`Error::source`, then its source, …): one walk for
//! every place that prints or inspects them.
//!
//! The rule every error type here follows: its message says what failed, and its cause is its
//! `source`, not part of its message; whoever reports an error prints the chain once, with
//! [`with_causes`] or [`Chain`] (the CLI's `error: …` lines, conditions and Events, logs). A
//! message that kubectl words as one sentence around another error's text (`error parsing
//! jsonpath X, …`) keeps that error as data instead of as a source.

use std::error::Error;
use std::fmt;

/// The causes of `error`, nearest first (the error itself excluded).
pub fn causes<'a>(error: &'a dyn Error) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(error.source(), |cause: &&'a (dyn Error + 'static)| (*cause).source())
}

/// `error` and its causes, `: `-separated (a cause whose text the chain already holds, as
/// wrappers often repeat their source's, is not repeated).
pub fn with_causes(error: &dyn Error) -> String {
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

/// `error` with its causes, `: `-separated, as a `Display` (for `format!`, `eprintln!` and
/// `tracing` fields): [`with_causes`] without the intermediate `String` at the call site.
#[derive(Clone, Copy)]
pub struct Chain<'a>(pub &'a dyn Error);

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&with_causes(self.0))
    }
}

#[cfg(test)]
mod scan;

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

    /// A cause whose text no message around it has.
    fn distinct() -> std::io::Error {
        std::io::Error::other("the distinct cause")
    }

    #[test]
    fn messages_leave_their_causes_to_the_report() {
        let reported: Vec<(String, String)> = [
            Box::new(crate::document::DocumentError::Read { path: "a.yaml".into(), source: distinct() })
                as Box<dyn Error + 'static>,
            Box::new(crate::ui::UiError::Listen { address: "127.0.0.1:1".into(), source: distinct() }),
            Box::new(crate::commands::error::CliError::Runtime(distinct())),
            Box::new(
                crate::applyset::Error::PruneDiscovery(crate::cluster::Error::Other("the distinct cause".into()))
                    .context("pruning"),
            ),
            Box::new(applyset_merge::Error::At {
                path: "spec.x".into(),
                source: Box::new(applyset_merge::Error::Invalid("the distinct cause".into())),
            }),
        ]
        .iter()
        .map(|error| (error.to_string(), with_causes(error.as_ref())))
        .collect();
        let expected = [
            "a.yaml: cannot read: the distinct cause",
            "cannot listen on 127.0.0.1:1: the distinct cause",
            "cannot start the async runtime: the distinct cause",
            "pruning: error retrieving RESTMappings to prune: the distinct cause",
            "spec.x: the distinct cause",
        ];
        for ((message, report), expected) in reported.iter().zip(expected) {
            assert!(!message.contains("the distinct cause"), "{message}");
            assert_eq!(report, expected);
            assert_eq!(Chain(&std::io::Error::other(report.clone())).to_string(), *report);
        }
    }

    #[test]
    fn a_step_failure_says_its_cause_in_its_message() {
        use crate::operator::reconcile::Stage;
        use crate::operator::reconcile::StepError;
        let cause =
            crate::operator::remote::RemoteError::Cluster(crate::cluster::Error::Other("the distinct cause".into()));
        let failure = StepError::of(Stage::InvalidSpec, cause);
        assert_eq!(failure.to_string(), "spec.kubeConfig: the distinct cause");
        assert_eq!(with_causes(&failure), "spec.kubeConfig: the distinct cause");
    }
}
