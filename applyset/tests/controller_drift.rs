//! The controller end to end on the real control plane, with real git repositories and the
//! real kubectl 1.33 as the user's tool: drift (a `kubectl edit`, `kubectl scale` or
//! `kubectl delete` of a managed object) reported or corrected, `spec.drift.ignore`, leader
//! election between two controller processes, impersonation of `spec.serviceAccountName`,
//! `/metrics`, and an interval that writes nothing when nothing changed.

mod git;
mod operator;
mod support;

// Leader election, impersonation, /metrics, quiet intervals.
#[path = "controller_drift/operations.rs"]
mod operations;

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use applyset::operator::api::{ApplySet, DriftedObject};
use git::Fixture;
use operator::{
    ControllerFixture, ControllerProcess, condition, config_map, create_applyset, deployment, failed_with, is_ready,
    ready_at, request_reconcile, revision, sample, start_controller, wait_for_applyset,
};
use support::TestNamespace;

const T: Duration = Duration::from_secs(90);
/// Long enough that only `request_reconcile` (or a spec change) starts a run during a test.
const NEVER: &str = "1h";

/// Adds resource limits in spellings the apiserver stores differently (`1000m` as `1`,
/// `0.5Gi` as `512Mi`) to the container of [`deployment`] (which must have no env).
fn with_limits(deployment: String) -> String {
    format!("{deployment}        resources:\n          limits:\n            cpu: 1000m\n            memory: 0.5Gi\n")
}

/// A real `kubectl edit` whose editor is a `sed -i` script (kubectl runs `$KUBE_EDITOR` through
/// the shell when it holds quotes, with the temp file appended). Fails unless kubectl says it
/// edited the object, so a script that matched nothing ("Edit cancelled") is caught.
fn kubectl_edit(ns: &TestNamespace, resources: &[&str], sed_script: &str) -> Result<()> {
    let editor = format!("sed -i -e '{sed_script}'");
    let mut command = ns.kubectl()?;
    command.arg("edit").args(resources).env("KUBE_EDITOR", &editor).env("EDITOR", &editor);
    let output = support::run(&mut command, None)?;
    let stdout = output.success_stdout()?;
    let edited = stdout.lines().filter(|line| line.ends_with(" edited")).count();
    ensure!(edited == resources.len(), "kubectl edit {resources:?} did not edit them all: {stdout}");
    Ok(())
}

fn status_of(applyset: &ApplySet) -> applyset::operator::api::ApplySetStatus {
    applyset.status.clone().unwrap_or_default()
}

/// Asks for a reconcile now and waits until the controller has finished the run that handled
/// the request (its final status write carries the request's value, and no run is in progress).
async fn reconcile_now(ns: &TestNamespace, name: &str, controller: &ControllerProcess) -> Result<ApplySet> {
    let requested = request_reconcile(ns, name).await?;
    wait_for_applyset(ns, name, controller, "the requested reconcile", T, |a| {
        let status = status_of(a);
        status.last_handled_reconcile_at.as_deref() == Some(requested.as_str())
            && condition(a, "Reconciling").is_none()
            && condition(a, "Ready").is_some_and(|(s, _, _)| s != "Unknown")
    })
    .await
}

fn drifted_object<'a>(applyset: &'a ApplySet, kind: &str, name: &str) -> Option<&'a DriftedObject> {
    applyset.status.as_ref()?.drift.as_ref()?.objects.iter().find(|o| o.kind == kind && o.name == name)
}

