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
use crate::keys::{APPROVE_PRUNE, RECONCILE_REQUESTED_AT};
use crate::operator::api::ApplySet;

/// The field manager of the CLI's (and the UI's) patches.
pub(crate) const MANAGER: &str = "applyset-cli";

/// What a person asks of an ApplySet, from the command line or the UI: one merge patch each,
/// sent with the caller's identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// Run now: the `reconcile-requested-at` annotation.
    Reconcile,
    /// `spec.suspend: true`.
    Suspend,
    /// `spec.suspend: false` and a run requested, in one patch.
    Resume,
    /// Let a revision the prune guard held through (`applyset.dev/approve-prune`; the
    /// controller runs it at once).
    ApprovePrune { revision: String },
}

impl Request {
    /// The merge patch; `requested` is the request's time (RFC 3339), which the status names
    /// once a run has handled it.
    pub(crate) fn patch(&self, requested: &str) -> serde_json::Value {
        match self {
            Request::Reconcile => {
                serde_json::json!({ "metadata": { "annotations": { RECONCILE_REQUESTED_AT: requested } } })
            }
            Request::Suspend => serde_json::json!({ "spec": { "suspend": true } }),
            Request::Resume => serde_json::json!({
                "metadata": { "annotations": { RECONCILE_REQUESTED_AT: requested } },
                "spec": { "suspend": false },
            }),
            Request::ApprovePrune { revision } => {
                serde_json::json!({ "metadata": { "annotations": { APPROVE_PRUNE: revision } } })
            }
        }
    }

    /// Sends the patch as `MANAGER` and returns the request's time.
    pub(crate) async fn send(&self, api: &kube::Api<ApplySet>, name: &str) -> Result<String, kube::Error> {
        let requested = Timestamp::now().to_string();
        let params = PatchParams { field_manager: Some(MANAGER.into()), ..PatchParams::default() };
        api.patch(name, &params, &Patch::Merge(self.patch(&requested))).await?;
        Ok(requested)
    }
}

pub fn reconcile(args: ReconcileArgs) -> ExitCode {
    block_on(|| async move {
        let timeout = timeout_of(&args.wait)?;
        let target = Target::of(&args.target).await?;
        let applyset = target.read().await?;
        if applyset.spec.suspend {
            return Err(RunError::Suspended(target.key()).into());
        }
        eprintln!("► annotating ApplySet {} in namespace {}", target.name, target.namespace);
        let requested = send(&target, &Request::Reconcile).await?;
        wait_for_run(&target, &requested, timeout, &args.wait.timeout).await
    })
}

pub fn suspend(args: SuspendArgs) -> ExitCode {
    block_on(|| async move {
        let target = Target::of(&args.target).await?;
        eprintln!("► suspending ApplySet {} in namespace {}", target.name, target.namespace);
        send(&target, &Request::Suspend).await?;
        eprintln!("✔ ApplySet suspended");
        Ok(ExitCode::SUCCESS)
    })
}

pub fn resume(args: ResumeArgs) -> ExitCode {
    block_on(|| async move {
        let timeout = timeout_of(&args.wait)?;
        let target = Target::of(&args.target).await?;
        eprintln!("► resuming ApplySet {} in namespace {}", target.name, target.namespace);
        let requested = send(&target, &Request::Resume).await?;
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

async fn send(target: &Target, request: &Request) -> Result<String, FleetError> {
    request
        .send(&target.api, &target.name)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_is_one_merge_patch() {
        let at = "2026-11-27T10:00:00Z";
        let annotations = |value: serde_json::Value| serde_json::json!({ "metadata": { "annotations": value } });
        assert_eq!(Request::Reconcile.patch(at), annotations(serde_json::json!({ RECONCILE_REQUESTED_AT: at })));
        assert_eq!(Request::Suspend.patch(at), serde_json::json!({ "spec": { "suspend": true } }));
        let mut resume = annotations(serde_json::json!({ RECONCILE_REQUESTED_AT: at }));
        resume["spec"] = serde_json::json!({ "suspend": false });
        assert_eq!(Request::Resume.patch(at), resume);
        let approve = Request::ApprovePrune { revision: "main@sha1:abc".into() };
        assert_eq!(approve.patch(at), annotations(serde_json::json!({ APPROVE_PRUNE: "main@sha1:abc" })));
    }
}
