//! `applyset reconcile`, `suspend` and `resume`: small patches of the ApplySet (the
//! `reconcile-requested-at` annotation, `spec.suspend`) with the caller's identity, and for
//! reconcile and resume a wait on the ApplySet's status until the run that handled the request
//! is done. Progress goes to stderr, as Flux's CLI prints it.

use std::process::ExitCode;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::wait::await_condition;

use super::outcome::{RunError, RunOutcome, ready_summary, run_outcome};
use super::{FleetError, Target, block_on, request_failed};
use crate::cli::{ReconcileArgs, ResumeArgs, SuspendArgs, WaitArgs};
use crate::operator::api::{ApplySet, RECONCILE_REQUESTED_AT};

/// The field manager of the CLI's patches.
const MANAGER: &str = "applyset-cli";

pub fn reconcile(args: ReconcileArgs) -> ExitCode {
    block_on(|| async move {
        let timeout = timeout_of(&args.wait)?;
        let target = Target::of(&args.target).await?;
        let applyset = target.read().await?;
        if applyset.spec.suspend {
            return Err(RunError::Suspended(target.key()).into());
        }
        eprintln!("► annotating ApplySet {} in namespace {}", target.name, target.namespace);
        let requested = request_run(&target, serde_json::json!({})).await?;
        wait_for_run(&target, &requested, timeout, &args.wait.timeout).await
    })
}

pub fn suspend(args: SuspendArgs) -> ExitCode {
    block_on(|| async move {
        let target = Target::of(&args.target).await?;
        eprintln!("► suspending ApplySet {} in namespace {}", target.name, target.namespace);
        let patch = serde_json::json!({ "spec": { "suspend": true } });
        patch_applyset(&target, &patch).await?;
        eprintln!("✔ ApplySet suspended");
        Ok(ExitCode::SUCCESS)
    })
}

pub fn resume(args: ResumeArgs) -> ExitCode {
    block_on(|| async move {
        let timeout = timeout_of(&args.wait)?;
        let target = Target::of(&args.target).await?;
        eprintln!("► resuming ApplySet {} in namespace {}", target.name, target.namespace);
        let requested = request_run(&target, serde_json::json!({ "suspend": false })).await?;
        eprintln!("✔ ApplySet resumed");
        if args.no_wait {
            return Ok(ExitCode::SUCCESS);
        }
        wait_for_run(&target, &requested, timeout, &args.wait.timeout).await
    })
}

fn timeout_of(args: &WaitArgs) -> Result<Duration, FleetError> {
    crate::duration::parse(&args.timeout).map_err(|source| FleetError::Timeout { value: args.timeout.clone(), source })
}

/// Sets the request annotation to now (with `spec` merged into the spec in the same patch) and
/// returns its value: the status names it once a run has handled it.
async fn request_run(target: &Target, spec: serde_json::Value) -> Result<String, FleetError> {
    let requested = Timestamp::now().to_string();
    let mut patch = serde_json::json!({ "metadata": { "annotations": { RECONCILE_REQUESTED_AT: requested } } });
    if spec.as_object().is_some_and(|s| !s.is_empty()) {
        patch["spec"] = spec;
    }
    patch_applyset(target, &patch).await?;
    Ok(requested)
}

async fn patch_applyset(target: &Target, patch: &serde_json::Value) -> Result<ApplySet, FleetError> {
    let params = PatchParams { field_manager: Some(MANAGER.into()), ..PatchParams::default() };
    target
        .api
        .patch(&target.name, &params, &Patch::Merge(patch))
        .await
        .map_err(request_failed(format!("cannot patch ApplySet {}", target.key())))
}

/// Waits (watching the ApplySet) until the run that handled `requested` is done, and reports it.
async fn wait_for_run(
    target: &Target,
    requested: &str,
    timeout: Duration,
    timeout_text: &str,
) -> Result<ExitCode, FleetError> {
    eprintln!("◎ waiting for ApplySet reconciliation");
    let done = |a: Option<&ApplySet>| a.is_none_or(|a| run_outcome(a, requested).is_some());
    let waited = tokio::time::timeout(timeout, await_condition(target.api.clone(), &target.name, done)).await;
    let applyset = match waited {
        Ok(Ok(Some(applyset))) => applyset,
        Ok(Ok(None)) => return Err(RunError::Deleted(target.key()).into()),
        Ok(Err(error)) => {
            return Err(FleetError::Watch { applyset: target.key(), source: error });
        }
        Err(_) => {
            let last = target.read().await.ok();
            return Err(RunError::TimedOut {
                key: target.key(),
                timeout: timeout_text.to_owned(),
                last: ready_summary(last.as_ref()),
            }
            .into());
        }
    };
    match run_outcome(&applyset, requested) {
        Some(RunOutcome::Ready { revision, message }) => {
            eprintln!("✔ applied revision {revision}");
            if !message.is_empty() {
                eprintln!("  {message}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(RunOutcome::Failed { reason, message }) => {
            Err(RunError::Failed { key: target.key(), reason, message }.into())
        }
        None => Err(RunError::Deleted(target.key()).into()),
    }
}
