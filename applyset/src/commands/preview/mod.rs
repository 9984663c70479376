//! `applyset build` and `applyset plan`: what the controller would do with a local checkout,
//! before it is merged (`flux build kustomization --path` and `flux diff kustomization --path`).
//!
//! Both use the controller's own steps on the checkout instead of a fetched revision, so that
//! they cannot show something else than a run would do. `plan` is the controller's run itself
//! in its plan mode (`operator::reconcile::plan`: the same steps in the same sequence, applied
//! under a client dry run, the prune decided with [`crate::operator::prune::decide`]); `build`
//! renders with the run's build (`operator::reconcile::render`: the loader and its caps,
//! kustomize, `spec.postBuild` with [`crate::operator::postbuild`]) and places the objects as
//! the apply does (namespace defaulting, `part-of` label), also without a cluster. `build` is
//! not a run mode: it has one step and may have no cluster at all (an ApplySet from a file),
//! which a [`Reconciliation`](crate::operator::reconcile) needs. Nothing is written: the only
//! requests are GETs and LISTs.
//!
//! * `target`: the ApplySet (cluster or file) and the checkout `--path` names;
//! * `render`: variables, the build, the objects as a run places them, the YAML printed;
//! * [`scope`]: which kinds are namespaced without a cluster;
//! * `plan`: the run in plan mode; `report`: what plan prints.

mod plan;
#[cfg(test)]
mod plan_tests;
mod render;
mod report;
pub mod scope;
mod target;

use std::path::PathBuf;
use std::process::ExitCode;

use crate::causes::with_causes;
use crate::cli::{BuildArgs, PlanArgs};
use crate::commands::apply::{connect, runtime};
use crate::commands::error::CliError;
use crate::operator::reconcile::StepError;

/// Why a preview could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    #[error(transparent)]
    Cli(Box<CliError>),
    #[error("ApplySet {key} not found")]
    NoApplySet { key: String },
    /// The apiserver's answer, in kubectl's words, is part of the message (the client error is
    /// data, not a source).
    #[error("reading ApplySet {key}: {}", crate::cluster::list::error_text(.error))]
    ReadApplySet { key: String, error: Box<kube::Error> },
    #[error("--applyset-file {}: {message}", file.display())]
    ApplySetFile { file: PathBuf, message: String },
    #[error(
        "the namespace from the provided object {own:?} does not match the namespace {explicit:?}. You must pass '--namespace={own}' to perform this operation."
    )]
    NamespaceMismatch { own: String, explicit: String },
    #[error("--path {}", path.display())]
    Path { path: PathBuf, source: std::io::Error },
    #[error("--path {}: not a directory", path.display())]
    NotADirectory { path: PathBuf },
    #[error("--path {}: {why}", path.display())]
    Escapes { path: PathBuf, why: String },
    #[error("spec.path {path:?}: {cause}")]
    SpecPath { path: String, cause: crate::source::UnsafePath },
    /// A step of the run failed as it would fail the ApplySet: its condition reason, then the
    /// message.
    /// The step's error is the message's data (its message, a condition's, is complete), not a
    /// source whose typed cause a report would print again.
    #[error("{}: {failure}", failure.stage.reason())]
    Step { failure: StepError },
    #[error(
        "{reference} cannot be read without a cluster (--applyset-file): give the objects spec.postBuild.substituteFrom names as manifests with --substitute-from-file FILE"
    )]
    SubstituteFromWithoutCluster { reference: String },
    #[error("{reference}: not found in the --substitute-from-file files; nothing was applied or pruned")]
    SubstituteFromMissing { reference: String },
    #[error("--substitute-from-file: {0}")]
    SubstituteFromFile(String),
    #[error(
        "spec.decryption.secretRef Secret {secret} cannot be read without a cluster (--applyset-file): give its age identity with --decryption-key FILE"
    )]
    DecryptionWithoutCluster { secret: String },
    #[error("reading the member record of ApplySet {key}")]
    Record { key: String, source: Box<crate::operator::members::RecordError> },
    #[error("{source_text}: {message}")]
    Object { source_text: String, message: String },
    #[error("{}", .0.join("\n"))]
    Duplicates(Vec<String>),
    #[error(transparent)]
    Cluster(Box<crate::cluster::Error>),
    #[error(transparent)]
    Apply(Box<crate::apply::Fatal>),
}

