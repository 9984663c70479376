//! `spec.decryption` end to end (real controller, real git, the local control plane, and files
//! encrypted by the real sops for a key made by the real age-keygen): a SOPS-encrypted Secret
//! is applied with its clear value, its last-applied annotation holds hashes, and its value is
//! in neither the ApplySet's status, its Events, the controller's log nor its metrics; a
//! tampered file, a wrong key and a missing `spec.decryption` are each `BuildFailed` naming
//! the file, with nothing applied or pruned; a kustomize secretGenerator reads an encrypted
//! `.env` file (decrypted into a private copy: no clear text in the controller's git cache).

mod git;
mod operator;
mod support;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use base64::Engine as _;
use operator::{
    ControllerFixture, ControllerOptions, ControllerProcess, condition, create_applyset, events_on, get_applyset,
    ready_at, revision, wait_for_applyset,
};
use support::{AgeKey, TestNamespace, kustomize_binary, sops_encrypt};

const T: Duration = Duration::from_secs(90);

/// Only `data` and `stringData` encrypted, as teams encrypt Secrets (the names stay readable).
const SECRET_VALUES: [&str; 2] = ["--encrypted-regex", "^(data|stringData)$"];

fn b64(value: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(value)
}

fn secret_manifest(namespace: &str, password: &str, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: {namespace}\n  labels:\n    app: db\ntype: Opaque\nstringData:\n  password: {password}\ndata:\n  token: {}\n",
        b64(token)
    )
}

fn config_map(namespace: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: {namespace}\ndata:\n  mode: fast\n"
    )
}

/// The Secret `sops-age` holding `key` under `age.agekey` (Flux's convention), replacing any.
fn key_secret(ns: &TestNamespace, key: &AgeKey) -> Result<()> {
    let _ = ns.kubectl_ok(&["delete", "secret", "sops-age", "--ignore-not-found"], None);
    let from = format!("--from-file=age.agekey={}", key.identity_file.display());
    ns.kubectl_ok(&["create", "secret", "generic", "sops-age", &from], None)?;
    Ok(())
}

fn decryption_spec(url: &str, path: &str) -> serde_json::Value {
    serde_json::json!({
        "source": { "url": url, "path": path },
        "interval": "2s",
        "prune": true,
        "decryption": { "provider": "sops", "secretRef": { "name": "sops-age" } },
    })
}

/// Everything anyone who may read the ApplySet or the controller's output sees.
async fn everything_visible(ns: &TestNamespace, controller: &ControllerProcess) -> Result<String> {
    let applyset = serde_json::to_string(&get_applyset(ns, "app").await?)?;
    let events = serde_json::to_string(&events_on(ns, "app").await?)?;
    Ok(format!("{applyset}\n{events}\n{}\n{}", controller.log(), controller.metrics()?))
}

fn assert_hidden(visible: &str, values: &[&str]) {
    for value in values {
        assert!(!visible.contains(value), "a decrypted value is visible");
        assert!(!visible.contains(&b64(value)), "a decrypted value is visible, base64-encoded");
    }
}

fn annotation(ns: &TestNamespace, object: &str) -> Result<String> {
    ns.jsonpath(object, "{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}")
}

