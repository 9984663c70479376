//! The rollback post-mortem, end to end: a real controller, real git, the local control plane
//! and real kubectl (`rollout undo`, `rollout restart`, `edit`).
//!
//! v1 sets `TO_BE_DELETED`; v2 drops it (so does the last-applied annotation); `kubectl rollout
//! undo --to-revision=1` brings it back live; v3 is applied. kubectl's apply keeps it forever.
//! `staleFields: Report` names it with the revision that applied it; `Remove` deletes it and
//! nothing else.

mod git;
mod operator;
mod support;

use std::time::Duration;

use anyhow::{Context, Result};
use applyset::operator::api::{ApplySet, DriftedField};
use operator::{
    ControllerFixture, create_applyset, events_with, patch_spec, ready_at, revision, start_controller,
    wait_for_applyset,
};
use support::TestNamespace;

const T: Duration = Duration::from_secs(90);

fn deployment(image: &str, env: &[(&str, &str)]) -> String {
    Workload::DEPLOYMENT.manifest(image, env)
}

/// The post-mortem's workload: it told the story with a StatefulSet; a Deployment is the
/// commoner case. Both keep their revisions (ReplicaSets, ControllerRevisions) for `rollout undo`.
#[derive(Clone, Copy)]
struct Workload {
    resource: &'static str,
    kind: &'static str,
    /// Fields between `spec:` and `selector:` that the kind needs.
    extra_spec: &'static str,
}

impl Workload {
    const DEPLOYMENT: Workload = Workload { resource: "deployment", kind: "Deployment", extra_spec: "" };
    const STATEFUL_SET: Workload =
        Workload { resource: "statefulset", kind: "StatefulSet", extra_spec: "  serviceName: web\n" };

    fn manifest(&self, image: &str, env: &[(&str, &str)]) -> String {
        let env: String =
            env.iter().map(|(name, value)| format!("        - name: {name}\n          value: \"{value}\"\n")).collect();
        format!(
            "apiVersion: apps/v1\nkind: {kind}\nmetadata:\n  name: web\nspec:\n{extra}  replicas: 1\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: app\n        image: {image}\n        env:\n{env}",
            kind = self.kind,
            extra = self.extra_spec,
        )
    }

    fn get(&self, ns: &TestNamespace, jsonpath: &str) -> Result<String> {
        ns.kubectl_ok(&["get", self.resource, "web", "-o", &format!("jsonpath={jsonpath}")], None)
    }

    fn env_names(&self, ns: &TestNamespace) -> Result<String> {
        self.get(ns, "{.spec.template.spec.containers[0].env[*].name}")
    }

    /// Waits until the workload's controller recorded `revision` (a ReplicaSet or a
    /// ControllerRevision per template), which `rollout undo --to-revision` needs.
    async fn wait_for_rollout_revision(&self, ns: &TestNamespace, revision: &str) -> Result<()> {
        support::eventually(&format!("{} revision {revision}", self.resource), T, || async {
            let recorded = match self.kind {
                "Deployment" => {
                    self.get(ns, "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}")? == revision
                }
                _ => ns
                    .kubectl_ok(
                        &["get", "controllerrevisions", "-l", "app=web", "-o", "jsonpath={.items[*].revision}"],
                        None,
                    )?
                    .split_whitespace()
                    .any(|r| r == revision),
            };
            Ok(recorded.then_some(()))
        })
        .await
    }
}

/// The drift report's fields of the object named `web`, with `reason`.
fn fields_with(applyset: &ApplySet, reason: &str) -> Vec<DriftedField> {
    let Some(drift) = applyset.status.as_ref().and_then(|s| s.drift.as_ref()) else { return Vec::new() };
    drift
        .objects
        .iter()
        .filter(|o| o.name == "web")
        .flat_map(|o| o.fields.clone())
        .filter(|f| f.reason == reason)
        .collect()
}

fn removed(applyset: &ApplySet) -> Vec<DriftedField> {
    let Some(drift) = applyset.status.as_ref().and_then(|s| s.drift.as_ref()) else { return Vec::new() };
    drift.removed.iter().filter(|o| o.name == "web").flat_map(|o| o.fields.clone()).collect()
}

fn env_names(ns: &TestNamespace) -> Result<String> {
    Workload::DEPLOYMENT.env_names(ns)
}

