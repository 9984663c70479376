//! The ApplySet run's errors. Each renders kubectl's text (the CLI prints it after `error: `
//! and the parity tests compare it byte for byte); [`Error::category`] is the bounded name the
//! controller and the CLI decide on, never the text.

use crate::cluster::list::error_text;

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
    #[error(transparent)]
    InvalidObject(#[from] MemberLabelError),
    /// An existing parent is not this set's (kubectl's `fetchParent` checks).
    #[error(transparent)]
    ParentCheck(#[from] ParentCheckError),
    /// An existing parent's ApplySet annotations cannot be read; `reference` is
    /// `<resource>.<group>/<name>`.
    #[error("parsing ApplySet annotation on {reference:?}")]
    ParentAnnotation {
        reference: String,
        #[source]
        source: AnnotationError,
    },
    /// A `--prune-allowlist` entry is not `group/version/kind`.
    #[error("invalid GroupVersionKind format: {entry}, please follow <group/version/kind>")]
    AllowlistFormat { entry: String },
    /// `--prune` with both `--all` and `--selector`.
    #[error("cannot set --all and --selector at the same time")]
    SelectorWithAll,
    /// `--prune` with neither `--all` nor `--selector`.
    #[error("{}", super::legacy::MISSING_SELECTOR_ERROR)]
    MissingSelector,
    /// Discovery failed while mapping the `--prune-allowlist` kinds.
    #[error(transparent)]
    AllowlistDiscovery(crate::cluster::Error),
    /// A `--prune-allowlist` kind the cluster does not serve.
    #[error(transparent)]
    AllowlistKind(crate::cluster::mapper::MapperError),
    /// Discovery failed while mapping the kinds to prune.
    #[error("error retrieving RESTMappings to prune")]
    PruneDiscovery(#[source] crate::cluster::Error),
    /// A kind to prune the cluster does not serve; `kind` is kubectl's description of it.
    #[error("error retrieving RESTMappings to prune: invalid resource {kind}")]
    PruneKind {
        kind: String,
        #[source]
        source: crate::cluster::mapper::MapperError,
    },
    /// Another error with more of kubectl's wording in front (see [`Error::context`]).
    #[error("{prefix}")]
    Context {
        prefix: String,
        #[source]
        source: Box<Error>,
    },
    /// Legacy prune cannot run as asked (`--prune` without a selection, an allow-listed kind
    /// the cluster does not serve).
    #[error("{0}")]
    InvalidPrune(String),
    /// No request reached the apiserver (connection refused, TLS, DNS, timeout).
    #[error("{0}")]
    Unreachable(String),
    /// A request failed; `message` is kubectl's wording around the apiserver's answer, which it
    /// holds: the client error is kept as data (for its category), not as a source a report
    /// would print a second time.
    #[error("{message}")]
    Request { message: String, error: kube::Error },
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
    pub fn request(context: impl std::fmt::Display, error: kube::Error) -> Self {
        Error::Request { message: format!("{context}: {}", error_text(&error)), error }
    }

    pub fn category(&self) -> Category {
        match self {
            Error::InvalidReference(_) => Category::InvalidReference,
            Error::InvalidParent(_) => Category::InvalidParent,
            Error::InvalidObject(_) => Category::InvalidObject,
            Error::ParentCheck(_) | Error::ParentAnnotation { .. } => Category::InvalidParent,
            Error::AllowlistDiscovery(source) | Error::PruneDiscovery(source) if source.is_unreachable() => {
                Category::Unreachable
            }
            Error::InvalidPrune(_)
            | Error::AllowlistFormat { .. }
            | Error::SelectorWithAll
            | Error::MissingSelector
            | Error::AllowlistDiscovery(_)
            | Error::AllowlistKind(_)
            | Error::PruneDiscovery(_)
            | Error::PruneKind { .. } => Category::InvalidPrune,
            Error::Context { source, .. } => source.category(),
            Error::Unreachable(_) => Category::Unreachable,
            Error::Request { error, .. } if crate::cluster::is_unreachable(error) => Category::Unreachable,
            Error::Request { .. } => Category::Request,
        }
    }

    /// The same error with more of kubectl's wording in front (`apply and prune succeeded, …`),
    /// joined to it with `: `.
    pub fn context(self, prefix: &str) -> Self {
        match self {
            Error::Request { message, error } => Error::Request { message: format!("{prefix}: {message}"), error },
            Error::InvalidReference(message) => Error::InvalidReference(format!("{prefix}: {message}")),
            Error::InvalidParent(message) => Error::InvalidParent(format!("{prefix}: {message}")),
            Error::InvalidPrune(message) => Error::InvalidPrune(format!("{prefix}: {message}")),
            Error::Unreachable(message) => Error::Unreachable(format!("{prefix}: {message}")),
            other => Error::Context { prefix: prefix.to_owned(), source: Box::new(other) },
        }
    }
}

/// Why an existing parent is not this set's (kubectl's `fetchParent` checks, in its order);
/// `reference` is `<resource>.<group>/<name>`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParentCheckError {
    #[error(
        "ApplySet parent object {reference:?} already exists and is missing required annotation {annotation:?}",
        annotation = crate::keys::TOOLING_ANNOTATION
    )]
    MissingTooling { reference: String },
    #[error(
        "ApplySet parent object {reference:?} already exists and is managed by tooling {managed_by:?} instead of {ours:?}"
    )]
    OtherTooling { reference: String, managed_by: String, ours: String },
    #[error(
        "ApplySet parent object {reference:?} exists and does not have required label {label}",
        label = crate::keys::PARENT_ID_LABEL
    )]
    MissingIdLabel { reference: String },
    #[error(
        "ApplySet parent object {reference:?} exists and has incorrect value for label {label:?} (got: {found}, want: {want})",
        label = crate::keys::PARENT_ID_LABEL
    )]
    WrongIdLabel { reference: String, found: String, want: String },
}

/// Why a parent's recorded group-kinds cannot be read (kubectl's `parseKindAnnotation` and
/// the REST mapping after it).
#[derive(Debug, thiserror::Error)]
pub enum AnnotationError {
    /// Neither the group-kinds annotation nor a non-empty legacy group-resources one.
    #[error(
        "kubectl requires the {annotation:?} annotation to be set on all ApplySet parent objects",
        annotation = crate::keys::GROUP_KINDS_ANNOTATION
    )]
    MissingGroupKinds,
    /// A recorded kind the cluster does not serve.
    #[error(
        "could not find mapping for kind in {annotation:?} annotation",
        annotation = crate::keys::GROUP_KINDS_ANNOTATION
    )]
    UnmappedKind(#[source] crate::cluster::mapper::MapperError),
    /// A recorded (legacy) group-resource the cluster does not serve.
    #[error(
        "invalid group resource in {annotation:?} annotation",
        annotation = crate::keys::DEPRECATED_GROUP_RESOURCES_ANNOTATION
    )]
    UnmappedGroupResource(#[source] crate::cluster::mapper::MapperError),
}

/// Why an input object cannot carry the member label (kubectl's `AddLabels`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MemberLabelError {
    #[error("getting accessor: object is not a map")]
    ObjectNotMap,
    #[error("getting accessor: metadata is not a map")]
    MetadataNotMap,
    #[error("getting accessor: labels is not a map")]
    LabelsNotMap,
    #[error("ApplySet label {label:?} already set in input data", label = crate::keys::PART_OF_LABEL)]
    AlreadySet,
}
