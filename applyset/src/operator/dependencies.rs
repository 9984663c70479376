//! `spec.dependsOn`: an ApplySet is fetched and applied only once every ApplySet it depends on
//! is `Ready` for its latest generation (which, for one that waits, means healthy). A cycle can
//! never start and is reported as `Stalled`. Pure functions over the controller's view of the
//! ApplySets; a dependant is run as soon as its dependency becomes Ready (the reconciler asks
//! for it), not at its next interval.
//!
//! Tenants are strangers: a dependant's status names its dependency and the dependency's
//! `Ready` status, never its reason or message (another namespace's failure text would name
//! its files and objects). With `--no-cross-namespace-refs` a reference into another
//! namespace is refused before anything of that namespace is looked at ([`cross_namespace`]).

use std::sync::Arc;

use super::api::ApplySet;
use super::status::READY;
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;

/// `namespace/name` of a dependency of `applyset` (its own namespace by default).
fn dependency_keys(applyset: &ApplySet) -> Vec<String> {
    let own = applyset.namespace_or_default();
    applyset.spec.depends_on.iter().map(|d| format!("{}/{}", d.namespace.as_deref().unwrap_or(&own), d.name)).collect()
}

fn find<'a>(all: &'a [Arc<ApplySet>], key: &str) -> Option<&'a Arc<ApplySet>> {
    all.iter().find(|a| a.key() == key)
}

/// `AccessDenied` when the controller forbids references into other namespaces and the spec
/// makes one (`spec.dependsOn`, `spec.healthChecks`): the fields are named, nothing of the other
/// namespace is read, so whether it exists is not revealed either.
pub fn cross_namespace(applyset: &ApplySet) -> Result<(), StepError> {
    let own = applyset.namespace_or_default();
    let elsewhere = |namespace: &Option<String>| namespace.as_deref().is_some_and(|ns| ns != own);
    let dependencies = applyset.spec.depends_on.iter().enumerate().filter(|(_, d)| elsewhere(&d.namespace));
    let health_checks = applyset.spec.health_checks.iter().enumerate().filter(|(_, c)| elsewhere(&c.namespace));
    let fields: Vec<String> = dependencies
        .map(|(i, d)| format!("spec.dependsOn[{i}] ({}/{})", d.namespace.as_deref().unwrap_or_default(), d.name))
        .chain(health_checks.map(|(i, c)| {
            format!("spec.healthChecks[{i}] ({} {}/{})", c.kind, c.namespace.as_deref().unwrap_or_default(), c.name)
        }))
        .collect();
    if fields.is_empty() {
        return Ok(());
    }
    Err(StepError::new(
        Stage::AccessDenied,
        format!(
            "{} refer(s) to another namespace than {own}; cross-namespace references are forbidden on this controller (--no-cross-namespace-refs)",
            fields.join(", ")
        ),
    ))
}

/// `Ok` when every dependency is Ready; otherwise the failure to report: a cycle through this
/// ApplySet (`DependencyCycle`, with the cycle) or the first dependency that is not Ready,
/// named with its `Ready` status only.
pub fn check(applyset: &ApplySet, all: &[Arc<ApplySet>]) -> Result<(), StepError> {
    if let Some(cycle) = cycle_through(applyset, all) {
        return Err(StepError::new(
            Stage::DependencyCycle,
            format!("spec.dependsOn makes a cycle: {}; none of them can be applied", cycle.join(" → ")),
        ));
    }
    for key in dependency_keys(applyset) {
        let Some(dependency) = find(all, &key) else {
            return Err(StepError::new(Stage::DependencyNotReady, format!("dependency ApplySet {key} not found")));
        };
        let status = dependency.status.as_ref();
        let ready = status.and_then(|s| s.conditions.iter().find(|c| c.type_ == READY));
        let current = status.and_then(|s| s.observed_generation) == dependency.metadata.generation;
        let why = match ready {
            Some(ready) if ready.status == "True" && current => continue,
            Some(ready) if current => format!("Ready={}", ready.status),
            Some(_) => "reconciling".to_owned(),
            None => "not reconciled yet".to_owned(),
        };
        return Err(StepError::new(
            Stage::DependencyNotReady,
            format!("dependency ApplySet {key} is not ready ({why}); nothing was applied"),
        ));
    }
    Ok(())
}

