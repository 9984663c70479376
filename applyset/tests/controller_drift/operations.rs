//! The controller beyond drift: leader election, impersonation of `spec.serviceAccountName`,
//! `/metrics`, and an interval that writes nothing when nothing changed.

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use applyset::operator::api::ApplySet;
use k8s_openapi::api::coordination::v1::Lease;

use super::{NEVER, T, status_of, with_limits};
use crate::operator::{
    self, ControllerFixture, ControllerOptions, condition, config_map, create_applyset, deployment, failed_with,
    get_applyset, http_get, is_ready, ready_at, revision, sample, service, start_controller, wait_for_applyset,
};
use crate::support::{self, TestNamespace, lease_holder};

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

// 7. /metrics after a success and a failure: bounded labels only (no URL; ApplySet names only in
//    applyset_condition, a few series per ApplySet).
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
        // Every result is exported from the start (at 0): wait for the counts.
        let counted = |series: &str| sample(&text, series).is_some_and(|n| n >= 1.0);
        let done = counted(r#"applyset_reconcile_total{result="success"}"#)
            && counted(r#"applyset_reconcile_total{result="fetch_failed"}"#);
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

    // applyset_condition names each ApplySet: at most its three condition types times three
    // statuses, whatever it holds; Ready says which succeeded.
    let (conditions, others): (Vec<&str>, Vec<&str>) =
        text.lines().partition(|line| line.starts_with("applyset_condition{"));
    for name in [good_name, bad_name] {
        let series = conditions.iter().filter(|l| l.contains(&format!(r#"name="{name}","#))).count();
        assert!((3..=9).contains(&series), "{series} applyset_condition series of {name}:\n{text}");
    }
    assert_eq!(conditions.iter().filter(|l| !l.contains(&format!(r#"namespace="{}""#, ns.name))).count(), 0);
    let ready = |name: &str, status: &str| {
        format!(r#"applyset_condition{{name="{name}",namespace="{}",status="{status}",type="Ready"}}"#, ns.name)
    };
    assert_eq!(sample(&text, &ready(good_name, "True")), Some(1.0), "{text}");
    assert_eq!(sample(&text, &ready(bad_name, "False")), Some(1.0), "{text}");
    assert_eq!(sample(&text, &ready(bad_name, "True")), Some(0.0), "{text}");

    let others = others.join("\n");
    let values = label_values(&others);
    assert!(!values.is_empty());
    for value in label_values(&text) {
        for forbidden in ["file://", "repo.git", "no-such-repo"] {
            assert!(!value.contains(forbidden), "label value {value:?} contains {forbidden:?}:\n{text}");
        }
    }
    for value in &values {
        for forbidden in [good_name, bad_name, "metrics-probe", ns.name.as_str()] {
            assert!(!value.contains(forbidden), "label value {value:?} contains {forbidden:?}:\n{text}");
        }
    }
    for forbidden in [good_name, bad_name, ns.name.as_str(), "file://"] {
        assert!(!others.contains(forbidden), "/metrics mentions {forbidden:?} outside applyset_condition:\n{text}");
    }
    assert!(!text.contains("file://"), "{text}");
    Ok(())
}

/// The versions of one ApplySet written since a watch began.
struct Writes {
    watching: tokio::task::JoinHandle<()>,
    seen: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

impl Writes {
    /// Stops watching; every version seen, oldest first (version, managedFields, status).
    fn stop(self) -> Vec<serde_json::Value> {
        self.watching.abort();
        std::mem::take(&mut *self.seen.lock().expect("not poisoned"))
    }
}

/// Watches ApplySet `name` from `resource_version` on.
async fn record_writes(ns: &TestNamespace, name: &str, resource_version: String) -> Result<Writes> {
    use futures::{StreamExt as _, TryStreamExt as _};
    let api: kube::Api<ApplySet> = kube::Api::namespaced(ns.client.clone(), &ns.name);
    let params = kube::api::WatchParams::default().fields(&format!("metadata.name={name}"));
    let mut events = api.watch(&params, &resource_version).await?.boxed();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let watching = tokio::spawn(async move {
        while let Ok(Some(event)) = events.try_next().await {
            if let kube::api::WatchEvent::Modified(applyset) = event {
                let entry = serde_json::json!({
                    "resourceVersion": applyset.metadata.resource_version,
                    "managedFields": applyset.metadata.managed_fields,
                    "status": applyset.status,
                });
                sink.lock().expect("not poisoned").push(entry);
            }
        }
    });
    Ok(Writes { watching, seen })
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
    // Every version written in the window, so that a failure shows the writes in between (a
    // status changed and changed back leaves `after` equal to `before` but for its version).
    let writes = record_writes(&ns, "app", before.metadata.resource_version.clone().unwrap_or_default()).await?;
    support::eventually("3 more interval runs", Duration::from_secs(30), || async {
        Ok((successes(&controller.metrics()?) >= runs_before + 3.0).then_some(()))
    })
    .await?;

    let after = get_applyset(&ns, "app").await?;
    let written = writes.stop();
    if after.metadata.resource_version != before.metadata.resource_version {
        bail!(
            "the ApplySet was written by no-op runs:\nbefore: {}\nwritten in between: {}\nafter: {}\ncontroller log:\n{}",
            serde_json::to_string_pretty(&before)?,
            serde_json::to_string_pretty(&written)?,
            serde_json::to_string_pretty(&after)?,
            operator::tail(&controller.log(), 60)
        );
    }
    assert_eq!(resource_versions(&ns, &objects)?, objects_before, "managed objects were written by no-op runs");
    assert_eq!(ns.jsonpath("deployment/web", "{.metadata.generation}")?, generation_before);
    assert_eq!(operator::events_for(&ns, "app").await?.len(), events_before, "no-op runs record no Events");
    assert_eq!(condition(&after, "Drifted").map(|c| c.1), Some("NoDrift".to_owned()));
    Ok(())
}
