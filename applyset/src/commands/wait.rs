//! `applyset apply --wait`: after the apply (and prune), wait until every applied object is
//! healthy (kstatus `Current`), as the controller's `spec.wait` does. Beyond kubectl, whose
//! apply accepts `--wait` and does nothing with it.
//!
//! Event-driven: one watch per kind and namespace of the applied objects, each event judged
//! again. Progress goes to stderr (stdout keeps what `-o` prints): on a terminal, one line
//! rewritten in place; otherwise a line each time an object's health changes. An object that
//! fails, or the timeout, ends it with the reason (and, for a workload, why its Pods are not
//! ready).

use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::time::Duration;

use applyset_merge::Value;
use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;

use crate::apply::Visited;
use crate::cluster::{Cluster, Mapping};
use crate::health::targets::{Judged, Target, pod_reasons};
use crate::health::{self, Health, Status};

/// The wait when `--timeout` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Waits until every visited object is Current; `Err` with the reason when one fails or the
/// timeout passes.
pub async fn until_healthy(cluster: &Cluster, visited: &[Visited], timeout: Duration) -> Result<(), WaitError> {
    let targets: Vec<Target> = visited
        .iter()
        .map(|v| Target {
            mapping: Mapping { resource: v.api_resource.clone(), namespaced: v.namespaced },
            namespace: v.namespace.clone(),
            name: v.name.clone(),
        })
        .collect();
    let mut progress = Progress::new(&targets);
    let mut events = watch_all(cluster, &targets);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    loop {
        if progress.all_current() {
            progress.finish(&format!("{} object(s) healthy", targets.len()));
            return Ok(());
        }
        if let Some(failed) = progress.failed() {
            progress.finish("");
            let unhealthy = unhealthy(cluster, &progress).await;
            return Err(WaitError::Failed { object: failed.to_string(), unhealthy });
        }
        tokio::select! {
            event = events.next() => match event {
                Some((index, Some(object))) => progress.judge(index, &object),
                Some((index, None)) => progress.set(index, missing()),
                None => {
                    progress.finish("");
                    return Err(WaitError::WatchesEnded);
                }
            },
            _ = &mut deadline => {
                progress.finish("");
                let unhealthy = unhealthy(cluster, &progress).await;
                return Err(WaitError::TimedOut { seconds: timeout.as_secs(), unhealthy });
            }
        }
    }
}

fn missing() -> Health {
    Health { status: Status::InProgress, reason: Some("NotFound".into()), message: "not found".into() }
}

/// Why `--wait` ended without every object healthy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaitError {
    #[error("{object} failed: {unhealthy}")]
    Failed { object: String, unhealthy: String },
    #[error("timed out after {seconds}s waiting for the applied objects to be healthy: {unhealthy}")]
    TimedOut { seconds: u64, unhealthy: String },
    #[error("the watches of the applied objects ended")]
    WatchesEnded,
}

/// What is not healthy and why, with the Pods' reasons.
async fn unhealthy(cluster: &Cluster, progress: &Progress) -> String {
    let judged = progress.judged();
    let unhealthy: Vec<String> = judged
        .iter()
        .filter(|j| j.health.status != Status::Current)
        .map(|j| format!("{}: {} ({})", j.target.display(), j.health.message, j.health.status))
        .collect();
    let pods = pod_reasons(cluster, &judged).await;
    let mut message = unhealthy.join("; ");
    for pod in pods {
        message.push_str(&format!("; {pod}"));
    }
    message
}

/// (group, version, plural, namespace): one watch each.
type WatchKey = (String, String, String, Option<String>);

