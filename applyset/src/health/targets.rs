//! The objects a wait judges, as both waiters see them (the controller's health step and
//! `applyset apply --wait`), and why a workload's Pods are not ready.

use applyset_merge::Value;
use kube::core::ApiResource;

use super::{Health, Status};
use crate::cluster::mapper::printed_name;
use crate::cluster::{Cluster, Mapping};

/// One object waited for.
#[derive(Debug, Clone)]
pub struct Target {
    pub mapping: Mapping,
    pub namespace: Option<String>,
    pub name: String,
}

impl Target {
    /// `deployment.apps/web`.
    pub fn display(&self) -> String {
        printed_name(&self.mapping.resource, &self.name)
    }
}

/// One judged object, for the message and the inventory.
#[derive(Debug, Clone)]
pub struct Judged {
    pub target: Target,
    pub health: Health,
}

/// Workload kinds whose Pods say why they are not ready.
const WORKLOADS: [(&str, &str); 4] =
    [("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("apps", "ReplicaSet")];

/// `Pod web-7c4f…: ImagePullBackOff (Back-off pulling image "…")` for the first Pod of each
/// unhealthy workload that is not ready.
pub async fn pod_reasons(cluster: &Cluster, judged: &[Judged]) -> Vec<String> {
    let pods = Mapping { resource: ApiResource::erase::<k8s_openapi::api::core::v1::Pod>(&()), namespaced: true };
    let mut reasons = Vec::new();
    for j in judged.iter().filter(|j| j.health.status != Status::Current) {
        let resource = &j.target.mapping.resource;
        if !WORKLOADS.contains(&(resource.group.as_str(), resource.kind.as_str())) {
            continue;
        }
        let Some(namespace) = j.target.namespace.as_deref() else { continue };
        let Ok(workload) = cluster.get(&j.target.mapping, Some(namespace), &j.target.name).await else { continue };
        let Some(selector) = match_labels(&workload) else { continue };
        let Ok(items) = cluster.list(&pods, Some(namespace), Some(&selector)).await else { continue };
        if let Some(reason) = items.iter().find_map(pod_reason) {
            reasons.push(reason);
        }
    }
    reasons
}

/// `spec.selector.matchLabels` as a label selector.
pub(crate) fn match_labels(workload: &Value) -> Option<String> {
    let labels = field(workload, &["spec", "selector", "matchLabels"])?.as_object()?;
    let parts: Vec<String> = labels.iter().filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}"))).collect();
    (!parts.is_empty()).then(|| parts.join(","))
}

fn field<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.as_object()?.get(*key))
}

/// Why one Pod is not ready: a container waiting or terminated with a reason, else its Ready
/// condition's reason; `None` for a ready Pod.
pub fn pod_reason(pod: &Value) -> Option<String> {
    let name = field(pod, &["metadata", "name"]).and_then(Value::as_str)?;
    let conditions = field(pod, &["status", "conditions"]).and_then(Value::as_array);
    let ready = conditions.into_iter().flatten().any(|c| {
        field(c, &["type"]).and_then(Value::as_str) == Some("Ready")
            && field(c, &["status"]).and_then(Value::as_str) == Some("True")
    });
    if ready {
        return None;
    }
    let statuses = field(pod, &["status", "containerStatuses"]).and_then(Value::as_array).into_iter().flatten();
    for status in statuses {
        for state in ["waiting", "terminated"] {
            if let Some(reason) = field(status, &["state", state, "reason"]).and_then(Value::as_str) {
                let message = field(status, &["state", state, "message"]).and_then(Value::as_str);
                return Some(match message {
                    Some(message) if !message.is_empty() => format!("Pod {name}: {reason} ({message})"),
                    _ => format!("Pod {name}: {reason}"),
                });
            }
        }
    }
    let phase = field(pod, &["status", "phase"]).and_then(Value::as_str).unwrap_or("Unknown");
    let unready = conditions.into_iter().flatten().find(|c| {
        field(c, &["type"]).and_then(Value::as_str) == Some("Ready")
            || field(c, &["type"]).and_then(Value::as_str) == Some("PodScheduled")
                && field(c, &["status"]).and_then(Value::as_str) == Some("False")
    });
    let why = unready.and_then(|c| field(c, &["reason"]).and_then(Value::as_str));
    Some(match why {
        Some(why) => format!("Pod {name}: {phase}, {why}"),
        None => format!("Pod {name}: {phase}, not ready"),
    })
}
