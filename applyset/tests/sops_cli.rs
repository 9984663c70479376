//! `--decryption-key FILE` on the command line (the local control plane, real kubectl, files
//! encrypted by the real sops for a key made by the real age-keygen): `diff`, `apply` (of a
//! directory and of a kustomization whose secretGenerator reads an encrypted `.env` file) and
//! `build` decrypt as the controller does; a wrong key applies nothing; without the flag a file
//! is read as kubectl reads it.

mod git;
mod operator;
mod support;

use std::path::Path;

use anyhow::Result;
use base64::Engine as _;
use support::{AgeKey, CommandOutput, TestNamespace, applyset_apply, applyset_cli, kustomize_binary, sops_encrypt};

fn b64(value: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(value)
}

/// `DIR/db.yaml` (a Secret, its values encrypted) and `DIR/plain.yaml` (a ConfigMap).
fn write_app(dir: &Path, namespace: &str, password: &str, key: &AgeKey) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: {namespace}\nstringData:\n  password: {password}\n"
    );
    let encrypted = sops_encrypt("db.yaml", &secret, key, &["--encrypted-regex", "^(data|stringData)$"])?;
    std::fs::write(dir.join("db.yaml"), encrypted)?;
    std::fs::write(
        dir.join("plain.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: {namespace}\ndata:\n  a: b\n"),
    )?;
    Ok(())
}

