//! Why `applyset apply` or `applyset diff` stopped before its report: printed as
//! `error: <message>`, each message the one kubectl prints for the same case. The module
//! errors behind them are kept as sources.

use std::path::PathBuf;

use super::flags::FlagError;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Flag(#[from] FlagError),
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    Connect(crate::cluster::Error),
    #[error(transparent)]
    Selector(#[from] crate::apply::selector::SelectorError),
    /// The input held no object (`what`: the command).
    #[error("no objects passed to {0}")]
    NoObjects(&'static str),
    #[error("{}", dir.display())]
    KustomizeDir { dir: PathBuf, source: std::io::Error },
    #[error(
        "unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory '{}'",
        .0.display()
    )]
    NoKustomization(PathBuf),
    #[error(transparent)]
    Kustomize(#[from] crate::manifest::kustomize::BuildError),
    #[error(transparent)]
    ApplySet(#[from] crate::applyset::Error),
    #[error(transparent)]
    Apply(#[from] crate::apply::Fatal),
    /// A `--decryption-key` file that cannot be read.
    #[error("--decryption-key {}", file.display())]
    DecryptionKeyRead { file: PathBuf, source: std::io::Error },
    /// A `--decryption-key` file that holds no usable age identity (names the line, never
    /// quotes it). The key error, which names the file, continues the sentence: it is data, not
    /// a source printed after a `: `.
    #[error("--decryption-key {error}")]
    DecryptionKey { error: crate::sops::KeyError },
}
