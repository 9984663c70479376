//! `spec.pruneGuard`: how much one revision may prune, and the annotation that approves more.

use super::super::api::PruneGuard;
use crate::source::parse_revision;

/// How many names a guard message shows at most.
const SAMPLE: usize = 10;

/// `Some(message)` when pruning `to_prune` (printed names) out of `managed` objects passes a
/// limit of `guard` and `approval` does not name `revision`.
pub fn blocked(
    guard: &PruneGuard,
    to_prune: &[String],
    managed: usize,
    approval: Option<&str>,
    revision: &str,
) -> Option<String> {
    let count = to_prune.len();
    let over_count =
        guard.max_objects.filter(|max| count > *max as usize).map(|max| format!("spec.pruneGuard.maxObjects {max}"));
    let over_percent = guard
        .max_percent
        .filter(|max| managed > 0 && count * 100 > *max as usize * managed)
        .map(|max| format!("spec.pruneGuard.maxPercent {max}"));
    let limits: Vec<String> = over_count.into_iter().chain(over_percent).collect();
    if limits.is_empty() || approval.is_some_and(|approval| approves(approval, revision)) {
        return None;
    }
    let percent = (count * 100).checked_div(managed).unwrap_or(100);
    let names: Vec<&str> = to_prune.iter().take(SAMPLE).map(String::as_str).collect();
    let more = count.saturating_sub(SAMPLE);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    let commit = parse_revision(revision).map_or(revision, |(_, sha)| sha);
    Some(format!(
        "this revision would prune {count} of {managed} objects ({percent}%), more than {}: nothing was pruned; \
         to let it through, annotate the ApplySet with applyset.dev/approve-prune={commit}. Objects: {}{more}",
        limits.join(" and "),
        names.join(", ")
    ))
}

/// Whether the annotation's value names `revision`: the revision itself, its commit, or a
/// prefix of 7 or more hex digits of the commit.
pub fn approves(approval: &str, revision: &str) -> bool {
    let approval = approval.trim();
    if approval == revision {
        return true;
    }
    let Some((_, sha)) = parse_revision(revision) else { return false };
    approval.len() >= 7
        && approval.chars().all(|c| c.is_ascii_hexdigit())
        && sha.starts_with(&approval.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn names(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("configmap/c{i:02}")).collect()
    }

    #[test]
    fn over_a_limit_is_blocked_with_the_count_and_a_sample() {
        let revision = format!("main@sha1:{SHA}");
        let percent = PruneGuard { max_objects: None, max_percent: Some(50) };
        let message = blocked(&percent, &names(8), 10, None, &revision).expect("8 of 10 is over 50%");
        assert!(
            message.starts_with(
                "this revision would prune 8 of 10 objects (80%), more than spec.pruneGuard.maxPercent 50"
            ),
            "{message}"
        );
        assert!(message.contains(&format!("applyset.dev/approve-prune={SHA}")), "{message}");
        assert!(message.ends_with("configmap/c00, configmap/c01, configmap/c02, configmap/c03, configmap/c04, configmap/c05, configmap/c06, configmap/c07"), "{message}");
        assert_eq!(blocked(&percent, &names(5), 10, None, &revision), None, "exactly the limit passes");

        let count = PruneGuard { max_objects: Some(3), max_percent: Some(90) };
        let message = blocked(&count, &names(12), 100, None, &revision).expect("12 is over 3");
        assert!(message.contains("more than spec.pruneGuard.maxObjects 3:"), "{message}");
        assert!(message.ends_with("configmap/c09 and 2 more"), "{message}");
        assert_eq!(blocked(&count, &names(3), 4, None, &revision), None);
        assert!(blocked(&PruneGuard::default(), &names(100), 100, None, &revision).is_none(), "no limits, no guard");
    }

    #[test]
    fn only_an_approval_of_this_revision_lets_it_through() {
        let revision = format!("main@sha1:{SHA}");
        let guard = PruneGuard { max_objects: Some(0), max_percent: None };
        for approval in [revision.as_str(), SHA, "0123456", " 0123456789ABCDEF "] {
            assert_eq!(blocked(&guard, &names(1), 1, Some(approval), &revision), None, "{approval:?}");
        }
        for approval in ["012345", "main@sha1:1111111111111111111111111111111111111111", "fedcba9", "", "0123456z"] {
            assert!(blocked(&guard, &names(1), 1, Some(approval), &revision).is_some(), "{approval:?}");
        }
    }
}
