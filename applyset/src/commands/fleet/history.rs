//! `applyset history NAME`: the revisions the ApplySet applied in full (newest first, from
//! `status.appliedRevisions`), and above them the last attempt when it failed.

use std::process::ExitCode;

use k8s_openapi::jiff::Timestamp;

use super::table::{age, one_line, render};
use super::{FleetError, Target, block_on};
use crate::cli::HistoryArgs;
use crate::operator::api::ApplySetStatus;
use crate::operator::status::{READY, condition};

pub fn history(args: HistoryArgs) -> ExitCode {
    block_on(|| async move {
        let target = Target::of(&args.target).await?;
        let applyset = target.read().await?;
        let entries = entries(&applyset.status.unwrap_or_default());
        let text = match args.output.as_deref() {
            None => table(&entries, Timestamp::now()),
            Some("json") => format!("{}\n", serde_json::to_string_pretty(&entries).unwrap_or_default()),
            Some("yaml") => serde_yaml_ng::to_string(&entries).unwrap_or_default(),
            Some(other) => return Err(FleetError::Output(other.to_owned())),
        };
        print!("{text}");
        Ok(ExitCode::SUCCESS)
    })
}

/// One line of the history.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Entry {
    pub(crate) revision: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) path: Option<String>,
    /// When it was applied (none for the failed attempt, and for revisions applied before the
    /// status recorded times).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) applied_at: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// `Applied` (the current one `Applied (current)`), or the failed attempt's reason.
    pub(crate) result: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
}

pub(crate) fn entries(status: &ApplySetStatus) -> Vec<Entry> {
    let mut entries = Vec::new();
    if let Some(failed) = failed_attempt(status) {
        entries.push(failed);
    }
    for (i, applied) in status.applied_revisions.iter().enumerate() {
        let current = i == 0 && status.last_applied_revision.as_deref() == Some(applied.revision.as_str());
        entries.push(Entry {
            revision: applied.revision.clone(),
            path: applied.path.clone(),
            applied_at: applied.applied_at.clone(),
            result: if current { "Applied (current)" } else { "Applied" }.into(),
            message: None,
        });
    }
    entries
}

/// The last attempt, when Ready is False after it (a revision that did not apply, or the
/// current one failing again).
fn failed_attempt(status: &ApplySetStatus) -> Option<Entry> {
    let ready = condition(status, READY).filter(|c| c.status == "False")?;
    let revision = status.last_attempted_revision.clone()?;
    Some(Entry {
        revision,
        path: None,
        applied_at: None,
        result: ready.reason.clone(),
        message: Some(one_line(&ready.message)),
    })
}

fn table(entries: &[Entry], now: Timestamp) -> String {
    if entries.is_empty() {
        return "No revision applied yet.\n".into();
    }
    let mut rows = vec![["REVISION", "PATH", "APPLIED", "RESULT"].map(str::to_owned).to_vec()];
    for e in entries {
        let applied = match &e.applied_at {
            Some(at) => format!("{} ({} ago)", at.0, age(Some(at), now)),
            None => "-".into(),
        };
        let result = match &e.message {
            Some(m) => format!("{}: {m}", e.result),
            None => e.result.clone(),
        };
        rows.push(vec![e.revision.clone(), e.path.clone().unwrap_or_else(|| "-".into()), applied, result]);
    }
    render(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::api::ApplySet;

    #[test]
    fn the_history_lists_a_failed_attempt_then_the_applied_revisions_newest_first() {
        let applyset: ApplySet = serde_yaml_ng::from_str(
            r#"
apiVersion: applyset.dev/v1alpha1
kind: ApplySet
metadata: {name: web, namespace: a}
spec: {source: {url: "https://git.example/r.git"}, interval: 1m}
status:
  lastAppliedRevision: main@sha1:bb
  lastAttemptedRevision: main@sha1:cc
  conditions:
  - {type: Ready, status: "False", reason: BuildFailed, message: "kustomize:\n  bad", lastTransitionTime: "2026-11-27T10:00:00Z"}
  appliedRevisions:
  - {revision: main@sha1:bb, path: apps/web, appliedAt: "2026-11-27T10:00:00Z"}
  - {revision: main@sha1:aa, path: apps/web}
"#,
        )
        .expect("an ApplySet");
        let now: Timestamp = "2026-11-27T10:03:00Z".parse().expect("a time");
        assert_eq!(
            table(&entries(&applyset.status.unwrap_or_default()), now),
            "\
REVISION       PATH       APPLIED                         RESULT
main@sha1:cc   -          -                               BuildFailed: kustomize: bad
main@sha1:bb   apps/web   2026-11-27T10:00:00Z (3m ago)   Applied (current)
main@sha1:aa   apps/web   -                               Applied
"
        );
    }
}