// 1. Report mode: a `kubectl edit` of a Deployment's image is reported (condition, status,
//    Warning Event) with the field path and the manager, and left as the user made it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_mode_reports_a_kubectl_edit_and_leaves_it() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("drift-report").await?;
    // Limits the apiserver canonicalizes: never drift (as `kubectl diff` agrees).
    repo.write("web.yaml", with_limits(deployment("web", &ns.name, "registry.example/app:1", 1, &[])));
    repo.write("settings.yaml", config_map("settings", &ns.name, "blue"));
    repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "app",
        serde_json::json!({ "source": { "url": repo.url() }, "interval": NEVER, "drift": { "mode": "Report" } }),
    )
    .await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;
    let ready = reconcile_now(&ns, "app", &controller).await?;
    assert_eq!(condition(&ready, "Drifted").map(|c| c.1), Some("NoDrift".to_owned()), "{:?}", ready.status);
    assert_eq!(ns.jsonpath("deployment/web", "{.spec.template.spec.containers[0].resources.limits.cpu}")?, "1");

    kubectl_edit(
        &ns,
        &["deployment/web"],
        r"s|^\( *\)- image: registry.example/app:1$|\1- image: registry.example/app:2|",
    )?;
    assert_eq!(ns.jsonpath("deployment/web", "{.spec.template.spec.containers[0].image}")?, "registry.example/app:2");

    let after = reconcile_now(&ns, "app", &controller).await?;
    let (drifted, reason, message) = condition(&after, "Drifted").context("no Drifted condition")?;
    assert_eq!((drifted.as_str(), reason.as_str()), ("True", "DriftDetected"), "{message}");
    assert!(message.contains("spec.template.spec.containers[name=app].image (by kubectl-edit)"), "{message}");
    // Reporting is not failing: the ApplySet is still Ready, and says that objects drifted.
    let (ready, _, ready_message) = condition(&after, "Ready").unwrap();
    assert_eq!(ready, "True", "{ready_message}");
    assert!(ready_message.contains("1 object(s) drifted"), "{ready_message}");
    let status = status_of(&after);
    let drift = status.drift.as_ref().context("no status.drift")?;
    assert_eq!((drift.count, drift.mode.as_str()), (1, "Report"), "{drift:?}");
    let web = drifted_object(&after, "Deployment.apps", "web").with_context(|| format!("web not in {drift:?}"))?;
    assert_eq!(web.namespace.as_deref(), Some(ns.name.as_str()));
    let fields: Vec<(&str, Option<&str>)> =
        web.fields.iter().map(|f| (f.path.as_str(), f.manager.as_deref())).collect();
    assert_eq!(fields, [("spec.template.spec.containers[name=app].image", Some("kubectl-edit"))]);
    let inventory = status.inventory.as_ref().context("no inventory")?;
    assert_eq!(inventory.states.get("Drifted"), Some(&1), "{inventory:?}");
    assert!(
        drifted_object(&after, "ConfigMap", "settings").is_none(),
        "the untouched ConfigMap is not drifted: {drift:?}"
    );
    let metrics = controller.metrics()?;
    assert_eq!(sample(&metrics, r#"applyset_objects{state="drifted"}"#), Some(1.0), "{metrics}");
    assert_eq!(sample(&metrics, r#"applyset_objects{state="applied"}"#), Some(1.0), "{metrics}");
    assert_eq!(sample(&metrics, "applyset_drift_corrected_objects_total"), Some(0.0), "{metrics}");

    // Not reverted, not even after another run.
    assert_eq!(ns.jsonpath("deployment/web", "{.spec.template.spec.containers[0].image}")?, "registry.example/app:2");
    let again = reconcile_now(&ns, "app", &controller).await?;
    assert_eq!(condition(&again, "Drifted").map(|c| c.1), Some("DriftDetected".to_owned()));
    assert_eq!(ns.jsonpath("deployment/web", "{.spec.template.spec.containers[0].image}")?, "registry.example/app:2");

    // A transient failure (the git server is away for a while) changes nothing of that: when
    // it is back, at the same revision and spec, the edit is still only reported.
    let away = repo.bare.with_extension("away");
    std::fs::rename(&repo.bare, &away)?;
    let requested = request_reconcile(&ns, "app").await?;
    wait_for_applyset(&ns, "app", &controller, "FetchFailed while the repository is away", T, |a| {
        failed_with("FetchFailed")(a) && status_of(a).last_handled_reconcile_at.as_deref() == Some(requested.as_str())
    })
    .await?;
    std::fs::rename(&away, &repo.bare)?;
    let back = reconcile_now(&ns, "app", &controller).await?;
    assert!(is_ready(&back), "{:?}", back.status);
    assert_eq!(
        ns.jsonpath("deployment/web", "{.spec.template.spec.containers[0].image}")?,
        "registry.example/app:2",
        "Report mode reverted the edit after a transient failure"
    );
    let (drifted, reason, message) = condition(&back, "Drifted").context("no Drifted condition")?;
    assert_eq!((drifted.as_str(), reason.as_str()), ("True", "DriftDetected"), "{message}");

    // A spec change that does not shape the apply (a new generation: here the timeout) does
    // not turn the next run into an apply either.
    operator::patch_spec(&ns, "app", serde_json::json!({ "timeout": "3m" })).await?;
    let generation = operator::get_applyset(&ns, "app").await?.metadata.generation;
    let changed = wait_for_applyset(&ns, "app", &controller, "the new generation handled", T, |a| {
        status_of(a).observed_generation == generation && is_ready(a)
    })
    .await?;
    assert_eq!(
        ns.jsonpath("deployment/web", "{.spec.template.spec.containers[0].image}")?,
        "registry.example/app:2",
        "Report mode reverted the edit after an unrelated spec change"
    );
    assert_eq!(condition(&changed, "Drifted").map(|c| c.1), Some("DriftDetected".to_owned()), "{:?}", changed.status);

    let events = operator::events_with(&ns, "app", "DriftDetected").await?;
    assert!(
        events.iter().any(|(kind, reason, note)| kind == "Warning"
            && reason == "DriftDetected"
            && note.contains("web")
            && note.contains("spec.template.spec.containers[name=app].image (by kubectl-edit)")),
        "{events:?}"
    );
    assert!(!events.iter().any(|(_, reason, _)| reason == "DriftCorrected"), "{events:?}");
    Ok(())
}

// 2. Correct mode (the default): the same kind of edit is reverted to git's value, and the
//    correction is reported (Event with path and manager, status.drift, Drifted=False).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn correct_mode_reverts_a_kubectl_edit() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("drift-correct").await?;
    repo.write("settings.yaml", config_map("settings", &ns.name, "blue"));
    repo.write("web.yaml", deployment("web", &ns.name, "registry.example/app:1", 1, &[]));
    repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": NEVER })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;

    // One edit session for both objects (kubectl opens them as one List). Their watch events
    // usually make one burst, so one drift check corrects both; on a loaded machine they can
    // fall into two checks, each correcting one, so what was corrected is read over both.
    kubectl_edit(
        &ns,
        &["configmap/settings", "deployment/web"],
        r"s/^\( *\)value: blue$/\1value: red/; s|^\( *\)- image: registry.example/app:1$|\1- image: registry.example/app:2|",
    )?;

    let reverted = || -> Result<bool> {
        Ok(ns.jsonpath("configmap/settings", "{.data.value}")? == "blue"
            && ns.jsonpath("deployment/web", "{.spec.template.spec.containers[0].image}")? == "registry.example/app:1")
    };
    support::eventually("both edits reverted to git's values", T, || async { Ok(reverted()?.then_some(())) }).await?;
    let corrected = || -> Result<Option<f64>> {
        Ok(sample(&controller.metrics()?, "applyset_drift_corrected_objects_total").filter(|n| *n >= 2.0))
    };
    let total = support::eventually("both corrections counted", T, || async { corrected() }).await?;
    assert_eq!(total, 2.0, "each edited object corrected once");
    let after = wait_for_applyset(&ns, "app", &controller, "drift corrected", T, |a: &ApplySet| {
        condition(a, "Drifted").map(|c| c.1).as_deref() == Some("DriftCorrected")
    })
    .await?;
    let (drifted, reason, message) = condition(&after, "Drifted").context("no Drifted condition")?;
    assert_eq!((drifted.as_str(), reason.as_str()), ("False", "DriftCorrected"), "{message}");
    assert_eq!(condition(&after, "Ready").map(|c| c.0), Some("True".to_owned()));
    let status = status_of(&after);
    let drift = status.drift.as_ref().context("no status.drift")?;
    assert_eq!(drift.mode, "Correct", "{drift:?}");
    assert_eq!(drift.count as usize, drift.objects.len(), "{drift:?}");
    // Every object the last correcting run reports, with its path and manager.
    let expected = [
        ("ConfigMap", "settings", "data.value"),
        ("Deployment.apps", "web", "spec.template.spec.containers[name=app].image"),
    ];
    for object in &drift.objects {
        let (_, _, path) = expected
            .iter()
            .find(|(kind, name, _)| object.kind == *kind && object.name == *name)
            .with_context(|| format!("unexpected drifted object: {drift:?}"))?;
        let fields: Vec<(&str, Option<&str>)> =
            object.fields.iter().map(|f| (f.path.as_str(), f.manager.as_deref())).collect();
        assert_eq!(fields, [(*path, Some("kubectl-edit"))]);
    }
    // Corrected objects are applied, not left drifted.
    assert_eq!(status.inventory.as_ref().and_then(|i| i.states.get("Drifted")), None, "{:?}", status.inventory);
    let metrics = controller.metrics()?;
    assert_eq!(sample(&metrics, r#"applyset_objects{state="drifted"}"#), Some(0.0), "{metrics}");

    // The DriftCorrected Events name both, each field with its manager.
    let events = operator::events_with(&ns, "app", "DriftCorrected").await?;
    let notes: Vec<&str> = events
        .iter()
        .filter(|(kind, reason, _)| kind == "Normal" && reason == "DriftCorrected")
        .map(|(_, _, note)| note.as_str())
        .collect();
    assert!(notes.iter().any(|n| n.contains("ConfigMap/settings [data.value (by kubectl-edit)]")), "{events:?}");
    assert!(
        notes.iter().any(|n| n.contains("spec.template.spec.containers[name=app].image (by kubectl-edit)")),
        "{events:?}"
    );
    assert!(!events.iter().any(|(_, reason, _)| reason == "DriftDetected"), "{events:?}");

    // Once corrected, the next run finds nothing.
    let clean = reconcile_now(&ns, "app", &controller).await?;
    assert_eq!(condition(&clean, "Drifted").map(|c| c.1), Some("NoDrift".to_owned()));
    assert_eq!(status_of(&clean).drift.map(|d| d.count), Some(0));
    Ok(())
}

// 3. `spec.drift.ignore` for `/spec/replicas` of Deployments: an HPA-like `kubectl scale` is
//    neither drift nor reverted, while git changes to the same Deployment still apply. Without
//    the rule (a second ApplySet), the scale is reverted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_replicas_survive_reconciles_and_git_changes() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("drift-ignore").await?;
    repo.write("web.yaml", deployment("web", &ns.name, "registry.example/app:1", 2, &[("MODE", "one")]));
    repo.commit("first");
    let plain_repo = Fixture::new(&format!("drift-ignore-plain-{}", ns.name));
    plain_repo.write("plain.yaml", deployment("plain", &ns.name, "registry.example/app:1", 2, &[]));
    plain_repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "scaled",
        serde_json::json!({
            "source": { "url": repo.url() },
            "interval": NEVER,
            "drift": { "ignore": [ { "paths": ["/spec/replicas"], "target": { "kind": "Deployment" } } ] },
        }),
    )
    .await?;
    create_applyset(&ns, "plain", serde_json::json!({ "source": { "url": plain_repo.url() }, "interval": NEVER }))
        .await?;
    wait_for_applyset(&ns, "scaled", &controller, "scaled Ready", T, is_ready).await?;
    wait_for_applyset(&ns, "plain", &controller, "plain Ready", T, is_ready).await?;
    assert_eq!(ns.jsonpath("deployment/web", "{.spec.replicas}")?, "2");

    ns.kubectl_ok(&["scale", "deployment/web", "--replicas=5"], None)?;
    ns.kubectl_ok(&["scale", "deployment/plain", "--replicas=5"], None)?;

    for round in 0..3 {
        let after = reconcile_now(&ns, "scaled", &controller).await?;
        assert_eq!(ns.jsonpath("deployment/web", "{.spec.replicas}")?, "5", "round {round}: the scale is kept");
        assert_eq!(
            condition(&after, "Drifted").map(|c| c.1),
            Some("NoDrift".to_owned()),
            "round {round}: {:?}",
            after.status
        );
        assert_eq!(status_of(&after).drift.map(|d| d.count), Some(0), "round {round}");
        assert_eq!(condition(&after, "Ready").map(|c| c.0), Some("True".to_owned()));
    }

    // A git change to another field of the same Deployment is applied; replicas stay 5.
    repo.write("web.yaml", deployment("web", &ns.name, "registry.example/app:1", 2, &[("MODE", "two")]));
    let second = repo.commit("second");
    reconcile_now(&ns, "scaled", &controller).await?;
    let after = wait_for_applyset(&ns, "scaled", &controller, "the second commit applied", T, |a| {
        ready_at(revision(&second))(a)
    })
    .await?;
    assert_eq!(ns.jsonpath("deployment/web", "{.spec.template.spec.containers[0].env[0].value}")?, "two");
    assert_eq!(ns.jsonpath("deployment/web", "{.spec.replicas}")?, "5", "the git change kept the scale");
    assert_eq!(status_of(&after).drift.map(|d| d.count), Some(0));
    let after = reconcile_now(&ns, "scaled", &controller).await?;
    assert_eq!(ns.jsonpath("deployment/web", "{.spec.replicas}")?, "5");
    assert_eq!(condition(&after, "Drifted").map(|c| c.1), Some("NoDrift".to_owned()));

    // Contrast: without the rule the scale is drift, corrected back to git's 2 by the check
    // the scale's watch event started (long before this point: no interval or request needed).
    // The correction is read from the object and the Event: the status's Drifted condition says
    // it only until the next run finds nothing more to correct.
    support::eventually("plain's scale reverted", T, || async {
        Ok((ns.jsonpath("deployment/plain", "{.spec.replicas}")? == "2").then_some(()))
    })
    .await?;
    let events = operator::events_with(&ns, "plain", "DriftCorrected").await?;
    let (_, _, note) = events
        .iter()
        .find(|(kind, reason, _)| kind == "Normal" && reason == "DriftCorrected")
        .with_context(|| format!("no DriftCorrected Event: {events:?}"))?;
    // `kubectl scale` writes through the scale subresource under kubectl's default manager,
    // which is the executable's name (`kubectl`, here `kubectl.1.33`).
    ensure!(note.starts_with("Deployment.apps/plain [spec.replicas (by kubectl"), "{note}");
    Ok(())
}

// 4. A managed object deleted with `kubectl delete`: re-created in Correct mode, reported (and
//    left deleted) in Report mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_objects_are_recreated_or_reported() -> Result<()> {
    let ControllerFixture { ns, repo: correct_repo } = ControllerFixture::new("drift-deleted").await?;
    correct_repo.write("a.yaml", config_map("correct-a", &ns.name, "one"));
    correct_repo.write("b.yaml", config_map("correct-b", &ns.name, "one"));
    correct_repo.commit("first");
    let report_repo = Fixture::new(&format!("drift-deleted-r-{}", ns.name));
    report_repo.write("a.yaml", config_map("report-a", &ns.name, "one"));
    report_repo.write("b.yaml", config_map("report-b", &ns.name, "one"));
    report_repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "correct", serde_json::json!({ "source": { "url": correct_repo.url() }, "interval": NEVER }))
        .await?;
    create_applyset(
        &ns,
        "report",
        serde_json::json!({ "source": { "url": report_repo.url() }, "interval": NEVER, "drift": { "mode": "Report" } }),
    )
    .await?;
    wait_for_applyset(&ns, "correct", &controller, "correct Ready", T, is_ready).await?;
    wait_for_applyset(&ns, "report", &controller, "report Ready", T, is_ready).await?;
    let old_uid = ns.jsonpath("configmap/correct-a", "{.metadata.uid}")?;

    ns.kubectl_ok(&["delete", "configmap", "correct-a", "report-a", "--wait=true"], None)?;

    // The deletion's watch event starts the run that re-creates it (no request needed).
    let corrected = |a: &ApplySet| condition(a, "Drifted").is_some_and(|c| c.1 == "DriftCorrected");
    let correct = wait_for_applyset(&ns, "correct", &controller, "correct-a re-created", T, corrected).await?;
    let new_uid = ns.jsonpath("configmap/correct-a", "{.metadata.uid}")?;
    assert_ne!(new_uid, old_uid, "re-created");
    assert_eq!(ns.jsonpath("configmap/correct-a", "{.data.value}")?, "one");
    assert_eq!(condition(&correct, "Drifted").map(|c| c.1), Some("DriftCorrected".to_owned()), "{:?}", correct.status);
    let object = drifted_object(&correct, "ConfigMap", "correct-a").with_context(|| format!("{:?}", correct.status))?;
    assert_eq!(object.fields.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["(object deleted)"]);
    assert!(drifted_object(&correct, "ConfigMap", "correct-b").is_none());
    let events = operator::events_with(&ns, "correct", "DriftCorrected").await?;
    assert!(
        events.iter().any(|(_, reason, note)| reason == "DriftCorrected" && note.contains("correct-a")),
        "{events:?}"
    );

    let report = reconcile_now(&ns, "report", &controller).await?;
    let (drifted, reason, message) = condition(&report, "Drifted").context("no Drifted condition")?;
    assert_eq!((drifted.as_str(), reason.as_str()), ("True", "DriftDetected"), "{message}");
    assert!(message.contains("report-a"), "{message}");
    let object = drifted_object(&report, "ConfigMap", "report-a").with_context(|| format!("{:?}", report.status))?;
    assert_eq!(object.fields.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["(object deleted)"]);
    let gone = ns.kubectl()?.args(["get", "configmap", "report-a"]).output()?;
    assert!(!gone.status.success(), "Report mode must not re-create the object");
    assert_eq!(ns.jsonpath("configmap/report-b", "{.data.value}")?, "one");
    let events = operator::events_with(&ns, "report", "DriftDetected").await?;
    assert!(
        events
            .iter()
            .any(|(kind, reason, note)| kind == "Warning" && reason == "DriftDetected" && note.contains("report-a")),
        "{events:?}"
    );
    Ok(())
}