/// The Ready condition's message once it is `BuildFailed` and says `expected`.
async fn build_failure(ns: &TestNamespace, controller: &ControllerProcess, expected: &'static str) -> Result<String> {
    let failed = wait_for_applyset(ns, "app", controller, expected, T, |a| {
        condition(a, "Ready").is_some_and(|(s, r, m)| s == "False" && r == "BuildFailed" && m.contains(expected))
    })
    .await?;
    Ok(condition(&failed, "Ready").map(|c| c.2).unwrap_or_default())
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if std::fs::read(&path)
                .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_secret_is_applied_in_clear_and_shown_nowhere() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("sops").await?;
    let key = AgeKey::generate(&repo.root, "age.key")?;
    let (password, token) = (format!("pw-{}", support::random_suffix()), format!("tok-{}", support::random_suffix()));
    let encrypted = sops_encrypt("db.yaml", &secret_manifest(&ns.name, &password, &token), &key, &SECRET_VALUES)?;
    assert!(!encrypted.contains(&password) && encrypted.contains("name: db"), "only the values are encrypted");
    repo.write("app/db.yaml", &encrypted);
    repo.write("app/plain.yaml", config_map(&ns.name));
    let first = repo.commit("an encrypted Secret");
    key_secret(&ns, &key)?;
    let controller = ControllerOptions::for_namespace(&ns)
        .local_sources()
        .arg("--leader-election-namespace")
        .arg(ns.name.clone())
        .start()?;
    create_applyset(&ns, "app", decryption_spec(&repo.url(), "app")).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;

    assert_eq!(ns.jsonpath("secret/db", "{.data.password}")?, b64(&password), "the clear value is applied");
    assert_eq!(ns.jsonpath("secret/db", "{.data.token}")?, b64(&token));
    assert_eq!(ns.jsonpath("secret/db", "{.metadata.labels.app}")?, "db");
    let recorded = annotation(&ns, "secret/db")?;
    assert!(recorded.contains("hmac-sha256:"), "hashed without spec.secrets: {recorded}");
    assert!(!recorded.contains("\"sops\"") && !recorded.contains("ENC["), "{recorded}");
    assert_hidden(&recorded, &[&password, &token]);
    assert_eq!(ns.jsonpath("configmap/plain", "{.data.mode}")?, "fast");
    assert_hidden(&everything_visible(&ns, &controller).await?, &[&password, &token]);

    // A new value in a new commit is applied the same way.
    let changed = format!("pw2-{}", support::random_suffix());
    let encrypted = sops_encrypt("db.yaml", &secret_manifest(&ns.name, &changed, &token), &key, &SECRET_VALUES)?;
    repo.write("app/db.yaml", &encrypted);
    let second = repo.commit("a new password");
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&second))).await?;
    assert_eq!(ns.jsonpath("secret/db", "{.data.password}")?, b64(&changed));
    assert_hidden(&annotation(&ns, "secret/db")?, &[&password, &changed, &token]);
    assert_hidden(&everything_visible(&ns, &controller).await?, &[&password, &changed, &token]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_file_a_wrong_key_or_no_decryption_fail_the_build_and_touch_nothing() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("sops-bad").await?;
    let key = AgeKey::generate(&repo.root, "age.key")?;
    let password = format!("pw-{}", support::random_suffix());
    let encrypted = sops_encrypt("db.yaml", &secret_manifest(&ns.name, &password, "t0ken"), &key, &SECRET_VALUES)?;
    repo.write("app/db.yaml", &encrypted);
    repo.write("app/plain.yaml", config_map(&ns.name));
    let first = repo.commit("an encrypted Secret and a ConfigMap");
    key_secret(&ns, &key)?;
    let controller = operator::start_controller(&ns)?;
    create_applyset(&ns, "app", decryption_spec(&repo.url(), "app")).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    let secret_version = ns.jsonpath("secret/db", "{.metadata.resourceVersion}")?;
    let untouched = |ns: &TestNamespace| -> Result<()> {
        assert!(ns.exists("configmap/plain")?, "nothing is pruned");
        assert_eq!(ns.jsonpath("secret/db", "{.metadata.resourceVersion}")?, secret_version, "nothing is applied");
        assert_eq!(ns.jsonpath("secret/db", "{.data.password}")?, b64(&password));
        Ok(())
    };

    // Tampered: a clear field changed after encryption (only the MAC sees it), and the
    // ConfigMap removed from git (a prune would delete it).
    repo.write("app/db.yaml", encrypted.replace("app: db", "app: evil"));
    repo.remove("app/plain.yaml");
    repo.commit("tampered");
    let message = build_failure(&ns, &controller, "MAC mismatch").await?;
    assert!(message.contains("app/db.yaml: cannot be decrypted with SOPS: MAC mismatch"), "{message}");
    assert!(message.contains("nothing was applied or pruned"), "{message}");
    untouched(&ns)?;

    // A wrong key: the key Secret holds another age key (swapped first, so that no run sees
    // the right key with the restored file), and the file is restored.
    let wrong = AgeKey::generate(&repo.root, "wrong.key")?;
    key_secret(&ns, &wrong)?;
    repo.write("app/db.yaml", &encrypted);
    repo.commit("restored");
    let message = build_failure(&ns, &controller, "no age identity given matches").await?;
    assert!(message.contains("app/db.yaml: cannot be decrypted with SOPS"), "{message}");
    assert!(message.contains(&key.recipient) && message.contains(&wrong.recipient), "names both keys: {message}");
    untouched(&ns)?;

    // No spec.decryption: the encrypted file is refused, never applied as ciphertext.
    let spec = serde_json::json!({ "source": { "url": repo.url(), "path": "app" }, "interval": "2s", "prune": true });
    create_applyset(&ns, "app", spec).await?;
    let message = build_failure(&ns, &controller, "decryption is not configured").await?;
    assert!(message.contains("app/db.yaml: it is encrypted with SOPS"), "{message}");
    assert!(message.contains(&key.recipient), "{message}");
    untouched(&ns)?;
    assert_hidden(&everything_visible(&ns, &controller).await?, &[&password]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_generator_reads_an_encrypted_env_file() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("sops-kustomize").await?;
    let key = AgeKey::generate(&repo.root, "age.key")?;
    let (user, password) = (format!("user-{}", support::random_suffix()), format!("pw-{}", support::random_suffix()));
    let env = sops_encrypt("db.env", &format!("DB_USER={user}\nDB_PASSWORD={password}\n"), &key, &[])?;
    assert!(env.contains("sops_mac=") && !env.contains(&password));
    let api_key = format!("key-{}", support::random_suffix());
    let json = sops_encrypt("api.json", &format!("{{\"apiKey\": \"{api_key}\", \"retries\": 3}}\n"), &key, &[])?;
    repo.write("app/db.env", &env);
    repo.write("app/api.json", &json);
    repo.write(
        "app/kustomization.yaml",
        format!(
            "namespace: {}\nsecretGenerator:\n- name: db\n  envs: [db.env]\n- name: api\n  files: [api.json]\ngeneratorOptions:\n  disableNameSuffixHash: true\n",
            ns.name
        ),
    );
    let first = repo.commit("a secretGenerator over encrypted files");
    key_secret(&ns, &key)?;
    let controller = ControllerOptions::for_namespace(&ns)
        .local_sources()
        .arg("--kustomize-binary")
        .arg(kustomize_binary()?.display().to_string())
        .start()?;
    create_applyset(&ns, "app", decryption_spec(&repo.url(), "app")).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;

    assert_eq!(ns.jsonpath("secret/db", "{.data.DB_USER}")?, b64(&user));
    assert_eq!(ns.jsonpath("secret/db", "{.data.DB_PASSWORD}")?, b64(&password));
    let api_json = ns.jsonpath("secret/api", "{.data.api\\.json}")?;
    let api_json = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(api_json.trim())?)?;
    let parsed: serde_json::Value = serde_json::from_str(&api_json).context("the decrypted JSON file")?;
    assert_eq!(parsed, serde_json::json!({ "apiKey": api_key, "retries": 3 }), "without its sops key");
    for object in ["secret/db", "secret/api"] {
        let recorded = annotation(&ns, object)?;
        assert!(recorded.contains("hmac-sha256:"), "{recorded}");
        assert_hidden(&recorded, &[&user, &password, &api_key]);
    }
    assert_hidden(&everything_visible(&ns, &controller).await?, &[&password, &api_key]);
    // The clear text was written into a private copy only: not into the git cache, and the
    // copy is gone.
    assert_eq!(files_holding(&controller.cache_dir, &password), Vec::<String>::new());
    let pid = controller.pid().context("the controller's pid")?;
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&format!("applyset-decrypted-{pid}-")))
        .collect();
    assert!(leftovers.is_empty(), "the private copy is removed: {leftovers:?}");
    Ok(())
}
