//! What became of a run the command asked for: read from the ApplySet's status, as a pure
//! function of it (the waiting loop in [`super::drive`] only watches).

use crate::operator::api::ApplySet;
use crate::operator::status::{READY, RECONCILING, condition, reason};

/// How a requested run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// Ready at this revision.
    Ready { revision: String, message: String },
    /// Ready=False: the reason and message of the condition.
    Failed { reason: String, message: String },
}

/// Why `reconcile`/`resume` did not end with a Ready ApplySet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("ApplySet {0} is suspended: resume it first (applyset resume)")]
    Suspended(String),
    #[error("ApplySet {key}: {reason}: {message}")]
    Failed { key: String, reason: String, message: String },
    #[error(
        "timed out after {timeout} waiting for ApplySet {key} to handle the request (is the controller running? its status says: {last})"
    )]
    TimedOut { key: String, timeout: String, last: String },
    #[error("ApplySet {0} was deleted while waiting for its run")]
    Deleted(String),
}

/// The outcome of the run that handled the request `requested` (the value of its
/// `reconcile-requested-at` annotation), once there is one: the controller has recorded the
/// request as handled, has observed the current generation, no longer reconciles (health
/// checks included) and Ready is True or False. `None` while the run is still to come or
/// going on.
pub fn run_outcome(applyset: &ApplySet, requested: &str) -> Option<RunOutcome> {
    let status = applyset.status.as_ref()?;
    if status.last_handled_reconcile_at.as_deref() != Some(requested) {
        return None;
    }
    if condition(status, RECONCILING).is_some_and(|c| c.status == "True") {
        return None;
    }
    let ready = condition(status, READY)?;
    if ready.observed_generation != applyset.metadata.generation {
        return None;
    }
    match ready.status.as_str() {
        "True" => Some(RunOutcome::Ready {
            revision: status.last_applied_revision.clone().unwrap_or_default(),
            message: ready.message.clone(),
        }),
        "False" => Some(RunOutcome::Failed { reason: ready.reason.clone(), message: ready.message.clone() }),
        // Unknown: suspended since, or not known yet.
        _ if ready.reason == reason::SUSPENDED => {
            Some(RunOutcome::Failed { reason: ready.reason.clone(), message: ready.message.clone() })
        }
        _ => None,
    }
}

/// The Ready condition in a few words, for the time-out message.
pub fn ready_summary(applyset: Option<&ApplySet>) -> String {
    let ready = applyset.and_then(|a| a.status.as_ref()).and_then(|s| condition(s, READY));
    match ready {
        Some(c) => format!("Ready={} {}: {}", c.status, c.reason, super::table::one_line(&c.message)),
        None => "no Ready condition".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applyset(generation: i64, status: &str) -> ApplySet {
        let yaml = format!(
            "apiVersion: applyset.dev/v1alpha1\nkind: ApplySet\nmetadata: {{name: web, namespace: a, generation: {generation}}}\nspec: {{source: {{url: 'https://git.example/r.git'}}, interval: 1m}}\nstatus: {status}\n"
        );
        serde_yaml_ng::from_str(&yaml).expect("an ApplySet")
    }

    fn condition(type_: &str, status: &str, reason: &str, generation: i64) -> String {
        format!(
            "{{type: {type_}, status: '{status}', reason: {reason}, message: m-{reason}, observedGeneration: {generation}, lastTransitionTime: '2026-11-27T10:00:00Z'}}"
        )
    }

    const REQUESTED: &str = "2026-11-27T10:00:00.5Z";

    #[test]
    fn a_run_ends_when_the_request_is_handled_at_the_current_generation_and_ready_is_known() {
        let ready = condition("Ready", "True", "Succeeded", 2);
        let done = applyset(
            2,
            &format!(
                "{{lastHandledReconcileAt: '{REQUESTED}', lastAppliedRevision: main@sha1:ab, conditions: [{ready}]}}"
            ),
        );
        assert_eq!(
            run_outcome(&done, REQUESTED),
            Some(RunOutcome::Ready { revision: "main@sha1:ab".into(), message: "m-Succeeded".into() })
        );
        // An earlier request's answer is not this one's.
        assert_eq!(run_outcome(&done, "2026-11-27T11:00:00Z"), None);
        // Ready from the previous generation: the new spec is not applied yet.
        let old = applyset(3, &format!("{{lastHandledReconcileAt: '{REQUESTED}', conditions: [{ready}]}}"));
        assert_eq!(run_outcome(&old, REQUESTED), None);
    }

    #[test]
    fn a_run_still_reconciling_or_waiting_for_health_is_not_done() {
        let conditions =
            [condition("Ready", "Unknown", "Progressing", 1), condition("Reconciling", "True", "Progressing", 1)];
        let going =
            applyset(1, &format!("{{lastHandledReconcileAt: '{REQUESTED}', conditions: [{}]}}", conditions.join(",")));
        assert_eq!(run_outcome(&going, REQUESTED), None);
    }

    #[test]
    fn a_failed_or_suspended_run_gives_its_reason_and_message() {
        let failed = applyset(
            1,
            &format!(
                "{{lastHandledReconcileAt: '{REQUESTED}', conditions: [{}]}}",
                condition("Ready", "False", "ApplyFailed", 1)
            ),
        );
        assert_eq!(
            run_outcome(&failed, REQUESTED),
            Some(RunOutcome::Failed { reason: "ApplyFailed".into(), message: "m-ApplyFailed".into() })
        );
        let suspended = applyset(
            1,
            &format!(
                "{{lastHandledReconcileAt: '{REQUESTED}', conditions: [{}]}}",
                condition("Ready", "Unknown", "Suspended", 1)
            ),
        );
        assert!(
            matches!(run_outcome(&suspended, REQUESTED), Some(RunOutcome::Failed { reason, .. }) if reason == "Suspended")
        );
    }
}
