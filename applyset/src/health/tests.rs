//! kstatus's rules, case by case: each object with the status and reason kstatus computes for it.

use applyset_merge::Value;

use super::{Context, Status, compute};

const NOW: i64 = 1_800_000_000;

fn health(json: &str) -> (Status, Option<String>) {
    let object = Value::from_json_str(json).unwrap();
    let health = compute(&object, Context { now: NOW });
    (health.status, health.reason)
}

fn check<J: AsRef<str>>(cases: &[(&str, J, Status, Option<&str>)]) {
    for (name, json, status, reason) in cases {
        let (got_status, got_reason) = health(json.as_ref());
        assert_eq!((got_status, got_reason.as_deref()), (*status, *reason), "{name}");
    }
}

#[test]
fn generic_properties_come_first() {
    use Status::*;
    check(&[
        (
            "being deleted",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"deletionTimestamp":"2026-01-01T00:00:00Z"}}"#,
            Terminating,
            None,
        ),
        (
            "generation not observed",
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":2},"status":{"observedGeneration":1}}"#,
            InProgress,
            Some("LatestGenerationNotObserved"),
        ),
        (
            "Reconciling=True",
            r#"{"apiVersion":"x.io/v1","kind":"Widget","status":{"conditions":[{"type":"Reconciling","status":"True","reason":"Working"}]}}"#,
            InProgress,
            Some("Working"),
        ),
        (
            "Stalled=True",
            r#"{"apiVersion":"x.io/v1","kind":"Widget","status":{"conditions":[{"type":"Stalled","status":"True","reason":"Broken"}]}}"#,
            Failed,
            Some("Broken"),
        ),
        (
            "malformed generation",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generation":"two"},"status":{"observedGeneration":1}}"#,
            Unknown,
            None,
        ),
    ]);
}