const STALE_PATH: &str = "spec.template.spec.containers[name=app].env[name=TO_BE_DELETED]";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rolled_back_env_var_of_a_deployment_is_reported_then_removed() -> Result<()> {
    post_mortem(Workload::DEPLOYMENT, "postmortem-deploy").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rolled_back_env_var_of_a_stateful_set_is_reported_then_removed() -> Result<()> {
    post_mortem(Workload::STATEFUL_SET, "postmortem-sts").await
}

async fn post_mortem(workload: Workload, prefix: &str) -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new(prefix).await?;
    repo.write("web.yaml", workload.manifest("nginx:1.0", &[("TO_BE_DELETED", "x"), ("ANOTHER_ENV", "1")]));
    let v1 = repo.commit("v1");
    let mut controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    wait_for_applyset(&ns, "app", &controller, "v1 Ready", T, ready_at(revision(&v1))).await?;
    workload.wait_for_rollout_revision(&ns, "1").await?;

    repo.write("web.yaml", workload.manifest("nginx:2.0", &[("ANOTHER_ENV", "1")]));
    let v2 = repo.commit("v2 drops TO_BE_DELETED");
    wait_for_applyset(&ns, "app", &controller, "v2 Ready", T, ready_at(revision(&v2))).await?;
    workload.wait_for_rollout_revision(&ns, "2").await?;
    assert_eq!(workload.env_names(&ns)?, "ANOTHER_ENV");

    ns.kubectl_ok(&["rollout", "undo", &format!("{}/web", workload.resource), "--to-revision=1"], None)?;
    assert_eq!(workload.env_names(&ns)?, "TO_BE_DELETED ANOTHER_ENV", "the rollback brought it back");
    ns.kubectl_ok(&["rollout", "restart", &format!("{}/web", workload.resource)], None)?;

    // Restarted between v2 and v3 (with an empty git cache): the history is in the status.
    controller.stop();
    let controller = start_controller(&ns)?;
    repo.write("web.yaml", workload.manifest("nginx:3.0", &[("ANOTHER_ENV", "1")]));
    let v3 = repo.commit("v3");
    let reported = wait_for_applyset(&ns, "app", &controller, "v3 Ready with a stale field", T, |a| {
        ready_at(revision(&v3))(a) && !fields_with(a, "Stale").is_empty()
    })
    .await?;
    let stale = fields_with(&reported, "Stale");
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert_eq!(stale[0].path, STALE_PATH);
    assert_eq!(stale[0].applied_in.as_deref(), Some(revision(&v1).as_str()));
    // `rollout undo` sets no field manager: the apiserver names it after kubectl's binary.
    let manager = stale[0].manager.as_deref().unwrap_or_default();
    assert!(manager.starts_with("kubectl"), "the rollback put it back: {manager:?}");
    let drifted = operator::condition(&reported, "Drifted").context("Drifted condition")?;
    assert_eq!(drifted.0, "True", "{drifted:?}");
    assert!(drifted.2.contains("TO_BE_DELETED"), "{drifted:?}");
    assert_eq!(workload.env_names(&ns)?, "TO_BE_DELETED ANOTHER_ENV", "Report leaves it in place");
    let events = events_with(&ns, "app", "StaleFields").await?;
    assert!(
        events
            .iter()
            .any(|(kind, reason, note)| kind == "Warning" && reason == "StaleFields" && note.contains("TO_BE_DELETED")),
        "{events:?}"
    );

    patch_spec(&ns, "app", serde_json::json!({ "drift": { "staleFields": "Remove" } })).await?;
    let cleaned = wait_for_applyset(&ns, "app", &controller, "the stale field removed", T, |a| {
        ready_at(revision(&v3))(a) && removed(a).iter().any(|f| f.path == STALE_PATH)
    })
    .await?;
    assert!(fields_with(&cleaned, "Stale").is_empty(), "{:?}", cleaned.status);
    assert_eq!(workload.env_names(&ns)?, "ANOTHER_ENV", "only the stale field is gone");
    let image = workload.get(&ns, "{.spec.template.spec.containers[0].image}")?;
    assert_eq!(image, "nginx:3.0");
    let restarted = workload.get(&ns, "{.spec.template.metadata.annotations.kubectl\\.kubernetes\\.io/restartedAt}")?;
    assert!(!restarted.is_empty(), "the rollout restart annotation is foreign, not stale: kept");
    let events = events_with(&ns, "app", "StaleFieldsRemoved").await?;
    assert!(
        events.iter().any(|(_, reason, note)| reason == "StaleFieldsRemoved" && note.contains("TO_BE_DELETED")),
        "{events:?}"
    );
    // Steady afterwards: nothing more to remove, nothing reported.
    let steady = wait_for_applyset(&ns, "app", &controller, "a clean interval", T, |a| {
        ready_at(revision(&v3))(a) && removed(a).is_empty() && fields_with(a, "Stale").is_empty()
    })
    .await?;
    assert_eq!(operator::condition(&steady, "Drifted").map(|c| c.0).as_deref(), Some("False"));
    Ok(())
}

