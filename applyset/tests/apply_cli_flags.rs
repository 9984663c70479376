//! `applyset apply` as a drop-in for `kubectl apply`: kubectl 1.33's flags with kubectl's
//! syntax (`--flag=true|false`, `-R=true`) and meaning, and `-o json`, each run side by side
//! with real kubectl on the local control plane (one namespace each).

mod support;

use anyhow::Result;
use support::{
    CommandOutput, ManifestDir, TestNamespace, applyset_apply as applyset, applyset_cli, kubectl_apply as kubectl,
    normalized,
};

const APP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n";

#[tokio::test]
async fn kubectls_flags_are_accepted_with_its_syntax() -> Result<()> {
    let (ours, theirs) = (TestNamespace::create("flags-ours").await?, TestNamespace::create("flags-kubectl").await?);
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    let flags = [
        "-f",
        dir.path(),
        "-R=false",
        "--force=false",
        "--prune=false",
        "--all=false",
        "--overwrite=true",
        "--grace-period=-1",
        "--cascade=background",
        "--timeout=0s",
        "--wait=false",
        "--server-side=false",
        "--show-managed-fields=false",
        "--openapi-patch=true",
        "--allow-missing-template-keys=true",
        "--force-conflicts=false",
        "--validate=strict",
        "--dry-run=none",
    ];
    let (a, b) = (applyset(&ours, &flags)?, kubectl(&theirs, &flags)?);
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    // Boolean flags without a value, and Go's other spellings of a boolean.
    let (a, b) = (
        applyset(&ours, &["-f", dir.path(), "-R", "--overwrite", "--force=F"])?,
        kubectl(&theirs, &["-f", dir.path(), "-R", "--overwrite", "--force=F"])?,
    );
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    Ok(())
}

#[tokio::test]
async fn flag_errors_are_kubectls() -> Result<()> {
    let (ours, theirs) =
        (TestNamespace::create("flagerr-ours").await?, TestNamespace::create("flagerr-kubectl").await?);
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    let cases: [&[&str]; 5] = [
        &[],
        &["-f", dir.path(), "--cascade=bogus"],
        &["-f", dir.path(), "--force-conflicts"],
        &["-f", dir.path(), "--subresource=status"],
        &["-f", dir.path(), "-k", dir.path()],
    ];
    for args in cases {
        let (a, b) = (applyset(&ours, args)?, kubectl(&theirs, args)?);
        assert!(!a.success && !b.success, "{args:?}: {a:?} {b:?}");
        assert_eq!(a.stderr.trim(), b.stderr.trim(), "{args:?}");
    }
    // --cascade=false: kubectl's deprecation warning, then as orphan.
    let (a, b) = (
        applyset(&ours, &["-f", dir.path(), "--cascade=false"])?,
        kubectl(&theirs, &["-f", dir.path(), "--cascade=false"])?,
    );
    assert!(a.success && b.success);
    assert_eq!(a.stderr.lines().next(), b.stderr.lines().next());
    // Arguments that are not flags: kubectl's message (its usage hint names this tool).
    let (a, b) = (applyset(&ours, &["stray", "-f", dir.path()])?, kubectl(&theirs, &["stray", "-f", dir.path()])?);
    assert!(!a.success && !b.success, "{a:?} {b:?}");
    assert_eq!(a.stderr.lines().next(), b.stderr.lines().next());
    assert_eq!(a.stderr.lines().nth(1), Some("See 'applyset apply -h' for help and examples"));
    // A duration flag Go cannot read: cobra's message, with Go's words.
    let args = ["-f", dir.path(), "--timeout=soon"];
    let (a, b) = (applyset(&ours, &args)?, kubectl(&theirs, &args)?);
    assert_eq!((a.code, a.stderr.lines().next()), (b.code, b.stderr.lines().next()), "{a:?} {b:?}");
    assert_eq!(a.stderr.lines().nth(1), Some("See 'applyset apply --help' for usage."));
    // What this tool does not do says so.
    let server_side = applyset(&ours, &["-f", dir.path(), "--server-side"])?;
    assert!(!server_side.success && server_side.stderr.contains("applies client-side only"), "{server_side:?}");
    Ok(())
}

