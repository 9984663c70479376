//! Ready means running, end to end on the real control plane: `spec.wait`, `healthChecks`,
//! `healthCheckExprs` (CEL) and `dependsOn`. Every ApplySet here has a 1 h interval, so what
//! happens is started by the watch cache's events, not by an interval.

mod git;
mod operator;
mod support;

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use applyset::operator::api::ApplySet;
use git::Fixture;
use operator::{
    ControllerFixture, condition, config_map, create_applyset, deployment, get_applyset, is_ready, ready_at, reason_is,
    revision, start_controller, wait_for_applyset,
};

const T: Duration = Duration::from_secs(90);
const NEVER: &str = "1h";

fn widget(group: &str, name: &str, namespace: &str) -> String {
    format!(
        "apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  size: 1\n"
    )
}

/// Sets a Widget's `status.phase` as its controller would (the CRD has no status subresource).
fn set_phase(ns: &support::TestNamespace, group: &str, name: &str, phase: &str) -> Result<()> {
    let patch = format!(r#"{{"status":{{"phase":"{phase}"}}}}"#);
    ns.kubectl_ok(&["patch", &format!("widgets.{group}/{name}"), "--type=merge", "-p", &patch], None)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_without_a_rollout_are_healthy_at_once() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("health-plain").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.write("b.yaml", config_map("b", &ns.name, "2"));
    let first = repo.commit("two ConfigMaps");
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "app",
        serde_json::json!({ "source": { "url": repo.url() }, "interval": NEVER, "wait": true }),
    )
    .await?;
    let applyset = wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    let healthy = condition(&applyset, "Healthy").expect("a Healthy condition");
    assert_eq!((healthy.0.as_str(), healthy.2.as_str()), ("True", "2 object(s) healthy"));
    // Healthy and applied: counted, not listed (`status.inventory.objects` lists what needs a look).
    let inventory = applyset.status.and_then(|s| s.inventory).context("an inventory")?;
    assert!(inventory.objects.is_empty(), "{inventory:?}");
    assert_eq!((inventory.count, inventory.states.get("Applied")), (2, Some(&2)), "{inventory:?}");
    Ok(())
}

/// A custom resource judged by `healthCheckExprs`: in progress until its controller (here the
/// test) says Ready, which the watch cache sees at once; then Failed, which fails at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_resource_is_judged_by_its_cel_expressions() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("health-cel").await?;
    let group = format!("{}.example.com", ns.name);
    let _crds = support::CrdCleanup::new(&ns.kubeconfig, [format!("widgets.{group}")]);
    ns.kubectl_ok(&["apply", "-f", "-"], Some(&support::widget_crd(&group)))?;
    ns.kubectl_ok(&["wait", "--for=condition=Established", &format!("crd/widgets.{group}")], None)?;
    repo.write("widget.yaml", widget(&group, "w", &ns.name));
    repo.commit("a widget");
    let controller = start_controller(&ns)?;
    let spec = serde_json::json!({
        "source": { "url": repo.url() }, "interval": NEVER, "wait": true, "healthTimeout": "10m",
        "healthCheckExprs": [{
            "apiVersion": format!("{group}/v1"), "kind": "Widget",
            "current": "status.?phase.orValue('') == 'Ready'",
            "failed": "status.?phase.orValue('') == 'Broken'",
        }],
    });
    create_applyset(&ns, "app", spec).await?;
    let waiting =
        wait_for_applyset(&ns, "app", &controller, "waiting for health", T, reason_is("Healthy", "Progressing"))
            .await?;
    let ready = condition(&waiting, "Ready").expect("Ready");
    assert_eq!(ready.0, "Unknown", "not Ready while waiting");
    ensure!(ready.2.contains(&format!("widget.{group}/w")), "the message names the widget: {}", ready.2);

    set_phase(&ns, &group, "w", "Ready")?;
    let started = Instant::now();
    wait_for_applyset(&ns, "app", &controller, "healthy", T, reason_is("Healthy", "Succeeded")).await?;
    println!("status change to healthy: {:?}", started.elapsed());
    ensure!(is_ready(&get_applyset(&ns, "app").await?), "Ready once healthy");

    set_phase(&ns, &group, "w", "Broken")?;
    let failed =
        wait_for_applyset(&ns, "app", &controller, "health failed", T, reason_is("Ready", "HealthCheckFailed")).await?;
    let message = condition(&failed, "Ready").map(|c| c.2).unwrap_or_default();
    ensure!(message.contains(&format!("widget.{group}/w: Widget failed by its health expressions")), "{message}");
    Ok(())
}