#[test]
fn custom_resources_follow_their_ready_condition() {
    use Status::*;
    check(&[
        ("no status", r#"{"apiVersion":"x.io/v1","kind":"Widget"}"#, Current, None),
        (
            "Ready=True",
            r#"{"apiVersion":"x.io/v1","kind":"Widget","status":{"conditions":[{"type":"Ready","status":"True"}]}}"#,
            Current,
            None,
        ),
        (
            "Ready=False",
            r#"{"apiVersion":"x.io/v1","kind":"Widget","status":{"conditions":[{"type":"Ready","status":"False","reason":"Waiting"}]}}"#,
            InProgress,
            Some("Waiting"),
        ),
        (
            "Ready=Unknown",
            r#"{"apiVersion":"x.io/v1","kind":"Widget","status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"Checking"}]}}"#,
            InProgress,
            Some("Checking"),
        ),
        ("a Namespace", r#"{"apiVersion":"v1","kind":"Namespace","status":{"phase":"Active"}}"#, Current, None),
    ]);
}

#[test]
fn deployments() {
    use Status::*;
    let deployment = |spec: &str, status: &str| {
        format!(
            r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"generation":1}},"spec":{spec},"status":{status}}}"#
        )
    };
    let available = r#""conditions":[{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"},{"type":"Available","status":"True"}]"#;
    let cases = [
        (
            "rolled out",
            deployment(
                r#"{"replicas":2}"#,
                &format!(
                    r#"{{"observedGeneration":1,"replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2,{available}}}"#
                ),
            ),
            Current,
            None,
        ),
        (
            "too few replicas",
            deployment(r#"{"replicas":2}"#, r#"{"observedGeneration":1,"replicas":1}"#),
            InProgress,
            Some("LessReplicas"),
        ),
        (
            "too few updated",
            deployment(r#"{"replicas":2}"#, r#"{"observedGeneration":1,"replicas":2,"updatedReplicas":1}"#),
            InProgress,
            Some("LessUpdated"),
        ),
        (
            "old pods terminating",
            deployment(r#"{"replicas":2}"#, r#"{"observedGeneration":1,"replicas":3,"updatedReplicas":2}"#),
            InProgress,
            Some("ExtraPods"),
        ),
        (
            "not available",
            deployment(
                r#"{"replicas":2}"#,
                r#"{"observedGeneration":1,"replicas":2,"updatedReplicas":2,"availableReplicas":1}"#,
            ),
            InProgress,
            Some("LessAvailable"),
        ),
        (
            "not ready",
            deployment(
                r#"{"replicas":2}"#,
                r#"{"observedGeneration":1,"replicas":2,"updatedReplicas":2,"availableReplicas":2,"readyReplicas":1}"#,
            ),
            InProgress,
            Some("LessReady"),
        ),
        (
            "replica set not available yet",
            deployment(
                r#"{"replicas":1,"progressDeadlineSeconds":600}"#,
                r#"{"observedGeneration":1,"replicas":1,"updatedReplicas":1,"availableReplicas":1,"readyReplicas":1}"#,
            ),
            InProgress,
            Some("ReplicaSetNotAvailable"),
        ),
        (
            "Available condition missing",
            deployment(
                r#"{"replicas":1,"progressDeadlineSeconds":600}"#,
                r#"{"observedGeneration":1,"replicas":1,"updatedReplicas":1,"availableReplicas":1,"readyReplicas":1,"conditions":[{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}"#,
            ),
            InProgress,
            Some("DeploymentNotAvailable"),
        ),
        (
            "progress deadline exceeded",
            deployment(
                r#"{"replicas":1}"#,
                r#"{"observedGeneration":1,"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded"}]}"#,
            ),
            Failed,
            Some("ProgressDeadlineExceeded"),
        ),
        (
            "scaled to zero",
            deployment(
                r#"{"replicas":0}"#,
                r#"{"observedGeneration":1,"conditions":[{"type":"Available","status":"True"}]}"#,
            ),
            Current,
            None,
        ),
    ];
    check(&cases);
}

#[test]
fn stateful_sets_daemon_sets_and_replica_sets() {
    use Status::*;
    check(&[
        (
            "sts on delete",
            r#"{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"updateStrategy":{"type":"OnDelete"}}}"#,
            Current,
            None,
        ),
        (
            "sts too few",
            r#"{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"replicas":3},"status":{"replicas":2}}"#,
            InProgress,
            Some("LessReplicas"),
        ),
        (
            "sts not ready",
            r#"{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"replicas":3},"status":{"replicas":3,"readyReplicas":2}}"#,
            InProgress,
            Some("LessReady"),
        ),
        (
            "sts partition rolling",
            r#"{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"replicas":3,"updateStrategy":{"rollingUpdate":{"partition":1}}},"status":{"replicas":3,"readyReplicas":3,"updatedReplicas":1}}"#,
            InProgress,
            Some("PartitionRollout"),
        ),
        (
            "sts revision mismatch",
            r#"{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"replicas":1},"status":{"replicas":1,"readyReplicas":1,"currentReplicas":1,"currentRevision":"a","updateRevision":"b"}}"#,
            InProgress,
            Some("RevisionMismatch"),
        ),
        (
            "sts rolled",
            r#"{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"replicas":1},"status":{"replicas":1,"readyReplicas":1,"currentReplicas":1,"currentRevision":"a","updateRevision":"a"}}"#,
            Current,
            None,
        ),
        (
            "ds without generation",
            r#"{"apiVersion":"apps/v1","kind":"DaemonSet","status":{}}"#,
            InProgress,
            Some("NoGeneration"),
        ),
        (
            "ds without observed generation",
            r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"generation":1},"status":{}}"#,
            InProgress,
            Some("NoObservedGeneration"),
        ),
        (
            "ds without desired",
            r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"generation":1},"status":{"observedGeneration":1}}"#,
            InProgress,
            Some("NoDesiredNumber"),
        ),
        (
            "ds not available",
            r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"generation":1},"status":{"observedGeneration":1,"desiredNumberScheduled":2,"currentNumberScheduled":2,"updatedNumberScheduled":2,"numberAvailable":1}}"#,
            InProgress,
            Some("LessAvailable"),
        ),
        (
            "ds ready",
            r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"generation":1},"status":{"observedGeneration":1,"desiredNumberScheduled":2,"currentNumberScheduled":2,"updatedNumberScheduled":2,"numberAvailable":2,"numberReady":2}}"#,
            Current,
            None,
        ),
        (
            "rs replica failure",
            r#"{"apiVersion":"apps/v1","kind":"ReplicaSet","status":{"conditions":[{"type":"ReplicaFailure","status":"True"}]}}"#,
            InProgress,
            Some("ReplicaFailure"),
        ),
        (
            "rs not labelled",
            r#"{"apiVersion":"apps/v1","kind":"ReplicaSet","spec":{"replicas":2},"status":{"fullyLabeledReplicas":1}}"#,
            InProgress,
            Some("LessLabelled"),
        ),
        (
            "rs available",
            r#"{"apiVersion":"apps/v1","kind":"ReplicaSet","spec":{"replicas":2},"status":{"replicas":2,"fullyLabeledReplicas":2,"availableReplicas":2,"readyReplicas":2}}"#,
            Current,
            None,
        ),
    ]);
}

