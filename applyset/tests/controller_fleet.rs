//! The fleet on the real control plane: twenty ApplySets, one path each of one repository
//! served over smart HTTP on loopback, list the repository about once per interval (not once
//! per ApplySet), and a commit reaches every one of them, running only the one it touches; and
//! a crowd of one tenant's ApplySets does not queue another tenant's.

mod git;
mod operator;
mod support;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use applyset::operator::api::ApplySet;
use futures::StreamExt;
use git::{GitHttpServer, HttpAuth};
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use operator::{
    ControllerFixture, ControllerOptions, config_map, create_applyset, ready_at, sample, wait_for_applyset,
};

const T: Duration = Duration::from_secs(120);
const APPS: usize = 20;
const INTERVAL: Duration = Duration::from_secs(4);
const UNCHANGED: &str = r#"applyset_reconcile_total{result="inputs_unchanged"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_applysets_on_one_repository_list_it_about_once_per_interval() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("fleet").await?;
    for i in 0..APPS {
        repo.write(&format!("apps/app-{i}/cm.yaml"), config_map(&format!("app-{i}"), &ns.name, "1"));
    }
    let first = repo.commit("twenty apps");
    let server = GitHttpServer::start(repo.bare.parent().unwrap(), HttpAuth::None, None);
    let controller = ControllerOptions::for_namespace(&ns).start()?;
    let spec = |i: usize| {
        serde_json::json!({
            "source": { "url": server.url("repo.git"), "path": format!("apps/app-{i}") },
            "interval": format!("{}s", INTERVAL.as_secs()),
        })
    };
    for i in 0..APPS {
        create_applyset(&ns, &format!("app-{i}"), spec(i)).await?;
    }
    for i in 0..APPS {
        let ready = ready_at(format!("main@sha1:{first}"));
        wait_for_applyset(&ns, &format!("app-{i}"), &controller, "Ready", T, ready).await?;
    }

    // Five intervals with every ApplySet running on its own interval: each listing of the
    // remote that finds nothing new is one info/refs request (the redirect check's answer).
    // The metrics say the same as the server: the network histogram counts listings, and
    // every other source step is a shared one.
    let counts = |metrics: &str| {
        let network = sample(metrics, "applyset_git_fetch_duration_seconds_count").unwrap_or(0.0);
        let step = |outcome: &str| sample(metrics, &format!(r#"applyset_source_steps_total{{outcome="{outcome}"}}"#));
        (network, step("listed").unwrap_or(0.0) + step("fetched").unwrap_or(0.0), step("shared").unwrap_or(0.0))
    };
    let metrics_before = counts(&controller.metrics()?);
    let before = server.ref_listings.load(Ordering::SeqCst);
    let watched = INTERVAL * 5;
    tokio::time::sleep(watched).await;
    let requests = server.ref_listings.load(Ordering::SeqCst) - before;
    let metrics_after = counts(&controller.metrics()?);
    let listings_per_interval = requests as f64 / 5.0;
    let (network, connected, shared) =
        (metrics_after.0 - metrics_before.0, metrics_after.1 - metrics_before.1, metrics_after.2 - metrics_before.2);
    println!(
        "{APPS} ApplySets, {watched:?}: {requests} info/refs requests, {listings_per_interval:.1} listings per interval; \
         metrics: {network} network operations, {connected} listed or fetched, {shared} shared steps"
    );
    // One per interval, with room for jitter (the runs of one interval straddle two listings).
    ensure!(listings_per_interval <= 3.0, "{requests} info/refs requests in {watched:?}:\n{}", controller.log());
    // The histogram counts what the server saw (a scrape may fall between a listing and its
    // observation: one either way), not one "fetch" per ApplySet.
    ensure!((network - requests as f64).abs() <= 1.0, "{network} observed against {requests} info/refs requests");
    ensure!(network <= 3.0 * 5.0, "{network} network operations observed in {watched:?}");
    ensure!((network - connected).abs() <= 1.0, "{network} observed, {connected} listed or fetched steps");
    ensure!(shared >= (APPS * 5) as f64 * 0.5, "{shared} shared steps in {watched:?}: the runs did not share");

    // A commit touching one path: every ApplySet takes the new revision (the one that lists
    // the remote first wakes the others), and the 19 whose path did not change record it
    // without a checkout, build or apply (`inputs_unchanged`).
    let unchanged_before = sample(&controller.metrics()?, UNCHANGED).unwrap_or(0.0);
    repo.write("apps/app-7/cm.yaml", config_map("app-7", &ns.name, "2"));
    let second = repo.commit("app-7 v2");
    let started = Instant::now();
    // app-3 is watched first: the run that records the commit says so until its next interval.
    let ready = ready_at(format!("main@sha1:{second}"));
    let app_3 = wait_for_applyset(&ns, "app-3", &controller, "the second commit", T, ready).await?;
    for i in 0..APPS {
        let ready = ready_at(format!("main@sha1:{second}"));
        wait_for_applyset(&ns, &format!("app-{i}"), &controller, "the second commit", T, ready).await?;
    }
    println!("the commit reached all {APPS} ApplySets in {:?}", started.elapsed());
    ensure!(ns.jsonpath("configmap/app-7", "{.data.value}")? == "2");
    let unchanged = sample(&controller.metrics()?, UNCHANGED).unwrap_or(0.0) - unchanged_before;
    ensure!(unchanged >= (APPS - 1) as f64, "{unchanged} runs inputs_unchanged:\n{}", controller.metrics()?);
    let message = operator::condition(&app_3, "Ready").map(|c| c.2).unwrap_or_default();
    ensure!(message.contains("nothing this ApplySet reads changed since"), "{message}");
    Ok(())
}

/// ApplySets of a crowd tenant.
const CROWD: usize = 30;

/// Fair turns: a controller that runs one ApplySet at a time starts with a crowd tenant's 30
/// ApplySets and another tenant's one, created after them. First come, first served would
/// apply the other tenant's last; with turns between namespaces it is applied while most of
/// the crowd still waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tenant_is_not_queued_behind_a_crowd() -> Result<()> {
    let ControllerFixture { ns: crowd, repo } = ControllerFixture::new("fair-crowd").await?;
    let other = support::TestNamespace::create("fair-other").await?;
    for i in 0..CROWD {
        repo.write(&format!("crowd/app-{i}/cm.yaml"), config_map(&format!("app-{i}"), &crowd.name, "1"));
    }
    repo.write("other/cm.yaml", config_map("other", &other.name, "1"));
    repo.commit("a crowd and another");
    // This controller takes only this test's ApplySets (other tests run controllers too).
    let shard = format!("fair-{}", support::random_suffix());
    let in_shard = |ns: &support::TestNamespace, name: String, path: String| {
        let api: Api<ApplySet> = Api::namespaced(ns.client.clone(), &ns.name);
        let body = serde_json::json!({
            "apiVersion": "applyset.dev/v1alpha1", "kind": "ApplySet",
            "metadata": { "name": name, "namespace": ns.name, "labels": { "shard": shard } },
            "spec": { "source": { "url": repo.url(), "path": path }, "interval": "1h" },
        });
        async move { api.patch(&name, &PatchParams::apply("applyset-tests").force(), &Patch::Apply(&body)).await }
    };
    for i in 0..CROWD {
        in_shard(&crowd, format!("app-{i}"), format!("crowd/app-{i}")).await?;
    }
    in_shard(&other, "other".into(), "other".into()).await?;

    // The order in which they become Ready, as a watch started before the controller sees it
    // (not what a poll finds later: the runs take a few milliseconds each).
    let ready_order = Arc::new(Mutex::new(Vec::<String>::new()));
    let watching = {
        let ready_order = ready_order.clone();
        let api: Api<ApplySet> = Api::all(crowd.client.clone());
        let config = watcher::Config::default().labels(&format!("shard={shard}"));
        // A watch error is retried (after a backoff) rather than ending the record.
        let events = watcher(api, config).default_backoff().applied_objects();
        tokio::spawn(events.for_each(move |event| {
            if let Ok(applyset) = event {
                let name = applyset.metadata.name.clone().unwrap_or_default();
                let mut order = ready_order.lock().unwrap();
                if operator::is_ready(&applyset) && !order.contains(&name) {
                    order.push(name);
                }
            }
            std::future::ready(())
        }))
    };

    let mut options = ControllerOptions::for_namespace(&crowd)
        .local_sources()
        .arg("--concurrent-reconciles=1")
        .arg(format!("--shard-selector=shard={shard}"));
    options.pod_env = Some(Vec::new()); // every namespace, not --watch-namespace
    let controller = options.start()?;
    wait_for_applyset(&other, "other", &controller, "Ready", T, operator::is_ready).await?;
    let crowd_ready = support::eventually("the watch saw it Ready", T, || async {
        Ok(ready_order.lock().unwrap().iter().position(|name| name == "other"))
    })
    .await?;
    watching.abort();
    println!("the other tenant's ApplySet was Ready after {crowd_ready} of the crowd's {CROWD}");
    ensure!(crowd_ready < CROWD / 2, "{crowd_ready} of {CROWD} ran first:\n{}", controller.log());
    for i in 0..CROWD {
        wait_for_applyset(&crowd, &format!("app-{i}"), &controller, "Ready", T, operator::is_ready).await?;
    }
    Ok(())
}
