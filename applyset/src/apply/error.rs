//! How the apply path fails: per object ([`ObjectError`], worded as kubectl words it and
//! rendered as its error printer renders it) or for the whole run ([`Fatal`]). Both carry a
//! bounded [`ErrorCategory`] so that callers (status conditions, metrics, retries) decide by
//! kind, never by text.

use std::fmt;

use applyset_merge::value::go_quote;

use crate::causes::{Chain, with_causes};
use crate::cluster::{self, ApiStatus, Error};

/// The bounded set of apply failure kinds. [`ErrorCategory::as_str`] is stable and meant for
/// metric labels and condition reasons.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCategory {
    /// The object cannot be applied as written: no name, `generateName`, a namespace other
    /// than the explicit `-n`, metadata that cannot be labelled, annotations over the limit.
    Manifest,
    /// Neither discovery nor a CRD of the input knows the kind.
    NoMatch,
    /// No patch could be computed (an unusable last-applied annotation, a merge failure).
    Patch,
    /// The live object belongs to another ApplySet ([`super::Ownership::RefuseOtherSets`]).
    OwnedByOtherSet,
    /// A server-side apply (the fallback for objects too large for the annotation) would change
    /// fields other field managers own.
    FieldConflict,
    /// `--force` gave up waiting for the old object to disappear.
    Timeout,
    /// The same object was given more than once (the run applies nothing).
    Duplicates,
    /// Nothing to apply.
    NoObjects,
    /// What the cluster answered (or that it did not).
    Cluster(cluster::ErrorCategory),
    /// Anything else.
    #[default]
    Other,
}

impl ErrorCategory {
    /// A CamelCase name usable as a condition reason and a metric label; a cluster failure is
    /// named by its own category.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::Manifest => "Manifest",
            ErrorCategory::NoMatch => "NoMatch",
            ErrorCategory::Patch => "Patch",
            ErrorCategory::OwnedByOtherSet => "OwnedByOtherSet",
            ErrorCategory::FieldConflict => "FieldConflict",
            ErrorCategory::Timeout => "Timeout",
            ErrorCategory::Duplicates => "Duplicates",
            ErrorCategory::NoObjects => "NoObjects",
            ErrorCategory::Cluster(category) => category.as_str(),
            ErrorCategory::Other => "Other",
        }
    }
}

impl From<cluster::ErrorCategory> for ErrorCategory {
    fn from(category: cluster::ErrorCategory) -> Self {
        ErrorCategory::Cluster(category)
    }
}

impl fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure of one object, worded as kubectl words it (before its error printer).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectError {
    pub message: String,
    /// The apiserver's status, when the failure is one.
    pub status: Option<ApiStatus>,
    /// Object bodies the message quotes, as kubectl's messages do (the patch; the original,
    /// modified and current documents). They may hold Secret values: the controller renders
    /// the error without them ([`ObjectError::render_without_bodies`]).
    pub bodies: Vec<String>,
    /// Set when the object belongs to another ApplySet ([`super::Ownership::RefuseOtherSets`]): that
    /// set's ID.
    pub conflict_with: Option<String>,
    /// The live object's last-applied annotation is not a JSON object, so no patch can be
    /// computed (kubectl fails the same way, for good, until the annotation is fixed).
    pub unusable_last_applied: bool,
    /// What kind of failure this is (see [`ObjectError::category`]).
    pub category: ErrorCategory,
}

/// What replaces a quoted object body in [`ObjectError::render_without_bodies`].
pub const BODY_OMITTED: &str = "<object content not shown>";

impl ObjectError {
    /// A failure of the given kind that is not the apiserver's.
    pub(super) fn plain(category: ErrorCategory, message: impl Into<String>) -> ObjectError {
        ObjectError { message: message.into(), category, ..ObjectError::default() }
    }

    pub(super) fn from_error(error: &Error) -> ObjectError {
        ObjectError {
            message: with_causes(&error),
            status: error.status().cloned(),
            category: error.category().into(),
            ..ObjectError::default()
        }
    }