#[test]
fn pods() {
    use Status::*;
    let recent = "2027-01-15T07:59:55Z"; // 5 s before NOW: still in kstatus's 15 s window
    let old = "2027-01-15T07:00:00Z";
    let pending = |created: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"creationTimestamp":"{created}"}},"status":{{"phase":"Pending","conditions":[{{"type":"PodScheduled","status":"False","reason":"Unschedulable"}}]}}}}"#
        )
    };
    assert_eq!("2027-01-15T08:00:00Z".parse::<k8s_openapi::jiff::Timestamp>().unwrap().as_second(), NOW);
    let cases = [
        ("no status", r#"{"apiVersion":"v1","kind":"Pod"}"#.to_owned(), InProgress, Some("PodNotObserved")),
        ("ready", r#"{"apiVersion":"v1","kind":"Pod","status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#.to_owned(), Current, None),
        ("running, not ready", r#"{"apiVersion":"v1","kind":"Pod","status":{"phase":"Running"}}"#.to_owned(), InProgress, Some("PodRunningNotReady")),
        (
            "crash looping",
            r#"{"apiVersion":"v1","kind":"Pod","status":{"phase":"Running","containerStatuses":[{"name":"app","state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}}"#.to_owned(),
            Failed,
            Some("ContainerCrashLooping"),
        ),
        ("succeeded", r#"{"apiVersion":"v1","kind":"Pod","status":{"phase":"Succeeded"}}"#.to_owned(), Current, None),
        ("failed (completed)", r#"{"apiVersion":"v1","kind":"Pod","status":{"phase":"Failed"}}"#.to_owned(), Current, None),
        ("pending", r#"{"apiVersion":"v1","kind":"Pod","status":{"phase":"Pending"}}"#.to_owned(), InProgress, Some("PodPending")),
        ("being scheduled", pending(recent), InProgress, Some("PodNotScheduled")),
        ("unschedulable", pending(old), Failed, Some("PodUnschedulable")),
        ("unknown phase", r#"{"apiVersion":"v1","kind":"Pod","status":{"phase":"Weird"}}"#.to_owned(), Unknown, None),
    ];
    check(&cases);
}

#[test]
fn jobs_claims_services_and_crds() {
    use Status::*;
    check(&[
        ("job not started", r#"{"apiVersion":"batch/v1","kind":"Job","status":{}}"#, InProgress, Some("JobNotStarted")),
        (
            "job running",
            r#"{"apiVersion":"batch/v1","kind":"Job","status":{"startTime":"2026-01-01T00:00:00Z","active":1}}"#,
            Current,
            None,
        ),
        (
            "job complete",
            r#"{"apiVersion":"batch/v1","kind":"Job","status":{"conditions":[{"type":"Complete","status":"True"}]}}"#,
            Current,
            None,
        ),
        (
            "job failed",
            r#"{"apiVersion":"batch/v1","kind":"Job","status":{"conditions":[{"type":"Failed","status":"True"}]}}"#,
            Failed,
            Some("JobFailed"),
        ),
        (
            "job suspended",
            r#"{"apiVersion":"batch/v1","kind":"Job","spec":{"suspend":true},"status":{"conditions":[{"type":"Suspended","status":"True"}]}}"#,
            Current,
            None,
        ),
        (
            "pvc pending",
            r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","status":{"phase":"Pending"}}"#,
            InProgress,
            Some("NotBound"),
        ),
        (
            "pvc bound",
            r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","status":{"phase":"Bound"}}"#,
            Current,
            None,
        ),
        (
            "lb without ip",
            r#"{"apiVersion":"v1","kind":"Service","spec":{"type":"LoadBalancer"}}"#,
            InProgress,
            Some("NoIPAssigned"),
        ),
        (
            "cluster ip service",
            r#"{"apiVersion":"v1","kind":"Service","spec":{"clusterIP":"10.0.0.1"}}"#,
            Current,
            None,
        ),
        ("secret", r#"{"apiVersion":"v1","kind":"Secret"}"#, Current, None),
        (
            "crd installing",
            r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","status":{}}"#,
            InProgress,
            Some("Installing"),
        ),
        (
            "crd established",
            r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","status":{"conditions":[{"type":"Established","status":"True"}]}}"#,
            Current,
            None,
        ),
        (
            "crd names refused",
            r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","status":{"conditions":[{"type":"NamesAccepted","status":"False","reason":"MultipleNamesNotAllowed"}]}}"#,
            Failed,
            Some("MultipleNamesNotAllowed"),
        ),
    ]);
}
