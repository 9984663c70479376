//! The webhook receiver against a real controller and apiserver: a signed push makes the
//! controller fetch at once (the interval is an hour), and everything else is refused or
//! ignored with a bare status — bad or missing signatures, unknown ApplySets, oversized bodies,
//! other events and other branches, a flood of forged requests. A hooked ApplySet's path is
//! its `status.webhookPath` (a digest of the token, name and namespace); a refused signature
//! is answered exactly as a path that names nothing.

mod git;
mod operator;
mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::Result;
use applyset::operator::webhook::{hook_path, signature};
use operator::{
    ControllerFixture, ControllerOptions, ControllerProcess, config_map, create_applyset, is_ready, wait_for_applyset,
};

const T: Duration = Duration::from_secs(60);

/// One HTTP/1.1 request on loopback: (status, body).
fn post(port: u16, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut request =
        format!("POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    // A refused request may be answered before the body is sent: ignore a write error then.
    let _ = stream.write_all(body);
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let code = response.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Ok((code, body))
}

fn github_push(port: u16, path: &str, token: &[u8], git_ref: &str) -> Result<(u16, String)> {
    let body = format!(r#"{{"ref":"{git_ref}","after":"0000000000000000000000000000000000000000"}}"#);
    let signed = signature(token, body.as_bytes()).expect("an HMAC");
    post(port, path, &[("X-GitHub-Event", "push"), ("X-Hub-Signature-256", &signed)], body.as_bytes())
}

/// An ApplySet `app` (interval 1 h, `spec.webhook` with the token `s3cret`) applying one
/// ConfigMap, Ready at its first commit, and a controller serving the receiver on `port`.
struct Hooked {
    // Fields drop in this order: the controller goes before the namespace releases the
    // ApplySets' finalizers, or it would put them back at once and keep the namespace.
    controller: ControllerProcess,
    fixture: ControllerFixture,
    port: u16,
    /// `status.webhookPath` of `app`.
    hook: String,
}

impl Hooked {
    /// `git_ref`: the ApplySet's `spec.source.ref` (`null`: the default branch).
    async fn start(prefix: &str, config_map_name: &str, git_ref: serde_json::Value) -> Result<Hooked> {
        let fixture = ControllerFixture::new(prefix).await?;
        fixture.ns.kubectl_ok(&["create", "secret", "generic", "hook-token", "--from-literal=token=s3cret"], None)?;
        let port = support::free_port();
        let controller = ControllerOptions::for_namespace(&fixture.ns)
            .local_sources()
            .arg(format!("--webhook-bind-address=127.0.0.1:{port}"))
            .start()?;
        create_hooked_applyset(&fixture, config_map_name, git_ref).await?;
        wait_for_applyset(&fixture.ns, "app", &controller, "the first commit applied", T, is_ready).await?;
        let hook = published_path(&fixture.ns).await?;
        assert_eq!(hook, hook_path(b"s3cret", &fixture.ns.name, "app"));
        Ok(Hooked { controller, fixture, port, hook })
    }
}

/// Commits one ConfigMap and creates the ApplySet `app` (interval 1 h, `spec.webhook` with the
/// Secret `hook-token`) following `git_ref` (`null`: the default branch).
async fn create_hooked_applyset(
    fixture: &ControllerFixture,
    config_map_name: &str,
    git_ref: serde_json::Value,
) -> Result<()> {
    let (ns, repo) = (&fixture.ns, &fixture.repo);
    repo.write("app/cm.yaml", config_map(config_map_name, &ns.name, "1"));
    repo.commit("first");
    let mut source = serde_json::json!({ "url": repo.url(), "path": "app" });
    if !git_ref.is_null() {
        source["ref"] = git_ref;
    }
    let spec = serde_json::json!({
        "source": source,
        "interval": "1h",
        "webhook": { "secretRef": { "name": "hook-token" } },
    });
    create_applyset(ns, "app", spec).await
}

/// `status.webhookPath` of `app`.
async fn published_path(ns: &support::TestNamespace) -> Result<String> {
    let applyset = operator::get_applyset(ns, "app").await?;
    let path = applyset.status.and_then(|s| s.webhook_path);
    path.ok_or_else(|| anyhow::anyhow!("app has no status.webhookPath"))
}

/// Waits until `app` applied `commit` of the default branch.
async fn wait_applied(ns: &support::TestNamespace, controller: &ControllerProcess, commit: &str) -> Result<()> {
    wait_for_applyset(ns, "app", controller, "the pushed commit applied", T, |s| {
        s.status.as_ref().and_then(|s| s.last_applied_revision.as_deref())
            == Some(format!("main@sha1:{commit}").as_str())
    })
    .await
    .map(|_| ())
}

#[tokio::test]
async fn a_signed_push_is_applied_at_once_and_everything_else_is_refused() -> Result<()> {
    let hooked = Hooked::start("hook", "hooked", serde_json::json!({ "branch": "main" })).await?;
    let (ns, repo, controller, port, hook) =
        (&hooked.fixture.ns, &hooked.fixture.repo, &hooked.controller, hooked.port, hooked.hook.as_str());

    // Refused or ignored, with no more than a status; nothing is fetched. A bad signature on
    // the hooked path is answered as a path that names nothing: the old `/hook/<ns>/<name>`,
    // the digest of an ApplySet that does not exist, or of this one under another token.
    let not_found = (404, "not found\n".to_owned());
    assert_eq!(github_push(port, hook, b"wrong", "refs/heads/main")?, not_found);
    assert_eq!(post(port, hook, &[("X-GitHub-Event", "push")], b"{}")?, not_found, "unsigned");
    let elsewhere = [
        format!("/hook/{}/app", ns.name),
        hook_path(b"s3cret", &ns.name, "nope"),
        hook_path(b"other", &ns.name, "app"),
    ];
    for path in &elsewhere {
        assert_eq!(github_push(port, path, b"s3cret", "refs/heads/main")?, not_found, "{path}");
        assert_eq!(github_push(port, path, b"wrong", "refs/heads/main")?, not_found, "{path}");
    }
    assert_eq!(operator::http_get(port, hook)?.0, 405);
    let huge = vec![b' '; 2 << 20];
    assert_eq!(post(port, hook, &[("X-GitHub-Event", "push")], &huge)?.0, 413);
    assert_eq!(github_push(port, hook, b"s3cret", "refs/heads/dev")?, (200, "ignored\n".to_owned()));
    let ping = br#"{"zen":"hi"}"#;
    let signed = signature(b"s3cret", ping).unwrap();
    assert_eq!(post(port, hook, &[("X-GitHub-Event", "ping"), ("X-Hub-Signature-256", &signed)], ping)?.0, 200);
    // A flood of forged requests: each refused, the controller unharmed.
    for _ in 0..300 {
        assert_eq!(github_push(port, hook, b"forged", "refs/heads/main")?.0, 404);
    }
    assert_eq!(operator::http_get(controller.health_port, "/readyz")?.0, 200);

    // A real push: applied long before the hour-long interval.
    repo.write("app/cm.yaml", config_map("hooked", &ns.name, "2"));
    let second = repo.commit("second");
    let pushed = Instant::now();
    assert_eq!(github_push(port, hook, b"s3cret", "refs/heads/main")?, (200, "accepted\n".to_owned()));
    wait_applied(ns, controller, &second).await?;
    eprintln!("push → applied in {:?}", pushed.elapsed());
    assert_eq!(operator::config_map_value(ns, "hooked")?.as_deref(), Some("2"));

    // GitLab's token header and a generic HMAC are accepted too.
    let gitlab = post(
        port,
        hook,
        &[("X-Gitlab-Event", "Push Hook"), ("X-Gitlab-Token", "s3cret")],
        br#"{"ref":"refs/heads/main"}"#,
    )?;
    assert_eq!(gitlab, (200, "accepted\n".to_owned()));
    let generic = signature(b"s3cret", b"anything").unwrap();
    assert_eq!(post(port, hook, &[("X-Signature", &generic)], b"anything")?.0, 200);

    let metrics = controller.metrics()?;
    for (outcome, at_least) in
        [("accepted", 3), ("unauthorized", 302), ("ignored", 2), ("not_found", 6), ("too_large", 1)]
    {
        let line = format!("applyset_webhook_requests_total{{outcome=\"{outcome}\"}}");
        let count: f64 =
            metrics.lines().find_map(|l| l.strip_prefix(&line).map(|v| v.trim().parse().unwrap_or(0.0))).unwrap_or(0.0);
        assert!(count >= f64::from(at_least), "{line} = {count}\n{metrics}");
    }
    Ok(())
}

/// The value of one metric line (`name{labels}`), 0 when absent.
fn metric(metrics: &str, line: &str) -> f64 {
    metrics.lines().find_map(|l| l.strip_prefix(line).map(|v| v.trim().parse().unwrap_or(0.0))).unwrap_or(0.0)
}

fn reconciles(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("applyset_reconcile_total{"))
        .filter_map(|l| l.rsplit_once(' ').and_then(|(_, v)| v.parse::<f64>().ok()))
        .sum()
}

#[tokio::test]
async fn a_flood_is_refused_with_bounded_memory_and_a_burst_of_pushes_is_one_run() -> Result<()> {
    let hooked = Hooked::start("hookflood", "flooded", serde_json::Value::Null).await?;
    let (ns, repo, controller, port, hook) =
        (&hooked.fixture.ns, &hooked.fixture.repo, &hooked.controller, hooked.port, hooked.hook.as_str());

    // 10,000 forged or oversized requests from 8 clients at once.
    let rss = |metrics: &str| metric(metrics, "process_resident_memory_bytes");
    let before = rss(&controller.metrics()?);
    let started = Instant::now();
    let clients: Vec<_> = (0..8)
        .map(|client| {
            let hook = hook.to_owned();
            std::thread::spawn(move || -> Result<Vec<u16>> {
                (0..1250)
                    .map(|i| match (client + i) % 10 {
                        0 => post(port, &hook, &[("X-GitHub-Event", "push")], &vec![b'x'; (1 << 20) + 1]).map(|r| r.0),
                        _ => github_push(port, &hook, b"forged", "refs/heads/main").map(|r| r.0),
                    })
                    .collect()
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for client in clients {
        statuses.extend(client.join().expect("a client thread")?);
    }
    let took = started.elapsed();
    assert_eq!(statuses.len(), 10_000);
    assert!(
        statuses.iter().all(|s| *s == 404 || *s == 413),
        "{:?}",
        statuses.iter().find(|s| **s != 404 && **s != 413)
    );
    let metrics = controller.metrics()?;
    let after = rss(&metrics);
    eprintln!("10,000 refused requests in {took:?}; RSS {:.1} MiB → {:.1} MiB", before / 1048576.0, after / 1048576.0);
    assert!(after < before + 64.0 * 1048576.0, "RSS grew from {before} to {after}");
    assert_eq!(metric(&metrics, "applyset_webhook_requests_total{outcome=\"unauthorized\"}"), 9_000.0);
    assert_eq!(metric(&metrics, "applyset_webhook_requests_total{outcome=\"too_large\"}"), 1_000.0);
    assert_eq!(operator::http_get(controller.health_port, "/readyz")?.0, 200);

    // Twenty pushes in a burst: one or two runs, not twenty.
    let runs_before = reconciles(&controller.metrics()?);
    repo.write("app/cm.yaml", config_map("flooded", &ns.name, "2"));
    let second = repo.commit("second");
    for _ in 0..20 {
        assert_eq!(github_push(port, hook, b"s3cret", "refs/heads/main")?.0, 200);
    }
    wait_applied(ns, controller, &second).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let runs = reconciles(&controller.metrics()?) - runs_before;
    eprintln!("20 pushes in a burst → {runs} run(s)");
    assert!((1.0..=3.0).contains(&runs), "20 pushes gave {runs} runs");
    Ok(())
}

#[tokio::test]
async fn an_empty_token_refuses_every_request() -> Result<()> {
    let fixture = ControllerFixture::new("hookempty").await?;
    let ns = &fixture.ns;
    ns.kubectl_ok(&["create", "secret", "generic", "hook-token", "--from-literal=token="], None)?;
    let port = support::free_port();
    let controller = ControllerOptions::for_namespace(ns)
        .local_sources()
        .arg(format!("--webhook-bind-address=127.0.0.1:{port}"))
        .start()?;
    create_hooked_applyset(&fixture, "empty", serde_json::Value::Null).await?;
    wait_for_applyset(ns, "app", &controller, "the first commit applied", T, is_ready).await?;
    // No token, no path: the ApplySet publishes none and says why in a Warning Event.
    assert!(published_path(ns).await.is_err(), "a path published for an empty token");
    support::eventually("the WebhookUnavailable Event", T, || async {
        let events =
            ns.kubectl_ok(&["get", "events", "--field-selector=reason=WebhookUnavailable", "-o", "name"], None)?;
        Ok((!events.trim().is_empty()).then_some(()))
    })
    .await?;
    let hook = hook_path(b"", &ns.name, "app");
    let push = br#"{"ref":"refs/heads/main"}"#;
    let runs_before = reconciles(&controller.metrics()?);
    // What an empty token would have accepted: an empty GitLab token, and HMACs under the empty
    // key (of the empty body: HMAC-SHA256("", ""), a published vector).
    let empty_key = "sha256=b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad";
    let gitlab: &[(&str, &str)] = &[("X-Gitlab-Event", "Push Hook"), ("X-Gitlab-Token", "")];
    let github: &[(&str, &str)] = &[("X-GitHub-Event", "push"), ("X-Hub-Signature-256", empty_key)];
    let generic: &[(&str, &str)] = &[("X-Signature", empty_key)];
    for (headers, body) in [(gitlab, &push[..]), (github, b""), (generic, b"")] {
        assert_eq!(post(port, &hook, headers, body)?.0, 404, "{headers:?}");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let metrics = controller.metrics()?;
    assert_eq!(metric(&metrics, "applyset_webhook_requests_total{outcome=\"not_found\"}"), 3.0);
    assert_eq!(metric(&metrics, "applyset_webhook_requests_total{outcome=\"accepted\"}"), 0.0);
    assert_eq!(reconciles(&metrics), runs_before, "a refused request started a run");
    let annotations = operator::get_applyset(ns, "app").await?.metadata.annotations.unwrap_or_default();
    assert!(!annotations.contains_key(applyset::keys::RECONCILE_REQUESTED_AT), "{annotations:?}");
    Ok(())
}

/// Two replicas with leader election, each serving the receiver: a signed push sent to the
/// standby starts a run (the leader carries it out), and so does one sent to the leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_to_either_of_two_replicas_starts_a_run() -> Result<()> {
    let fixture = ControllerFixture::new("hookha").await?;
    let (ns, repo) = (&fixture.ns, &fixture.repo);
    ns.kubectl_ok(&["create", "secret", "generic", "hook-token", "--from-literal=token=s3cret"], None)?;
    let replica = |identity: &str, port: u16| {
        ControllerOptions::for_namespace(ns)
            .local_sources()
            .arg(format!("--webhook-bind-address=127.0.0.1:{port}"))
            .arg("--leader-elect")
            .arg(format!("--leader-election-namespace={}", ns.name))
            .arg(format!("--leader-election-identity={identity}"))
            .start()
    };
    let (leader_port, standby_port) = (support::free_port(), support::free_port());
    let leader = replica("alpha", leader_port)?;
    support::eventually("alpha to lead", T, || async {
        Ok((operator::sample(&leader.metrics()?, "applyset_leader") == Some(1.0)).then_some(()))
    })
    .await?;
    let standby = replica("beta", standby_port)?;
    create_hooked_applyset(&fixture, "ha", serde_json::Value::Null).await?;
    wait_for_applyset(ns, "app", &leader, "the first commit applied", T, is_ready).await?;
    let hook = published_path(ns).await?;
    assert_eq!(operator::http_get(standby.health_port, "/readyz")?.0, 200, "the standby is ready: it serves pushes");

    // The standby's view lists the ApplySet shortly after it starts.
    repo.write("app/cm.yaml", config_map("ha", &ns.name, "2"));
    let second = repo.commit("second");
    support::eventually("the standby to accept a push", T, || async {
        let (code, _) = github_push(standby_port, &hook, b"s3cret", "refs/heads/main")?;
        Ok((code == 200).then_some(()))
    })
    .await?;
    wait_applied(ns, &leader, &second).await?;
    assert_eq!(operator::config_map_value(ns, "ha")?.as_deref(), Some("2"));

    repo.write("app/cm.yaml", config_map("ha", &ns.name, "3"));
    let third = repo.commit("third");
    assert_eq!(github_push(leader_port, &hook, b"s3cret", "refs/heads/main")?, (200, "accepted\n".to_owned()));
    wait_applied(ns, &leader, &third).await?;
    assert_eq!(operator::config_map_value(ns, "ha")?.as_deref(), Some("3"));

    let standby_metrics = standby.metrics()?;
    assert_eq!(metric(&standby_metrics, "applyset_webhook_requests_total{outcome=\"accepted\"}"), 1.0);
    assert_eq!(reconciles(&standby_metrics), 0.0, "the standby reconciled:\n{standby_metrics}");
    Ok(())
}
