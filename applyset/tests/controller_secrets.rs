//! `spec.secrets: Hashed` end to end (real controller, real git, the local control plane, real
//! kubectl): a Secret's last-applied annotation holds HMACs, never a value; a no-op run writes
//! nothing; a changed value is applied, a removed key deleted; `kubectl apply` of the same
//! Secret still works; no value shows in the annotation, status, Events, log or metrics.

mod git;
mod operator;
mod support;

use std::time::Duration;

use anyhow::{Context, Result};
use base64::Engine as _;
use operator::{
    ControllerFixture, ControllerOptions, create_applyset, events_on, get_applyset, ready_at, revision,
    wait_for_applyset,
};
use support::TestNamespace;

const T: Duration = Duration::from_secs(90);

fn secret(namespace: &str, password: &str, token: Option<&str>) -> String {
    let token = token.map(|t| format!("data:\n  token: {}\n", b64(t))).unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: {namespace}\ntype: Opaque\nstringData:\n  password: {password}\n{token}"
    )
}

fn b64(value: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(value)
}

fn annotation(ns: &TestNamespace) -> Result<String> {
    ns.jsonpath("secret/db", "{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}")
}

fn data(ns: &TestNamespace, key: &str) -> Result<String> {
    ns.jsonpath("secret/db", &format!("{{.data.{key}}}"))
}

/// Everything anyone who may read the ApplySet or the controller's output sees.
async fn everything_visible(ns: &TestNamespace, controller: &operator::ControllerProcess) -> Result<String> {
    let applyset = serde_json::to_string(&get_applyset(ns, "app").await?)?;
    let events = serde_json::to_string(&events_on(ns, "app").await?)?;
    Ok(format!("{applyset}\n{events}\n{}\n{}", controller.log(), controller.metrics()?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hashed_secret_annotations_hold_no_value_and_still_apply() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("hashed").await?;
    let (password, token) = (format!("pw-{}", support::random_suffix()), format!("tok-{}", support::random_suffix()));
    repo.write("db.yaml", secret(&ns.name, &password, Some(&token)));
    let first = repo.commit("a Secret");
    // The key Secret goes in the test's namespace (the controller's own, as $POD_NAMESPACE).
    let controller = ControllerOptions::for_namespace(&ns)
        .local_sources()
        .arg("--leader-election-namespace")
        .arg(ns.name.clone())
        .start()?;
    let spec = serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s", "secrets": "Hashed" });
    create_applyset(&ns, "app", spec).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    assert_eq!(data(&ns, "password")?, b64(&password));
    assert_eq!(data(&ns, "token")?, b64(&token));
    let recorded = annotation(&ns)?;
    assert!(recorded.contains("hmac-sha256:"), "{recorded}");
    for value in [&password, &token] {
        assert!(!recorded.contains(value.as_str()) && !recorded.contains(&b64(value)), "{recorded}");
    }
    assert!(!recorded.contains("stringData"), "stringData is folded into data: {recorded}");
    assert!(ns.exists("secret/applyset-secret-hash-key")?, "the controller made its key");

    // Three no-op runs write nothing.
    let version = ns.jsonpath("secret/db", "{.metadata.resourceVersion}")?;
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert_eq!(ns.jsonpath("secret/db", "{.metadata.resourceVersion}")?, version, "a no-op run sends nothing");

    // A changed value is applied; a removed key deleted.
    let changed = format!("pw2-{}", support::random_suffix());
    repo.write("db.yaml", secret(&ns.name, &changed, None));
    let second = repo.commit("new password, no token");
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&second))).await?;
    assert_eq!(data(&ns, "password")?, b64(&changed));
    assert_eq!(data(&ns, "token")?, "", "the removed key is deleted");

    let visible = everything_visible(&ns, &controller).await?;
    for value in [&password, &token, &changed] {
        assert!(!visible.contains(value.as_str()) && !visible.contains(&b64(value)), "a value leaked");
    }

    // kubectl apply of the same Secret still works (and records the values, as it always does).
    let manifest = secret(&ns.name, &changed, None);
    let applied = ns.kubectl_ok(&["apply", "-f", "-"], Some(&manifest))?;
    assert!(applied.contains("secret/db"), "{applied}");
    assert!(annotation(&ns)?.contains(&changed), "kubectl's own annotation");
    // The next run records hashes again.
    let asked = operator::request_reconcile(&ns, "app").await?;
    wait_for_applyset(&ns, "app", &controller, "a requested run", T, |a| {
        a.status.as_ref().and_then(|s| s.last_handled_reconcile_at.as_deref()) == Some(asked.as_str())
    })
    .await?;
    let rehashed = annotation(&ns).context("annotation")?;
    assert!(rehashed.contains("hmac-sha256:") && !rehashed.contains(&changed), "{rehashed}");
    assert_eq!(data(&ns, "password")?, b64(&changed));
    // And after all of it: no value anywhere anyone else sees.
    let visible = everything_visible(&ns, &controller).await?;
    for value in [&password, &token, &changed] {
        assert!(!visible.contains(value.as_str()) && !visible.contains(&b64(value)), "a value leaked");
    }
    Ok(())
}
