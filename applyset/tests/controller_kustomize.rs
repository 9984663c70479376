//! A kustomize repository in the controller, end to end (real controller, real git, the pinned
//! kustomize, the local control plane): an overlay is built and applied; a change to its base
//! is configured; a generator's new hash-suffixed ConfigMap rolls and the old one is pruned; a
//! build that fails (a remote base) is `BuildFailed` with nothing applied or pruned; and
//! post-build substitution from the spec, a ConfigMap and a Secret, whose values may not change
//! the YAML structure unless `allowStructuralValues`.

mod git;
mod operator;
mod support;

use std::time::Duration;

use anyhow::Result;
use operator::{
    ControllerFixture, ControllerOptions, condition, create_applyset, failed_with, patch_spec, ready_at, revision,
    wait_for_applyset,
};
use support::kustomize_binary;

const T: Duration = Duration::from_secs(90);

fn base(namespace: &str, mode: &str) -> [(String, String); 2] {
    [
        (
            "base/kustomization.yaml".into(),
            format!(
                "namespace: {namespace}\nresources: [service.yaml]\nconfigMapGenerator:\n- name: settings\n  literals: [MODE={mode}]\n"
            ),
        ),
        (
            "base/service.yaml".into(),
            "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n"
                .into(),
        ),
    ]
}

const OVERLAY: &str = "resources: [../../base]\nnamePrefix: prod-\npatches:\n- target: {kind: Service, name: web}\n  patch: |-\n    - op: replace\n      path: /spec/ports/0/port\n      value: 8080\n";

