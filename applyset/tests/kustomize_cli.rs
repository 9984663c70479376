//! `applyset apply -k` side by side with `kubectl.1.33 apply -k` on an overlay (a base,
//! namePrefix, images, a strategic and a JSON 6902 patch, a merged configMapGenerator, a
//! secretGenerator): the same lines, the same objects, the same last-applied annotations; and
//! the safety checks: a remote base or a file outside the repository builds nothing; `diff -k`
//! builds as `apply -k` does; and a kustomize of another version than the pinned one is refused.

mod support;

use anyhow::Result;
use support::{TestNamespace, kustomize_binary, repo_root, run};

const OBJECTS: [&str; 4] = [
    "configmap/prod-settings-2h42td9ggm",
    "secret/prod-creds-cf85kd65mm",
    "service/prod-web",
    "deployment.apps/prod-web",
];

fn applyset_k(ns: &TestNamespace, dir: &str) -> Result<support::CommandOutput> {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_applyset"));
    command
        .env_remove("KUBECONFIG")
        .env("APPLYSET_KUSTOMIZE_BINARY", kustomize_binary()?)
        .args(["apply", "--kubeconfig"])
        .arg(&ns.kubeconfig)
        .args(["-n", &ns.name, "-k", dir]);
    run(&mut command, None)
}

#[tokio::test]
async fn an_overlay_applies_as_with_kubectl() -> Result<()> {
    let overlay = repo_root().join("applyset/tests/fixtures/kustomize/overlays/prod");
    let overlay = overlay.to_str().expect("UTF-8 path");
    let (ours, theirs) =
        (TestNamespace::create("kustomize-ours").await?, TestNamespace::create("kustomize-kubectl").await?);
    let a = applyset_k(&ours, overlay)?;
    let mut command = theirs.kubectl()?;
    command.args(["apply", "-k", overlay]);
    let b = run(&mut command, None)?;
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    for object in OBJECTS {
        let annotation = "{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}";
        let mine = ours.jsonpath(object, annotation)?.replace(&ours.name, "NS");
        let kubectls = theirs.jsonpath(object, annotation)?.replace(&theirs.name, "NS");
        assert_eq!(mine, kubectls, "{object}");
    }
    assert_eq!(ours.jsonpath("deployment/prod-web", "{.spec.template.spec.containers[0].image}")?, "nginx:1.27");
    assert_eq!(ours.jsonpath("service/prod-web", "{.spec.ports[0].port}")?, "8080");
    // Re-applied: unchanged, as with kubectl.
    let again = applyset_k(&ours, overlay)?;
    assert!(again.stdout.lines().all(|l| l.ends_with(" unchanged")), "{}", again.stdout);
    Ok(())
}

#[tokio::test]
async fn remote_bases_and_outside_files_build_nothing() -> Result<()> {
    let ns = TestNamespace::create("kustomize-unsafe").await?;
    let dir = support::scratch_dir("kustomize", "unsafe");
    for (path, text) in [
        ("repo/.git/HEAD", "ref: refs/heads/main\n"),
        (
            "repo/remote/kustomization.yaml",
            "resources:\n- https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.6.0\n",
        ),
        ("repo/outside/kustomization.yaml", "configMapGenerator:\n- name: x\n  files: [../../secret.txt]\n"),
        ("secret.txt", "s3cr3t"),
    ] {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent"))?;
        std::fs::write(path, text)?;
    }
    for (case, field) in [("remote", "resources"), ("outside", "configMapGenerator.files")] {
        let out = applyset_k(&ns, &format!("{}/repo/{case}", dir.display()))?;
        assert!(!out.success, "{out:?}");
        assert!(out.stderr.contains(&format!("{case}/kustomization.yaml: {field} names")), "{}", out.stderr);
        assert!(!out.stderr.contains("s3cr3t"));
    }
    let objects = ns.kubectl_ok(&["get", "configmaps,secrets", "-o", "name"], None)?;
    assert!(!objects.contains("configmap/x"), "nothing applied: {objects}");
    Ok(())
}

/// `applyset SUBCOMMAND -n NS ARGS` with the pinned kustomize (`$APPLYSET_KUSTOMIZE_BINARY`).
fn applyset_with_kustomize(ns: &TestNamespace, subcommand: &str, args: &[&str]) -> Result<support::CommandOutput> {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_applyset"));
    command
        .env_remove("KUBECONFIG")
        .env("APPLYSET_KUSTOMIZE_BINARY", kustomize_binary()?)
        .args([subcommand, "--kubeconfig"])
        .arg(&ns.kubeconfig)
        .args(["-n", &ns.name])
        .args(args);
    run(&mut command, None)
}

