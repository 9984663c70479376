//! `applyset completion bash|zsh|fish`: the shell's registration of clap's completion engine.
//! The shell then asks `applyset` itself for each completion (`COMPLETE=<shell> applyset --
//! <words>`, handled in `main` before anything else), so subcommands, flags and ApplySet names
//! (listed from the cluster of the current kubeconfig context) are always those of this binary.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap_complete::engine::CompletionCandidate;
use clap_complete::env::{Bash, EnvCompleter, Fish, Zsh};

use crate::cli::{CompletionArgs, Shell};
use crate::cluster::{Cluster, ConnectOptions};
use crate::operator::api::ApplySet;

/// The environment variable that turns a run of `applyset` into a completion request.
pub const COMPLETE_VAR: &str = "COMPLETE";

pub fn completion(args: CompletionArgs) -> ExitCode {
    let shell: &dyn EnvCompleter = match args.shell {
        Shell::Bash => &Bash,
        Shell::Zsh => &Zsh,
        Shell::Fish => &Fish,
    };
    let mut out = std::io::stdout().lock();
    match shell
        .write_registration(COMPLETE_VAR, "applyset", "applyset", "applyset", &mut out)
        .and_then(|()| out.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", crate::causes::Chain(&super::FleetError::Write(error)));
            ExitCode::from(1)
        }
    }
}

/// How long a completion may wait for the cluster: a shell must not hang on a slow apiserver.
const LIST_TIMEOUT: Duration = Duration::from_secs(3);

/// The ApplySets of the current context's namespace, for completing a NAME (none when the
/// cluster cannot be reached in time).
pub fn applyset_names() -> Vec<CompletionCandidate> {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return Vec::new() };
    let names = runtime.block_on(async {
        let options = ConnectOptions { qps: 0.0, burst: crate::cluster::DEFAULT_BURST, ..ConnectOptions::default() };
        let cluster = Cluster::connect(&options).await.ok()?;
        let api: kube::Api<ApplySet> = kube::Api::namespaced(cluster.client().clone(), cluster.default_namespace());
        let listed = tokio::time::timeout(LIST_TIMEOUT, api.list_metadata(&Default::default())).await.ok()?.ok()?;
        Some(listed.items.into_iter().filter_map(|a| a.metadata.name).collect::<Vec<_>>())
    });
    names.unwrap_or_default().into_iter().map(CompletionCandidate::new).collect()
}