fn config_maps(ns: &support::TestNamespace) -> Result<Vec<String>> {
    let names = ns.kubectl_ok(&["get", "configmaps", "-o", "name"], None)?;
    Ok(names.lines().filter(|n| n.contains("prod-settings")).map(str::to_owned).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kustomize_overlay_is_built_applied_and_rolled() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("kustomize").await?;
    for (path, text) in base(&ns.name, "one") {
        repo.write(&path, text);
    }
    repo.write("overlays/prod/kustomization.yaml", OVERLAY);
    let first = repo.commit("an overlay");
    let controller = ControllerOptions::for_namespace(&ns)
        .local_sources()
        .arg("--kustomize-binary")
        .arg(kustomize_binary()?.display().to_string())
        .start()?;
    let spec = serde_json::json!({ "source": { "url": repo.url(), "path": "overlays/prod" }, "interval": "2s" });
    create_applyset(&ns, "app", spec).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    assert_eq!(ns.jsonpath("service/prod-web", "{.spec.ports[0].port}")?, "8080");
    let before = config_maps(&ns)?;
    assert_eq!(before.len(), 1, "{before:?}");

    // The base changes: the generator makes a new hash-suffixed ConfigMap; the old one goes.
    for (path, text) in base(&ns.name, "two") {
        repo.write(&path, text);
    }
    let second = repo.commit("the base changes");
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&second))).await?;
    let after = config_maps(&ns)?;
    assert_eq!(after.len(), 1, "the old generated ConfigMap is pruned: {after:?}");
    assert_ne!(after, before);
    assert_eq!(ns.jsonpath(&after[0], "{.data.MODE}")?, "two");

    // A build that fails: nothing applied, nothing pruned.
    let remote = OVERLAY.replace("resources: [../../base]", "resources: [../../base, https://example.com/x.yaml]");
    repo.write("overlays/prod/kustomization.yaml", remote);
    repo.commit("a remote base");
    let failed = wait_for_applyset(&ns, "app", &controller, "BuildFailed", T, failed_with("BuildFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap_or_default();
    assert!(message.contains("overlays/prod/kustomization.yaml: resources names"), "{message}");
    assert!(message.contains("nothing was applied or pruned"), "{message}");
    assert_eq!(config_maps(&ns)?, after, "nothing pruned");
    assert!(ns.exists("service/prod-web")?);
    Ok(())
}

/// `spec.postBuild` (Flux's): `${VAR}` from `substitute` and from a ConfigMap and a Secret,
/// typed as YAML reads the text (unquoted: a number), a default, an escape, an opted-out object;
/// a changed ConfigMap value is applied at the next run; an undefined variable is
/// `BuildFailed` naming it and the object, with nothing applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_build_substitutes_variables() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("postbuild").await?;
    repo.write(
        "app/web.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: ${REPLICAS}\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: app, image: \"nginx:${TAG}\"}]}\n",
    );
    repo.write(
        "app/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata:\n  region: ${REGION:=eu}\n  token: \"${TOKEN}\"\n  literal: $${NOT_A_VAR}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: script\n  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata:\n  run: echo ${HOME}\n",
    );
    let first = repo.commit("manifests with variables");
    ns.kubectl_ok(&["create", "configmap", "vars", "--from-literal=TAG=1.27"], None)?;
    ns.kubectl_ok(&["create", "secret", "generic", "secret-vars", "--from-literal=TOKEN=t0ken-xyz"], None)?;
    let controller = operator::start_controller(&ns)?;
    let spec = serde_json::json!({
        "source": { "url": repo.url(), "path": "app" },
        "interval": "2s",
        "postBuild": {
            "substitute": { "REPLICAS": "2" },
            "substituteFrom": [
                { "kind": "ConfigMap", "name": "vars" },
                { "kind": "Secret", "name": "secret-vars" },
                { "kind": "ConfigMap", "name": "missing", "optional": true }
            ]
        }
    });
    create_applyset(&ns, "app", spec).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    assert_eq!(ns.jsonpath("deployment/web", "{.spec.replicas}")?, "2");
    assert_eq!(ns.jsonpath("deployment/web", "{.spec.template.spec.containers[0].image}")?, "nginx:1.27");
    assert_eq!(ns.jsonpath("configmap/settings", "{.data.region}")?, "eu");
    assert_eq!(ns.jsonpath("configmap/settings", "{.data.token}")?, "t0ken-xyz");
    assert_eq!(ns.jsonpath("configmap/settings", "{.data.literal}")?, "${NOT_A_VAR}");
    assert_eq!(ns.jsonpath("configmap/script", "{.data.run}")?, "echo ${HOME}", "opted out");

    // A referenced ConfigMap changes: applied at the next run, though git did not change.
    ns.kubectl_ok(&["patch", "configmap", "vars", "--type=merge", "-p", r#"{"data":{"TAG":"1.28"}}"#], None)?;
    support::eventually("the new tag applied", T, || async {
        let image = ns.jsonpath("deployment/web", "{.spec.template.spec.containers[0].image}")?;
        Ok((image == "nginx:1.28").then_some(()))
    })
    .await?;
    let status = serde_json::to_string(&operator::get_applyset(&ns, "app").await?)?;
    assert!(!status.contains("t0ken-xyz"), "a Secret's value is never in the status");

    // An undefined variable: BuildFailed naming it and the object; nothing applied.
    repo.write(
        "app/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {k: \"${UNDEFINED}\"}\n",
    );
    repo.commit("an undefined variable");
    let failed = wait_for_applyset(&ns, "app", &controller, "BuildFailed", T, failed_with("BuildFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap_or_default();
    assert!(message.contains("configmap/extra: ${UNDEFINED} has no value"), "{message}");
    assert!(!ns.exists("configmap/extra")?);
    Ok(())
}

/// A `substituteFrom` value that would move an object into another namespace (`x, namespace:
/// NS` where `metadata: {name: ${NAME}}` expects a name) is `BuildFailed`, naming the variable
/// but not the value, and nothing is created anywhere; `allowStructuralValues` lets it through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_build_refuses_a_value_that_changes_the_yaml_structure() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("postbuild-shape").await?;
    let target = support::TestNamespace::create("postbuild-target").await?;
    repo.write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${NAME}}\ndata: {k: v}\n");
    let first = repo.commit("a name from a variable");
    let value = format!("--from-literal=NAME=moved, namespace: {}", target.name);
    ns.kubectl_ok(&["create", "configmap", "vars", &value], None)?;
    let controller = operator::start_controller(&ns)?;
    let post_build = serde_json::json!({ "substituteFrom": [{ "kind": "ConfigMap", "name": "vars" }] });
    let spec = serde_json::json!({ "source": { "url": repo.url(), "path": "app" }, "interval": "2s", "postBuild": post_build });
    create_applyset(&ns, "app", spec).await?;
    let failed = wait_for_applyset(&ns, "app", &controller, "BuildFailed", T, failed_with("BuildFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap_or_default();
    assert!(
        message.contains("configmap/${NAME}: the value of ${NAME} changes the document's YAML structure"),
        "{message}"
    );
    assert!(message.contains("set spec.postBuild.allowStructuralValues to allow it"), "{message}");
    let status = serde_json::to_string(&failed.status)?;
    assert!(!status.contains("moved") && !status.contains(&target.name), "the value is never quoted: {status}");
    assert!(!target.exists("configmap/moved")?, "nothing in the other namespace");
    assert!(!ns.exists("configmap/moved")?);

    // The opt-in: the value is trusted as YAML, and the object goes where it says.
    patch_spec(&ns, "app", serde_json::json!({ "postBuild": { "allowStructuralValues": true } })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    assert_eq!(target.jsonpath("configmap/moved", "{.data.k}")?, "v");
    Ok(())
}

/// A kustomize of another version than the pinned v5.6.0 stops the controller at start, with a
/// message naming it and the flag, before anything is read or applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kustomize_of_another_version_stops_the_controller() -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let ns = support::TestNamespace::create("kustomize-version").await?;
    let other = support::scratch_dir("controller-kustomize", &ns.name).join("kustomize");
    std::fs::write(&other, "#!/bin/sh\necho v5.4.3\n")?;
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o755))?;
    let options = ControllerOptions { wait_ready: false, ..ControllerOptions::for_namespace(&ns) };
    let mut controller = options.arg("--kustomize-binary").arg(other.display().to_string()).start()?;
    let status = support::eventually("the controller to exit", T, || {
        let exited = controller.exited();
        async move { Ok(exited) }
    })
    .await?;
    assert_eq!(status.code(), Some(1), "{}", controller.log());
    let expected = format!("error: kustomize {} is v5.4.3, not the pinned v5.6.0", other.display());
    assert!(controller.log().contains(&expected), "{}", controller.log());
    Ok(())
}
