//! The controller's shared watch cache of managed objects, end to end on the real control plane
//! with real kubectl as the user's tool: a no-op interval sends no request on managed objects
//! (checked in the apiserver's own audit log), prune works from the cache, and an out-of-band
//! `kubectl scale`, `patch` or `delete` is corrected (or, in Report mode, reported) at once,
//! not at the next interval — while the controller's own writes start nothing.
//!
//! Latencies are printed for the record; their figures come from `scripts/bench-latency`.

mod git;
mod operator;
mod support;

use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use applyset::operator::api::ApplySet;
use operator::{
    ControllerFixture, ControllerProcess, condition, config_map, create_applyset, deployment, is_ready, ready_at,
    request_reconcile, revision, sample, service, start_controller, wait_for_applyset,
};
use support::{AuditLog, TestNamespace, eventually};

const T: Duration = Duration::from_secs(90);
/// Long enough that no interval run happens during a test: whatever runs was started by an event.
const NEVER: &str = "1h";
/// The resources the tests' ApplySets manage.
const MANAGED: [&str; 3] = ["configmaps", "deployments", "services"];

fn metric(controller: &ControllerProcess, series: &str) -> Result<f64> {
    Ok(sample(&controller.metrics()?, series).unwrap_or(0.0))
}

const SUCCESSES: &str = r#"applyset_reconcile_total{result="success"}"#;
const OTHERS_CHANGES: &str = r#"applyset_watch_changes_total{origin="other"}"#;
const OWN_CHANGES: &str = r#"applyset_watch_changes_total{origin="own"}"#;

/// Waits until the watch cache holds at least `objects` objects: from then on, changes to them
/// are seen (a change made before a kind's watch has listed is found at the next interval).
async fn cache_holds(controller: &ControllerProcess, objects: f64) -> Result<()> {
    eventually("the watch cache to hold the managed objects", T, || async {
        Ok((metric(controller, "applyset_watch_cache_objects")? >= objects).then_some(()))
    })
    .await
}

/// Waits until `check` holds, and says how long that took.
async fn timed<F>(what: &str, check: F) -> Result<Duration>
where
    F: Fn() -> Result<bool>,
{
    let started = Instant::now();
    eventually(what, T, || async { Ok(check()?.then_some(())) }).await?;
    let took = started.elapsed();
    println!("{what}: {took:?}");
    Ok(took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_op_intervals_send_no_request_on_managed_objects_and_prune_from_the_cache() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("cache-noop").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "one"));
    repo.write("b.yaml", config_map("b", &ns.name, "two"));
    repo.write("web.yaml", service("web", &ns.name));
    repo.write("deploy.yaml", deployment("web", &ns.name, "registry.example/app:1", 1, &[]));
    repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;
    cache_holds(&controller, 4.0).await?;
    // A run that began before the watches had listed read from the apiserver: start counting
    // after one more.
    let runs = metric(&controller, SUCCESSES)?;
    eventually("one more interval run", T, || async { Ok((metric(&controller, SUCCESSES)? > runs).then_some(())) })
        .await?;

    let audit = AuditLog::from_now(&ns.kubeconfig)?;
    let runs = metric(&controller, SUCCESSES)?;
    eventually("3 more interval runs", T, || async {
        Ok((metric(&controller, SUCCESSES)? >= runs + 3.0).then_some(()))
    })
    .await?;
    let requests = audit.requests()?;
    let on_managed: Vec<String> = requests
        .iter()
        .filter(|r| r.namespace.as_deref() == Some(ns.name.as_str()) && MANAGED.contains(&r.resource.as_str()))
        // kube-controller-manager updates the Deployment's status whenever its Pods change.
        .filter(|r| !r.by_cluster_components())
        .map(|r| format!("{} {}", r.verb, r.uri))
        .collect();
    ensure!(
        on_managed.is_empty(),
        "3 no-op interval runs sent requests on managed objects:\n{}",
        on_managed.join("\n")
    );
    let in_namespace = requests.iter().filter(|r| r.namespace.as_deref() == Some(ns.name.as_str())).count();
    println!("3 no-op interval runs: {in_namespace} request(s) in the namespace, none on managed objects");

    // Prune from the cache: a file removed from git is deleted, the rest is left alone.
    let versions = |names: &[&str]| -> Result<Vec<String>> {
        names.iter().map(|n| ns.jsonpath(n, "{.metadata.resourceVersion}")).collect()
    };
    let kept_before = versions(&["configmap/a", "service/web", "deployment/web"])?;
    repo.remove("b.yaml");
    let second = repo.commit("drop b");
    wait_for_applyset(&ns, "app", &controller, "the second commit applied", T, ready_at(revision(&second))).await?;
    eventually("configmap/b pruned", T, || async { Ok((!ns.exists("configmap/b")?).then_some(())) }).await?;
    assert_eq!(versions(&["configmap/a", "service/web", "deployment/web"])?, kept_before, "the rest is not written");
    Ok(())
}

