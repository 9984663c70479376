//! The controller end to end against hostile or surprising git servers on this machine and the
//! real control plane (items of issue 15): a server that starts redirecting to another server,
//! a server that accepts and never answers, and a branch force-pushed backwards. Every test has
//! its own namespace and its own controller.

mod git;
mod operator;
mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Result, ensure};
use applyset::operator::api::ApplySet;
use git::{Fixture, GitHttpServer, HttpAuth, SilentServer};
use operator::{
    ControllerFixture, ControllerOptions, applied_revision, condition, config_map, config_map_value, crd_namespace,
    create_applyset, events_for, events_with, failed_with, is_ready, ready_at, request_reconcile, wait_for_applyset,
};

const T: Duration = Duration::from_secs(60);

fn ready_message(applyset: &ApplySet) -> String {
    condition(applyset, "Ready").map(|(_, _, message)| message).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_server_is_refused_and_nothing_is_pruned() -> Result<()> {
    let ns = crd_namespace("redirect").await?;
    let repo_a = Fixture::new(&format!("redirect-a-{}", ns.name));
    repo_a.write("a.yaml", config_map("a", &ns.name, "from-a"));
    repo_a.write("keep.yaml", config_map("keep", &ns.name, "from-a"));
    let first = repo_a.commit("a");
    let repo_b = Fixture::new(&format!("redirect-b-{}", ns.name));
    repo_b.write("b.yaml", config_map("b", &ns.name, "from-b"));
    repo_b.write("a.yaml", config_map("a", &ns.name, "from-b"));
    repo_b.commit("b");
    let server_a = GitHttpServer::start(repo_a.bare.parent().unwrap(), HttpAuth::None, None);
    let server_b = GitHttpServer::start(repo_b.bare.parent().unwrap(), HttpAuth::None, None);
    let url_a = server_a.url("repo.git");
    let url_b = server_b.url("repo.git");
    let controller = ControllerOptions::for_namespace(&ns).start()?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": url_a }, "interval": "1h" })).await?;
    let ready = wait_for_applyset(&ns, "app", &controller, "Ready on server A", T, is_ready).await?;
    assert_eq!(applied_revision(&ready), Some(format!("main@sha1:{first}").as_str()));
    assert_eq!(config_map_value(&ns, "keep")?.as_deref(), Some("from-a"));

    // Server A now answers every request for the repository with a redirect to server B
    // (another port, another repository).
    server_a.redirect("repo.git", &url_b);
    request_reconcile(&ns, "app").await?;
    let failed =
        wait_for_applyset(&ns, "app", &controller, "FetchFailed (redirect)", T, failed_with("FetchFailed")).await?;
    let message = ready_message(&failed);
    ensure!(message.contains("redirect") && message.contains("refused"), "{message}");
    ensure!(message.contains(&url_a) && message.contains(&url_b), "the message names both servers: {message}");
    assert!(server_a.redirected.load(Ordering::SeqCst) >= 1);
    assert_eq!(server_b.ref_listings.load(Ordering::SeqCst), 0, "nothing was asked of server B");
    assert_eq!(server_b.upload_packs.load(Ordering::SeqCst), 0, "nothing was fetched from server B");
    assert_eq!(applied_revision(&failed), Some(format!("main@sha1:{first}").as_str()));
    assert_eq!(config_map_value(&ns, "keep")?.as_deref(), Some("from-a"), "nothing is pruned");
    assert_eq!(config_map_value(&ns, "a")?.as_deref(), Some("from-a"), "nothing of B is applied");
    assert_eq!(config_map_value(&ns, "b")?, None, "nothing of B is applied");
    let events = events_with(&ns, "app", "FetchFailed").await?;
    ensure!(
        events.iter().any(|(kind, reason, note)| kind == "Warning" && reason == "FetchFailed" && note.contains(&url_b)),
        "{events:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_fetch_reports_the_real_limit() -> Result<()> {
    let ns = crd_namespace("hanging").await?;
    let silent = SilentServer::start();
    let url = format!("http://127.0.0.1:{}/repo.git", silent.port);
    let controller = ControllerOptions::for_namespace(&ns).start()?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": url }, "interval": "1h", "timeout": "3s" }))
        .await?;
    let failed =
        wait_for_applyset(&ns, "app", &controller, "FetchFailed (timeout)", T, failed_with("FetchFailed")).await?;
    let message = ready_message(&failed);
    ensure!(message.contains("timed out after 3s"), "{message}");

    // A second run while the server still holds the first connection: it too names the limit.
    let requested = request_reconcile(&ns, "app").await?;
    let retried = wait_for_applyset(&ns, "app", &controller, "the second run", T, |a| {
        a.status.as_ref().and_then(|s| s.last_handled_reconcile_at.as_deref()) == Some(requested.as_str())
            && failed_with("FetchFailed")(a)
    })
    .await?;
    let message = ready_message(&retried);
    ensure!(message.contains("timed out after 3s") && !message.contains("0ns"), "{message}");
    let events = events_for(&ns, "app").await?;
    ensure!(events.iter().all(|(_, _, note)| !note.contains("after 0ns")), "{events:?}");
    ensure!(events.iter().any(|(_, _, note)| note.contains("timed out after 3s")), "{events:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_push_backwards_is_reported() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("rewrite").await?;
    repo.write("one.yaml", config_map("one", &ns.name, "1"));
    repo.write("two.yaml", config_map("two", &ns.name, "1"));
    let a = repo.commit("a");
    // Over HTTP: the controller's cache is shallow, as with any real server.
    let server = GitHttpServer::start(repo.bare.parent().unwrap(), HttpAuth::None, None);
    let controller = ControllerOptions::for_namespace(&ns).start()?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": server.url("repo.git") }, "interval": "1h" }))
        .await?;
    let rev_a = format!("main@sha1:{a}");
    wait_for_applyset(&ns, "app", &controller, "Ready at A", T, ready_at(rev_a.clone())).await?;

    // A fast-forward to B: a Normal NewRevision event says old → new.
    repo.write("three.yaml", config_map("three", &ns.name, "1"));
    let b = repo.commit("b");
    let rev_b = format!("main@sha1:{b}");
    request_reconcile(&ns, "app").await?;
    let at_b = wait_for_applyset(&ns, "app", &controller, "Ready at B", T, ready_at(rev_b.clone())).await?;
    assert_eq!(ready_message(&at_b), format!("Applied revision: {rev_b}"));
    assert_eq!(config_map_value(&ns, "three")?.as_deref(), Some("1"));
    let events = events_with(&ns, "app", "NewRevision").await?;
    let forward = format!("{rev_a} → {rev_b}");
    ensure!(
        events.iter().any(|(kind, reason, note)| kind == "Normal" && reason == "NewRevision" && note == &forward),
        "{events:?}"
    );
    ensure!(!events.iter().any(|(_, reason, _)| reason == "HistoryRewritten"), "{events:?}");

    // main is force-reset to A and C, which drops two.yaml, is pushed on top of it.
    git::git(&repo.work, &["reset", "-q", "--hard", &a]);
    repo.remove("two.yaml");
    let c = repo.commit("c");
    let rev_c = format!("main@sha1:{c}");
    request_reconcile(&ns, "app").await?;
    let at_c = wait_for_applyset(&ns, "app", &controller, "Ready at C", T, ready_at(rev_c.clone())).await?;
    let message = ready_message(&at_c);
    assert_eq!(message, format!("Applied revision: {rev_c} (history rewritten: was {rev_b}, not an ancestor)"));
    let events = events_with(&ns, "app", "HistoryRewritten").await?;
    let rewritten: Vec<_> = events.iter().filter(|(_, reason, _)| reason == "HistoryRewritten").collect();
    ensure!(rewritten.len() == 1, "one HistoryRewritten event: {events:?}");
    let (kind, _, note) = rewritten[0];
    assert_eq!(kind, "Warning");
    ensure!(note.contains(&format!("{rev_b} → {rev_c}")) && note.contains("not an ancestor"), "{note}");
    // The rewrite was applied: what left git is pruned (now with a notice).
    assert_eq!(config_map_value(&ns, "two")?, None);
    assert_eq!(config_map_value(&ns, "three")?, None);
    assert_eq!(config_map_value(&ns, "one")?.as_deref(), Some("1"));
    Ok(())
}