    /// The bounded kind of the failure: another set's object, else what the cluster said, else
    /// the step that failed.
    pub fn category(&self) -> ErrorCategory {
        if self.conflict_with.is_some() { ErrorCategory::OwnedByOtherSet } else { self.category }
    }

    /// Records bodies that the message (or a wrapping added later) quotes.
    pub(super) fn quoting(mut self, bodies: impl IntoIterator<Item = String>) -> ObjectError {
        self.bodies.extend(
            bodies.into_iter().map(|body| body.trim_end_matches('\n').to_owned()).filter(|body| !body.is_empty()),
        );
        self
    }

    /// [`ObjectError::render`] with every quoted object body replaced by [`BODY_OMITTED`]: what
    /// the controller writes to status, Events and logs, which more people read than the
    /// terminal of whoever ran `kubectl apply`.
    pub fn render_without_bodies(&self) -> String {
        let mut text = self.render();
        // Longest first, so that a body quoted inside another is not cut in half.
        let mut bodies: Vec<&String> = self.bodies.iter().collect();
        bodies.sort_by_key(|body| std::cmp::Reverse(body.len()));
        for body in bodies {
            text = text.replace(body.as_str(), BODY_OMITTED);
        }
        text
    }

    /// kubectl's `AddSourceToErr`-style wrapping: `error when <verb> "<source>": <err>`,
    /// keeping the status (whose message is rewritten, as kubectl rewrites it).
    pub(super) fn wrap(verb: &str, source: &str, error: Error) -> ObjectError {
        let message = format!("error when {verb} {}: {error}", go_quote(source), error = Chain(&error));
        let category = error.category().into();
        match error {
            Error::Api(mut status) => {
                status.message = message.clone();
                ObjectError { message, status: Some(*status), category, ..ObjectError::default() }
            }
            _ => ObjectError::plain(category, message),
        }
    }

    pub(super) fn rewrap(self, verb: &str, source: &str) -> ObjectError {
        let message = format!("error when {verb} {}: {}", go_quote(source), self.message);
        let status = self.status.map(|mut s| {
            s.message = message.clone();
            s
        });
        ObjectError { message, status, ..self }
    }

    /// kubectl's error printer (`cmdutil.CheckErr`) for a run that failed with this error
    /// alone: Invalid errors as `The <Kind> "<name>" is invalid: <causes>` (or `The request is
    /// invalid: …`), other API errors as `Error from server (<Reason>): <message>`, anything else
    /// as `error: <message>`.
    pub fn render(&self) -> String {
        let Some(status) = &self.status else {
            return if self.message.starts_with("error: ") {
                self.message.clone()
            } else {
                format!("error: {}", self.message)
            };
        };
        if status.is_invalid() {
            let has_details =
                !status.details_kind.is_empty() || !status.details_name.is_empty() || !status.causes.is_empty();
            if !has_details {
                return "The request is invalid".to_owned();
            }
            let head = if !status.details_kind.is_empty() || !status.details_name.is_empty() {
                format!("The {} {} is invalid", status.details_kind, go_quote(&status.details_name))
            } else {
                "The request is invalid".to_owned()
            };
            let causes: Vec<String> = status
                .causes
                .iter()
                .map(|(field, message)| if field.is_empty() { message.clone() } else { format!("{field}: {message}") })
                .collect();
            return match causes.len() {
                0 => head,
                1 => format!("{head}: {}", causes[0]),
                _ => format!("{head}: \n* {}", causes.join("\n* ")),
            };
        }
        self.render_in_list()
    }

    /// kubectl's rendering of one error among several (`MultipleErrors`): API errors as
    /// `Error from server (<Reason>): <message>`, anything else as its message.
    pub fn render_in_list(&self) -> String {
        match &self.status {
            None => self.message.clone(),
            Some(status) if status.code == 401 || status.reason == "Unauthorized" => {
                format!("error: You must be logged in to the server ({})", self.message)
            }
            Some(status) if status.reason.is_empty() => format!("Error from server: {}", self.message),
            Some(status) => format!("Error from server ({}): {}", status.reason, self.message),
        }
    }
}