fn no_value(output: &CommandOutput, value: &str) {
    assert!(!output.stdout.contains(value) && !output.stderr.contains(value), "{output:?}");
    assert!(!output.stdout.contains(&b64(value)) && !output.stderr.contains(&b64(value)), "{output:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_and_diff_decrypt_with_the_key_and_a_wrong_key_applies_nothing() -> Result<()> {
    let ns = TestNamespace::create("sops-cli").await?;
    let dir = support::scratch_dir("sops-cli", &ns.name);
    let key = AgeKey::generate(&dir, "age.key")?;
    let wrong = AgeKey::generate(&dir, "wrong.key")?;
    let password = format!("pw-{}", support::random_suffix());
    let app = dir.join("app");
    write_app(&app, &ns.name, &password, &key)?;
    let app = app.display().to_string();
    let (key_file, wrong_file) = (key.identity_file.display().to_string(), wrong.identity_file.display().to_string());

    // A wrong key: refused naming the file and both keys, and nothing applied (not even the
    // ConfigMap beside it).
    let refused = applyset_apply(&ns, &["-f", &app, "--decryption-key", &wrong_file])?;
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(
        refused.stderr.contains(&format!(
            "error: {app}/db.yaml: cannot be decrypted with SOPS: no age identity given matches its recipients ({})",
            key.recipient
        )),
        "{refused:?}"
    );
    assert!(refused.stderr.contains(&wrong.recipient), "{refused:?}");
    assert!(!ns.exists("configmap/plain")?, "nothing applied");

    // diff: what would be created, the Secret's values masked.
    let diff = applyset_cli(&ns.kubeconfig, "diff", &["-n", &ns.name, "-f", &app, "--decryption-key", &key_file])?;
    assert_eq!(diff.code, Some(1), "{diff:?}");
    assert!(diff.stdout.contains("diff secret/db") && diff.stdout.contains("password: '***'"), "{diff:?}");
    no_value(&diff, &password);

    let applied = applyset_apply(&ns, &["-f", &app, "--decryption-key", &key_file])?;
    assert_eq!(applied.stdout, "secret/db created\nconfigmap/plain created\n", "{applied:?}");
    assert_eq!(ns.jsonpath("secret/db", "{.data.password}")?, b64(&password));
    let recorded =
        ns.jsonpath("secret/db", "{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}")?;
    assert!(recorded.contains("hmac-sha256:") && !recorded.contains("stringData"), "{recorded}");
    assert!(!recorded.contains(&password) && !recorded.contains(&b64(&password)), "{recorded}");

    // Nothing changed: diff is empty and apply leaves everything unchanged (the hashes read back).
    let diff = applyset_cli(&ns.kubeconfig, "diff", &["-n", &ns.name, "-f", &app, "--decryption-key", &key_file])?;
    assert_eq!((diff.code, diff.stdout.as_str()), (Some(0), ""), "{diff:?}");
    let again = applyset_apply(&ns, &["-f", &app, "--decryption-key", &key_file])?;
    assert_eq!(again.stdout, "secret/db unchanged\nconfigmap/plain unchanged\n", "{again:?}");

    // Without the flag the file is read as kubectl reads it: the apiserver refuses the sops
    // field for both alike.
    let ours = applyset_apply(&ns, &["-f", &format!("{app}/db.yaml"), "--dry-run=server"])?;
    let theirs = support::kubectl_apply(&ns, &["-f", &format!("{app}/db.yaml"), "--dry-run=server"])?;
    assert_eq!(ours.code, theirs.code, "{ours:?}\n{theirs:?}");
    for output in [&ours, &theirs] {
        assert!(output.stderr.trim_end().ends_with("strict decoding error: unknown field \"sops\""), "{output:?}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_k_decrypts_the_env_file_a_secret_generator_reads() -> Result<()> {
    let ns = TestNamespace::create("sops-cli-k").await?;
    let dir = support::scratch_dir("sops-cli-k", &ns.name);
    let key = AgeKey::generate(&dir, "age.key")?;
    let password = format!("pw-{}", support::random_suffix());
    let app = dir.join("app");
    std::fs::create_dir_all(&app)?;
    let env = sops_encrypt("db.env", &format!("DB_PASSWORD={password}\nDB_MULTI=a\\nb\n"), &key, &[])?;
    std::fs::write(app.join("db.env"), &env)?;
    std::fs::write(
        app.join("kustomization.yaml"),
        format!(
            "namespace: {}\nsecretGenerator:\n- name: db\n  envs: [db.env]\ngeneratorOptions: {{disableNameSuffixHash: true}}\n",
            ns.name
        ),
    )?;
    let (app, key_file) = (app.display().to_string(), key.identity_file.display().to_string());
    let kustomize = kustomize_binary()?.display().to_string();
    let applied = applyset_apply(&ns, &["-k", &app, "--kustomize-binary", &kustomize, "--decryption-key", &key_file])?;
    assert_eq!(applied.stdout, "secret/db created\n", "{applied:?}");
    assert_eq!(ns.jsonpath("secret/db", "{.data.DB_PASSWORD}")?, b64(&password));
    assert_eq!(ns.jsonpath("secret/db", "{.data.DB_MULTI}")?, b64("a\\nb"), "as sops writes a dotenv value");
    no_value(&applied, &password);
    assert_eq!(std::fs::read_to_string(format!("{app}/db.env"))?, env, "the encrypted file is left as it was");
    // Without the key, kustomize would put the ciphertext in the Secret, as `kubectl apply -k`
    // does: the same Secret, as kubectl builds it.
    let ours = applyset_cli(
        &ns.kubeconfig,
        "apply",
        &["-n", &ns.name, "-k", &app, "--kustomize-binary", &kustomize, "--dry-run=client", "-o", "yaml"],
    )?;
    assert!(ours.stdout.contains("sops_mac"), "{ours:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_decrypts_with_the_key_or_the_applysets_secret() -> Result<()> {
    let ns = operator::crd_namespace("sops-build").await?;
    let dir = support::scratch_dir("sops-build", &ns.name);
    let key = AgeKey::generate(&dir, "age.key")?;
    let password = format!("pw-{}", support::random_suffix());
    let app = dir.join("repo/app");
    write_app(&app, &ns.name, &password, &key)?;
    // A checkout of its own (not the work tree the tests run in).
    git::git(&dir.join("repo"), &["init", "-q"]);
    let spec = serde_json::json!({
        "source": { "url": "https://example.com/repo.git", "path": "app" },
        "decryption": { "provider": "sops", "secretRef": { "name": "sops-age" } },
    });
    let file = dir.join("applyset.yaml");
    std::fs::write(
        &file,
        serde_json::to_string(&serde_json::json!({
            "apiVersion": "applyset.dev/v1alpha1", "kind": "ApplySet",
            "metadata": { "name": "app", "namespace": ns.name }, "spec": spec,
        }))?,
    )?;
    let (app, file, key_file) =
        (app.display().to_string(), file.display().to_string(), key.identity_file.display().to_string());

    // From a file, with the key: the Secret built from the clear file, printed masked.
    let built = applyset_cli(
        &ns.kubeconfig,
        "build",
        &["--applyset-file", &file, "--path", &app, "--decryption-key", &key_file],
    )?;
    assert_eq!(built.code, Some(0), "{built:?}");
    assert!(built.stdout.contains("name: db") && built.stdout.contains("password: '***'"), "{built:?}");
    assert!(!built.stdout.contains("sops:") && !built.stdout.contains("ENC["), "{built:?}");
    no_value(&built, &password);
    // From a file without the key: the Secret spec.decryption names cannot be read.
    let refused = applyset_cli(&ns.kubeconfig, "build", &["--applyset-file", &file, "--path", &app])?;
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(
        refused.stderr.contains(&format!(
            "spec.decryption.secretRef Secret {}/sops-age cannot be read without a cluster",
            ns.name
        )),
        "{refused:?}"
    );

    // From the cluster: the ApplySet's Secret is read, as the controller reads it.
    operator::create_applyset(&ns, "app", spec).await?;
    let from = format!("--from-file=age.agekey={key_file}");
    ns.kubectl_ok(&["create", "secret", "generic", "sops-age", &from], None)?;
    let built = applyset_cli(&ns.kubeconfig, "build", &["app", "-n", &ns.name, "--path", &app])?;
    assert_eq!(built.code, Some(0), "{built:?}");
    assert!(built.stdout.contains("name: db") && built.stdout.contains("password: '***'"), "{built:?}");
    no_value(&built, &password);
    Ok(())
}
