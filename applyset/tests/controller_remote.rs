//! `spec.kubeConfig.secretRef`: an ApplySet of the tests' control plane applies to a second
//! control plane (started with `APPLYSET_CP_STATE`) whose admin kubeconfig a Secret holds. Its
//! objects are created, corrected and pruned there, never in the controller's cluster; a remote
//! that does not answer fails the run and prunes nothing; a kubeconfig that would run a program
//! or read a file on the controller's machine is refused unless `--allow-remote-exec`.

mod git;
mod operator;
mod support;

use std::time::Duration;

use anyhow::{Result, ensure};
use operator::{
    ControllerFixture, ControllerOptions, condition, config_map, create_applyset, failed_with, is_ready,
    request_reconcile, start_controller, wait_for_applyset,
};
use support::{SecondControlPlane, TestNamespace, eventually};

const T: Duration = Duration::from_secs(120);
/// Drift must be corrected by the watch, well before the interval.
const DRIFT: Duration = Duration::from_secs(20);

/// A Secret `name` of `ns` whose key `value` is `kubeconfig`.
fn kubeconfig_secret(ns: &TestNamespace, name: &str, kubeconfig: &str) -> Result<()> {
    let dir = support::scratch_dir("remote-kubeconfigs", &format!("{}-{name}", ns.name));
    let path = dir.join("value");
    std::fs::write(&path, kubeconfig)?;
    ns.kubectl_ok(&["create", "secret", "generic", name, &format!("--from-file=value={}", path.display())], None)?;
    Ok(())
}

fn remote_spec(url: &str, secret: &str) -> serde_json::Value {
    serde_json::json!({ "source": { "url": url }, "interval": "10m", "kubeConfig": { "secretRef": { "name": secret } } })
}

