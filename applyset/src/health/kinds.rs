//! kstatus's rules for the built-in kinds whose readiness is not a `Ready` condition
//! (`core.go`): workloads by their replica counts and conditions, Pods by phase, Jobs by
//! their conditions, PVCs by phase, LoadBalancer Services by their IP, CRDs by
//! `Established`; Secrets, ConfigMaps, CronJobs and PodDisruptionBudgets are always Current.

use applyset_merge::Value;

use super::{Context, Health, HealthError, conditions, field, int_field, int_or, kind, string_or};

type Rule = fn(&Value, Context) -> Result<Health, HealthError>;

/// The rule for `object`'s group and kind, if kstatus has one.
pub(super) fn rule_for(object: &Value) -> Option<Rule> {
    let api_version = string_or(object, "apiVersion", "");
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let rule: Rule = match (group, kind(object)) {
        ("", "Service") => service,
        ("", "Pod") => pod,
        ("", "Secret" | "ConfigMap") | ("batch", "CronJob") => always_ready,
        ("", "PersistentVolumeClaim") => persistent_volume_claim,
        ("apps", "StatefulSet") => stateful_set,
        ("apps" | "extensions", "DaemonSet") => daemon_set,
        ("apps" | "extensions", "Deployment") => deployment,
        ("apps" | "extensions", "ReplicaSet") => replica_set,
        ("policy", "PodDisruptionBudget") => |_, _| Ok(Health::current("AllowedDisruptions has been computed.")),
        ("batch", "Job") => job,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => custom_resource_definition,
        _ => return None,
    };
    Some(rule)
}

fn always_ready(_: &Value, _: Context) -> Result<Health, HealthError> {
    Ok(Health::current("Resource is always ready"))
}

fn stateful_set(object: &Value, _: Context) -> Result<Health, HealthError> {
    if string_or(object, "spec.updateStrategy.type", "") == "OnDelete" {
        return Ok(Health::current("StatefulSet is using the ondelete update strategy"));
    }
    let spec = int_or(object, "spec.replicas", 1);
    let ready = int_or(object, "status.readyReplicas", 0);
    let current = int_or(object, "status.currentReplicas", 0);
    let updated = int_or(object, "status.updatedReplicas", 0);
    let replicas = int_or(object, "status.replicas", 0);
    let partition = int_or(object, "spec.updateStrategy.rollingUpdate.partition", -1);
    if spec > replicas {
        return Ok(Health::in_progress("LessReplicas", format!("Replicas: {replicas}/{spec}")));
    }
    if spec > ready {
        return Ok(Health::in_progress("LessReady", format!("Ready: {ready}/{spec}")));
    }
    if replicas > spec {
        return Ok(Health::in_progress("ExtraPods", format!("Pending termination: {}", replicas - spec)));
    }
    if partition != -1 {
        if updated < spec - partition {
            return Ok(Health::in_progress("PartitionRollout", format!("updated: {updated}/{}", spec - partition)));
        }
        return Ok(Health::current(format!("Partition rollout complete. updated: {updated}")));
    }
    if spec > current {
        return Ok(Health::in_progress("LessCurrent", format!("current: {current}/{spec}")));
    }
    if string_or(object, "status.currentRevision", "") != string_or(object, "status.updateRevision", "") {
        return Ok(Health::in_progress("RevisionMismatch", "Waiting for updated revision to match current"));
    }
    Ok(Health::current(format!("All replicas scheduled as expected. Replicas: {replicas}")))
}

fn deployment(object: &Value, _: Context) -> Result<Health, HealthError> {
    // Without a progress deadline the Progressing condition never settles: do not wait for it.
    let mut progressing = int_or(object, "spec.progressDeadlineSeconds", i64::from(i32::MAX)) == i64::from(i32::MAX);
    let mut available = false;
    for condition in conditions(object)? {
        match condition.kind {
            "Progressing" => {
                if condition.reason == "ProgressDeadlineExceeded" {
                    return Ok(Health::failed(condition.reason, "Progress deadline exceeded"));
                }
                if condition.status == "True" && condition.reason == "NewReplicaSetAvailable" {
                    progressing = true;
                }
            }
            "Available" if condition.status == "True" => available = true,
            _ => {}
        }
    }
    let spec = int_or(object, "spec.replicas", 1);
    let replicas = int_or(object, "status.replicas", 0);
    let updated = int_or(object, "status.updatedReplicas", 0);
    let ready = int_or(object, "status.readyReplicas", 0);
    let available_replicas = int_or(object, "status.availableReplicas", 0);
    if spec > replicas {
        return Ok(Health::in_progress("LessReplicas", format!("Replicas: {replicas}/{spec}")));
    }
    if spec > updated {
        return Ok(Health::in_progress("LessUpdated", format!("Updated: {updated}/{spec}")));
    }
    if replicas > spec {
        return Ok(Health::in_progress("ExtraPods", format!("Pending termination: {}", replicas - spec)));
    }
    if updated > available_replicas {
        return Ok(Health::in_progress("LessAvailable", format!("Available: {available_replicas}/{updated}")));
    }
    if spec > ready {
        return Ok(Health::in_progress("LessReady", format!("Ready: {ready}/{spec}")));
    }
    if !progressing {
        return Ok(Health::in_progress("ReplicaSetNotAvailable", "ReplicaSet not Available"));
    }
    if !available {
        return Ok(Health::in_progress("DeploymentNotAvailable", "Deployment not Available"));
    }
    Ok(Health::current(format!("Deployment is available. Replicas: {replicas}")))
}

