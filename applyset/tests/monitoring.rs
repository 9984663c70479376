//! The Helm chart's monitoring bundle against the real controller: its `/metrics`, with an
//! ApplySet reconciled, passes `promtool check metrics` (the real promtool, built by
//! `scripts/build-monitoring-tools`), and every metric the alert rules
//! (`deploy/helm/applyset/templates/prometheusrule.yaml`) and the Grafana dashboard
//! (`deploy/helm/applyset/dashboards/applyset.json`) name is exported, so the bundle cannot
//! drift from the code. `applyset_condition` follows the ApplySet and leaves with it.

mod git;
mod operator;
mod support;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kube::Api;
use kube::api::DeleteParams;
use operator::{ControllerFixture, config_map, create_applyset, is_ready, sample, start_controller, wait_for_applyset};
use support::repo_root;

const T: Duration = Duration::from_secs(90);

/// promtool, built by `scripts/build-monitoring-tools` on first use (cached).
fn promtool() -> Result<PathBuf> {
    let out = Command::new(repo_root().join("scripts/build-monitoring-tools")).output()?;
    if !out.status.success() {
        bail!("scripts/build-monitoring-tools failed:\n{}", String::from_utf8_lossy(&out.stderr));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The last line: promtool.
    let promtool = stdout.lines().next_back().map(|line| PathBuf::from(line.trim()));
    promtool.with_context(|| format!("scripts/build-monitoring-tools printed no paths:\n{stdout}"))
}

/// `promtool check metrics` on `metrics`: its findings, empty when there are none.
fn promtool_check_metrics(promtool: &PathBuf, metrics: &str) -> Result<String> {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child.stdin.take().context("promtool's stdin")?.write_all(metrics.as_bytes())?;
    let out = child.wait_with_output()?;
    let findings = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() && findings.trim().is_empty() {
        bail!("promtool check metrics failed ({}) without saying why", out.status);
    }
    Ok(findings.trim().to_owned())
}

/// The metric names (`applyset_*`, `process_*`) a text mentions.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for prefix in ["applyset_", "process_"] {
        let mut rest = text;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().next_back();
            let tail = &rest[at..];
            let end = tail.find(|c: char| !(c.is_ascii_lowercase() || c == '_')).unwrap_or(tail.len());
            // Part of a longer identifier (e.g. `grafana_applyset_…`) is not a name of ours.
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                names.insert(tail[..end].trim_end_matches('_').to_owned());
            }
            rest = &tail[end..];
        }
    }
    names
}

/// The metric names a `/metrics` text exports (sample lines, and HELP of histograms' bases).
fn exported_names(metrics: &str) -> BTreeSet<String> {
    metrics
        .lines()
        .filter_map(|line| match line.strip_prefix("# HELP ") {
            Some(help) => help.split(' ').next(),
            None if line.starts_with('#') => None,
            None => line.split(['{', ' ']).next(),
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn metric_names_are_found_in_text() {
    let names = metric_names(
        r#"rate(applyset_reconcile_total{job=~"$job"}[5m]) "(applyset_condition)" process_open_fds{x} xapplyset_no"#,
    );
    let expected = ["applyset_condition", "applyset_reconcile_total", "process_open_fds"];
    assert_eq!(names.into_iter().collect::<Vec<_>>(), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_pass_promtool_and_cover_the_monitoring_bundle() -> Result<()> {
    let promtool = promtool()?;
    let ControllerFixture { ns, repo } = ControllerFixture::new("monitoring").await?;
    repo.write("app/a.yaml", config_map("a", &ns.name, "1"));
    repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "app",
        serde_json::json!({ "source": { "url": repo.url(), "path": "app" }, "interval": "1h" }),
    )
    .await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;

    // The status is written, then the metric set: wait for it.
    let ready = format!(r#"applyset_condition{{name="app",namespace="{}",status="True",type="Ready"}}"#, ns.name);
    let not_ready = format!(r#"applyset_condition{{name="app",namespace="{}",status="False",type="Ready"}}"#, ns.name);
    let deadline = Instant::now() + Duration::from_secs(30);
    let metrics = loop {
        let metrics = controller.metrics()?;
        if sample(&metrics, &ready) == Some(1.0) {
            break metrics;
        }
        if Instant::now() > deadline {
            bail!("no {ready} 1 in /metrics:\n{metrics}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(sample(&metrics, &not_ready), Some(0.0), "{metrics}");
    let successes = sample(&metrics, r#"applyset_reconcile_total{result="success"}"#);
    assert!(successes.is_some_and(|n| n >= 1.0), "{metrics}");
    assert_eq!(sample(&metrics, r#"applyset_reconcile_total{result="prune_guarded"}"#), Some(0.0), "{metrics}");

    let findings = promtool_check_metrics(&promtool, &metrics)?;
    assert!(findings.is_empty(), "promtool check metrics found problems:\n{findings}\nin:\n{metrics}");

    // Every metric the alerts and the dashboard use is one the controller exports.
    let exported = exported_names(&metrics);
    let chart = repo_root().join("deploy/helm/applyset");
    for file in ["templates/prometheusrule.yaml", "dashboards/applyset.json"] {
        let text = std::fs::read_to_string(chart.join(file))?;
        let used = metric_names(&text);
        assert!(used.len() >= 5, "{file} names only {used:?}");
        let missing: Vec<_> = used.difference(&exported).collect();
        assert!(
            missing.is_empty(),
            "{file} uses metrics /metrics does not export: {missing:?}\nexported: {exported:?}"
        );
        eprintln!("{file}: all {} metrics it uses are exported", used.len());
    }

    // Deleted, the ApplySet leaves no series behind.
    let api: Api<applyset::operator::api::ApplySet> = Api::namespaced(ns.client.clone(), &ns.name);
    api.delete("app", &DeleteParams::default()).await?;
    let deadline = Instant::now() + T;
    loop {
        let metrics = controller.metrics()?;
        let left: Vec<&str> =
            metrics.lines().filter(|line| line.contains(&format!(r#"namespace="{}""#, ns.name))).collect();
        if left.is_empty() && api.get_opt("app").await?.is_none() {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "the deleted ApplySet's series stay: {left:?}\ncontroller log:\n{}",
                operator::tail(&controller.log(), 40)
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(())
}