/// The value of ConfigMap `name` in the second plane, if it exists.
fn remote_value(remote: &SecondControlPlane, ns: &str, name: &str) -> Result<Option<String>> {
    let out =
        remote.kubectl(&["get", "configmap", name, "-n", ns, "--ignore-not-found", "-o", "jsonpath={.data.value}|"])?;
    Ok(out.strip_suffix('|').map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applies_corrects_and_prunes_in_the_remote_cluster() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("remote").await?;
    let remote = SecondControlPlane::up(&ns.name)?;
    remote.kubectl(&["create", "namespace", &ns.name])?;
    kubeconfig_secret(&ns, "workload-cluster", &std::fs::read_to_string(&remote.kubeconfig)?)?;
    repo.write("a.yaml", config_map("a", &ns.name, "one"));
    repo.write("b.yaml", config_map("b", &ns.name, "one"));
    repo.commit("two config maps");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", remote_spec(&repo.url(), "workload-cluster")).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;

    ensure!(remote_value(&remote, &ns.name, "a")?.as_deref() == Some("one"), "a is in the remote cluster");
    ensure!(remote_value(&remote, &ns.name, "b")?.as_deref() == Some("one"), "b is in the remote cluster");
    ensure!(!ns.exists("configmap/a")? && !ns.exists("configmap/b")?, "nothing in the controller's cluster");

    // Drift in the remote cluster is seen by its watch and corrected in seconds.
    remote.kubectl(&["patch", "configmap", "a", "-n", &ns.name, "-p", r#"{"data":{"value":"drifted"}}"#])?;
    eventually("the drift corrected in the remote cluster", DRIFT, || async {
        Ok((remote_value(&remote, &ns.name, "a")?.as_deref() == Some("one")).then_some(()))
    })
    .await?;

    // A file removed from git is pruned there.
    repo.remove("b.yaml");
    repo.commit("b removed");
    request_reconcile(&ns, "app").await?;
    eventually("b pruned in the remote cluster", T, || async {
        Ok(remote_value(&remote, &ns.name, "b")?.is_none().then_some(()))
    })
    .await?;
    ensure!(remote_value(&remote, &ns.name, "a")?.is_some(), "a stays");

    // Deleting the ApplySet prunes what it applied there.
    ns.kubectl_ok(&["delete", "applyset", "app", "--wait=false"], None)?;
    eventually("a pruned in the remote cluster with its ApplySet", T, || async {
        Ok(remote_value(&remote, &ns.name, "a")?.is_none().then_some(()))
    })
    .await?;
    eventually("the ApplySet gone", T, || async { Ok((!ns.exists("applyset/app")?).then_some(())) })
        .await
        .map_err(|e| e.context(operator::tail(&controller.log(), 40)))?;
    Ok(())
}

/// `serviceAccountName` is impersonated in the remote cluster: its RBAC there decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_account_is_impersonated_in_the_remote_cluster() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("remote-sa").await?;
    let remote = SecondControlPlane::up(&ns.name)?;
    remote.kubectl(&["create", "namespace", &ns.name])?;
    remote.kubectl(&["create", "serviceaccount", "deployer", "-n", &ns.name])?;
    kubeconfig_secret(&ns, "workload-cluster", &std::fs::read_to_string(&remote.kubeconfig)?)?;
    repo.write("a.yaml", config_map("a", &ns.name, "one"));
    repo.commit("one config map");
    let controller = start_controller(&ns)?;
    let mut spec = remote_spec(&repo.url(), "workload-cluster");
    spec["serviceAccountName"] = "deployer".into();
    create_applyset(&ns, "app", spec).await?;
    let failed = wait_for_applyset(&ns, "app", &controller, "ApplyFailed", T, failed_with("ApplyFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap_or_default();
    eprintln!("no rights in the remote cluster: {message}");
    let user = format!("system:serviceaccount:{}:deployer", ns.name);
    ensure!(message.contains(&user), "the remote apiserver judged the impersonated account: {message}");
    ensure!(remote_value(&remote, &ns.name, "a")?.is_none(), "nothing applied without rights");

    let binding = format!("--serviceaccount={}:deployer", ns.name);
    remote.kubectl(&["create", "rolebinding", "deployer", "--clusterrole=admin", &binding, "-n", &ns.name])?;
    request_reconcile(&ns, "app").await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;
    ensure!(remote_value(&remote, &ns.name, "a")?.as_deref() == Some("one"), "applied as the account there");
    ensure!(!ns.exists("configmap/a")?, "nothing in the controller's cluster");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_remote_fails_the_run_and_prunes_nothing() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("remote-down").await?;
    let closed = support::free_port();
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\nclusters:\n- name: c\n  cluster: {{server: 'https://127.0.0.1:{closed}', insecure-skip-tls-verify: true}}\nusers:\n- name: u\n  user: {{token: not-a-secret}}\n"
    );
    kubeconfig_secret(&ns, "gone", &kubeconfig)?;
    repo.write("a.yaml", config_map("a", &ns.name, "one"));
    repo.commit("one config map");
    // An object of the namespace that carries nothing of the set: untouched.
    ns.kubectl_ok(&["create", "configmap", "bystander"], None)?;
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", remote_spec(&repo.url(), "gone")).await?;
    let failed = wait_for_applyset(&ns, "app", &controller, "ApplyFailed", T, failed_with("ApplyFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap_or_default();
    eprintln!("unreachable remote: {message}");
    ensure!(message.contains(&format!("127.0.0.1:{closed}")), "the message names the server: {message}");
    ensure!(!ns.exists("configmap/a")?, "nothing applied in the controller's cluster");
    ensure!(ns.exists("configmap/bystander")?, "nothing pruned");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubeconfig_that_runs_a_program_or_reads_a_file_is_refused() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("remote-exec").await?;
    let marker = support::scratch_dir("remote-exec", &ns.name).join("ran");
    let head = "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user:\n";
    let exec = format!(
        "{head}    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n      command: /bin/sh\n      args: ['-c', 'touch {}']\n",
        marker.display()
    );
    kubeconfig_secret(&ns, "exec", &exec)?;
    kubeconfig_secret(&ns, "token-file", &format!("{head}    tokenFile: /etc/hostname\n"))?;
    repo.write("a.yaml", config_map("a", &ns.name, "one"));
    repo.commit("one config map");
    let mut controller = start_controller(&ns)?;
    create_applyset(&ns, "exec", remote_spec(&repo.url(), "exec")).await?;
    create_applyset(&ns, "token-file", remote_spec(&repo.url(), "token-file")).await?;
    for (name, expected) in [
        ("exec", "uses an exec plugin (exec), which would run a program"),
        ("token-file", "uses a token file (tokenFile)"),
    ] {
        let failed = wait_for_applyset(&ns, name, &controller, "refused", T, failed_with("ApplyFailed")).await?;
        let (_, _, message) = condition(&failed, "Ready").unwrap_or_default();
        eprintln!("{name}: {message}");
        ensure!(message.contains(expected), "{name}: {message}");
        ensure!(message.contains("--allow-remote-exec"), "{name}: the message says how to allow it: {message}");
        ensure!(message.contains(&format!("Secret {}/{name}", ns.name)), "{name}: names the Secret: {message}");
    }
    ensure!(!marker.exists(), "the exec plugin did not run");
    ensure!(!ns.exists("configmap/a")?, "nothing applied in the controller's cluster");

    // With --allow-remote-exec the plugin is run, as kubectl would run it.
    controller.stop();
    let controller = ControllerOptions::for_namespace(&ns).local_sources().arg("--allow-remote-exec").start()?;
    request_reconcile(&ns, "exec").await?;
    eventually("the exec plugin to run once allowed", T, || async { Ok(marker.exists().then_some(())) })
        .await
        .map_err(|e| e.context(operator::tail(&controller.log(), 40)))?;
    Ok(())
}

/// `spec.kubeConfig` changed: the objects of the cluster applied to before are pruned there
/// once the new cluster is applied to (the controller's own cluster, and a remote whose
/// kubeconfig the controller kept); after a restart that lost the old kubeconfig they are left
/// and said to be, in the status and a Warning Event naming the server and the count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_kubeconfig_prunes_or_reports_what_the_old_cluster_holds() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("remote-move").await?;
    let remote = SecondControlPlane::up(&ns.name)?;
    remote.kubectl(&["create", "namespace", &ns.name])?;
    kubeconfig_secret(&ns, "workload-cluster", &std::fs::read_to_string(&remote.kubeconfig)?)?;
    let remote_server =
        remote.kubectl(&["config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"])?;
    repo.write("a.yaml", config_map("a", &ns.name, "one"));
    repo.write("b.yaml", config_map("b", &ns.name, "one"));
    repo.commit("two config maps");
    let mut controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "10m" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready here", T, is_ready).await?;
    ensure!(ns.exists("configmap/a")? && ns.exists("configmap/b")?, "applied in the controller's cluster");

    // Here → the remote: applied there, pruned here.
    operator::patch_spec(
        &ns,
        "app",
        serde_json::json!({ "kubeConfig": { "secretRef": { "name": "workload-cluster" } } }),
    )
    .await?;
    eventually("a and b moved to the remote cluster", T, || async {
        let there = remote_value(&remote, &ns.name, "a")?.is_some() && remote_value(&remote, &ns.name, "b")?.is_some();
        let gone_here = !ns.exists("configmap/a")? && !ns.exists("configmap/b")?;
        Ok((there && gone_here).then_some(()))
    })
    .await
    .map_err(|e| e.context(operator::tail(&controller.log(), 40)))?;
    let events = operator::events_with(&ns, "app", "PreviousClusterPruned").await?;
    ensure!(
        events.iter().any(|(_, reason, note)| reason == "PreviousClusterPruned" && note.contains("2 object(s)")),
        "{events:?}"
    );
    let moved = operator::get_applyset(&ns, "app").await?;
    ensure!(moved.status.as_ref().is_some_and(|s| s.previous_cluster.is_none()), "{:?}", moved.status);

    // The remote → here again: the kept kubeconfig prunes them there.
    operator::patch_spec(&ns, "app", serde_json::json!({ "kubeConfig": null })).await?;
    eventually("a and b back in the controller's cluster, pruned in the remote", T, || async {
        let here = ns.exists("configmap/a")? && ns.exists("configmap/b")?;
        let gone_there =
            remote_value(&remote, &ns.name, "a")?.is_none() && remote_value(&remote, &ns.name, "b")?.is_none();
        Ok((here && gone_there).then_some(()))
    })
    .await
    .map_err(|e| e.context(operator::tail(&controller.log(), 40)))?;

    // To the remote, then back here by a controller that restarted meanwhile: it has no
    // kubeconfig of the remote any more, and says what it left there.
    operator::patch_spec(
        &ns,
        "app",
        serde_json::json!({ "kubeConfig": { "secretRef": { "name": "workload-cluster" } } }),
    )
    .await?;
    eventually("a and b in the remote cluster again", T, || async {
        Ok((remote_value(&remote, &ns.name, "a")?.is_some() && !ns.exists("configmap/a")?).then_some(()))
    })
    .await?;
    controller.stop();
    operator::patch_spec(&ns, "app", serde_json::json!({ "kubeConfig": null })).await?;
    let controller = start_controller(&ns)?;
    let reported = wait_for_applyset(&ns, "app", &controller, "the objects left on the remote reported", T, |a| {
        is_ready(a) && a.status.as_ref().and_then(|s| s.previous_cluster.as_ref()).is_some_and(|p| p.state == "Left")
    })
    .await?;
    let left = reported.status.and_then(|s| s.previous_cluster).expect("reported");
    eprintln!("left on the previous cluster: {left:?}");
    ensure!(
        left.server == remote_server.trim_end_matches('/') && left.objects == 2,
        "{left:?} (remote {remote_server})"
    );
    let events = operator::events_with(&ns, "app", "ObjectsLeftOnPreviousCluster").await?;
    let warned = events.iter().any(|(kind, reason, note)| {
        kind == "Warning"
            && reason == "ObjectsLeftOnPreviousCluster"
            && note.contains(&left.server)
            && note.contains("2 object(s)")
    });
    ensure!(warned, "{events:?}");
    ensure!(remote_value(&remote, &ns.name, "a")?.is_some(), "left, not pruned");
    ensure!(ns.exists("configmap/a")?, "applied here again");
    Ok(())
}
