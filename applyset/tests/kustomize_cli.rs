//! `applyset apply -k` side by side with `kubectl.1.33 apply -k` on an overlay (a base,
//! namePrefix, images, a strategic and a JSON 6902 patch, a merged configMapGenerator, a
//! secretGenerator): the same lines, the same objects, the same last-applied annotations; and
//! the safety checks: a remote base or a file outside the repository builds nothing.

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
