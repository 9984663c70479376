//! health: after a successful apply (and prune), whether what the ApplySet waits for is up —
//! every applied object (`spec.wait`) or `spec.healthChecks` — judged with kstatus, or by the
//! ApplySet's CEL expressions for their kinds.
//!
//! Waiting never blocks a worker: each run judges health once, from the watch cache (no request
//! for the ApplySet's own objects), and an ApplySet still waiting is run again when a watched
//! object of it changes, status included, or when its health timeout passes. The timeout counts
//! from the first run that applied this revision with this spec; past it, or as soon as an
//! object is `Failed`, the run fails with `HealthCheckFailed`, naming the objects and, for
//! workloads, why their Pods are not ready (one LIST of their Pods, made only then).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use kube::core::GroupVersionKind;

use super::api::{ApplySet, HealthCheckReference, InventoryObject, InventoryStatus};
use super::external_health::External;
use super::lock;
use super::status;
use crate::apply::Visited;
use crate::causes::{Chain, with_causes};
use crate::cluster::cache::{Cached, ObjectCache};
use crate::cluster::mapper::GroupKind;
use crate::cluster::{Cluster, Mapping};
use crate::health::cel::{Expressions, Rules};
use crate::health::targets::{Judged, Target, pod_reasons};
use crate::health::{self, Health, Status};
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;

/// What a run found.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Every object waited for is Current.
    Healthy { count: usize },
    /// Some are not yet; the wait goes on until `deadline`.
    Waiting { message: String, deadline: Instant },
    /// An object Failed, or the timeout passed.
    Failed { message: String },
}

/// The start of each ApplySet's current wait: (revision and spec digest, since); and the
/// watches of its health targets that are not its own objects (see
/// [`super::external_health`]).
#[derive(Default)]
pub struct Waits {
    started: std::sync::Mutex<HashMap<String, (String, Instant)>>,
    external: std::sync::Mutex<HashMap<String, tokio::task::AbortHandle>>,
}

impl Waits {
    /// When the wait for `token` (revision and digest) began, starting it now if it is new.
    pub fn since(&self, key: &str, token: &str) -> Instant {
        let mut started = lock(&self.started);
        match started.get(key) {
            Some((known, since)) if known == token => *since,
            _ => {
                let now = Instant::now();
                started.insert(key.to_owned(), (token.to_owned(), now));
                now
            }
        }
    }

    pub fn forget(&self, key: &str) {
        lock(&self.started).remove(key);
        self.stop_watching(key);
    }

    /// Watches `externals` until `deadline` (the watches of the ApplySet's run before end
    /// first); `on_change` runs at the first change.
    pub fn watch_external(
        &self,
        key: &str,
        client: kube::Client,
        externals: Vec<External>,
        deadline: Instant,
        on_change: impl FnOnce() + Send + 'static,
    ) {
        self.stop_watching(key);
        if externals.is_empty() {
            return;
        }
        let task = tokio::spawn(async move {
            if super::external_health::changed(client, externals, deadline).await {
                on_change();
            }
        });
        lock(&self.external).insert(key.to_owned(), task.abort_handle());
    }

    /// Ends the ApplySet's watches of external health targets.
    pub fn stop_watching(&self, key: &str) {
        if let Some(task) = lock(&self.external).remove(key) {
            task.abort();
        }
    }
}

/// Whether the ApplySet waits for anything.
pub fn waits(applyset: &ApplySet) -> bool {
    applyset.spec.wait || !applyset.spec.health_checks.is_empty()
}

/// The CEL rules of the spec (an expression that does not compile is an invalid spec).
pub fn rules(applyset: &ApplySet) -> Result<Rules, StepError> {
    let expressions: Vec<Expressions> = applyset
        .spec
        .health_check_exprs
        .iter()
        .map(|e| Expressions {
            api_version: e.api_version.clone(),
            kind: e.kind.clone(),
            current: e.current.clone(),
            in_progress: e.in_progress.clone(),
            failed: e.failed.clone(),
        })
        .collect();
    Rules::compile(&expressions).map_err(|e| StepError::of(Stage::InvalidSpec, e))
}

/// The objects waited for: the applied ones (`spec.wait`) or `spec.healthChecks`.
pub async fn targets(applyset: &ApplySet, cluster: &Cluster, visited: &[Visited]) -> Result<Vec<Target>, StepError> {
    if applyset.spec.wait {
        return Ok(visited
            .iter()
            .map(|v| Target {
                mapping: Mapping { resource: v.api_resource.clone(), namespaced: v.namespaced },
                namespace: v.namespace.clone(),
                name: v.name.clone(),
            })
            .collect());
    }
    let own_namespace = applyset.namespace_or_default();
    let mut targets = Vec::new();
    for (index, check) in applyset.spec.health_checks.iter().enumerate() {
        let gvk = gvk_of(check);
        let mapping = cluster.mapping(&gvk).await.map_err(|e| {
            StepError::new(
                Stage::HealthCheck,
                format!(
                    "spec.healthChecks[{index}]: {} {} is not served: {e}",
                    check.api_version,
                    check.kind,
                    e = Chain(&e)
                ),
            )
        })?;
        let namespace = mapping.namespaced.then(|| check.namespace.clone().unwrap_or_else(|| own_namespace.clone()));
        targets.push(Target { mapping, namespace, name: check.name.clone() });
    }
    Ok(targets)
}

fn gvk_of(check: &HealthCheckReference) -> GroupVersionKind {
    let (group, version) = check.api_version.rsplit_once('/').unwrap_or(("", &check.api_version));
    GroupVersionKind::gvk(group, version, &check.kind)
}

