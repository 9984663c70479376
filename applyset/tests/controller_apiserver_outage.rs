//! The apiserver goes away for a while and comes back (`scripts/control-plane apiserver-outage`:
//! kube-apiserver stopped, etcd keeping the data). The controller stays up with its memory
//! bounded, prunes nothing from a cache that may be stale, applies what git changed meanwhile
//! once the apiserver is back without rewriting what did not change, and sees drift at once again.
//!
//! The only test of its binary: while the apiserver is away no other test could run (cargo runs
//! test binaries one at a time).

mod git;
mod operator;
mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use operator::{
    ControllerFixture, ControllerProcess, config_map, create_applyset, is_ready, ready_at, revision, sample,
    start_controller, wait_for_applyset,
};
use support::eventually;

const T: Duration = Duration::from_secs(120);
/// How long the apiserver is away: several of the ApplySet's intervals and of the watches' retries.
const OUTAGE_SECONDS: u64 = 40;

fn rss_kib(controller: &ControllerProcess) -> Result<u64> {
    let pid = controller.pid().context("the controller runs")?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).context("VmRSS in /proc/<pid>/status")?;
    Ok(line.split_whitespace().nth(1).context("a VmRSS value")?.parse()?)
}

fn metric(controller: &ControllerProcess, series: &str) -> Result<f64> {
    Ok(sample(&controller.metrics()?, series).unwrap_or(0.0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apiserver_away_and_back() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("outage").await?;
    for name in ["a", "b", "c"] {
        repo.write(&format!("{name}.yaml"), config_map(name, &ns.name, "one"));
    }
    repo.commit("first");
    let mut controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "3s" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;
    eventually("the watch cache to hold the objects", T, || async {
        Ok((metric(&controller, "applyset_watch_cache_objects")? >= 3.0).then_some(()))
    })
    .await?;
    let versions = || -> Result<Vec<String>> {
        ["configmap/a", "configmap/b"].iter().map(|n| ns.jsonpath(n, "{.metadata.resourceVersion}")).collect()
    };
    let kept_before = versions()?;
    let rss_before = rss_kib(&controller)?;

    let state = ns.kubeconfig.parent().context("the kubeconfig lies in the control plane's state directory")?;
    let outage = Command::new(support::repo_root().join("scripts/control-plane"))
        .args(["apiserver-outage", &OUTAGE_SECONDS.to_string()])
        .env("APPLYSET_CP_STATE", state)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // While it is away, git drops c: the runs meanwhile fail before they could prune anything.
    tokio::time::sleep(Duration::from_secs(5)).await;
    repo.remove("c.yaml");
    let second = repo.commit("drop c");
    let finished = tokio::task::spawn_blocking(move || outage.wait_with_output()).await??;
    ensure!(finished.status.success(), "the outage script failed: {}", String::from_utf8_lossy(&finished.stderr));
    ensure!(controller.exited().is_none(), "the controller exited during the outage:\n{}", controller.log());
    let rss_after = rss_kib(&controller)?;
    println!("controller RSS: {rss_before} KiB before, {rss_after} KiB after a {OUTAGE_SECONDS}s outage");
    ensure!(rss_after < rss_before + 64 * 1024, "memory grew by more than 64 MiB while the apiserver was away");

    wait_for_applyset(
        &ns,
        "app",
        &controller,
        "the commit made during the outage applied",
        T,
        ready_at(revision(&second)),
    )
    .await?;
    eventually("configmap/c pruned", T, || async { Ok((!ns.exists("configmap/c")?).then_some(())) }).await?;
    assert_eq!(versions()?, kept_before, "no duplicate writes: the unchanged objects were not written again");
    ensure!(
        metric(&controller, "applyset_watch_failures_total")? >= 1.0,
        "the watches saw the outage:\n{}",
        controller.log()
    );

    // The watches listed again: drift is seen at once, as before the outage.
    ns.kubectl_ok(&["patch", "configmap/a", "-p", r#"{"data":{"value":"edited"}}"#], None)?;
    eventually("the edit after the outage reverted", T, || async {
        Ok((ns.jsonpath("configmap/a", "{.data.value}")? == "one").then_some(()))
    })
    .await?;
    Ok(())
}
