//! Errors of the merge engine. Messages follow kubectl's wording (the spec's §9 catalogue) so
//! that a user who knows kubectl recognises them and tests can compare against upstream.

use crate::value::Value;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A document or patch that is not a JSON object.
    #[error("invalid JSON document")]
    BadJsonDoc,
    #[error("lists of lists are not supported")]
    NoListOfLists,
    /// `list element types are not identical: [<L> <M>]`, values in Go `%v` form.
    #[error("list element types are not identical: {0}")]
    ListElementTypesDiffer(String),
    #[error("no elements in any of the given slices")]
    NoElements,
    /// `map: <map> does not contain declared merge key: <key>`
    #[error("map: {map} does not contain declared merge key: {key}")]
    NoMergeKey { map: String, key: String },
    /// `expected a <T>, but received a <U>`
    #[error("expected a {expected}, but received a {received}")]
    BadArgType { expected: String, received: String },
    /// `unknown patch type: <v> in map: <map>`
    #[error("unknown patch type: {patch_type} in map: {map}")]
    BadPatchType { patch_type: String, map: String },
    #[error("merging lists cannot yet be specified in the patch")]
    MergeInList,
    /// `cannot merge lists without merge key for <schema name>`
    #[error("cannot merge lists without merge key for {0}")]
    NoMergeKeyForList(String),
    #[error("invalid patch format of primitive list")]
    BadPatchFormatForPrimitiveList,
    #[error("invalid patch format of setElementOrder list")]
    BadPatchFormatForSetElementOrderList,
    /// The patch list is not a subsequence of its `$setElementOrder` list.
    #[error("The order in patch list:\n{patch_list}\n doesn't match $setElementOrder list:\n{order_list}\n")]
    SetElementOrderMismatch { patch_list: String, order_list: String },
    #[error("invalid patch format of retainKeys")]
    BadPatchFormatForRetainKeys,
    #[error("{0} and {1} are not deep equal: this may happen when calculating the 3-way diff patch")]
    RetainKeysDisagree(String, String),
    #[error("invalid value for special key: $patch")]
    BadSpecialKeyValue,
    /// `unexpected patch strategy: [..]`
    #[error("unexpected patch strategy: {0}")]
    BadStrategy(String),
    /// A schema lookup failed; the text is the provider's own (e.g. `unable to find api field "x"`).
    #[error("{0}")]
    Lookup(String),
    /// `--overwrite=false` and the patch touches something changed from original to current.
    #[error("patch:\n{patch}\nconflicts with changes made from original to current:\n{changed}\n")]
    Conflict { patch: String, changed: String },
    #[error("precondition failed for: {0}")]
    PreconditionFailed(String),
    /// An OpenAPI document that cannot serve patch metadata (unknown version, malformed v2
    /// model, unknown schema name).
    #[error("OpenAPI: {0}")]
    OpenApi(String),
    /// Any other upstream `fmt.Errorf` text (e.g. the conflict check's malformed-list errors).
    #[error("{0}")]
    Invalid(String),
    /// An error inside a document, with the path of the field where it happened
    /// (e.g. `spec.template.spec.containers[name=app].env`).
    #[error("{path}")]
    At { path: String, source: Box<Error> },
    /// Input nested deeper than the engine accepts (see [`crate::value::MAX_DEPTH`]).
    #[error("document nests deeper than {0} levels")]
    TooDeep(usize),
}

impl Error {
    pub fn is_conflict(&self) -> bool {
        matches!(self.cause(), Error::Conflict { .. })
    }

    /// The field path where the error happened, when it happened inside the document.
    pub fn path(&self) -> Option<&str> {
        match self {
            Error::At { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The error without its location: the message kubectl itself would print.
    pub fn cause(&self) -> &Error {
        match self {
            Error::At { source, .. } => source,
            other => other,
        }
    }

    /// Locates the error under object field `key` (called while unwinding, so the outermost
    /// field ends up first).
    pub(crate) fn in_field(self, key: &str) -> Error {
        self.located(key.to_owned())
    }

    /// Locates the error in the element of a merge list whose merge key has `value`.
    pub(crate) fn in_element(self, merge_key: &str, value: &Value) -> Error {
        self.located(format!("[{merge_key}={}]", value.go_v_string()))
    }

    fn located(self, segment: String) -> Error {
        match self {
            Error::At { path, source } => {
                let separator = if path.starts_with('[') { "" } else { "." };
                Error::At { path: format!("{segment}{separator}{path}"), source }
            }
            // Conflicts describe whole documents; they carry no single location.
            conflict @ Error::Conflict { .. } => conflict,
            other => Error::At { path: segment, source: Box::new(other) },
        }
    }

    pub(crate) fn no_merge_key(map: &Value, key: &str) -> Error {
        Error::NoMergeKey { map: map.go_v_string(), key: key.to_owned() }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