/// A path of dependencies from `applyset` back to itself, if any (`a → b → a`).
fn cycle_through(applyset: &ApplySet, all: &[Arc<ApplySet>]) -> Option<Vec<String>> {
    let start = applyset.key();
    let mut path = vec![start.clone()];
    let mut seen = std::collections::HashSet::new();
    fn walk(
        current: &ApplySet,
        start: &str,
        all: &[Arc<ApplySet>],
        path: &mut Vec<String>,
        seen: &mut std::collections::HashSet<String>,
    ) -> bool {
        for key in dependency_keys(current) {
            if key == start {
                path.push(key);
                return true;
            }
            if !seen.insert(key.clone()) {
                continue;
            }
            if let Some(next) = find(all, &key) {
                path.push(key);
                if walk(next, start, all, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    walk(applyset, &start, all, &mut path, &mut seen).then_some(path)
}

/// The ApplySets that depend on `key`.
pub fn dependants(key: &str, all: &[Arc<ApplySet>]) -> Vec<Arc<ApplySet>> {
    all.iter().filter(|a| dependency_keys(a).iter().any(|d| d == key)).cloned().collect()
}

/// The dependants of `key` that stopped at their dependencies (`DependencyNotReady`: one not
/// found, or not Ready yet) or have no outcome yet (a first run going on while `key` was
/// created). A run of `key` that did not end Ready still changes what they would find: it
/// exists now, or it closed a cycle.
pub fn waiting_dependants(key: &str, all: &[Arc<ApplySet>]) -> Vec<Arc<ApplySet>> {
    let waiting = |a: &ApplySet| {
        let conditions = a.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        match conditions.iter().find(|c| c.type_ == READY) {
            Some(ready) => ready.reason == super::status::reason::DEPENDENCY_NOT_READY,
            None => true,
        }
    };
    dependants(key, all).into_iter().filter(|a| waiting(a)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::api::{ApplySetSpec, ApplySetStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

    fn applyset(name: &str, depends_on: &[&str], ready: Option<&str>) -> Arc<ApplySet> {
        let depends: Vec<serde_json::Value> = depends_on
            .iter()
            .map(|d| match d.split_once('/') {
                Some((ns, n)) => serde_json::json!({ "name": n, "namespace": ns }),
                None => serde_json::json!({ "name": d }),
            })
            .collect();
        let spec: ApplySetSpec = serde_json::from_value(serde_json::json!({
            "source": { "url": "https://git.example/r.git" }, "dependsOn": depends,
        }))
        .expect("a valid spec");
        let mut applyset = ApplySet::new(name, spec);
        applyset.metadata.namespace = Some("apps".into());
        applyset.metadata.generation = Some(2);
        applyset.status = ready.map(|status| ApplySetStatus {
            observed_generation: Some(2),
            conditions: vec![Condition {
                type_: READY.into(),
                status: status.into(),
                reason: if status == "True" { "Succeeded" } else { "HealthCheckFailed" }.into(),
                message: "m".into(),
                last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
                observed_generation: Some(2),
            }],
            ..ApplySetStatus::default()
        });
        Arc::new(applyset)
    }

    #[test]
    fn runs_only_once_every_dependency_is_ready() {
        let crds = applyset("crds", &[], Some("True"));
        let app = applyset("app", &["crds", "infra/db"], None);
        let db = applyset("db", &[], Some("False"));
        let mut db_in_infra = (*db).clone();
        db_in_infra.metadata.namespace = Some("infra".into());
        let all = vec![crds.clone(), app.clone(), Arc::new(db_in_infra)];
        let failure = check(&app, &all).expect_err("db is not ready");
        assert_eq!(failure.stage, Stage::DependencyNotReady);
        // Its Ready status only: another tenant's reason and message stay theirs.
        assert_eq!(failure.message, "dependency ApplySet infra/db is not ready (Ready=False); nothing was applied");
        let ready_db = {
            let mut db = (*applyset("db", &[], Some("True"))).clone();
            db.metadata.namespace = Some("infra".into());
            Arc::new(db)
        };
        assert!(check(&app, &[crds.clone(), app.clone(), ready_db]).is_ok());
        let missing = check(&app, &[crds, app.clone()]).expect_err("infra/db is missing");
        assert_eq!(missing.message, "dependency ApplySet infra/db not found");
    }

    #[test]
    fn references_into_other_namespaces_are_named_when_forbidden() {
        let local = applyset("app", &["crds", "apps/base"], None);
        assert!(cross_namespace(&local).is_ok(), "its own namespace, named or not");
        let mut reaching = (*applyset("app", &["crds", "infra/db"], None)).clone();
        reaching.spec.health_checks = serde_json::from_value(serde_json::json!([
            { "apiVersion": "apps/v1", "kind": "Deployment", "name": "web" },
            { "apiVersion": "apps/v1", "kind": "Deployment", "name": "api", "namespace": "payments" },
        ]))
        .unwrap();
        let failure = cross_namespace(&reaching).expect_err("two references elsewhere");
        assert_eq!(failure.stage, Stage::AccessDenied);
        assert_eq!(
            failure.message,
            "spec.dependsOn[1] (infra/db), spec.healthChecks[1] (Deployment payments/api) refer(s) to another namespace than apps; cross-namespace references are forbidden on this controller (--no-cross-namespace-refs)"
        );
        assert!(failure.stage.stalls());
    }

    #[test]
    fn a_dependency_reconciling_a_new_generation_is_not_ready() {
        let mut base = (*applyset("base", &[], Some("True"))).clone();
        base.metadata.generation = Some(3);
        let app = applyset("app", &["base"], None);
        let failure = check(&app, &[Arc::new(base), app.clone()]).expect_err("generation 3 not observed");
        assert!(failure.message.contains("(reconciling)"), "{}", failure.message);
    }

    #[test]
    fn a_cycle_is_named_and_stalls() {
        let a = applyset("a", &["b"], None);
        let b = applyset("b", &["c"], None);
        let c = applyset("c", &["a"], None);
        let outside = applyset("d", &["a"], None);
        let all = vec![a.clone(), b, c, outside.clone()];
        let failure = check(&a, &all).expect_err("a cycle");
        assert_eq!(failure.stage, Stage::DependencyCycle);
        assert_eq!(
            failure.message,
            "spec.dependsOn makes a cycle: apps/a → apps/b → apps/c → apps/a; none of them can be applied"
        );
        let waiting = check(&outside, &all).expect_err("d waits for a, which is in a cycle");
        assert_eq!(waiting.stage, Stage::DependencyNotReady, "only the members of the cycle stall");
        let names: Vec<String> = dependants("apps/a", &all).iter().map(|a| a.key()).collect();
        assert_eq!(names, ["apps/c", "apps/d"]);
    }

    #[test]
    fn dependants_stopped_at_their_dependencies_or_without_an_outcome_are_woken() {
        let with_reason = |name: &str, reason: &str| {
            let mut a = (*applyset(name, &["db"], Some("False"))).clone();
            a.status.as_mut().expect("a status").conditions[0].reason = reason.into();
            Arc::new(a)
        };
        let mut elsewhere = (*with_reason("elsewhere", "DependencyNotReady")).clone();
        elsewhere.spec.depends_on.clear();
        let all = [
            with_reason("waiting", "DependencyNotReady"),
            with_reason("failing", "FetchFailed"),
            applyset("new", &["db"], None),
            applyset("ready", &["db"], Some("True")),
            Arc::new(elsewhere),
        ];
        let names: Vec<String> = waiting_dependants("apps/db", &all).iter().map(|a| a.key()).collect();
        assert_eq!(names, ["apps/waiting", "apps/new"]);
    }
}
