//! The ApplySet run's errors. Each renders kubectl's text (the CLI prints it after `error: `
//! and the parity tests compare it byte for byte); [`Error::category`] is the bounded name the
//! controller and the CLI decide on, never the text.

/// What went wrong in a KEP-3659 step.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `--applyset` names no usable parent: it does not parse, maps to no resource, or fails
    /// kubectl's validation (scope, permitted parent types).
    #[error("{0}")]
    InvalidReference(String),
    /// The parent exists but is not this set's (tooling, id label) or its ApplySet metadata
    /// cannot be read (missing or unmappable group-kinds), or a custom resource parent is missing.
    #[error("{0}")]
    InvalidParent(String),
    /// An input object cannot carry the member label.
    #[error("{0}")]
    InvalidObject(String),
    /// Legacy prune cannot run as asked (`--prune` without a selection, an allow-listed kind
    /// the cluster does not serve).
    #[error("{0}")]
    InvalidPrune(String),
    /// No request reached the apiserver (connection refused, TLS, DNS, timeout).
    #[error("{0}")]
    Unreachable(String),
    /// A request failed; `message` is kubectl's wording around the apiserver's answer.
    #[error("{message}")]
    Request {
        message: String,
        #[source]
        source: kube::Error,
    },
}

/// The bounded kinds of [`Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    InvalidReference,
    InvalidParent,
    InvalidObject,
    InvalidPrune,
    /// No request reached the apiserver (connection refused, TLS, DNS, timeout).
    Unreachable,
    /// The apiserver answered with a failure.
    Request,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::InvalidReference => "InvalidReference",
            Category::InvalidParent => "InvalidParent",
            Category::InvalidObject => "InvalidObject",
            Category::InvalidPrune => "InvalidPrune",
            Category::Unreachable => "Unreachable",
            Category::Request => "Request",
        }
    }
}

impl Error {
    /// A failed request, worded `"{context}: {kubectl's text of the error}"`.
    pub fn request(context: impl std::fmt::Display, source: kube::Error) -> Self {
        Error::Request { message: format!("{context}: {}", error_text(&source)), source }
    }

    pub fn category(&self) -> Category {
        match self {
            Error::InvalidReference(_) => Category::InvalidReference,
            Error::InvalidParent(_) => Category::InvalidParent,
            Error::InvalidObject(_) => Category::InvalidObject,
            Error::InvalidPrune(_) => Category::InvalidPrune,
            Error::Unreachable(_) => Category::Unreachable,
            Error::Request { source, .. } if crate::cluster::is_unreachable(source) => Category::Unreachable,
            Error::Request { .. } => Category::Request,
        }
    }

    /// The same error with more of kubectl's wording in front (`apply and prune succeeded, …`).
    pub fn context(self, prefix: &str) -> Self {
        match self {
            Error::Request { message, source } => Error::Request { message: format!("{prefix}{message}"), source },
            Error::InvalidReference(message) => Error::InvalidReference(format!("{prefix}{message}")),
            Error::InvalidParent(message) => Error::InvalidParent(format!("{prefix}{message}")),
            Error::InvalidObject(message) => Error::InvalidObject(format!("{prefix}{message}")),
            Error::InvalidPrune(message) => Error::InvalidPrune(format!("{prefix}{message}")),
            Error::Unreachable(message) => Error::Unreachable(format!("{prefix}{message}")),
        }
    }
}

pub use crate::cluster::list::{error_text, is_status};