/// A Deployment and a ConfigMap under an ApplySet that never runs on its interval.
async fn drift_fixture(prefix: &str, mode: &str) -> Result<(TestNamespace, git::Fixture, ControllerProcess)> {
    let ControllerFixture { ns, repo } = ControllerFixture::new(prefix).await?;
    repo.write("deploy.yaml", deployment("web", &ns.name, "registry.example/app:1", 2, &[]));
    repo.write("settings.yaml", config_map("settings", &ns.name, "one"));
    repo.commit("first");
    let controller = start_controller(&ns)?;
    let spec = serde_json::json!({ "source": { "url": repo.url() }, "interval": NEVER, "drift": { "mode": mode } });
    create_applyset(&ns, "app", spec).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;
    cache_holds(&controller, 2.0).await?;
    Ok((ns, repo, controller))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_band_changes_are_corrected_at_once_and_own_writes_start_nothing() -> Result<()> {
    let (ns, repo, controller) = drift_fixture("cache-correct", "Correct").await?;
    let replicas = || ns.jsonpath("deployment/web", "{.spec.replicas}");
    let value = || ns.jsonpath("configmap/settings", "{.data.value}");

    ns.kubectl_ok(&["scale", "deployment/web", "--replicas=5"], None)?;
    timed("kubectl scale reverted", || Ok(replicas()? == "2")).await?;
    ns.kubectl_ok(&["patch", "configmap/settings", "-p", r#"{"data":{"value":"edited"}}"#], None)?;
    timed("kubectl patch reverted", || Ok(value()? == "one")).await?;
    ns.kubectl_ok(&["delete", "configmap/settings"], None)?;
    timed("kubectl delete recreated", || ns.exists("configmap/settings")).await?;
    let applyset = wait_for_applyset(&ns, "app", &controller, "drift corrected", T, |a: &ApplySet| {
        condition(a, "Drifted").map(|c| c.1).as_deref() == Some("DriftCorrected")
    })
    .await?;
    assert_eq!(condition(&applyset, "Ready").map(|c| c.0).as_deref(), Some("True"));
    ensure!(metric(&controller, OTHERS_CHANGES)? >= 3.0, "each change started a check:\n{}", controller.log());

    // A new revision, applied on request: its writes' watch events are the controller's own and
    // start no further run, nor does the rollout it starts (kube-controller-manager writes the
    // Deployment's revision annotation, then its status).
    let settled = async || -> Result<(f64, f64)> {
        tokio::time::sleep(Duration::from_secs(3)).await;
        Ok((metric(&controller, SUCCESSES)?, metric(&controller, OTHERS_CHANGES)?))
    };
    let (runs, others) = settled().await?;
    let own = metric(&controller, OWN_CHANGES)?;
    repo.write("settings.yaml", config_map("settings", &ns.name, "two"));
    repo.write("deploy.yaml", deployment("web", &ns.name, "registry.example/app:2", 3, &[]));
    let second = repo.commit("second");
    request_reconcile(&ns, "app").await?;
    wait_for_applyset(&ns, "app", &controller, "the second commit applied", T, ready_at(revision(&second))).await?;
    assert_eq!((value()?, replicas()?), ("two".to_owned(), "3".to_owned()));
    let rollout = || ns.jsonpath("deployment/web", "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}");
    timed("the rollout's revision annotation", || Ok(rollout()? == "2")).await?;
    let (runs_after, others_after) = settled().await?;
    assert_eq!(runs_after, runs + 1.0, "one run for the request, none for its own writes:\n{}", controller.log());
    assert_eq!(others_after, others, "the controller's writes are not taken for someone else's");
    ensure!(metric(&controller, OWN_CHANGES)? >= own + 2.0, "both writes were seen as the controller's own");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_mode_reports_an_out_of_band_change_at_once_and_leaves_it() -> Result<()> {
    let (ns, _repo, controller) = drift_fixture("cache-report", "Report").await?;
    ns.kubectl_ok(&["scale", "deployment/web", "--replicas=5"], None)?;
    let started = Instant::now();
    let applyset = wait_for_applyset(&ns, "app", &controller, "drift reported", T, |a: &ApplySet| {
        condition(a, "Drifted").map(|c| c.1).as_deref() == Some("DriftDetected")
    })
    .await?;
    println!("kubectl scale reported: {:?}", started.elapsed());
    let drifted = applyset.status.and_then(|s| s.drift).map(|d| d.objects).unwrap_or_default();
    let names: Vec<String> = drifted.iter().map(|o| format!("{}/{}", o.kind, o.name)).collect();
    assert_eq!(names, ["Deployment.apps/web"]);
    assert_eq!(ns.jsonpath("deployment/web", "{.spec.replicas}")?, "5", "Report mode changes nothing");
    Ok(())
}

/// Prune's DELETE of an object known from the cache carries the resourceVersion it was seen at:
/// an object changed since (here relabelled) is not deleted, and one already gone counts as
/// deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_prune_candidates_are_deleted_only_as_they_were_seen() -> Result<()> {
    use applyset::applyset::{Candidate, DeleteOptions, RecordedKind, delete_candidates};
    use applyset::cluster::list::Listed;
    let ns = TestNamespace::create("cache-precondition").await?;
    ns.kubectl_ok(&["create", "configmap", "changed"], None)?;
    ns.kubectl_ok(&["create", "configmap", "gone"], None)?;
    let seen = |name: &str| -> Result<Candidate> {
        Ok(Candidate {
            kind: RecordedKind {
                api_resource: kube::core::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
                namespaced: true,
            },
            listed: Listed {
                name: name.into(),
                namespace: Some(ns.name.clone()),
                uid: ns.jsonpath(&format!("configmap/{name}"), "{.metadata.uid}")?,
                cached_version: Some(ns.jsonpath(&format!("configmap/{name}"), "{.metadata.resourceVersion}")?),
                ..Listed::default()
            },
        })
    };
    let (changed, gone) = (seen("changed")?, seen("gone")?);
    ns.kubectl_ok(&["label", "configmap/changed", "owner=someone-else"], None)?;
    ns.kubectl_ok(&["delete", "configmap/gone"], None)?;

    let options = DeleteOptions::new(applyset::cluster::DryRun::None);
    let done = delete_candidates(&ns.client, std::slice::from_ref(&gone), &options, None).await;
    assert!(done.error.is_none(), "{:?}", done.error);
    assert_eq!(done.deleted.len(), 1, "an object already gone counts as deleted");
    let done = delete_candidates(&ns.client, &[changed], &options, None).await;
    let error = done.error.map(|e| e.to_string()).unwrap_or_default();
    ensure!(error.contains("changed since the watch cache saw it"), "{error}");
    assert!(ns.exists("configmap/changed")?, "an object changed since it was seen is not deleted");
    Ok(())
}
