//! The controller end to end on the real control plane with real git repositories: an
//! ApplySet follows its repository (create, configure, prune), and reports a broken commit
//! without touching what is running.

mod git;
mod operator;
mod support;

use std::time::Duration;

use anyhow::Result;
use operator::{
    ControllerFixture, condition, config_map, create_applyset, failed_with, is_ready, start_controller,
    wait_for_applyset,
};

const T: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_commits_and_prunes_removed_files() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("follow").await?;
    repo.write("app/a.yaml", config_map("a", &ns.name, "1"));
    repo.write("app/b.yaml", config_map("b", &ns.name, "1"));
    let first = repo.commit("first");
    let controller = start_controller(&ns)?;

    create_applyset(
        &ns,
        "app",
        serde_json::json!({ "source": { "url": repo.url(), "path": "app" }, "interval": "2s" }),
    )
    .await?;
    let ready = wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;
    let status = ready.status.clone().unwrap();
    assert_eq!(status.last_applied_revision.as_deref(), Some(format!("main@sha1:{first}").as_str()));
    assert_eq!(status.inventory.as_ref().map(|i| i.count), Some(2));
    let a = ns.kubectl_ok(&["get", "configmap", "a", "-o", "jsonpath={.data.value}"], None)?;
    assert_eq!(a, "1");
    // The ApplySet is a KEP-3659 parent and its objects carry its ID.
    let id = ready
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("applyset.kubernetes.io/id"))
        .cloned()
        .expect("parent id label");
    let part_of = ns.kubectl_ok(
        &["get", "configmap", "b", "-o", "jsonpath={.metadata.labels.applyset\\.kubernetes\\.io/part-of}"],
        None,
    )?;
    assert_eq!(part_of, id);

    repo.write("app/a.yaml", config_map("a", &ns.name, "2"));
    let second = repo.commit("second");
    wait_for_applyset(&ns, "app", &controller, "the second commit applied", T, |s| {
        s.status.as_ref().and_then(|s| s.last_applied_revision.as_deref())
            == Some(format!("main@sha1:{second}").as_str())
    })
    .await?;
    assert_eq!(ns.kubectl_ok(&["get", "configmap", "a", "-o", "jsonpath={.data.value}"], None)?, "2");

    repo.remove("app/b.yaml");
    let third = repo.commit("third");
    wait_for_applyset(&ns, "app", &controller, "the third commit applied", T, |s| {
        s.status.as_ref().and_then(|s| s.last_applied_revision.as_deref())
            == Some(format!("main@sha1:{third}").as_str())
    })
    .await?;
    let left = ns.kubectl_ok(
        &["get", "configmaps", "-l", &format!("applyset.kubernetes.io/part-of={id}"), "-o", "name"],
        None,
    )?;
    assert_eq!(left.trim(), "configmap/a");

    let events = operator::events_with(&ns, "app", "Pruned").await?;
    assert!(events.iter().any(|(_, reason, note)| reason == "Pruned" && note.contains("configmap/b")), "{events:?}");
    assert!(events.iter().any(|(_, reason, note)| reason == "Applied" && note.contains("configmap/a")), "{events:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_yaml_fails_the_load_and_changes_nothing() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("broken").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.write("b.yaml", config_map("b", &ns.name, "1"));
    let good = repo.commit("good");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;

    // b.yaml is removed (a prune candidate) and a.yaml is broken in the same commit.
    repo.remove("b.yaml");
    repo.write("a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n data: [\n");
    let broken = repo.commit("broken");
    let failed = wait_for_applyset(&ns, "app", &controller, "LoadFailed", T, failed_with("LoadFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap();
    assert!(message.contains("a.yaml"), "the message names the file: {message}");
    let status = failed.status.unwrap();
    assert_eq!(status.last_applied_revision.as_deref(), Some(format!("main@sha1:{good}").as_str()));
    assert_eq!(status.last_attempted_revision.as_deref(), Some(format!("main@sha1:{broken}").as_str()));
    // Nothing pruned, nothing changed.
    assert_eq!(ns.kubectl_ok(&["get", "configmap", "b", "-o", "jsonpath={.data.value}"], None)?, "1");
    assert_eq!(ns.kubectl_ok(&["get", "configmap", "a", "-o", "jsonpath={.data.value}"], None)?, "1");
    let events = operator::events_with(&ns, "app", "LoadFailed").await?;
    assert!(events.iter().any(|(kind, reason, _)| kind == "Warning" && reason == "LoadFailed"), "{events:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_with_their_crd_and_a_crd_deleted_by_hand() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("crd").await?;
    let group = format!("{}.example.test", support::random_suffix());
    repo.write("crd.yaml", support::widget_crd(&group));
    repo.write(
        "widget.yaml",
        format!("apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: {}\nsize: 3\n", ns.name),
    );
    repo.write("config.yaml", config_map("a", &ns.name, "1"));
    repo.commit("crd, widget, config");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    let ready = wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;
    let kinds = ready
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("applyset.kubernetes.io/contains-group-kinds"))
        .cloned()
        .unwrap_or_default();
    assert!(kinds.contains(&format!("Widget.{group}")), "{kinds}");
    assert_eq!(ns.kubectl_ok(&["get", &format!("widgets.{group}"), "w", "-o", "jsonpath={.size}"], None)?, "3");

    // The next commit is applied by a controller whose discovery predates the CRD: the parent
    // records Widget, which it must find.
    repo.write("config.yaml", config_map("a", &ns.name, "2"));
    let second = repo.commit("config 2");
    wait_for_applyset(&ns, "app", &controller, "the second commit applied", T, |s| {
        is_ready(s)
            && s.status.as_ref().and_then(|s| s.last_applied_revision.as_deref())
                == Some(format!("main@sha1:{second}").as_str())
    })
    .await?;

    // Someone deletes the CRD by hand, and git drops it: the recorded kind is gone from the
    // cluster, which must not wedge the ApplySet.
    ns.kubectl_ok(&["delete", "crd", &format!("widgets.{group}"), "--wait=true"], None)?;
    repo.remove("crd.yaml");
    repo.remove("widget.yaml");
    let third = repo.commit("no more widgets");
    let done = wait_for_applyset(&ns, "app", &controller, "the third commit applied", T, |s| {
        is_ready(s)
            && s.status.as_ref().and_then(|s| s.last_applied_revision.as_deref())
                == Some(format!("main@sha1:{third}").as_str())
    })
    .await?;
    let kinds = done
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("applyset.kubernetes.io/contains-group-kinds"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(kinds, "ConfigMap");
    assert_eq!(ns.kubectl_ok(&["get", "configmap", "a", "-o", "jsonpath={.data.value}"], None)?, "2");
    Ok(())
}

/// `spec.force`: an immutable ConfigMap changed in git cannot be patched; without force the run
/// fails naming it and changes nothing, with force it is deleted and created again (as
/// `kubectl apply --force`), a new object with the new data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_recreates_what_cannot_be_patched() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("force").await?;
    let immutable = |value: &str| config_map("frozen", &ns.name, value) + "immutable: true\n";
    repo.write("frozen.yaml", immutable("1"));
    repo.commit("an immutable ConfigMap");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "1h" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;
    let uid = ns.kubectl_ok(&["get", "configmap", "frozen", "-o", "jsonpath={.metadata.uid}"], None)?;

    repo.write("frozen.yaml", immutable("2"));
    let second = repo.commit("new data");
    operator::request_reconcile(&ns, "app").await?;
    let failed = wait_for_applyset(&ns, "app", &controller, "ApplyFailed", T, failed_with("ApplyFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap_or_default();
    assert!(message.contains("frozen") && message.contains("immutable"), "{message}");
    assert_eq!(ns.kubectl_ok(&["get", "configmap", "frozen", "-o", "jsonpath={.data.value}"], None)?, "1");

    operator::patch_spec(&ns, "app", serde_json::json!({ "force": true })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready with force", T, operator::ready_at(operator::revision(&second)))
        .await?;
    assert_eq!(ns.kubectl_ok(&["get", "configmap", "frozen", "-o", "jsonpath={.data.value}"], None)?, "2");
    let new_uid = ns.kubectl_ok(&["get", "configmap", "frozen", "-o", "jsonpath={.metadata.uid}"], None)?;
    assert_ne!(new_uid, uid, "deleted and created again");
    Ok(())
}