fn widget(group: &str, spec: &str) -> String {
    format!("apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: w\nspec: {spec}\n")
}

/// JSON merge path: a custom resource's field that v1 set, v2 dropped, and a hand edit put back
/// (without the annotation) is stale; `Remove` deletes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_resource_field_is_stale_through_json_merge() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("stalecr").await?;
    let group = format!("{}.example.com", ns.name);
    let resource = format!("widgets.{group}");
    ns.kubectl_ok(&["apply", "-f", "-"], Some(&support::widget_crd(&group)))?;
    support::eventually("the Widget CRD established", T, || async {
        let established = ns.kubectl_ok(
            &["get", "crd", &resource, "-o", "jsonpath={.status.conditions[?(@.type==\"Established\")].status}"],
            None,
        )?;
        Ok((established == "True").then_some(()))
    })
    .await?;
    repo.write("w.yaml", widget(&group, "{size: 1, color: red}"));
    let v1 = repo.commit("v1");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    wait_for_applyset(&ns, "app", &controller, "v1 Ready", T, ready_at(revision(&v1))).await?;
    repo.write("w.yaml", widget(&group, "{size: 2}"));
    let v2 = repo.commit("v2 drops color");
    wait_for_applyset(&ns, "app", &controller, "v2 Ready", T, ready_at(revision(&v2))).await?;
    ns.kubectl_ok(&["patch", &resource, "w", "--type=merge", "-p", r#"{"spec":{"color":"red"}}"#], None)?;
    let reported = wait_for_applyset(&ns, "app", &controller, "color reported stale", T, |a| {
        fields_with_name(a, "w", "Stale").iter().any(|f| f.path == "spec.color")
    })
    .await?;
    let stale = fields_with_name(&reported, "w", "Stale");
    assert_eq!(stale[0].applied_in.as_deref(), Some(revision(&v1).as_str()), "{stale:?}");
    patch_spec(&ns, "app", serde_json::json!({ "drift": { "staleFields": "Remove" } })).await?;
    support::eventually("color removed", T, || async {
        let color = ns.kubectl_ok(&["get", &resource, "w", "-o", "jsonpath={.spec.color}"], None)?;
        Ok(color.is_empty().then_some(()))
    })
    .await?;
    assert_eq!(ns.kubectl_ok(&["get", &resource, "w", "-o", "jsonpath={.spec.size}"], None)?, "2");
    ns.kubectl_ok(&["delete", "crd", &resource, "--wait=false"], None)?;
    Ok(())
}

fn fields_with_name(applyset: &ApplySet, name: &str, reason: &str) -> Vec<DriftedField> {
    let Some(drift) = applyset.status.as_ref().and_then(|s| s.drift.as_ref()) else { return Vec::new() };
    drift
        .objects
        .iter()
        .filter(|o| o.name == name)
        .flat_map(|o| o.fields.clone())
        .filter(|f| f.reason == reason)
        .collect()
}

/// Foreign fields: `kubectl edit` adds an env var and a label → `Report` names both with their
/// manager; `Remove` deletes both; `replicas` written by a manager on the ignore list stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_fields_are_reported_then_removed_but_ignored_managers_keep_theirs() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("foreign").await?;
    repo.write("web.yaml", deployment("nginx:1.0", &[("ANOTHER_ENV", "1")]));
    let v1 = repo.commit("v1");
    let controller = start_controller(&ns)?;
    let spec = serde_json::json!({
        "source": { "url": repo.url() },
        "interval": "2s",
        "drift": { "foreignFields": "Report", "ignore": [{ "managers": ["autoscaler"] }] }
    });
    create_applyset(&ns, "app", spec).await?;
    let ready = wait_for_applyset(&ns, "app", &controller, "v1 Ready", T, ready_at(revision(&v1))).await?;
    assert!(fields_with(&ready, "Foreign").is_empty(), "an untouched Deployment has none: {:?}", ready.status);

    // A real `kubectl edit`: the editor is a script that adds the env var and the label.
    let editor = support::scratch_dir("foreign", "editor").join("edit.py");
    std::fs::write(
        &editor,
        "import json, sys\np = sys.argv[1]\no = json.load(open(p))\no['metadata']['labels'] = dict(o['metadata'].get('labels') or {}, team='payments')\no['spec']['template']['spec']['containers'][0]['env'].append({'name': 'DEBUG', 'value': 'true'})\njson.dump(o, open(p, 'w'))\n",
    )?;
    let mut edit = ns.kubectl()?;
    edit.args(["edit", "deployment/web", "-o", "json"]).env("KUBE_EDITOR", format!("python3 {}", editor.display()));
    let out = edit.output()?;
    assert!(out.status.success(), "kubectl edit: {}", String::from_utf8_lossy(&out.stderr));
    ns.kubectl_ok(
        &["patch", "deployment", "web", "--field-manager=autoscaler", "-p", r#"{"spec":{"replicas":3}}"#],
        None,
    )?;

    let reported = wait_for_applyset(&ns, "app", &controller, "foreign fields reported", T, |a| {
        fields_with(a, "Foreign").len() >= 2
    })
    .await?;
    let foreign: Vec<(String, Option<String>)> =
        fields_with(&reported, "Foreign").into_iter().map(|f| (f.path, f.manager)).collect();
    assert!(foreign.contains(&("metadata.labels.team".into(), Some("kubectl-edit".into()))), "{foreign:?}");
    assert!(
        foreign
            .contains(&("spec.template.spec.containers[name=app].env[name=DEBUG]".into(), Some("kubectl-edit".into()))),
        "{foreign:?}"
    );
    assert_eq!(ns.kubectl_ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"], None)?, "3");

    patch_spec(&ns, "app", serde_json::json!({ "drift": { "foreignFields": "Remove" } })).await?;
    wait_for_applyset(&ns, "app", &controller, "foreign fields removed", T, |a| {
        removed(a).len() >= 2 && fields_with(a, "Foreign").is_empty()
    })
    .await?;
    assert_eq!(env_names(&ns)?, "ANOTHER_ENV");
    let labels = ns.kubectl_ok(&["get", "deployment", "web", "-o", "jsonpath={.metadata.labels}"], None)?;
    assert!(!labels.contains("team"), "{labels}");
    assert_eq!(
        ns.kubectl_ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"], None)?,
        "3",
        "the ignored manager's replicas are never touched"
    );
    Ok(())
}

/// A fresh ApplySet of `examples/shop` (and a StatefulSet) with stale and foreign fields
/// reported: the cluster's own bookkeeping (defaults, revision annotations, status) is not
/// drift, so nothing is reported, at the first run or later ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untouched_shop_reports_no_drift() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("untouched").await?;
    let shop = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/shop");
    // The shop's own namespace, created by the ApplySet as a user's would be.
    let shop_ns = format!("{}-shop", ns.name);
    for entry in std::fs::read_dir(&shop)? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        // A group of its own: a CRD is cluster-wide, and another run's ApplySet may hold the shop's.
        let text = text.replace("shop.example.com", &format!("{shop_ns}.example.com"));
        let text = text.replace("namespace: shop", &format!("namespace: {shop_ns}")).replace(
            "kind: Namespace\nmetadata:\n  name: shop",
            &format!("kind: Namespace\nmetadata:\n  name: {shop_ns}"),
        );
        repo.write(&path.file_name().unwrap().to_string_lossy(), text);
    }
    repo.write(
        "50-statefulset.yaml",
        format!(
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n  namespace: {shop_ns}\nspec:\n  serviceName: db\n  replicas: 1\n  selector:\n    matchLabels: {{app: db}}\n  template:\n    metadata:\n      labels: {{app: db}}\n    spec:\n      containers:\n      - name: db\n        image: postgres:16\n"
        ),
    );
    let v1 = repo.commit("shop");
    let controller = start_controller(&ns)?;
    let spec = serde_json::json!({
        "source": { "url": repo.url() },
        "interval": "2s",
        "drift": { "staleFields": "Report", "foreignFields": "Report" }
    });
    create_applyset(&ns, "shop", spec).await?;
    wait_for_applyset(&ns, "shop", &controller, "Ready", T, ready_at(revision(&v1))).await?;
    // Two more runs, after the cluster's controllers wrote their bookkeeping.
    for _ in 0..2 {
        let asked = operator::request_reconcile(&ns, "shop").await?;
        let handled = wait_for_applyset(&ns, "shop", &controller, "a requested run", T, |a| {
            a.status.as_ref().and_then(|s| s.last_handled_reconcile_at.as_deref()) == Some(asked.as_str())
        })
        .await?;
        let drift = handled.status.as_ref().and_then(|s| s.drift.clone()).unwrap_or_default();
        assert_eq!(drift.count, 0, "{drift:?}");
        assert!(drift.objects.is_empty() && drift.reasons.is_empty(), "{drift:?}");
        assert_eq!(operator::condition(&handled, "Drifted").map(|c| c.0).as_deref(), Some("False"));
    }
    ns.kubectl_ok(&["delete", "namespace", &shop_ns, "--wait=false"], None)?;
    ns.kubectl_ok(&["delete", "crd", &format!("featureflags.{shop_ns}.example.com"), "--wait=false"], None)?;
    Ok(())
}
