//! Tenants are strangers to each other, end to end on the real control plane: with
//! `--no-cross-namespace-refs` a reference into another namespace is refused and quotes nothing
//! of it; whatever the flag, a dependant says only that its dependency is not Ready, never why.

mod git;
mod operator;
mod support;

use std::time::Duration;

use anyhow::{Result, ensure};
use applyset::operator::api::ApplySet;
use kube::Api;
use kube::api::{Patch, PatchParams};
use operator::{
    ControllerFixture, ControllerOptions, condition, config_map, create_applyset, events_with, reason_is,
    start_controller, wait_for_applyset,
};
use support::TestNamespace;

const T: Duration = Duration::from_secs(60);

/// What another tenant's failure says about itself: file, object and variable names.
const PRIVATE: &str = "payroll-db-password.yaml";

/// An ApplySet in `ns` that no controller of the test runs, with a failed Ready condition whose
/// message is another tenant's private text.
async fn failed_applyset_elsewhere(ns: &TestNamespace, name: &str) -> Result<()> {
    create_applyset(ns, name, serde_json::json!({ "source": { "url": "https://git.example/private.git" } })).await?;
    let api: Api<ApplySet> = Api::namespaced(ns.client.clone(), &ns.name);
    let status = serde_json::json!({ "status": { "observedGeneration": 1, "conditions": [{
        "type": "Ready", "status": "False", "reason": "LoadFailed",
        "message": format!("1 error(s) loading the manifests: {PRIVATE}: invalid YAML"),
        "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1,
    }] } });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status)).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_into_another_namespace_is_refused_and_quotes_nothing_of_it() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("tenancy-refs").await?;
    let other = TestNamespace::create("tenancy-other").await?;
    failed_applyset_elsewhere(&other, "payroll").await?;
    repo.write("cm.yaml", config_map("mine", &ns.name, "1"));
    repo.commit("first");
    let controller = ControllerOptions::for_namespace(&ns).local_sources().arg("--no-cross-namespace-refs").start()?;

    let spec = |dependency: &str| {
        serde_json::json!({
            "source": { "url": repo.url() }, "interval": "1h",
            "dependsOn": [{ "name": dependency, "namespace": other.name }],
        })
    };
    // One that exists and one that does not: the answers are the same, so neither is probed.
    create_applyset(&ns, "app", spec("payroll")).await?;
    create_applyset(&ns, "probe", spec("no-such-applyset")).await?;
    let mut messages = Vec::new();
    for name in ["app", "probe"] {
        let refused =
            wait_for_applyset(&ns, name, &controller, "AccessDenied", T, reason_is("Ready", "AccessDenied")).await?;
        let stalled = condition(&refused, "Stalled").unwrap_or_default();
        ensure!(stalled.0 == "True" && stalled.1 == "AccessDenied", "Stalled: {stalled:?}");
        let message = condition(&refused, "Ready").map(|c| c.2).unwrap_or_default();
        ensure!(message.contains("spec.dependsOn[0]"), "names the field: {message}");
        ensure!(message.contains("--no-cross-namespace-refs"), "says why: {message}");
        for leaked in [PRIVATE, "LoadFailed", "not found", "not ready"] {
            ensure!(!message.contains(leaked), "quotes {leaked:?}: {message}");
        }
        let events = events_with(&ns, name, "AccessDenied").await?;
        ensure!(
            events.iter().any(|(kind, reason, _)| kind == "Warning" && reason == "AccessDenied"),
            "a Warning Event: {events:?}"
        );
        ensure!(events.iter().all(|(_, _, note)| !note.contains(PRIVATE)), "{events:?}");
        messages.push(message.replace("no-such-applyset", "payroll").replace("probe", "app"));
    }
    assert_eq!(messages[0], messages[1], "an existing and a missing ApplySet are refused alike");
    ensure!(!ns.exists("configmap/mine")?, "nothing was applied");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependant_names_its_dependency_and_its_ready_status_only() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("tenancy-deps").await?;
    repo.write("app/cm.yaml", config_map("app", &ns.name, "1"));
    // The dependency fails loading a file whose name is its own business.
    repo.write(&format!("base/{PRIVATE}"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [\n");
    repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "base",
        serde_json::json!({ "source": { "url": repo.url(), "path": "base" }, "interval": "1h" }),
    )
    .await?;
    let failed = wait_for_applyset(&ns, "base", &controller, "LoadFailed", T, reason_is("Ready", "LoadFailed")).await?;
    let own = condition(&failed, "Ready").map(|c| c.2).unwrap_or_default();
    ensure!(own.contains(PRIVATE), "the dependency's own status names its file: {own}");

    let spec = serde_json::json!({
        "source": { "url": repo.url(), "path": "app" }, "interval": "1h", "dependsOn": [{ "name": "base" }],
    });
    create_applyset(&ns, "app", spec).await?;
    let waiting =
        wait_for_applyset(&ns, "app", &controller, "DependencyNotReady", T, reason_is("Ready", "DependencyNotReady"))
            .await?;
    let message = condition(&waiting, "Ready").map(|c| c.2).unwrap_or_default();
    assert_eq!(
        message,
        format!("dependency ApplySet {}/base is not ready (Ready=False); nothing was applied", ns.name)
    );
    let events = events_with(&ns, "app", "DependencyNotReady").await?;
    ensure!(events.iter().any(|(_, reason, _)| reason == "DependencyNotReady"), "{events:?}");
    ensure!(events.iter().all(|(_, _, note)| !note.contains(PRIVATE) && !note.contains("LoadFailed")), "{events:?}");
    Ok(())
}

/// `config_map` with annotations.
fn annotated_config_map(name: &str, namespace: &str, annotations: &[(&str, &str)]) -> String {
    let lines: String = annotations.iter().map(|(key, value)| format!("    {key}: {value:?}\n")).collect();
    config_map(name, namespace, "1").replace("metadata:\n", &format!("metadata:\n  annotations:\n{lines}"))
}

/// Helm's, Flux's, Argo CD's and kpt's do-not-prune marks keep their objects (orphaned, with the mark
/// in status), an unmarked object is pruned, and a third object whose last-applied annotation
/// someone made invalid JSON neither fails the run nor holds the prune back (treated as absent,
/// written anew, a Warning Event names it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anchors_marks_keep_objects_and_an_invalid_annotation_does_not_freeze_prune() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("tenancy-marks").await?;
    let marked = [
        ("helm", ("helm.sh/resource-policy", "keep")),
        ("flux", ("kustomize.toolkit.fluxcd.io/prune", "disabled")),
        ("argo", ("argocd.argoproj.io/sync-options", "ServerSideApply=true,Prune=false")),
        ("kpt", ("client.lifecycle.config.k8s.io/deletion", "detach")),
    ];
    for (name, mark) in marked {
        repo.write(&format!("{name}.yaml"), annotated_config_map(name, &ns.name, &[mark]));
    }
    repo.write("gone.yaml", config_map("gone", &ns.name, "1"));
    repo.write("victim.yaml", config_map("victim", &ns.name, "1"));
    let first = repo.commit("six");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "1h" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, operator::ready_at(operator::revision(&first))).await?;

    for (name, _) in marked {
        repo.remove(&format!("{name}.yaml"));
    }
    repo.remove("gone.yaml");
    let second = repo.commit("five leave");
    // Someone with patch on one object writes garbage into its annotation, and the push of the
    // new commit asks for a run at once (the interval is an hour): the run that applies the new
    // commit finds the garbage (a drift check alone applies the commit it knows).
    ns.kubectl_ok(
        &[
            "annotate",
            "configmap",
            "victim",
            "--overwrite",
            "kubectl.kubernetes.io/last-applied-configuration={not json",
        ],
        None,
    )?;
    operator::request_reconcile(&ns, "app").await?;
    let done =
        wait_for_applyset(&ns, "app", &controller, "Ready", T, operator::ready_at(operator::revision(&second))).await?;
    ensure!(!ns.exists("configmap/gone")?, "the unmarked object is pruned");
    let skipped = done.status.map(|s| s.prune_skipped).unwrap_or_default();
    for (name, (key, _)) in marked {
        ensure!(ns.exists(&format!("configmap/{name}"))?, "{name}: kept by its mark");
        let entry = skipped.iter().find(|e| e.name == name);
        ensure!(
            entry.is_some_and(|e| e.state == "Orphaned" && e.message.as_deref().unwrap_or_default().contains(key)),
            "{name} orphaned naming {key}: {skipped:?}"
        );
    }
    let annotation = ns
        .jsonpath("configmap/victim", "{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}")?;
    let rewritten: serde_json::Value = serde_json::from_str(&annotation)?;
    ensure!(rewritten["metadata"]["name"] == "victim", "written anew: {annotation}");
    let events = events_with(&ns, "app", "LastAppliedDiscarded").await?;
    ensure!(
        events.iter().any(|(kind, reason, note)| kind == "Warning"
            && reason == "LastAppliedDiscarded"
            && note.contains("configmap/victim")),
        "{events:?}"
    );
    Ok(())
}

