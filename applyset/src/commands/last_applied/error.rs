//! Why a last-applied subcommand failed, each worded as kubectl 1.33 words it, and printed as
//! kubectl's `cmdutil.CheckErr` prints it: an API error as `Error from server (<Reason>):
//! <message>` (an Invalid one as `The <Kind> "<name>" is invalid: …`), anything else after
//! `error: `, several errors one per line.

use applyset_merge::value::go_quote;

use crate::apply::ObjectError;
use crate::causes::Chain;
use crate::cluster;
use crate::cluster::resource_arg::ResourceArgError;
use crate::commands::error::CliError;
use crate::commands::flags::FlagError;
use crate::printers::PrintError;

/// kubectl's resource builder refusing the command line (`cli-runtime`'s messages).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuilderError {
    #[error(
        "You must provide one or more resources by argument or filename.\nExample resource specifications include:\n   '-f rsrc.yaml'\n   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'"
    )]
    MissingResource,
    #[error("only one of -f or -k can be specified")]
    FilenameAndKustomize,
    #[error("the -k flag can't be used with -f or -R")]
    KustomizeRecursive,
    /// A `-f` value that names nothing (the loader's wording).
    #[error("{0}")]
    Path(String),
    /// `TYPE/NAME` mixed with other arguments; `program` is this binary's name, as kubectl
    /// names itself.
    #[error(
        "there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. '{program} get resource/<resource_name>' instead of '{program} get resource resource/<resource_name>'"
    )]
    CombinedTypeArgs { program: String },
    #[error("arguments in resource/name form may not have more than one slash")]
    MoreThanOneSlash,
    #[error("arguments in resource/name form must have a single resource and name")]
    SingleResourceAndName,
    #[error("setting 'all' parameter but found a non empty selector. ")]
    AllWithSelector,
    #[error("found non-empty label selector {0:?} with previously set 'all' parameter. ")]
    SelectorWithAll(String),
    #[error("when paths, URLs, or stdin is provided as input, you may not specify resource arguments as well")]
    PathsAndResources,
    #[error("name cannot be provided when a path is specified")]
    PathsAndNames,
    #[error("resource/name arguments cannot be provided when a path is specified")]
    PathsAndTuples,
    #[error("the provided selector {selector:?} is not valid")]
    InvalidSelector {
        selector: String,
        #[source]
        source: crate::apply::selector::SelectorError,
    },
    #[error("name cannot be provided when a selector is specified")]
    SelectorAndNames,
    #[error("selectors and the all flag cannot be used when passing resource/name arguments")]
    SelectorAndTuples,
    #[error("at least one resource must be specified to use a selector")]
    SelectorWithoutResource,
    #[error("you must provide a resource and a resource name together")]
    ResourceAndNameTogether,
    #[error("you must specify only one resource")]
    OnlyOneResource,
    #[error("resource(s) were provided, but no name was specified")]
    NoName,
}