/// One ApplySet provides a CRD, another applies a custom resource of it and depends on the
/// first: the user waits (`DependencyNotReady`) and runs as soon as the provider is Ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependant_runs_as_soon_as_its_dependency_is_ready() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("depends").await?;
    let group = format!("{}.example.com", ns.name);
    let _crds = support::CrdCleanup::new(&ns.kubeconfig, [format!("widgets.{group}")]);
    repo.write("widget.yaml", widget(&group, "w", &ns.name));
    let user_commit = repo.commit("a widget");
    let provider = Fixture::new(&format!("depends-crds-{}", ns.name));
    provider.write("crd.yaml", support::widget_crd(&group));
    provider.commit("the CRD");
    let controller = start_controller(&ns)?;

    let user =
        serde_json::json!({ "source": { "url": repo.url() }, "interval": NEVER, "dependsOn": [{ "name": "crds" }] });
    create_applyset(&ns, "user", user).await?;
    let blocked =
        wait_for_applyset(&ns, "user", &controller, "DependencyNotReady", T, reason_is("Ready", "DependencyNotReady"))
            .await?;
    let message = condition(&blocked, "Ready").map(|c| c.2).unwrap_or_default();
    assert_eq!(message, format!("dependency ApplySet {}/crds not found", ns.name));

    create_applyset(
        &ns,
        "crds",
        serde_json::json!({ "source": { "url": provider.url() }, "interval": NEVER, "wait": true }),
    )
    .await?;
    let started = Instant::now();
    wait_for_applyset(&ns, "user", &controller, "the user applied", T, ready_at(revision(&user_commit))).await?;
    println!("dependency Ready → dependant applied: {:?}", started.elapsed());
    ensure!(ns.exists(&format!("widgets.{group}/w"))?, "the widget was applied");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_cycle_stalls_and_names_the_cycle() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("cycle").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.commit("a");
    let controller = start_controller(&ns)?;
    for (name, other) in [("a", "b"), ("b", "a")] {
        let spec =
            serde_json::json!({ "source": { "url": repo.url() }, "interval": NEVER, "dependsOn": [{ "name": other }] });
        create_applyset(&ns, name, spec).await?;
    }
    let stalled =
        wait_for_applyset(&ns, "a", &controller, "Stalled", T, reason_is("Stalled", "DependencyCycle")).await?;
    let message = condition(&stalled, "Stalled").map(|c| c.2).unwrap_or_default();
    let cycle = format!("{0}/a → {0}/b → {0}/a", ns.name);
    ensure!(message.contains(&cycle), "{message}");
    assert_eq!(condition(&stalled, "Ready").map(|c| c.0).as_deref(), Some("False"));
    ensure!(!ns.exists("configmap/a")?, "nothing in a cycle is applied");
    Ok(())
}

// ---- Workloads that really start: kwok's simulated nodes run their Pods (scripts/control-plane).

/// A Job whose Pod succeeds, or (`fail`) fails every time (the control plane's kwok stages act
/// on the annotation `applyset.dev/test-pod`).
fn job(name: &str, namespace: &str, fail: bool) -> String {
    let annotation = if fail { "      annotations:\n        applyset.dev/test-pod: fail\n" } else { "" };
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  backoffLimit: 0\n  template:\n    metadata:\n{annotation}      labels:\n        app: {name}\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: task\n        image: registry.example/task:1\n"
    )
}