/// Why an object cannot be applied as written (rendered into an [`ObjectError`] of category
/// [`ErrorCategory::Manifest`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum ManifestError {
    /// The object names another namespace than the explicit `-n`.
    #[error(
        "the namespace from the provided object {} does not match the namespace {}. You must pass '--namespace={}' to perform this operation.",
        go_quote(.namespace),
        go_quote(.explicit),
        .namespace
    )]
    NamespaceMismatch { namespace: String, explicit: String },
    /// The ApplySet member label cannot be added.
    #[error(transparent)]
    Label(#[from] super::object::LabelError),
}

/// Why no patch could be computed for an object (rendered into an [`ObjectError`] of category
/// [`ErrorCategory::Patch`]); `origin` is the object's source, quoted as Rust quotes it.
#[derive(Debug, thiserror::Error)]
pub(super) enum PatchError {
    /// The three-way patch from another original than the annotation failed.
    #[error("error when computing the patch that removes the {what} of {origin:?}")]
    Recompute {
        what: &'static str,
        origin: String,
        #[source]
        cause: applyset_merge::Error,
    },
    /// The fields the server-side fallback manager owns could not be read.
    #[error("error when reading the fields {manager} applied server-side to {origin:?}")]
    ServerSideFields {
        manager: String,
        origin: String,
        #[source]
        cause: applyset_merge::Error,
    },
}

/// A failure of the run as a whole: nothing (more) was applied.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Fatal {
    #[error(transparent)]
    Cluster(#[from] Error),
    /// The same object given more than once.
    #[error("{}", .0.join("\n"))]
    Duplicates(Vec<String>),
    #[error("no objects passed to apply")]
    NoObjects,
}

impl Fatal {
    /// The bounded kind of the failure.
    pub fn category(&self) -> ErrorCategory {
        match self {
            Fatal::Cluster(error) => error.category().into(),
            Fatal::Duplicates(_) => ErrorCategory::Duplicates,
            Fatal::NoObjects => ErrorCategory::NoObjects,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str) -> Error {
        Error::Api(Box::new(ApiStatus {
            code,
            reason: reason.into(),
            message: format!("{reason} says no"),
            details_kind: String::new(),
            details_name: String::new(),
            causes: Vec::new(),
        }))
    }

    #[test]
    fn object_error_categories() {
        let wrapped = ObjectError::wrap("creating", "app/a.yaml", status(403, "Forbidden"));
        assert_eq!(wrapped.category(), ErrorCategory::Cluster(cluster::ErrorCategory::Forbidden));
        assert_eq!(wrapped.message, "error when creating \"app/a.yaml\": Forbidden says no");
        // Rewrapping changes the words, not the kind.
        let rewrapped = wrapped.rewrap("applying patch:\n{}\nfor:", "app/a.yaml");
        assert_eq!(rewrapped.category().as_str(), "Forbidden");
        let unreachable = Error::Unreachable { server: "https://x".into(), reason: "refused".into() };
        let from = ObjectError::from_error(&unreachable);
        assert_eq!(from.category(), ErrorCategory::Cluster(cluster::ErrorCategory::Unreachable));
        assert!(from.status.is_none());
        let taken = ObjectError { conflict_with: Some("applyset-x".into()), ..ObjectError::default() };
        assert_eq!(taken.category(), ErrorCategory::OwnedByOtherSet);
        assert_eq!(ObjectError::plain(ErrorCategory::NoMatch, "no").category().as_str(), "NoMatch");
    }

    #[test]
    fn fatal_categories() {
        assert_eq!(Fatal::NoObjects.category(), ErrorCategory::NoObjects);
        assert_eq!(Fatal::Duplicates(vec!["a".into()]).category(), ErrorCategory::Duplicates);
        let fatal = Fatal::from(status(503, ""));
        assert_eq!(fatal.category(), ErrorCategory::Cluster(cluster::ErrorCategory::Unavailable));
        assert!(matches!(fatal.category(), ErrorCategory::Cluster(c) if c.is_transient()));
    }
}