/// Hand edits of the ApplySet's own KEP-3659 annotations cannot hide members from prune: the
/// controller lists what its record of members holds too, says so, and writes the
/// annotations again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_parent_annotation_hides_no_member_from_prune() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("tenancy-parent").await?;
    let elsewhere = TestNamespace::create("tenancy-parent-b").await?;
    repo.write("own.yaml", config_map("own", &ns.name, "1"));
    repo.write("away.yaml", config_map("away", &elsewhere.name, "1"));
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: {}\nstringData:\n  k: v\n",
        ns.name
    );
    repo.write("secret.yaml", secret);
    let first = repo.commit("three");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "1h" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, operator::ready_at(operator::revision(&first))).await?;

    // The parent now claims ConfigMaps in its own namespace only.
    let api: Api<ApplySet> = Api::namespaced(ns.client.clone(), &ns.name);
    let edit = serde_json::json!({ "metadata": { "annotations": {
        "applyset.kubernetes.io/contains-group-kinds": "ConfigMap",
        "applyset.kubernetes.io/additional-namespaces": "",
    } } });
    api.patch("app", &PatchParams::default(), &Patch::Merge(&edit)).await?;
    repo.remove("away.yaml");
    repo.remove("secret.yaml");
    let second = repo.commit("two leave");
    operator::request_reconcile(&ns, "app").await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, operator::ready_at(operator::revision(&second))).await?;
    ensure!(!elsewhere.exists("configmap/away")?, "the member in the hidden namespace is pruned");
    ensure!(!ns.exists("secret/creds")?, "the member of the hidden kind is pruned");
    ensure!(ns.exists("configmap/own")?);
    let events = events_with(&ns, "app", "ParentAnnotationsRestored").await?;
    let restored = events.iter().find(|(_, reason, _)| reason == "ParentAnnotationsRestored");
    ensure!(
        restored.is_some_and(|(kind, _, note)| kind == "Warning"
            && note.contains("Secret")
            && note.contains(&format!("namespace {}", elsewhere.name))),
        "{events:?}"
    );
    // What remains is recorded as the controller writes it.
    let annotations = api.get("app").await?.metadata.annotations.unwrap_or_default();
    assert_eq!(annotations.get("applyset.kubernetes.io/contains-group-kinds").map(String::as_str), Some("ConfigMap"));
    Ok(())
}