fn waiting_spec(repo: &Fixture, timeout: &str) -> serde_json::Value {
    serde_json::json!({ "source": { "url": repo.url() }, "interval": NEVER, "wait": true, "healthTimeout": timeout })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_is_ready_once_available_and_a_rollout_is_tracked() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("health-rollout").await?;
    repo.write("web.yaml", deployment("web", &ns.name, "registry.example/web:1", 2, &[]));
    let first = repo.commit("web 1");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", waiting_spec(&repo, "2m")).await?;
    let healthy = wait_for_applyset(&ns, "app", &controller, "healthy", T, reason_is("Healthy", "Succeeded")).await?;
    assert_eq!(healthy.status.as_ref().and_then(|s| s.last_applied_revision.clone()), Some(revision(&first)));
    assert_eq!(ns.jsonpath("deployment/web", "{.status.availableReplicas}")?, "2");
    assert!(is_ready(&healthy));

    // A new image: Ready follows the rollout to its end.
    repo.write("web.yaml", deployment("web", &ns.name, "registry.example/web:2", 2, &[]));
    let second = repo.commit("web 2");
    operator::request_reconcile(&ns, "app").await?;
    let rolled = wait_for_applyset(&ns, "app", &controller, "the rollout healthy", T, |a: &ApplySet| {
        ready_at(revision(&second))(a) && reason_is("Healthy", "Succeeded")(a)
    })
    .await?;
    assert_eq!(ns.jsonpath("deployment/web", "{.spec.template.spec.containers[0].image}")?, "registry.example/web:2");
    assert_eq!(ns.jsonpath("deployment/web", "{.status.updatedReplicas}")?, "2");
    assert!(is_ready(&rolled));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_that_never_start_fail_the_health_check_with_their_reason() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("health-pull").await?;
    repo.write("web.yaml", deployment("web", &ns.name, "registry.example/web:unpullable", 2, &[]));
    repo.commit("an image that cannot be pulled");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", waiting_spec(&repo, "10s")).await?;
    let failed =
        wait_for_applyset(&ns, "app", &controller, "HealthCheckFailed", T, reason_is("Ready", "HealthCheckFailed"))
            .await?;
    let message = condition(&failed, "Ready").map(|c| c.2).unwrap_or_default();
    ensure!(message.contains("not healthy after 10s: deployment.apps/web"), "{message}");
    ensure!(message.contains("ImagePullBackOff") && message.contains("Pod web-"), "the Pod's reason: {message}");
    let events = operator::events_with(&ns, "app", "HealthCheckFailed").await?;
    ensure!(events.iter().any(|(_, reason, _)| reason == "HealthCheckFailed"), "a Warning Event: {events:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_completes_is_healthy_and_one_that_fails_fails_at_once() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("health-job").await?;
    repo.write("ok.yaml", job("ok", &ns.name, false));
    repo.commit("a job");
    let failing = Fixture::new(&format!("health-job-failing-{}", ns.name));
    failing.write("bad.yaml", job("bad", &ns.name, true));
    failing.commit("a failing job");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "ok", waiting_spec(&repo, "5m")).await?;
    create_applyset(&ns, "bad", waiting_spec(&failing, "5m")).await?;
    wait_for_applyset(&ns, "ok", &controller, "the job complete", T, reason_is("Healthy", "Succeeded")).await?;
    let started = Instant::now();
    let bad = wait_for_applyset(&ns, "bad", &controller, "the job failed", T, reason_is("Ready", "HealthCheckFailed"))
        .await?;
    ensure!(started.elapsed() < Duration::from_secs(5 * 60), "a failed Job does not wait for the timeout");
    let message = condition(&bad, "Ready").map(|c| c.2).unwrap_or_default();
    ensure!(message.contains("object(s) failed: job.batch/bad"), "{message}");
    Ok(())
}

