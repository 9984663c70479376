//! What the test asks and waits for: RBAC answers, denials in the controller's log, its Events,
//! Ready, handled reconcile requests; and its steps, timed and named.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};

use super::T;
use crate::operator::{self, ControllerProcess, condition, config_map_value, wait_for_applyset};
use crate::support::{self, TestNamespace, run};

/// `reportingController` of the controller's Events.
const REPORTER: &str = "applyset-controller";

/// `kubectl auth can-i ARGS -n NAMESPACE --as=USER`: `yes` or `no`.
pub(crate) fn can_i(namespace: &TestNamespace, user: &str, args: &[&str]) -> Result<String> {
    let mut command = namespace.kubectl()?;
    command.args(["auth", "can-i"]).args(args).arg(format!("--as={user}"));
    Ok(run(&mut command, None)?.stdout.trim().to_owned())
}

/// Waits (RBAC changes take a moment) until `can_i` answers `expect`.
pub(crate) async fn wait_can(expect: &str, namespace: &TestNamespace, user: &str, args: &[&str]) -> Result<()> {
    for _ in 0..50 {
        if can_i(namespace, user, args)? == expect {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let answer = can_i(namespace, user, args)?;
    eprintln!("can-i {} -n {} as {user} → {answer}", args.join(" "), namespace.name);
    ensure!(answer == expect, "can-i {} -n {} as {user}: {answer}, expected {expect}", args.join(" "), namespace.name);
    Ok(())
}

/// The text without terminal colour sequences.
pub(crate) fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if !(c.is_ascii_digit() || c == ';') {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The first denial of `user` naming the right: what `grep -Eo "USER[^a-z]* cannot VERB resource
/// [^a-z]*RESOURCE[^a-z/]"` finds in `text`.
pub(crate) fn denial(text: &str, user: &str, verb: &str, resource: &str) -> Option<String> {
    let not_lower = |c: char| !c.is_ascii_lowercase();
    let skip_not_lower = |s: &str| s.find(|c: char| !not_lower(c) || c == '\n').unwrap_or(s.len());
    for (start, _) in text.match_indices(user) {
        let after_user = &text[start + user.len()..];
        let gap = skip_not_lower(after_user);
        if gap == 0 || !after_user[..gap].ends_with(' ') {
            continue;
        }
        let Some(rest) = after_user[gap..].strip_prefix(&format!("cannot {verb} resource ")) else { continue };
        let gap = skip_not_lower(rest);
        let Some(after) = rest[gap..].strip_prefix(resource) else { continue };
        if let Some(next) = after.chars().next().filter(|&c| not_lower(c) && c != '/' && c != '\n') {
            let end = text.len() - after.len() + next.len_utf8();
            return Some(text[start..end].to_owned());
        }
    }
    None
}

/// Runs one step, saying how long it took; its error names it.
pub(crate) async fn step<T>(name: &str, work: impl Future<Output = Result<T>>) -> Result<T> {
    let started = Instant::now();
    let result = work.await.with_context(|| format!("step failed: {name}"));
    let outcome = if result.is_ok() { "PASS" } else { "FAIL" };
    eprintln!("{outcome} {name} ({:.1}s)", started.elapsed().as_secs_f64());
    result
}

/// Reasons of the Events the controller recorded on ApplySet `name`.
pub(crate) async fn event_reasons(ns: &TestNamespace, name: &str) -> Result<Vec<String>> {
    let events = operator::events_on(ns, name).await?;
    Ok(events
        .into_iter()
        .filter(|e| e.reporting_controller.as_deref() == Some(REPORTER))
        .filter_map(|e| e.reason)
        .collect())
}

/// Ready's `status/reason`, empty without one.
pub(crate) fn ready_of(applyset: &applyset::operator::api::ApplySet) -> String {
    condition(applyset, "Ready").map(|(status, reason, _)| format!("{status}/{reason}")).unwrap_or_default()
}

/// Waits until ConfigMap `name` is gone.
pub(crate) async fn wait_deleted(ns: &TestNamespace, name: &str) -> Result<()> {
    support::eventually(&format!("configmap/{name} to be deleted"), T, || async {
        Ok(config_map_value(ns, name)?.is_none().then_some(()))
    })
    .await
}

/// Waits until the controller has handled the reconcile request `requested`.
pub(crate) async fn wait_handled(
    ns: &TestNamespace,
    name: &str,
    controller: &ControllerProcess,
    requested: &str,
) -> Result<applyset::operator::api::ApplySet> {
    wait_for_applyset(ns, name, controller, "the reconcile request handled", T, |a| {
        a.status.as_ref().and_then(|s| s.last_handled_reconcile_at.as_deref()) == Some(requested)
    })
    .await
}