/// Every event of every target's kind and namespace, as (target index, the object or `None`
/// when deleted).
fn watch_all(
    cluster: &Cluster,
    targets: &[Target],
) -> futures::stream::SelectAll<futures::stream::BoxStream<'static, (usize, Option<Value>)>> {
    let mut groups: BTreeMap<WatchKey, (Mapping, HashMap<String, usize>)> = BTreeMap::new();
    for (index, target) in targets.iter().enumerate() {
        let r = &target.mapping.resource;
        let key = (r.group.clone(), r.version.clone(), r.plural.clone(), target.namespace.clone());
        let entry = groups.entry(key).or_insert_with(|| (target.mapping.clone(), HashMap::new()));
        entry.1.insert(target.name.clone(), index);
    }
    let mut all = futures::stream::SelectAll::new();
    for ((_, _, _, namespace), (mapping, names)) in groups {
        let client = cluster.client().clone();
        let api: Api<DynamicObject> = match &namespace {
            Some(ns) => Api::namespaced_with(client, ns, &mapping.resource),
            None => Api::all_with(client, &mapping.resource),
        };
        // One object: watched by name; several: the kind's events in the namespace, filtered.
        let config = match names.keys().next() {
            Some(name) if names.len() == 1 => watcher::Config::default().fields(&format!("metadata.name={name}")),
            _ => watcher::Config::default(),
        };
        let api_version = mapping.resource.api_version.clone();
        let kind = mapping.resource.kind.clone();
        let stream = watcher::watcher(api, config)
            .filter_map(move |event| {
                let found = match event {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => Some((o, true)),
                    Ok(watcher::Event::Delete(o)) => Some((o, false)),
                    _ => None,
                };
                let result = found.and_then(|(object, present)| {
                    let index = *names.get(object.metadata.name.as_deref()?)?;
                    if !present {
                        return Some((index, None));
                    }
                    let mut json = serde_json::to_value(&object).ok()?;
                    json["apiVersion"] = serde_json::Value::String(api_version.clone());
                    json["kind"] = serde_json::Value::String(kind.clone());
                    Some((index, Value::from_json_str(&json.to_string()).ok()))
                });
                std::future::ready(result)
            })
            .boxed();
        all.push(stream);
    }
    all
}

/// Each target's latest health, and how it is shown.
struct Progress {
    targets: Vec<Target>,
    health: Vec<Option<Health>>,
    terminal: bool,
    line_shown: bool,
}

impl Progress {
    fn new(targets: &[Target]) -> Progress {
        Progress {
            targets: targets.to_vec(),
            health: vec![None; targets.len()],
            terminal: std::io::stderr().is_terminal(),
            line_shown: false,
        }
    }

    fn judge(&mut self, index: usize, object: &Value) {
        let now = health::Context { now: k8s_openapi::jiff::Timestamp::now().as_second() };
        self.set(index, health::compute(object, now));
    }

    fn set(&mut self, index: usize, health: Health) {
        let changed =
            self.health[index].as_ref().is_none_or(|h| h.status != health.status || h.message != health.message);
        self.health[index] = Some(health);
        if !changed {
            return;
        }
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let current = self.health.iter().flatten().filter(|h| h.status == Status::Current).count();
            let waiting = self
                .targets
                .iter()
                .zip(&self.health)
                .find(|(_, h)| h.as_ref().is_none_or(|h| h.status != Status::Current))
                .map(|(t, h)| match h {
                    Some(h) => format!("{}: {}", t.display(), h.message),
                    None => t.display(),
                })
                .unwrap_or_default();
            let mut line = format!("{current}/{} healthy; waiting for {waiting}", self.targets.len());
            line.truncate(line.char_indices().nth(150).map_or(line.len(), |(i, _)| i));
            let _ = write!(err, "\r\x1b[2K{line}");
            self.line_shown = true;
        } else {
            let health = self.health[index].as_ref().expect("just set");
            let _ = writeln!(err, "{}: {}: {}", self.targets[index].display(), health.status, health.message);
        }
    }

    fn all_current(&self) -> bool {
        self.health.iter().all(|h| h.as_ref().is_some_and(|h| h.status == Status::Current))
    }

    /// The first object that failed, named.
    fn failed(&self) -> Option<String> {
        self.targets
            .iter()
            .zip(&self.health)
            .find(|(_, h)| h.as_ref().is_some_and(|h| h.status == Status::Failed))
            .map(|(t, _)| t.display())
    }

    fn judged(&self) -> Vec<Judged> {
        self.targets
            .iter()
            .zip(&self.health)
            .map(|(target, health)| Judged {
                target: target.clone(),
                health: health.clone().unwrap_or(Health {
                    status: Status::Unknown,
                    reason: None,
                    message: "not seen yet".into(),
                }),
            })
            .collect()
    }

    /// Ends the live line; says `last` (if any).
    fn finish(&mut self, last: &str) {
        let mut err = std::io::stderr().lock();
        if self.line_shown {
            let _ = write!(err, "\r\x1b[2K");
        }
        if !last.is_empty() {
            let _ = writeln!(err, "{last}");
        }
    }
}
