//! `spec.secrets: Hashed` end to end (real controller, real git, the local control plane, real
//! kubectl): a Secret's last-applied annotation holds HMACs, never a value; a no-op run writes
//! nothing; a changed value is applied, a removed key deleted; `kubectl apply` of the same
//! Secret still works; no value shows in the annotation, status, Events, log or metrics. The
//! hashes are keyed per namespace (no oracle across namespaces), and annotations hashed under
//! the controller's key itself (before per-namespace keys) are rewritten without sending a value.

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
use support::{AuditLog, TestNamespace, eventually};

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

/// The controller's key Secret (made by the first controller of a test, in the namespace
/// `--leader-election-namespace` names).
const KEY_SECRET: &str = "secret/applyset-secret-hash-key";

/// The controller's key, as its key Secret holds it.
fn controller_key(ns: &TestNamespace) -> Result<Vec<u8>> {
    let encoded = ns.jsonpath(KEY_SECRET, "{.data.key}")?;
    Ok(base64::engine::general_purpose::STANDARD.decode(encoded.trim())?)
}

/// HMAC-SHA256 under `key` of `parts` joined by NUL bytes (computed here, not by the crate,
/// to pin the construction the README documents).
fn hmac(key: &[u8], parts: &[&str]) -> Result<Vec<u8>> {
    use openssl::{hash::MessageDigest, pkey::PKey, sign::Signer};
    let message = parts.join("\0");
    let key = PKey::hmac(key)?;
    Ok(Signer::new(MessageDigest::sha256(), &key)?.sign_oneshot_to_vec(message.as_bytes())?)
}

fn recorded(digest: &[u8]) -> String {
    format!("hmac-sha256:{}", applyset::digest::hex(digest))
}

/// The hash of `data.<name>` (the base64 text) in `namespace`: under the namespace's key,
/// HMAC(controller key, "applyset.dev/secret-hash\0<namespace>").
fn namespace_hash(key: &[u8], namespace: &str, name: &str, value: &str) -> Result<String> {
    let namespace_key = hmac(key, &["applyset.dev/secret-hash", namespace])?;
    Ok(recorded(&hmac(&namespace_key, &["data", name, value])?))
}

/// The hash the controller recorded before keys were per namespace: under its key itself.
fn legacy_hash(key: &[u8], name: &str, value: &str) -> Result<String> {
    Ok(recorded(&hmac(key, &["data", name, value])?))
}

fn annotation_json(ns: &TestNamespace) -> Result<serde_json::Value> {
    Ok(serde_json::from_str(&annotation(ns)?)?)
}

fn recorded_data(annotation: &serde_json::Value, name: &str) -> String {
    annotation["data"][name].as_str().unwrap_or_default().to_owned()
}

/// A controller for `ns` whose key Secret lies in `key_namespace`.
fn hashing_controller(ns: &TestNamespace, key_namespace: &str) -> Result<operator::ControllerProcess> {
    ControllerOptions::for_namespace(ns)
        .local_sources()
        .arg("--leader-election-namespace")
        .arg(key_namespace.to_owned())
        .start()
}