#[tokio::test]
async fn diff_k_builds_as_apply_k_does() -> Result<()> {
    let overlay = repo_root().join("applyset/tests/fixtures/kustomize/overlays/prod");
    let overlay = overlay.to_str().expect("UTF-8 path");
    let (ours, theirs) = (TestNamespace::create("diff-k-ours").await?, TestNamespace::create("diff-k-kubectl").await?);
    let kubectl_diff = |args: &[&str]| run(theirs.kubectl()?.arg("diff").args(args), None);

    // Before anything is applied: every object of the build would be created (exit 1, as kubectl).
    let (a, b) = (applyset_with_kustomize(&ours, "diff", &["-k", overlay])?, kubectl_diff(&["-k", overlay])?);
    assert_eq!((a.code, b.code), (Some(1), Some(1)), "{a:?}\n{b:?}");
    for object in OBJECTS {
        assert!(a.stdout.contains(&format!("diff {object} (")), "{object}:\n{}", a.stdout);
    }
    assert_eq!(a.stdout.matches("create (the object does not exist)").count(), OBJECTS.len(), "{}", a.stdout);

    // Once `apply -k` applied it, nothing would change (exit 0, as kubectl).
    applyset_with_kustomize(&ours, "apply", &["-k", overlay])?.success_stdout()?;
    run(theirs.kubectl()?.args(["apply", "-k", overlay]), None)?.success_stdout()?;
    let (a, b) = (applyset_with_kustomize(&ours, "diff", &["-k", overlay])?, kubectl_diff(&["-k", overlay])?);
    assert_eq!((a.code, b.code), (Some(0), Some(0)), "{a:?}\n{b:?}");
    assert!(a.stdout.is_empty(), "{}", a.stdout);
    // -l selects among the built objects, as for apply -k.
    let selected = applyset_with_kustomize(&ours, "diff", &["-k", overlay, "-l", "no-such-label=x"])?;
    assert_eq!(selected.code, Some(2), "{selected:?}");
    assert_eq!(selected.stderr, "error: no objects passed to diff\n");

    // -k with -f, or neither: kubectl diff's refusals and exit code.
    let file = format!("{overlay}/kustomization.yaml");
    for args in [&["-k", overlay, "-f", &file][..], &[]] {
        let (a, b) = (applyset_with_kustomize(&ours, "diff", args)?, kubectl_diff(args)?);
        assert_eq!((a.code, b.code), (Some(2), Some(2)), "{args:?}: {a:?}\n{b:?}");
        assert_eq!(a.stderr, b.stderr, "{args:?}");
    }
    Ok(())
}

/// A `kustomize` that says it is another version.
fn other_kustomize(dir: &std::path::Path) -> Result<String> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("kustomize");
    std::fs::write(&path, "#!/bin/sh\n[ \"$1\" = version ] && echo v5.4.3 && exit 0\necho built >&2\nexit 1\n")?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path.to_str().expect("UTF-8 path").to_owned())
}

#[tokio::test]
async fn a_kustomize_of_another_version_is_refused() -> Result<()> {
    let overlay = repo_root().join("applyset/tests/fixtures/kustomize/overlays/prod");
    let overlay = overlay.to_str().expect("UTF-8 path");
    let ns = TestNamespace::create("kustomize-version").await?;
    let other = other_kustomize(&support::scratch_dir("kustomize", &ns.name))?;
    let expected = format!(
        "error: kustomize {other} is v5.4.3, not the pinned v5.6.0 (kubectl 1.33's): point --kustomize-binary or $APPLYSET_KUSTOMIZE_BINARY at kustomize v5.6.0 (scripts/build-kustomize builds it)\n"
    );
    // The flag, for apply (exit 1) and diff (exit 2)…
    for (subcommand, code) in [("apply", 1), ("diff", 2)] {
        let flag = format!("--kustomize-binary={other}");
        let out = applyset_with_kustomize(&ns, subcommand, &["-k", overlay, &flag])?;
        assert_eq!(out.code, Some(code), "{subcommand}: {out:?}");
        assert_eq!(out.stderr, expected, "{subcommand}");
    }
    // …and the variable.
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_applyset"));
    command.env_remove("KUBECONFIG").env("APPLYSET_KUSTOMIZE_BINARY", &other).args(["apply", "--kubeconfig"]);
    command.arg(&ns.kubeconfig).args(["-n", &ns.name, "-k", overlay]);
    let out = run(&mut command, None)?;
    assert_eq!((out.code, out.stderr.as_str()), (Some(1), expected.as_str()));
    let objects = ns.kubectl_ok(&["get", "configmaps,secrets,services,deployments", "-o", "name"], None)?;
    assert!(!objects.contains("prod-"), "nothing applied: {objects}");
    Ok(())
}