fn replica_set(object: &Value, _: Context) -> Result<Health, HealthError> {
    if conditions(object)?.iter().any(|c| c.kind == "ReplicaFailure" && c.status == "True") {
        return Ok(Health::in_progress("ReplicaFailure", "Replica Failure condition. Check Pods"));
    }
    let spec = int_or(object, "spec.replicas", 1);
    let replicas = int_or(object, "status.replicas", 0);
    let ready = int_or(object, "status.readyReplicas", 0);
    let available = int_or(object, "status.availableReplicas", 0);
    let labelled = int_or(object, "status.fullyLabeledReplicas", 0);
    if spec > labelled {
        return Ok(Health::in_progress("LessLabelled", format!("Labelled: {labelled}/{spec}")));
    }
    if spec > available {
        return Ok(Health::in_progress("LessAvailable", format!("Available: {available}/{spec}")));
    }
    if spec > ready {
        return Ok(Health::in_progress("LessReady", format!("Ready: {ready}/{spec}")));
    }
    if replicas > spec {
        return Ok(Health::in_progress("ExtraPods", format!("Pending termination: {}", replicas - spec)));
    }
    Ok(Health::current(format!("ReplicaSet is available. Replicas: {replicas}")))
}

fn daemon_set(object: &Value, _: Context) -> Result<Health, HealthError> {
    if int_field(object, "metadata.generation")?.is_none() {
        let message = format!("{} metadata.generation not found", kind(object));
        return Ok(Health::in_progress("NoGeneration", message));
    }
    if int_field(object, "status.observedGeneration")?.is_none() {
        let message = format!("{} status.observedGeneration not found", kind(object));
        return Ok(Health::in_progress("NoObservedGeneration", message));
    }
    let desired = int_or(object, "status.desiredNumberScheduled", -1);
    let current = int_or(object, "status.currentNumberScheduled", 0);
    let updated = int_or(object, "status.updatedNumberScheduled", 0);
    let available = int_or(object, "status.numberAvailable", 0);
    let ready = int_or(object, "status.numberReady", 0);
    if desired == -1 {
        return Ok(Health::in_progress("NoDesiredNumber", "Missing .status.desiredNumberScheduled"));
    }
    if desired > current {
        return Ok(Health::in_progress("LessCurrent", format!("Current: {current}/{desired}")));
    }
    if desired > updated {
        return Ok(Health::in_progress("LessUpdated", format!("Updated: {updated}/{desired}")));
    }
    if desired > available {
        return Ok(Health::in_progress("LessAvailable", format!("Available: {available}/{desired}")));
    }
    if desired > ready {
        return Ok(Health::in_progress("LessReady", format!("Ready: {ready}/{desired}")));
    }
    Ok(Health::current(format!("All replicas scheduled as expected. Replicas: {desired}")))
}

fn persistent_volume_claim(object: &Value, _: Context) -> Result<Health, HealthError> {
    match string_or(object, "status.phase", "unknown") {
        "Bound" => Ok(Health::current("PVC is Bound")),
        phase => Ok(Health::in_progress("NotBound", format!("PVC is not Bound. phase: {phase}"))),
    }
}

/// How long a Pod may stay unschedulable before kstatus calls it Failed (its `ScheduleWindow`).
const SCHEDULE_WINDOW_SECONDS: i64 = 15;

fn pod(object: &Value, context: Context) -> Result<Health, HealthError> {
    let conditions = conditions(object)?;
    match string_or(object, "status.phase", "") {
        "Succeeded" => Ok(Health::current("Pod has completed successfully")),
        "Failed" => Ok(Health::current("Pod has completed, but not successfully")),
        "Running" => {
            if conditions.iter().any(|c| c.kind == "Ready" && c.status == "True") {
                return Ok(Health::current("Pod is Ready"));
            }
            let crash_looping = crash_looping_containers(object);
            if !crash_looping.is_empty() {
                let message = format!("Containers in CrashLoop state: {}", crash_looping.join(","));
                return Ok(Health::failed("ContainerCrashLooping", message));
            }
            Ok(Health::in_progress("PodRunningNotReady", "Pod is running but is not Ready"))
        }
        "Pending" => {
            let unschedulable = conditions
                .iter()
                .any(|c| c.kind == "PodScheduled" && c.status == "False" && c.reason == "Unschedulable");
            if unschedulable {
                let created = string_or(object, "metadata.creationTimestamp", "")
                    .parse::<k8s_openapi::jiff::Timestamp>()
                    .map_or(0, |t| t.as_second());
                if context.now - SCHEDULE_WINDOW_SECONDS < created {
                    return Ok(Health::in_progress("PodNotScheduled", "Pod has not been scheduled"));
                }
                return Ok(Health::failed("PodUnschedulable", "Pod could not be scheduled"));
            }
            Ok(Health::in_progress("PodPending", "Pod is in the Pending phase"))
        }
        "" => Ok(Health::in_progress("PodNotObserved", "Pod phase not available")),
        phase => Err(HealthError::UnknownPodPhase(phase.to_owned())),
    }
}