async fn hashed_applyset(ns: &TestNamespace, repo: &git::Fixture) -> Result<()> {
    let spec = serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s", "secrets": "Hashed" });
    create_applyset(ns, "app", spec).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equal_values_hash_differently_in_two_namespaces() -> Result<()> {
    let ControllerFixture { ns: ns_a, repo: repo_a } = ControllerFixture::new("hashed-ns-a").await?;
    let ControllerFixture { ns: ns_b, repo: repo_b } = ControllerFixture::new("hashed-ns-b").await?;
    let password = format!("pw-{}", support::random_suffix());
    repo_a.write("db.yaml", secret(&ns_a.name, &password, None));
    let first_a = repo_a.commit("a Secret");
    repo_b.write("db.yaml", secret(&ns_b.name, &password, None));
    let first_b = repo_b.commit("the same Secret");
    // One controller key for both: the second controller starts once the first made it.
    let controller_a = hashing_controller(&ns_a, &ns_a.name)?;
    hashed_applyset(&ns_a, &repo_a).await?;
    wait_for_applyset(&ns_a, "app", &controller_a, "Ready", T, ready_at(revision(&first_a))).await?;
    let controller_b = hashing_controller(&ns_b, &ns_a.name)?;
    hashed_applyset(&ns_b, &repo_b).await?;
    wait_for_applyset(&ns_b, "app", &controller_b, "Ready", T, ready_at(revision(&first_b))).await?;
    assert!(!ns_b.exists(KEY_SECRET)?, "the second controller used the first one's key");

    let key = controller_key(&ns_a)?;
    let (in_a, in_b) =
        (recorded_data(&annotation_json(&ns_a)?, "password"), recorded_data(&annotation_json(&ns_b)?, "password"));
    assert_ne!(in_a, in_b, "equal values in two namespaces must not hash alike");
    assert_eq!(in_a, namespace_hash(&key, &ns_a.name, "password", &b64(&password))?);
    assert_eq!(in_b, namespace_hash(&key, &ns_b.name, "password", &b64(&password))?);
    assert_ne!(in_a, legacy_hash(&key, "password", &b64(&password))?);
    assert_eq!(data(&ns_a, "password")?, b64(&password));
    assert_eq!(data(&ns_b, "password")?, b64(&password));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_hashes_are_rewritten_without_sending_a_value() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("hashed-legacy").await?;
    let (password, token) = (format!("pw-{}", support::random_suffix()), format!("tok-{}", support::random_suffix()));
    repo.write("db.yaml", secret(&ns.name, &password, Some(&token)));
    let first = repo.commit("a Secret");
    let controller = hashing_controller(&ns, &ns.name)?;
    hashed_applyset(&ns, &repo).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    let current = annotation_json(&ns)?;

    // The annotation as the controller wrote it before keys were per namespace.
    let key = controller_key(&ns)?;
    let mut legacy = current.clone();
    for (name, value) in [("password", &password), ("token", &token)] {
        assert_eq!(recorded_data(&current, name), namespace_hash(&key, &ns.name, name, &b64(value))?);
        legacy["data"][name] = legacy_hash(&key, name, &b64(value))?.into();
    }
    let data_before = ns.jsonpath("secret/db", "{.data}")?;
    let audit = AuditLog::from_now(&ns.kubeconfig)?;
    let legacy_text = format!("{}\n", serde_json::to_string(&legacy)?);
    let setting = format!("kubectl.kubernetes.io/last-applied-configuration={legacy_text}");
    ns.kubectl_ok(&["annotate", "--overwrite", "secret/db", &setting], None)?;

    // The next run reads the legacy hashes back as the values and rewrites the annotation.
    eventually("the legacy annotation rewritten", T, || async { Ok((annotation_json(&ns)? == current).then_some(())) })
        .await?;
    assert_eq!(ns.jsonpath("secret/db", "{.data}")?, data_before, "the data never changed");
    // Converged: the runs after it send nothing.
    let version = ns.jsonpath("secret/db", "{.metadata.resourceVersion}")?;
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert_eq!(ns.jsonpath("secret/db", "{.metadata.resourceVersion}")?, version, "a no-op run sends nothing");
    assert_eq!(ns.jsonpath("secret/db", "{.data}")?, data_before);

    // The controller's writes to the Secret meanwhile: the one patch of the annotation (the
    // audit log records no bodies: that the patch holds no `data` is the unit tests' part).
    let writes: Vec<String> = audit
        .requests()?
        .into_iter()
        .filter(|r| r.resource == "secrets" && r.name.as_deref() == Some("db"))
        .filter(|r| r.namespace.as_deref() == Some(ns.name.as_str()) && !r.user_agent.starts_with("kubectl"))
        .filter(|r| !matches!(r.verb.as_str(), "get" | "list" | "watch"))
        .map(|r| format!("{} {} ({})", r.verb, r.uri, r.user_agent))
        .collect();
    assert_eq!(writes.len(), 1, "one patch rewrites the annotation: {writes:#?}");
    assert!(writes[0].starts_with("patch "), "{writes:#?}");
    let visible = everything_visible(&ns, &controller).await?;
    for value in [&password, &token] {
        assert!(!visible.contains(value.as_str()) && !visible.contains(&b64(value)), "a value leaked");
    }
    Ok(())
}
