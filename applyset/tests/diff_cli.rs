//! `applyset diff` against the real control plane: the patch and exit codes (kubectl diff's
//! convention), the fields apply would leave behind (with real kubectl's apply as the oracle),
//! and Secret values masked everywhere.

mod support;

use anyhow::Result;
use support::{APP, ManifestDir, TestNamespace, applyset_cli, random_suffix};

#[tokio::test]
async fn diff_shows_patch_and_exit_codes() -> Result<()> {
    let ns = TestNamespace::create("apply-diff").await?;
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    let out = applyset_cli(&ns.kubeconfig, "diff", &["-f", dir.path(), "-n", &ns.name])?;
    assert_eq!(out.stdout.matches("create (the object does not exist)").count(), 2, "{}", out.stdout);
    assert!(!out.success);

    applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?.success_stdout()?;
    let same = applyset_cli(&ns.kubeconfig, "diff", &["-f", dir.path(), "-n", &ns.name])?;
    assert!(same.success, "{}{}", same.stdout, same.stderr);
    assert!(same.stdout.is_empty(), "{}", same.stdout);

    dir.write("app.yaml", &APP.replace("replicas: 2", "replicas: 5"))?;
    let changed = applyset_cli(&ns.kubeconfig, "diff", &["-f", dir.path(), "-n", &ns.name])?;
    assert!(!changed.success);
    assert!(changed.stdout.contains("diff deployment.apps/web"), "{}", changed.stdout);
    assert!(changed.stdout.contains("patch (application/strategic-merge-patch+json):"), "{}", changed.stdout);
    assert!(changed.stdout.contains(r#"},"spec":{"replicas":5}}"#), "{}", changed.stdout);
    assert!(
        changed.stdout.contains("-  replicas: 2") && changed.stdout.contains("+  replicas: 5"),
        "{}",
        changed.stdout
    );
    assert!(!changed.stdout.contains("configmap/settings"), "{}", changed.stdout);
    let live = ns.kubectl_ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"], None)?;
    assert_eq!(live, "2");
    Ok(())
}

/// `diff --show-left-behind` names what kubectl's apply is blind to: fields another manager
/// wrote that neither the manifest nor the annotation has. Real kubectl's apply then keeps
/// exactly those; the flag never changes the exit code.
#[tokio::test]
async fn diff_shows_the_fields_apply_leaves_behind() -> Result<()> {
    let ns = TestNamespace::create("apply-left-behind").await?;
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?.success_stdout()?;
    let diff = |extra: &[&str]| {
        let mut args = vec!["-f", dir.path(), "-n", &ns.name];
        args.extend_from_slice(extra);
        applyset_cli(&ns.kubeconfig, "diff", &args)
    };
    let clean = diff(&["--show-left-behind"])?;
    assert!(clean.success && clean.stdout.is_empty(), "nothing is left behind yet: {}", clean.stdout);

    ns.kubectl_ok(&["label", "deployment", "web", "team=payments"], None)?;
    ns.kubectl_ok(
        &[
            "patch",
            "deployment",
            "web",
            "-p",
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"DEBUG","value":"true"}]}]}}}}"#,
        ],
        None,
    )?;
    let plain = diff(&[])?;
    assert!(!plain.stdout.contains("left behind"), "only when asked: {}", plain.stdout);
    let shown = diff(&["--show-left-behind"])?;
    assert_eq!(shown.success, plain.success, "the exit code is apply's: {}{}", shown.stdout, shown.stderr);
    let listed: Vec<&str> = shown.stdout.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(
        listed,
        [
            "  metadata.labels.team  (written by kubectl-label)",
            "  spec.template.spec.containers[name=web].env[name=DEBUG]  (written by kubectl-patch)",
        ],
        "{}",
        shown.stdout
    );
    let header = format!("left behind deployment.apps/web ({}/app.yaml: document 2):", dir.path());
    assert!(shown.stdout.contains(&header), "{}", shown.stdout);
    assert!(!shown.stdout.contains("left behind configmap/settings"), "{}", shown.stdout);

    // The oracle: kubectl's apply keeps both.
    let mut apply = ns.kubectl()?;
    apply.args(["apply", "-f"]).arg(dir.path());
    support::run(&mut apply, None)?.success_stdout()?;
    assert_eq!(
        ns.kubectl_ok(&["get", "deployment", "web", "-o", "jsonpath={.metadata.labels.team}"], None)?,
        "payments"
    );
    let env = ns.kubectl_ok(
        &["get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].env[*].name}"],
        None,
    )?;
    assert_eq!(env, "DEBUG A", "kubectl keeps the patched-in env var (first, where the patch merged it)");
    Ok(())
}

/// `diff` never prints a Secret's values: kubectl diff's masks for `data` (a changed value
/// reads `*** (before)` / `*** (after)`), and also inside the last-applied annotation and the
/// patch, which kubectl diff prints in clear.
#[tokio::test]
async fn diff_masks_secret_values_everywhere() -> Result<()> {
    let ns = TestNamespace::create("apply-diff-secret").await?;
    use base64::Engine as _;
    let b64 = |value: &str| base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
    let secret = |password: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: {}\nstringData:\n  user: admin-{password}\n",
            b64(password)
        )
    };
    let (old, new) = (format!("old-{}", random_suffix()), format!("new-{}", random_suffix()));
    let dir = ManifestDir::new(&[("db.yaml", &secret(&old))])?;
    applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?.success_stdout()?;
    dir.write("db.yaml", &secret(&new))?;
    let out = applyset_cli(&ns.kubeconfig, "diff", &["-f", dir.path(), "-n", &ns.name])?;
    assert!(out.stdout.contains("diff secret/db"), "{}", out.stdout);
    for value in [&old, &new] {
        let encoded = b64(value);
        assert!(!out.stdout.contains(value.as_str()) && !out.stdout.contains(&encoded), "{}", out.stdout);
    }
    assert!(out.stdout.contains("*** (before)") && out.stdout.contains("*** (after)"), "{}", out.stdout);
    Ok(())
}