/// Containers waiting with reason `CrashLoopBackOff`, in status order.
fn crash_looping_containers(object: &Value) -> Vec<&str> {
    let Some(Value::Array(statuses)) = field(object, "status.containerStatuses") else { return Vec::new() };
    statuses
        .iter()
        .filter(|status| string_or(status, "state.waiting.reason", "") == "CrashLoopBackOff")
        .filter_map(|status| field(status, "name").and_then(Value::as_str))
        .collect()
}

fn job(object: &Value, _: Context) -> Result<Health, HealthError> {
    let parallelism = int_or(object, "spec.parallelism", 1);
    let completions = int_or(object, "spec.completions", parallelism);
    let succeeded = int_or(object, "status.succeeded", 0);
    let active = int_or(object, "status.active", 0);
    let failed = int_or(object, "status.failed", 0);
    let suspended = matches!(field(object, "spec.suspend"), Some(Value::Bool(true)));
    for condition in conditions(object)? {
        match (condition.kind, condition.status) {
            ("Complete", "True") => {
                return Ok(Health::current(format!("Job Completed. succeeded: {succeeded}/{completions}")));
            }
            ("Failed", "True") => {
                return Ok(Health::failed("JobFailed", format!("Job Failed. failed: {failed}/{completions}")));
            }
            ("Suspended", "True") if suspended => return Ok(Health::current("Job is suspended")),
            _ => {}
        }
    }
    if string_or(object, "status.startTime", "").is_empty() {
        return Ok(Health::in_progress("JobNotStarted", "Job not started"));
    }
    Ok(Health::current(format!("Job in progress. success:{succeeded}, active: {active}, failed: {failed}")))
}

fn service(object: &Value, _: Context) -> Result<Health, HealthError> {
    if string_or(object, "spec.type", "ClusterIP") == "LoadBalancer"
        && string_or(object, "spec.clusterIP", "").is_empty()
    {
        return Ok(Health::in_progress("NoIPAssigned", "ClusterIP not set. Service type: LoadBalancer"));
    }
    Ok(Health::current("Service is ready"))
}

fn custom_resource_definition(object: &Value, _: Context) -> Result<Health, HealthError> {
    for condition in conditions(object)? {
        if condition.kind == "NamesAccepted" && condition.status == "False" {
            return Ok(Health::failed(condition.reason, condition.message));
        }
        if condition.kind == "Established" {
            if condition.status == "False" && condition.reason != "Installing" {
                return Ok(Health::failed(condition.reason, condition.message));
            }
            if condition.status == "True" {
                return Ok(Health::current("CRD is established"));
            }
        }
    }
    Ok(Health::in_progress("Installing", "Install in progress"))
}

#[cfg(test)]
mod tests {
    use super::super::{HealthError, Status, compute, conditions, int_field};
    use super::*;

    /// A malformed object is Unknown, with kstatus's words for what is wrong.
    #[test]
    fn malformed_objects_are_unknown_with_kstatus_s_message() {
        let cases = [
            (r#"{"apiVersion":"v1","kind":"Pod","status":{"phase":"Weird"}}"#, "unknown phase Weird"),
            (
                r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"generation":"2"}}"#,
                r#"looking up metadata.generation from resource: "2" is not an integer"#,
            ),
            (r#"{"apiVersion":"x.io/v1","kind":"W","status":{"conditions":{}}}"#, "status.conditions is not a list"),
            (r#"{"apiVersion":"x.io/v1","kind":"W","status":{"conditions":[1]}}"#, "a condition is not an object"),
            (
                r#"{"apiVersion":"x.io/v1","kind":"W","status":{"conditions":[{"type":"Ready","status":true}]}}"#,
                "condition field status is not a string",
            ),
        ];
        for (json, message) in cases {
            let health = compute(&Value::from_json_str(json).unwrap(), Context { now: 0 });
            assert_eq!(
                (health.status, health.message.as_str(), health.reason),
                (Status::Unknown, message, None),
                "{json}"
            );
        }
        let object = Value::from_json_str(r#"{"status":{"observedGeneration":1.5,"conditions":[[]]}}"#).unwrap();
        assert!(matches!(
            int_field(&object, "status.observedGeneration"),
            Err(HealthError::NotAnInteger { path: "status.observedGeneration", .. })
        ));
        assert_eq!(conditions(&object), Err(HealthError::ConditionNotAnObject));
    }
}