/// Judges every target: from the watch cache when it holds the object for this set, else one
/// GET with the run's identity (an object of another set, or one `healthChecks` names); those
/// read with a GET are returned beside, with the version read, to be watched while the wait
/// goes on.
pub async fn judge(
    cache: &dyn ObjectCache,
    cluster: &Cluster,
    set_id: &str,
    targets: &[Target],
    rules: &Rules,
) -> (Vec<Judged>, Vec<External>) {
    let now = health::Context { now: k8s_openapi::jiff::Timestamp::now().as_second() };
    let mut judged = Vec::with_capacity(targets.len());
    let mut externals = Vec::new();
    for target in targets {
        let cached = cache.live(&target.mapping, target.namespace.as_deref(), &target.name, set_id);
        let object = match cached.and_then(|c| match c {
            Cached::Found(text) => text.parse(),
            Cached::Unlabelled => None,
        }) {
            Some(object) => Ok(object),
            None => {
                let read = cluster.get(&target.mapping, target.namespace.as_deref(), &target.name).await;
                let resource_version = read.as_ref().ok().and_then(|object| {
                    let metadata = object.as_object()?.get("metadata")?.as_object()?;
                    Some(metadata.get("resourceVersion")?.as_str()?.to_owned())
                });
                if read.as_ref().is_ok() || read.as_ref().is_err_and(|e| e.is_not_found()) {
                    externals.push(External { target: target.clone(), resource_version });
                }
                read
            }
        };
        let health = match object {
            Ok(object) => rules.judge(&object).unwrap_or_else(|| health::compute(&object, now)),
            Err(error) if error.is_not_found() => {
                Health { status: Status::InProgress, reason: Some("NotFound".into()), message: "not found".into() }
            }
            Err(error) => Health { status: Status::Unknown, reason: None, message: with_causes(&error) },
        };
        judged.push(Judged { target: target.clone(), health });
    }
    (judged, externals)
}

/// The verdict on judged objects, the wait having begun at `since` with `timeout`.
pub fn verdict(judged: &[Judged], since: Instant, timeout: Duration) -> Verdict {
    let unhealthy: Vec<&Judged> = judged.iter().filter(|j| j.health.status != Status::Current).collect();
    if unhealthy.is_empty() {
        return Verdict::Healthy { count: judged.len() };
    }
    let failed = unhealthy.iter().any(|j| j.health.status == Status::Failed);
    let lines = describe(&unhealthy);
    if failed || since.elapsed() >= timeout {
        let why = if failed { "failed".to_owned() } else { format!("not healthy after {}", seconds(timeout)) };
        return Verdict::Failed { message: format!("{} object(s) {why}: {lines}", unhealthy.len()) };
    }
    Verdict::Waiting {
        message: format!("waiting for {} of {} object(s) to be healthy: {lines}", unhealthy.len(), judged.len()),
        deadline: since + timeout,
    }
}

fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs())
}

/// `deployment.apps/web: Deployment is not ready …; job.batch/migrate: …` (the first few).
fn describe(unhealthy: &[&Judged]) -> String {
    const SHOWN: usize = 5;
    let mut parts: Vec<String> = unhealthy
        .iter()
        .take(SHOWN)
        .map(|j| format!("{}: {} ({})", j.target.display(), j.health.message, j.health.status))
        .collect();
    if unhealthy.len() > SHOWN {
        parts.push(format!("and {} more", unhealthy.len() - SHOWN));
    }
    parts.join("; ")
}

/// The run's health step: the verdict, the judged objects (for the inventory), and — when it
/// failed — why the Pods of the failing workloads are not ready; and the targets read from the
/// apiserver (not the watch cache). The wait began at `since` ([`Waits::since`]); objects are
/// read from `cache`, the watch cache of `cluster`.
pub async fn health(
    applyset: &ApplySet,
    since: Instant,
    cache: &dyn ObjectCache,
    cluster: &Cluster,
    set_id: &str,
    visited: &[Visited],
    timeout: Duration,
) -> Result<(Verdict, Vec<Judged>, Vec<External>), StepError> {
    let rules = rules(applyset)?;
    let targets = targets(applyset, cluster, visited).await?;
    let (judged, externals) = judge(cache, cluster, set_id, &targets, &rules).await;
    let verdict = match verdict(&judged, since, timeout) {
        Verdict::Failed { message } => {
            let pods = pod_reasons(cluster, &judged).await;
            let message = if pods.is_empty() { message } else { format!("{message}; {}", pods.join("; ")) };
            Verdict::Failed { message }
        }
        other => other,
    };
    Ok((verdict, judged, externals))
}

/// Records each judged object's health on its inventory entry; an object not (yet) healthy that
/// the inventory does not list (it lists only what is worth a look, [`status::worth_listing`])
/// is added while there is room.
pub fn record(inventory: &mut InventoryStatus, judged: &[Judged]) {
    for j in judged {
        let kind = GroupKind::of(&j.target.mapping.resource).to_string();
        let health = Some(j.health.status.as_str().to_owned());
        let health_message = (j.health.status != Status::Current).then(|| status::truncate(&j.health.message, 300));
        let room = inventory.objects.len() < status::INVENTORY_LIMIT;
        let listed = inventory
            .objects
            .iter_mut()
            .find(|o| o.kind == kind && o.name == j.target.name && o.namespace == j.target.namespace);
        if let Some(entry) = listed {
            (entry.health, entry.health_message) = (health, health_message);
        } else if j.health.status != Status::Current && room {
            inventory.objects.push(InventoryObject {
                kind,
                namespace: j.target.namespace.clone(),
                name: j.target.name.clone(),
                state: status::STATE_APPLIED.into(),
                health,
                health_message,
                ..InventoryObject::default()
            });
            inventory.omitted = inventory.omitted.saturating_sub(1);
        }
    }
}

#[cfg(test)]
#[path = "waiting_tests.rs"]
mod tests;