/// A failure of `view-last-applied`, `set-last-applied` or `edit-last-applied`.
#[derive(Debug, thiserror::Error)]
pub enum LastAppliedError {
    #[error(transparent)]
    Builder(#[from] BuilderError),
    #[error(transparent)]
    Flag(#[from] FlagError),
    /// The runtime, the connection, a kustomization.
    #[error(transparent)]
    Cli(#[from] CliError),
    #[error(transparent)]
    Cluster(#[from] cluster::Error),
    #[error(transparent)]
    ResourceArg(#[from] ResourceArgError),
    /// A document that could not be read, as kubectl words it.
    #[error("{0}")]
    Load(String),
    /// The kind of an object read from `source` is not served.
    #[error(
        "resource mapping not found for name: {} namespace: {} from {}: no matches for kind {} in version {}\nensure CRDs are installed first",
        go_quote(.name), go_quote(.namespace), go_quote(.file), go_quote(.kind), go_quote(.api_version)
    )]
    NoMapping { name: String, namespace: String, file: String, kind: String, api_version: String },
    /// Discovery failed while mapping an object read from `source`.
    #[error("unable to recognize {}", go_quote(.file))]
    Unrecognized {
        file: String,
        #[source]
        cause: cluster::Error,
    },
    /// The kind of an item of a `List` is not served (or discovery failed): kubectl's sentence
    /// goes on with the error's text, so the error is data, not a source.
    #[error("unable to recognize {}", crate::causes::Chain(.0))]
    UnrecognizedItem(cluster::Error),
    #[error(
        "the namespace from the provided object {} does not match the namespace {}. You must pass '--namespace={}' to perform this operation.",
        go_quote(.found), go_quote(.expected), .found
    )]
    NamespaceMismatch { found: String, expected: String },
    /// `view-last-applied` on an object read from a file that has no annotation: kubectl's
    /// message, which wraps a nil error (hence `<nil>`).
    #[error(
        "error when no last-applied-configuration annotation found on resource: {name}\n {}: <nil>",
        go_quote(.file)
    )]
    ViewNoAnnotation { name: String, file: String },
    #[error(
        "no last-applied-configuration annotation found on resource: {0}, to create the annotation, run the command with --create-annotation"
    )]
    SetNoAnnotation(String),
    #[error(
        "no last-applied-configuration annotation found on resources, to create the annotation, use command `kubectl apply set-last-applied --create-annotation`"
    )]
    EditNoAnnotation,
    /// An `-o` view-last-applied has no output for; `command` is the command path of the hint.
    #[error(
        "Unexpected -o output mode: {output}, the flag 'output' must be one of yaml|json\nSee '{command} -h' for help and examples"
    )]
    OutputMode { output: String, command: String },
    /// The annotation could not be printed (not JSON for `-o json`, not YAML for `-o yaml`).
    #[error("{0}")]
    Annotation(String),
    #[error(transparent)]
    Print(#[from] PrintError),
    /// The editor, its file, or the edit loop (`edit-last-applied`).
    #[error(transparent)]
    Edit(#[from] super::editor::EditError),
    /// Several errors (kubectl's aggregate): displayed as Go formats an aggregate (`[a, b]`),
    /// printed one per line ([`LastAppliedError::render`]).
    #[error("{}", go_aggregate(.0))]
    Several(Vec<LastAppliedError>),
}

/// Go's `Aggregate.Error()` of several errors.
fn go_aggregate(errors: &[LastAppliedError]) -> String {
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    crate::manifest::go_aggregate(messages.iter().map(String::as_str)).unwrap_or_default()
}

impl LastAppliedError {
    /// Errors collected while visiting: none, one as it is, or several.
    pub fn aggregate(mut errors: Vec<LastAppliedError>) -> Option<LastAppliedError> {
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(LastAppliedError::Several(errors)),
        }
    }

    /// What kubectl's `CheckErr` prints for this error, with its final newline.
    pub fn render(&self) -> String {
        match self {
            LastAppliedError::Several(errors) => errors.iter().map(|e| e.text(false) + "\n").collect(),
            error => {
                let text = error.text(true);
                // kubectl's messages that end in a newline are printed as they are.
                if text.ends_with('\n') { text } else { text + "\n" }
            }
        }
    }

    /// The error alone (`CheckErr`), or as one of several (`MultipleErrors`).
    fn text(&self, alone: bool) -> String {
        match self {
            LastAppliedError::Cluster(cluster::Error::Api(status)) => {
                let error = ObjectError {
                    message: status.message.clone(),
                    status: Some((**status).clone()),
                    ..ObjectError::default()
                };
                if alone { error.render() } else { error.render_in_list() }
            }
            LastAppliedError::Several(errors) => errors.iter().map(|e| e.text(false)).collect::<Vec<_>>().join("\n"),
            other => {
                let message = crate::causes::with_causes(other);
                if alone && !message.starts_with("error: ") { format!("error: {message}") } else { message }
            }
        }
    }

    /// kubectl's `AddSourceToErr`: the error led by what was being done and to which source;
    /// an API error keeps its status (its message rewritten, as kubectl rewrites it).
    pub fn with_source(verb: &str, source: &str, error: cluster::Error) -> LastAppliedError {
        let message = format!("error when {verb} {}: {error}", go_quote(source), error = Chain(&error));
        match error {
            cluster::Error::Api(mut status) => {
                status.message = message;
                LastAppliedError::Cluster(cluster::Error::Api(status))
            }
            _ => LastAppliedError::Cluster(cluster::Error::Other(message)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ApiStatus;

    fn not_found(name: &str) -> LastAppliedError {
        LastAppliedError::Cluster(cluster::Error::Api(Box::new(ApiStatus {
            code: 404,
            reason: "NotFound".into(),
            message: format!("configmaps {name:?} not found"),
            details_kind: "configmaps".into(),
            details_name: name.into(),
            causes: Vec::new(),
        })))
    }

    #[test]
    fn rendered_as_check_err_renders() {
        assert_eq!(not_found("a").render(), "Error from server (NotFound): configmaps \"a\" not found\n");
        assert_eq!(
            LastAppliedError::from(BuilderError::NoName).render(),
            "error: resource(s) were provided, but no name was specified\n"
        );
        let both = LastAppliedError::aggregate(vec![not_found("a"), BuilderError::NoName.into()]).unwrap();
        assert_eq!(
            both.render(),
            "Error from server (NotFound): configmaps \"a\" not found\nresource(s) were provided, but no name was specified\n"
        );
        assert_eq!(
            both.to_string(),
            "[configmaps \"a\" not found, resource(s) were provided, but no name was specified]"
        );
        assert!(LastAppliedError::aggregate(Vec::new()).is_none());
    }

    #[test]
    fn source_wraps_keep_the_status() {
        let LastAppliedError::Cluster(cluster::Error::Api(status)) = not_found("a") else { unreachable!() };
        let wrapped = LastAppliedError::with_source("retrieving", "a.yaml", cluster::Error::Api(status));
        assert_eq!(
            wrapped.render(),
            "Error from server (NotFound): error when retrieving \"a.yaml\": configmaps \"a\" not found\n"
        );
        let missing = LastAppliedError::ViewNoAnnotation { name: "x".into(), file: "dir/x.yaml".into() };
        assert_eq!(
            missing.render(),
            "error: error when no last-applied-configuration annotation found on resource: x\n \"dir/x.yaml\": <nil>\n"
        );
    }
}
