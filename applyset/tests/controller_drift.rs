//! The controller end to end on the real control plane, with real git repositories and the
//! real kubectl 1.33 as the user's tool: drift (a `kubectl edit`, `kubectl scale` or
//! `kubectl delete` of a managed object) reported or corrected, `spec.drift.ignore`, leader
//! election between two controller processes, impersonation of `spec.serviceAccountName`,
//! `/metrics`, and an interval that writes nothing when nothing changed.

mod git;
mod operator;
mod support;

use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use applyset::operator::api::{ApplySet, DriftedObject};
use git::Fixture;
use k8s_openapi::api::coordination::v1::Lease;
use operator::{
    ControllerFixture, ControllerOptions, ControllerProcess, condition, config_map, create_applyset, deployment,
    failed_with, get_applyset, http_get, is_ready, ready_at, request_reconcile, revision, sample, service,
    start_controller, wait_for_applyset,
};
use support::{TestNamespace, lease_holder};

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

/// Every label value on every sample line.
fn label_values(metrics: &str) -> Vec<String> {
    let mut values = Vec::new();
    for line in metrics.lines().filter(|l| !l.starts_with('#')) {
        let Some((_, rest)) = line.split_once('{') else { continue };
        let Some((labels, _)) = rest.rsplit_once('}') else { continue };
        let mut remaining = labels;
        while let Some((_, after)) = remaining.split_once("=\"") {
            let mut value = String::new();
            let mut chars = after.char_indices();
            let mut end = after.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    other => value.push(other),
                }
            }
            values.push(value);
            remaining = &after[end..];
        }
    }
    values
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

    let events = operator::events_for(&ns, "app").await?;
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

    // One edit session for both objects (kubectl opens them as one List), so that their watch
    // events arrive as one burst: the drift check they start corrects both in one run.
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
    let after = wait_for_applyset(&ns, "app", &controller, "drift corrected", T, |a: &ApplySet| {
        condition(a, "Drifted").map(|c| c.1).as_deref() == Some("DriftCorrected")
    })
    .await?;
    let (drifted, reason, message) = condition(&after, "Drifted").context("no Drifted condition")?;
    assert_eq!((drifted.as_str(), reason.as_str()), ("False", "DriftCorrected"), "{message}");
    assert_eq!(condition(&after, "Ready").map(|c| c.0), Some("True".to_owned()));
    let status = status_of(&after);
    let drift = status.drift.as_ref().context("no status.drift")?;
    assert_eq!((drift.count, drift.mode.as_str()), (2, "Correct"), "{drift:?}");
    let settings = drifted_object(&after, "ConfigMap", "settings").with_context(|| format!("{drift:?}"))?;
    let fields: Vec<(&str, Option<&str>)> =
        settings.fields.iter().map(|f| (f.path.as_str(), f.manager.as_deref())).collect();
    assert_eq!(fields, [("data.value", Some("kubectl-edit"))]);
    let web = drifted_object(&after, "Deployment.apps", "web").with_context(|| format!("{drift:?}"))?;
    let fields: Vec<(&str, Option<&str>)> =
        web.fields.iter().map(|f| (f.path.as_str(), f.manager.as_deref())).collect();
    assert_eq!(fields, [("spec.template.spec.containers[name=app].image", Some("kubectl-edit"))]);
    // Corrected objects are applied, not left drifted.
    assert_eq!(status.inventory.as_ref().and_then(|i| i.states.get("Drifted")), None, "{:?}", status.inventory);
    let metrics = controller.metrics()?;
    assert_eq!(sample(&metrics, "applyset_drift_corrected_objects_total"), Some(2.0), "{metrics}");
    assert_eq!(sample(&metrics, r#"applyset_objects{state="drifted"}"#), Some(0.0), "{metrics}");

    let events = operator::events_for(&ns, "app").await?;
    assert!(
        events.iter().any(|(kind, reason, note)| kind == "Normal"
            && reason == "DriftCorrected"
            && note.contains("ConfigMap/settings [data.value (by kubectl-edit)]")
            && note.contains("spec.template.spec.containers[name=app].image (by kubectl-edit)")),
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
    let corrected = |a: &ApplySet| condition(a, "Drifted").map(|c| c.1).as_deref() == Some("DriftCorrected");
    let plain = wait_for_applyset(&ns, "plain", &controller, "plain's scale corrected", T, corrected).await?;
    assert_eq!(
        ns.jsonpath("deployment/plain", "{.spec.replicas}")?,
        "2",
        "without an ignore rule the scale is reverted"
    );
    assert_eq!(condition(&plain, "Drifted").map(|c| c.1), Some("DriftCorrected".to_owned()), "{:?}", plain.status);
    let object = drifted_object(&plain, "Deployment.apps", "plain").with_context(|| format!("{:?}", plain.status))?;
    assert_eq!(object.fields.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["spec.replicas"]);
    // `kubectl scale` writes through the scale subresource under kubectl's default manager,
    // which is the executable's name (`kubectl`, here `kubectl.1.33`).
    let manager = object.fields[0].manager.as_deref().unwrap_or_default();
    assert!(manager.starts_with("kubectl"), "manager {manager:?}");
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

    let correct = reconcile_now(&ns, "correct", &controller).await?;
    let new_uid = ns.jsonpath("configmap/correct-a", "{.metadata.uid}")?;
    assert_ne!(new_uid, old_uid, "re-created");
    assert_eq!(ns.jsonpath("configmap/correct-a", "{.data.value}")?, "one");
    assert_eq!(condition(&correct, "Drifted").map(|c| c.1), Some("DriftCorrected".to_owned()), "{:?}", correct.status);
    let object = drifted_object(&correct, "ConfigMap", "correct-a").with_context(|| format!("{:?}", correct.status))?;
    assert_eq!(object.fields.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["(object deleted)"]);
    assert!(drifted_object(&correct, "ConfigMap", "correct-b").is_none());
    let events = operator::events_for(&ns, "correct").await?;
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
    let events = operator::events_for(&ns, "report").await?;
    assert!(
        events
            .iter()
            .any(|(kind, reason, note)| kind == "Warning" && reason == "DriftDetected" && note.contains("report-a")),
        "{events:?}"
    );
    Ok(())
}

/// The controller's Lease in the namespace.
async fn lease(ns: &TestNamespace) -> Result<Option<Lease>> {
    support::read_lease(&ns.client, &ns.name, "applyset-controller").await
}

/// The `reportingInstance` of the Events recorded on an ApplySet.
async fn event_instances(ns: &TestNamespace, name: &str) -> Result<Vec<String>> {
    Ok(operator::events_on(ns, name).await?.into_iter().filter_map(|e| e.reporting_instance).collect())
}

// 5. Leader election: of two controllers only the lease holder reconciles; both are ready; a
//    SIGKILLed leader is replaced and the new leader applies the next commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standby_takes_over_from_a_killed_leader() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("leader").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "one"));
    let first = repo.commit("first");
    let options = |identity: &str| {
        ControllerOptions::for_namespace(&ns)
            .local_sources()
            .arg("--leader-elect")
            .arg("--leader-election-namespace")
            .arg(ns.name.clone())
            .arg("--leader-election-identity")
            .arg(identity.to_owned())
            .arg("--lease-duration=4s")
            .arg("--renew-deadline=3s")
            .arg("--retry-period=1s")
    };
    let mut alpha = options("alpha").start()?;
    // alpha leads before beta starts, so which one leads is known.
    let alpha_identity = support::eventually("alpha to hold the lease", T, || async {
        Ok(lease(&ns).await?.and_then(|l| lease_holder(&l)).filter(|h| h.starts_with("alpha_")))
    })
    .await?;
    let beta = options("beta").start()?;

    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    wait_for_applyset(&ns, "app", &alpha, "Ready", T, is_ready).await?;
    // A few more runs by the leader, to give the standby every chance to misbehave.
    let alpha_metrics = support::eventually("alpha to reconcile 3 times", T, || async {
        let text = alpha.metrics()?;
        Ok(sample(&text, r#"applyset_reconcile_total{result="success"}"#).filter(|n| *n >= 3.0).map(|_| text))
    })
    .await?;

    let current = lease(&ns).await?.context("no lease")?;
    assert_eq!(lease_holder(&current).as_deref(), Some(alpha_identity.as_str()));
    assert_eq!(current.spec.as_ref().and_then(|s| s.lease_duration_seconds), Some(4));
    assert_eq!(sample(&alpha_metrics, "applyset_leader"), Some(1.0), "{alpha_metrics}");
    let beta_metrics = beta.metrics()?;
    assert_ne!(sample(&beta_metrics, "applyset_leader"), Some(1.0), "{beta_metrics}");
    assert_eq!(
        sample(&beta_metrics, r#"applyset_reconcile_total{result="success"}"#).unwrap_or(0.0),
        0.0,
        "the standby reconciled:\n{beta_metrics}"
    );
    assert_eq!(
        sample(&beta_metrics, "applyset_git_fetch_duration_seconds_count"),
        Some(0.0),
        "the standby fetched:\n{beta_metrics}"
    );
    assert_eq!(http_get(alpha.health_port, "/readyz")?.0, 200);
    assert_eq!(http_get(beta.health_port, "/readyz")?.0, 200, "a standby is ready too");
    assert_eq!(http_get(beta.health_port, "/healthz")?.0, 200);
    let instances = event_instances(&ns, "app").await?;
    assert!(!instances.is_empty() && instances.iter().all(|i| *i == alpha_identity), "{instances:?}");
    assert_eq!(ns.jsonpath("configmap/a", "{.data.value}")?, "one");
    let status = status_of(&get_applyset(&ns, "app").await?);
    assert_eq!(status.last_applied_revision, Some(revision(&first)));

    alpha.kill();
    repo.write("a.yaml", config_map("a", &ns.name, "two"));
    let second = repo.commit("second");
    let beta_identity = support::eventually("beta to take the lease", T, || async {
        Ok(lease(&ns).await?.and_then(|l| lease_holder(&l)).filter(|h| h.starts_with("beta_")))
    })
    .await?;
    wait_for_applyset(&ns, "app", &beta, "the second commit applied by beta", T, |a| ready_at(revision(&second))(a))
        .await?;
    assert_eq!(ns.jsonpath("configmap/a", "{.data.value}")?, "two");
    let transitions = lease(&ns).await?.and_then(|l| l.spec).and_then(|s| s.lease_transitions);
    assert!(transitions.unwrap_or(0) >= 1, "leaseTransitions: {transitions:?}");
    let beta_metrics = beta.metrics()?;
    assert_eq!(sample(&beta_metrics, "applyset_leader"), Some(1.0), "{beta_metrics}");
    assert!(
        sample(&beta_metrics, r#"applyset_reconcile_total{result="success"}"#).unwrap_or(0.0) >= 1.0,
        "{beta_metrics}"
    );
    assert_eq!(http_get(beta.health_port, "/readyz")?.0, 200);
    let instances = event_instances(&ns, "app").await?;
    assert!(instances.contains(&beta_identity), "{instances:?}");
    Ok(())
}

// 6. Impersonation: objects are applied as `spec.serviceAccountName`, so a ServiceAccount that
//    may only manage ConfigMaps cannot create a Secret through the (admin) controller; nothing
//    is pruned after the failure; granting the right makes the ApplySet Ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_rights_bound_what_is_applied() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("impersonate").await?;
    ns.kubectl_ok(&["create", "serviceaccount", "deployer"], None)?;
    ns.kubectl_ok(
        &["create", "role", "configmaps", "--verb=get,list,watch,create,update,patch,delete", "--resource=configmaps"],
        None,
    )?;
    let subject = format!("--serviceaccount={}:deployer", ns.name);
    ns.kubectl_ok(&["create", "rolebinding", "deployer-configmaps", "--role=configmaps", &subject], None)?;

    repo.write("a.yaml", config_map("a", &ns.name, "one"));
    repo.write("b.yaml", config_map("b", &ns.name, "one"));
    let first = repo.commit("configmaps only");
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "app",
        serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s", "serviceAccountName": "deployer" }),
    )
    .await?;
    wait_for_applyset(&ns, "app", &controller, "Ready as deployer", T, is_ready).await?;
    // Written as the ServiceAccount, not as the controller's admin identity.
    let managers = ns.jsonpath("configmap/a", "{.metadata.managedFields[*].manager}")?;
    assert_eq!(managers, "applyset-controller");

    // b.yaml leaves (a prune candidate) and a Secret arrives, in one commit.
    repo.remove("b.yaml");
    repo.write(
        "creds.yaml",
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: {}\nstringData:\n  password: hunter2\n", ns.name),
    );
    let second = repo.commit("a secret");
    let failed = wait_for_applyset(&ns, "app", &controller, "ApplyFailed", T, failed_with("ApplyFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap();
    assert!(message.contains("creds"), "the message names the forbidden object: {message}");
    assert!(message.contains("forbidden"), "{message}");
    assert!(message.contains(&format!("system:serviceaccount:{}:deployer", ns.name)), "{message}");
    assert!(message.contains("nothing was pruned"), "{message}");
    let status = status_of(&failed);
    assert_eq!(status.last_applied_revision, Some(revision(&first)));
    assert_eq!(status.last_attempted_revision, Some(revision(&second)));
    let secret = ns.kubectl()?.args(["get", "secret", "creds"]).output()?;
    assert!(!secret.status.success(), "the Secret must not exist: the controller itself is admin");
    assert_eq!(ns.jsonpath("configmap/b", "{.data.value}")?, "one", "nothing pruned after a failed apply");
    let events = operator::events_for(&ns, "app").await?;
    assert!(
        events
            .iter()
            .any(|(kind, reason, note)| kind == "Warning" && reason == "ApplyFailed" && note.contains("creds")),
        "{events:?}"
    );

    ns.kubectl_ok(
        &["create", "role", "secrets", "--verb=get,list,watch,create,update,patch,delete", "--resource=secrets"],
        None,
    )?;
    ns.kubectl_ok(&["create", "rolebinding", "deployer-secrets", "--role=secrets", &subject], None)?;
    wait_for_applyset(&ns, "app", &controller, "Ready once the right is granted", T, |a| {
        ready_at(revision(&second))(a)
    })
    .await?;
    assert_eq!(ns.jsonpath("secret/creds", "{.data.password}")?, "aHVudGVyMg==");
    support::eventually("b to be pruned", T, || async {
        let b = ns.kubectl()?.args(["get", "configmap", "b", "--ignore-not-found", "-o", "name"]).output()?;
        Ok(String::from_utf8_lossy(&b.stdout).trim().is_empty().then_some(()))
    })
    .await?;
    assert_eq!(ns.jsonpath("configmap/a", "{.data.value}")?, "one");
    Ok(())
}

// 7. /metrics after a success and a failure: bounded labels only (no ApplySet name, no URL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_outcomes_with_bounded_labels() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("metrics").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "one"));
    repo.write("b.yaml", config_map("b", &ns.name, "one"));
    repo.write("c.yaml", service("c", &ns.name));
    repo.commit("first");
    let missing = format!("file://{}/no-such-repo-{}.git", repo.root.display(), ns.name);
    let controller = start_controller(&ns)?;
    let good_name = "zebra-metrics-probe";
    let bad_name = "okapi-metrics-probe";
    create_applyset(&ns, good_name, serde_json::json!({ "source": { "url": repo.url() }, "interval": NEVER })).await?;
    create_applyset(&ns, bad_name, serde_json::json!({ "source": { "url": missing }, "interval": NEVER })).await?;
    wait_for_applyset(&ns, good_name, &controller, "Ready", T, is_ready).await?;
    wait_for_applyset(&ns, bad_name, &controller, "FetchFailed", T, failed_with("FetchFailed")).await?;

    let text = support::eventually("both outcomes in /metrics", T, || async {
        let text = controller.metrics()?;
        let done = sample(&text, r#"applyset_reconcile_total{result="success"}"#).is_some()
            && sample(&text, r#"applyset_reconcile_total{result="fetch_failed"}"#).is_some();
        Ok(done.then_some(text))
    })
    .await?;
    assert!(sample(&text, r#"applyset_reconcile_total{result="success"}"#).unwrap() >= 1.0, "{text}");
    assert!(sample(&text, r#"applyset_reconcile_total{result="fetch_failed"}"#).unwrap() >= 1.0, "{text}");
    assert!(
        sample(&text, r#"applyset_reconcile_duration_seconds_count{result="success"}"#).unwrap_or(0.0) >= 1.0,
        "{text}"
    );
    assert_eq!(sample(&text, r#"applyset_objects{state="applied"}"#), Some(3.0), "{text}");
    assert_eq!(sample(&text, r#"applyset_objects{state="failed"}"#), Some(0.0), "{text}");
    assert_eq!(sample(&text, r#"applyset_objects{state="drifted"}"#), Some(0.0), "{text}");
    assert!(
        sample(&text, "applyset_git_fetch_duration_seconds_count").unwrap_or(0.0) >= 2.0,
        "both fetches count: {text}"
    );
    let failures: f64 = text
        .lines()
        .filter(|l| l.starts_with("applyset_git_fetch_failures_total{"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum();
    assert!(failures >= 1.0, "{text}");
    assert!(sample(&text, "process_resident_memory_bytes").unwrap_or(0.0) > 1e6, "{text}");
    assert!(sample(&text, "applyset_last_successful_sync_timestamp_seconds").unwrap_or(0.0) > 1.6e9, "{text}");

    let values = label_values(&text);
    assert!(!values.is_empty());
    for value in &values {
        for forbidden in [good_name, bad_name, "metrics-probe", ns.name.as_str(), "file://", "repo.git", "no-such-repo"]
        {
            assert!(!value.contains(forbidden), "label value {value:?} contains {forbidden:?}:\n{text}");
        }
    }
    for forbidden in [good_name, bad_name, ns.name.as_str(), "file://"] {
        assert!(!text.contains(forbidden), "/metrics mentions {forbidden:?}:\n{text}");
    }
    Ok(())
}

/// The resourceVersion of each object, in the order given.
fn resource_versions(ns: &TestNamespace, resources: &[&str]) -> Result<Vec<String>> {
    resources.iter().map(|r| ns.jsonpath(r, "{.metadata.resourceVersion}")).collect()
}

// 8. An interval run that finds nothing to do writes nothing: neither the ApplySet (status or
//    metadata) nor the objects it manages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interval_runs_without_changes_write_nothing() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("noop").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "one"));
    repo.write("b.yaml", config_map("b", &ns.name, "two"));
    repo.write("web.yaml", service("web", &ns.name));
    // Quantities the apiserver rewrites (1000m → 1, 0.5Gi → 512Mi) are not a change either.
    repo.write("deploy.yaml", with_limits(deployment("web", &ns.name, "registry.example/app:1", 1, &[])));
    repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;
    let successes = |text: &str| sample(text, r#"applyset_reconcile_total{result="success"}"#).unwrap_or(0.0);

    let objects = ["configmap/a", "configmap/b", "service/web"];
    let before = get_applyset(&ns, "app").await?;
    let objects_before = resource_versions(&ns, &objects)?;
    // The Deployment's status is written by its controller; its spec only bumps the generation.
    let generation_before = ns.jsonpath("deployment/web", "{.metadata.generation}")?;
    let events_before = operator::events_for(&ns, "app").await?.len();
    let runs_before = successes(&controller.metrics()?);
    support::eventually("3 more interval runs", Duration::from_secs(30), || async {
        Ok((successes(&controller.metrics()?) >= runs_before + 3.0).then_some(()))
    })
    .await?;

    let after = get_applyset(&ns, "app").await?;
    if after.metadata.resource_version != before.metadata.resource_version {
        bail!(
            "the ApplySet was written by no-op runs:\nbefore: {}\nafter: {}",
            serde_json::to_string_pretty(&before)?,
            serde_json::to_string_pretty(&after)?
        );
    }
    assert_eq!(resource_versions(&ns, &objects)?, objects_before, "managed objects were written by no-op runs");
    assert_eq!(ns.jsonpath("deployment/web", "{.metadata.generation}")?, generation_before);
    assert_eq!(operator::events_for(&ns, "app").await?.len(), events_before, "no-op runs record no Events");
    assert_eq!(condition(&after, "Drifted").map(|c| c.1), Some("NoDrift".to_owned()));
    Ok(())
}