/// `applyset apply --wait`: the CLI waits as the controller does, and says why when it fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_wait_waits_for_the_rollout_and_names_what_never_starts() -> Result<()> {
    let ns = support::TestNamespace::create("cli-wait").await?;
    let good = deployment("web", &ns.name, "registry.example/web:1", 2, &[]);
    let dir = support::ManifestDir::new(&[("web.yaml", good.as_str())])?;
    let out = support::applyset_apply(&ns, &["-f", dir.path(), "--wait", "--timeout=90s"])?;
    ensure!(out.success, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stdout, "deployment.apps/web created\n", "stdout keeps kubectl's lines");
    ensure!(out.stderr.ends_with("1 object(s) healthy\n"), "{}", out.stderr);
    assert_eq!(ns.jsonpath("deployment/web", "{.status.availableReplicas}")?, "2");

    let bad = deployment("bad", &ns.name, "registry.example/web:unpullable", 1, &[]);
    dir.write("bad.yaml", &bad)?;
    dir.remove("web.yaml")?;
    let out = support::applyset_apply(&ns, &["-f", dir.path(), "--wait", "--timeout=8s"])?;
    ensure!(!out.success, "a Deployment whose Pods never start fails the wait");
    ensure!(
        out.stderr
            .contains("error: timed out after 8s waiting for the applied objects to be healthy: deployment.apps/bad"),
        "{}",
        out.stderr
    );
    ensure!(out.stderr.contains("ImagePullBackOff"), "the Pod's reason: {}", out.stderr);
    Ok(())
}

/// `spec.healthChecks` naming a Deployment the ApplySet does not apply: absent at the apply,
/// created ten seconds later, it is watched while the ApplySet waits, so `Ready` follows its
/// rollout at once (the health timeout is ten minutes, the interval an hour).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_health_check_target_is_watched_while_the_applyset_waits() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("health-external").await?;
    repo.write("cm.yaml", config_map("own", &ns.name, "1"));
    let first = repo.commit("own config");
    let controller = start_controller(&ns)?;
    let spec = serde_json::json!({
        "source": { "url": repo.url() }, "interval": NEVER, "healthTimeout": "10m",
        "healthChecks": [{ "apiVersion": "apps/v1", "kind": "Deployment", "name": "external" }],
    });
    create_applyset(&ns, "app", spec).await?;
    let waiting =
        wait_for_applyset(&ns, "app", &controller, "waiting for health", T, reason_is("Healthy", "Progressing"))
            .await?;
    let message = condition(&waiting, "Healthy").map(|c| c.2).unwrap_or_default();
    ensure!(message.contains("deployment.apps/external"), "{message}");

    tokio::time::sleep(Duration::from_secs(10)).await;
    ns.kubectl_ok(&["apply", "-f", "-"], Some(&deployment("external", &ns.name, "registry.example/ext:1", 1, &[])))?;
    let created = Instant::now();
    let ready = wait_for_applyset(&ns, "app", &controller, "Ready after the external rollout", T, |a: &ApplySet| {
        ready_at(revision(&first))(a) && reason_is("Healthy", "Succeeded")(a)
    })
    .await?;
    let took = created.elapsed();
    // The Deployment's Available and the ApplySet's Healthy, as the apiserver stamped them.
    let available =
        ns.jsonpath("deployment/external", "{.status.conditions[?(@.type==\"Available\")].lastTransitionTime}")?;
    let healthy = ready
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Healthy"))
        .map(|c| c.last_transition_time.0)
        .context("a Healthy condition")?;
    let available: k8s_openapi::jiff::Timestamp = available.parse().context("Available's time")?;
    let lag = healthy.duration_since(available);
    eprintln!(
        "external Deployment created → ApplySet Healthy in {took:?}; Available → Healthy {lag:?} (server times, 1 s resolution)"
    );
    // Within moments (about one second here), far from the ten-minute timeout; the bound leaves
    // room for a loaded CI machine running this binary's other tests beside it.
    ensure!(lag.as_secs() <= 5, "Healthy {lag:?} after the Deployment became Available");
    Ok(())
}