// The large errors are boxed: a preview's results stay small.
impl From<CliError> for PreviewError {
    fn from(error: CliError) -> Self {
        PreviewError::Cli(Box::new(error))
    }
}

impl From<crate::cluster::Error> for PreviewError {
    fn from(error: crate::cluster::Error) -> Self {
        PreviewError::Cluster(Box::new(error))
    }
}

impl From<crate::apply::Fatal> for PreviewError {
    fn from(error: crate::apply::Fatal) -> Self {
        PreviewError::Apply(Box::new(error))
    }
}

impl From<StepError> for PreviewError {
    fn from(source: StepError) -> Self {
        PreviewError::Step { failure: source }
    }
}

/// `applyset build`: exit 0 with the objects on stdout, 1 with the reason on stderr.
pub fn build(args: BuildArgs) -> ExitCode {
    let outcome = runtime().map_err(PreviewError::from).and_then(|runtime| runtime.block_on(build_async(args)));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", crate::redact::redact(&with_causes(&error)));
            ExitCode::from(1)
        }
    }
}

async fn build_async(args: BuildArgs) -> Result<(), PreviewError> {
    let namespace = args.namespace.namespace.as_deref();
    let (applyset, cluster) = match &args.applyset_file {
        Some(file) => (target::applyset_from_file(file, args.name.as_deref(), namespace)?, None),
        None => {
            let cluster = connect(&args.cluster).await?;
            let namespace = namespace.unwrap_or(cluster.default_namespace()).to_owned();
            let name = args.name.as_deref().unwrap_or_default();
            (target::applyset_from_cluster(&cluster, &namespace, name).await?, Some(cluster))
        }
    };
    let checkout = target::locate(&args.checkout.path, applyset.spec.source.path.as_deref())?;
    for note in &checkout.notes {
        eprintln!("{note}");
    }
    let variables = match &cluster {
        Some(cluster) => render::Variables::Cluster(cluster),
        None => render::Variables::Files(&args.substitute_from_files),
    };
    let substitute = render::variables(&applyset, variables).await?;
    let decryption = render::decryption(&applyset, &args.checkout, cluster.as_ref()).await?;
    let loaded = render::build(&applyset, &checkout, &args.checkout, substitute, &decryption).await?;
    let recorded = match &cluster {
        Some(cluster) => target::recorded_members(cluster, &applyset).await?,
        None => None,
    };
    crate::operator::inventory::check_fits(
        recorded.as_deref(),
        &loaded,
        &applyset.namespace_or_default(),
        crate::operator::members::codec::RECORD_LIMIT,
    )?;
    let scopes = match &cluster {
        Some(cluster) => scope::Scopes::Cluster(cluster),
        None => scope::Scopes::BuiltIn,
    };
    let placed = render::place(&applyset, loaded, &scopes).await?;
    for warning in &placed.warnings {
        eprintln!("{warning}");
    }
    print!("{}", render::yaml_documents(&placed.objects));
    Ok(())
}

/// `applyset plan`: exit 0 when nothing would change, 1 when something would, 2 on an error.
pub fn plan(args: PlanArgs) -> ExitCode {
    let outcome = runtime().map_err(PreviewError::from).and_then(|runtime| runtime.block_on(plan::run(args)));
    match outcome {
        Ok(outcome) => ExitCode::from(outcome.exit_code()),
        Err(error) => {
            eprintln!("error: {}", crate::redact::redact(&with_causes(&error)));
            ExitCode::from(2)
        }
    }
}