#[tokio::test]
async fn json_output_is_kubectls() -> Result<()> {
    let (ours, theirs) = (TestNamespace::create("json-ours").await?, TestNamespace::create("json-kubectl").await?);
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    for args in [&["-f", dir.path(), "-o", "json"][..], &["-f", dir.path(), "-o", "json", "--show-managed-fields"][..]]
    {
        let (a, b) = (applyset(&ours, args)?, kubectl(&theirs, args)?);
        assert!(a.success && b.success, "{a:?}\n{b:?}");
        assert!(a.stdout.starts_with("{\n    \"kind\": \"List\""), "{}", a.stdout);
        let managed = |text: &str| text.contains("managedFields");
        assert_eq!(managed(&a.stdout), managed(&b.stdout), "{args:?}");
        if !managed(&a.stdout) {
            assert_eq!(normalized(&a.stdout, &ours.name), normalized(&b.stdout, &theirs.name));
        }
    }
    let one = ManifestDir::new(&[("a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n")])?;
    let (a, b) =
        (applyset(&ours, &["-f", one.path(), "-o", "json"])?, kubectl(&theirs, &["-f", one.path(), "-o", "json"])?);
    assert_eq!(normalized(&a.stdout, &ours.name), normalized(&b.stdout, &theirs.name), "one object: no List");
    Ok(())
}

/// `--record` (deprecated): kubectl's warning, and the command in `kubernetes.io/change-cause`.
#[tokio::test]
async fn record_writes_the_change_cause() -> Result<()> {
    let ns = TestNamespace::create("record").await?;
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    let out = applyset(&ns, &["-f", dir.path(), "--record", "-R=true"])?;
    assert!(out.success, "{out:?}");
    assert_eq!(
        out.stderr.lines().next(),
        Some("Flag --record has been deprecated, --record will be removed in the future")
    );
    let cause = ns.jsonpath("configmap/a", "{.metadata.annotations.kubernetes\\.io/change-cause}")?;
    assert_eq!(
        cause,
        format!(
            "applyset apply --kubeconfig={} --namespace={} --filename={} --record=true --recursive=true",
            ns.kubeconfig.display(),
            ns.name,
            dir.path()
        )
    );
    Ok(())
}

/// `--overwrite=false`: a change made to the live object since the last apply that the new
/// manifest would overwrite fails the object, as with kubectl.
#[tokio::test]
async fn overwrite_false_refuses_to_overwrite_a_live_change() -> Result<()> {
    let (ours, theirs) =
        (TestNamespace::create("overwrite-ours").await?, TestNamespace::create("overwrite-kubectl").await?);
    let deployment = |replicas: u32| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers: [{{name: app, image: nginx}}]\n"
        )
    };
    let dir = ManifestDir::new(&[("web.yaml", &deployment(1))])?;
    for (ns, apply) in [(&ours, applyset as fn(&TestNamespace, &[&str]) -> Result<CommandOutput>), (&theirs, kubectl)] {
        assert!(apply(ns, &["-f", dir.path()])?.success);
        ns.kubectl_ok(&["patch", "deployment", "web", "-p", r#"{"spec":{"replicas":3}}"#], None)?;
    }
    dir.write("web.yaml", &deployment(2))?;
    let (a, b) = (
        applyset(&ours, &["-f", dir.path(), "--overwrite=false"])?,
        kubectl(&theirs, &["-f", dir.path(), "--overwrite=false"])?,
    );
    assert!(!a.success && !b.success, "{a:?}\n{b:?}");
    for out in [&a, &b] {
        assert!(out.stderr.contains("conflicts with changes made from original to current"), "{}", out.stderr);
    }
    assert_eq!(ours.jsonpath("deployment/web", "{.spec.replicas}")?, "3", "nothing was overwritten");
    let (a, b) = (applyset(&ours, &["-f", dir.path()])?, kubectl(&theirs, &["-f", dir.path()])?);
    assert!(a.success && b.success);
    assert_eq!(ours.jsonpath("deployment/web", "{.spec.replicas}")?, "2", "--overwrite (the default) does");
    Ok(())
}

/// `--server-side-fallback`: an object too large for the annotation fails as with kubectl,
/// unless asked; then it is applied server-side, and a second run changes nothing.
#[tokio::test]
async fn server_side_fallback_applies_what_kubectl_cannot() -> Result<()> {
    let ns = TestNamespace::create("apply-ssa").await?;
    let big = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  blob: \"{}\"\n",
        "x".repeat(300 * 1024)
    );
    let dir = ManifestDir::new(&[("big.yaml", &big)])?;
    let refused = applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?;
    assert!(
        !refused.success && refused.stderr.contains("Too long: may not be more than 262144 bytes"),
        "{}",
        refused.stderr
    );
    let args = ["-f", dir.path(), "-n", &ns.name, "--server-side-fallback"];
    let applied = applyset_cli(&ns.kubeconfig, "apply", &args)?.success_stdout()?;
    assert_eq!(applied.trim(), "configmap/big created");
    let again = applyset_cli(&ns.kubeconfig, "apply", &args)?.success_stdout()?;
    assert_eq!(again.trim(), "configmap/big unchanged");
    let managers = ns.jsonpath("configmap/big", "{.metadata.managedFields[*].manager}")?;
    assert_eq!(managers, "applyset");
    Ok(())
}
