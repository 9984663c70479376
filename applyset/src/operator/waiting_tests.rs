use applyset_merge::Value;
use kube::core::ApiResource;

use super::*;
use crate::health::targets::{match_labels, pod_reason};

fn target(kind: &str, name: &str) -> Target {
    Target {
        mapping: Mapping {
            resource: ApiResource {
                group: "apps".into(),
                version: "v1".into(),
                api_version: "apps/v1".into(),
                kind: kind.into(),
                plural: format!("{}s", kind.to_lowercase()),
            },
            namespaced: true,
        },
        namespace: Some("shop".into()),
        name: name.into(),
    }
}

fn judged(name: &str, status: Status, message: &str) -> Judged {
    Judged { target: target("Deployment", name), health: Health { status, reason: None, message: message.into() } }
}

fn json(text: serde_json::Value) -> Value {
    Value::from_json_str(&text.to_string()).expect("valid JSON")
}

#[test]
fn healthy_when_every_object_is_current() {
    let all = [judged("web", Status::Current, "ok"), judged("api", Status::Current, "ok")];
    assert_eq!(verdict(&all, Instant::now(), Duration::from_secs(60)), Verdict::Healthy { count: 2 });
    assert_eq!(verdict(&[], Instant::now(), Duration::from_secs(60)), Verdict::Healthy { count: 0 });
}

#[test]
fn waiting_names_the_objects_until_the_timeout_then_fails() {
    let all = [
        judged("web", Status::Current, "ok"),
        judged("api", Status::InProgress, "Deployment is not ready: 1 of 2 updated replicas available"),
    ];
    let since = Instant::now();
    match verdict(&all, since, Duration::from_secs(60)) {
        Verdict::Waiting { message, deadline } => {
            assert_eq!(
                message,
                "waiting for 1 of 2 object(s) to be healthy: deployment.apps/api: Deployment is not ready: 1 of 2 updated replicas available (InProgress)"
            );
            assert_eq!(deadline, since + Duration::from_secs(60));
        }
        other => panic!("{other:?}"),
    }
    let long_ago = Instant::now() - Duration::from_secs(61);
    assert_eq!(
        verdict(&all, long_ago, Duration::from_secs(60)),
        Verdict::Failed {
            message: "1 object(s) not healthy after 60s: deployment.apps/api: Deployment is not ready: 1 of 2 updated replicas available (InProgress)".into()
        }
    );
}

#[test]
fn a_failed_object_fails_at_once() {
    let all = [judged("job", Status::Failed, "Job Failed. failed: 3/1")];
    match verdict(&all, Instant::now(), Duration::from_secs(600)) {
        Verdict::Failed { message } => {
            assert!(message.starts_with("1 object(s) failed: deployment.apps/job"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_long_list_is_cut() {
    let all: Vec<Judged> = (0..8).map(|i| judged(&format!("w{i}"), Status::InProgress, "not yet")).collect();
    let Verdict::Waiting { message, .. } = verdict(&all, Instant::now(), Duration::from_secs(60)) else {
        panic!("waiting")
    };
    assert!(message.ends_with("; and 3 more"), "{message}");
}

#[test]
fn the_pod_reason_is_the_containers_then_the_ready_condition() {
    let pulling = json(serde_json::json!({
        "metadata": { "name": "web-7c4f9-abcde" },
        "status": { "phase": "Pending",
            "conditions": [{ "type": "Ready", "status": "False", "reason": "ContainersNotReady" }],
            "containerStatuses": [{ "name": "app", "state": { "waiting": {
                "reason": "ImagePullBackOff", "message": "Back-off pulling image \"registry.example/app:unpullable\"" } } }] },
    }));
    assert_eq!(
        pod_reason(&pulling).as_deref(),
        Some("Pod web-7c4f9-abcde: ImagePullBackOff (Back-off pulling image \"registry.example/app:unpullable\")")
    );
    let unscheduled = json(serde_json::json!({
        "metadata": { "name": "web-1" },
        "status": { "phase": "Pending", "conditions": [{ "type": "PodScheduled", "status": "False", "reason": "Unschedulable" }] },
    }));
    assert_eq!(pod_reason(&unscheduled).as_deref(), Some("Pod web-1: Pending, Unschedulable"));
    let ready = json(serde_json::json!({
        "metadata": { "name": "web-2" },
        "status": { "phase": "Running", "conditions": [{ "type": "Ready", "status": "True" }] },
    }));
    assert_eq!(pod_reason(&ready), None);
}

#[test]
fn a_workloads_pods_are_found_by_its_match_labels() {
    let deployment =
        json(serde_json::json!({ "spec": { "selector": { "matchLabels": { "app": "web", "tier": "fe" } } } }));
    assert_eq!(match_labels(&deployment).as_deref(), Some("app=web,tier=fe"));
    assert_eq!(match_labels(&json(serde_json::json!({ "spec": {} }))), None);
}

#[test]
fn health_is_recorded_on_the_inventory_entries() {
    let deployment = |name: &str, state: &str| InventoryObject {
        kind: "Deployment.apps".into(),
        namespace: Some("shop".into()),
        name: name.into(),
        state: state.into(),
        ..InventoryObject::default()
    };
    // As the apply left it: the drifted one listed, the three applied ones only counted.
    let mut inventory = crate::operator::status::inventory(
        vec![
            deployment("web", "Drifted"),
            deployment("api", "Applied"),
            deployment("db", "Applied"),
            deployment("ui", "Applied"),
        ],
        crate::operator::status::INVENTORY_LIMIT,
    );
    assert_eq!((inventory.objects.len(), inventory.omitted), (1, 3));
    record(
        &mut inventory,
        &[
            judged("web", Status::Current, "ok"),
            judged("api", Status::InProgress, "rolling out"),
            judged("db", Status::Current, "ok"),
        ],
    );
    let health: Vec<_> = inventory
        .objects
        .iter()
        .map(|o| (o.name.as_str(), o.state.as_str(), o.health.as_deref(), o.health_message.as_deref()))
        .collect();
    // Healthy and only applied (db, ui): counted, not listed.
    assert_eq!(
        health,
        [("web", "Drifted", Some("Current"), None), ("api", "Applied", Some("InProgress"), Some("rolling out"))]
    );
    assert_eq!((inventory.count, inventory.omitted), (4, 2));
}

#[test]
fn health_check_references_default_to_the_core_group() {
    let check = |api_version: &str| HealthCheckReference {
        api_version: api_version.into(),
        kind: "K".into(),
        name: "n".into(),
        namespace: None,
    };
    assert_eq!(gvk_of(&check("v1")), GroupVersionKind::gvk("", "v1", "K"));
    assert_eq!(gvk_of(&check("apps/v1")), GroupVersionKind::gvk("apps", "v1", "K"));
}
