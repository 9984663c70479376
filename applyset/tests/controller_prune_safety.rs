//! Prune safety beyond kubectl, end to end (real controller, real git, the local control
//! plane): the empty-source guard, `spec.pruneGuard` and its approval, the per-object opt-out,
//! `spec.prunePropagation`, and the delete order (custom resources, then their CRD, then
//! Namespaces) with a finalizer holding one object; and the ApplySet's own finalizer, which
//! makes deleting it delete its objects, on every ApplySet that has run.

mod git;
mod operator;
mod support;

use std::time::Duration;

use anyhow::Result;
use operator::{
    ControllerFixture, condition, config_map, create_applyset, events_for, events_with, failed_with, get_applyset,
    is_ready, patch_spec, ready_at, revision, start_controller, wait_for_applyset,
};
use support::TestNamespace;

const T: Duration = Duration::from_secs(90);

/// A commit that leaves no manifest fails the load (without `allowEmpty`): nothing is pruned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_source_fails_and_prunes_nothing() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("emptyguard").await?;
    repo.write("app/a.yaml", config_map("a", &ns.name, "1"));
    repo.write("app/README.md", "docs\n");
    let first = repo.commit("one object");
    let controller = start_controller(&ns)?;
    let spec = serde_json::json!({ "source": { "url": repo.url(), "path": "app" }, "interval": "2s" });
    create_applyset(&ns, "app", spec).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;

    repo.remove("app/a.yaml");
    repo.commit("everything deleted by mistake");
    let failed = wait_for_applyset(&ns, "app", &controller, "LoadFailed", T, failed_with("LoadFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap_or_default();
    // kubectl's words for a directory without manifests, and ours for what happened.
    assert!(
        message.contains("recognized file extensions are") && message.contains("nothing was applied or pruned"),
        "{message}"
    );
    assert!(ns.exists("configmap/a")?, "an empty source prunes nothing");
    Ok(())
}

fn config_maps(ns: &TestNamespace, count: usize) -> Vec<(String, String)> {
    (0..count).map(|i| (format!("c{i}.yaml"), config_map(&format!("c{i}"), &ns.name, "1"))).collect()
}

/// A commit deleting 8 of 10 objects under `maxPercent: 50` applies the rest, prunes nothing
/// and says `PruneGuarded` with the count and names; approving that revision lets it through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prune_guard_holds_a_mass_deletion_until_approved() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("pruneguard").await?;
    for (file, text) in config_maps(&ns, 10) {
        repo.write(&file, text);
    }
    let first = repo.commit("ten");
    let controller = start_controller(&ns)?;
    let spec = serde_json::json!({
        "source": { "url": repo.url() }, "interval": "2s", "pruneGuard": { "maxPercent": 50 }
    });
    create_applyset(&ns, "app", spec).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;

    for i in 2..10 {
        repo.remove(&format!("c{i}.yaml"));
    }
    repo.write("c0.yaml", config_map("c0", &ns.name, "2"));
    let second = repo.commit("eight deleted, one changed");
    let guarded = wait_for_applyset(&ns, "app", &controller, "PruneGuarded", T, failed_with("PruneGuarded")).await?;
    let (_, _, message) = condition(&guarded, "Ready").unwrap_or_default();
    assert!(message.contains("would prune 8 of 10 objects (80%)"), "{message}");
    assert!(message.contains("spec.pruneGuard.maxPercent 50") && message.contains("configmap/c9"), "{message}");
    assert!(message.contains(&format!("applyset.dev/approve-prune={second}")), "{message}");
    assert_eq!(ns.jsonpath("configmap/c0", "{.data.value}")?, "2", "everything is applied");
    for i in 0..10 {
        assert!(ns.exists(&format!("configmap/c{i}"))?, "nothing is pruned: c{i}");
    }
    let events = events_with(&ns, "app", "PruneGuarded").await?;
    assert!(events.iter().any(|(kind, reason, _)| kind == "Warning" && reason == "PruneGuarded"), "{events:?}");

    // Approving another revision changes nothing; approving this one (a short commit) does.
    ns.kubectl_ok(&["annotate", "applyset", "app", "applyset.dev/approve-prune=0000000"], None)?;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(ns.exists("configmap/c9")?, "approval of another revision");
    ns.kubectl_ok(
        &["annotate", "--overwrite", "applyset", "app", &format!("applyset.dev/approve-prune={}", &second[..10])],
        None,
    )?;
    let done = wait_for_applyset(&ns, "app", &controller, "Ready, approved", T, ready_at(revision(&second))).await?;
    for i in 2..10 {
        assert!(!ns.exists(&format!("configmap/c{i}"))?, "approved: c{i} pruned");
    }
    assert_eq!(done.status.and_then(|s| s.inventory).map(|i| i.count), Some(2));
    Ok(())
}

/// `applyset.dev/prune: disabled` in git keeps the object when it leaves git: orphaned, in
/// status and an Event, never deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opted_out_object_is_orphaned_not_pruned() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("optout").await?;
    let kept = config_map("kept", &ns.name, "1")
        .replace("metadata:\n", "metadata:\n  annotations:\n    applyset.dev/prune: disabled\n");
    repo.write("kept.yaml", kept);
    repo.write("gone.yaml", config_map("gone", &ns.name, "1"));
    repo.write("stays.yaml", config_map("stays", &ns.name, "1"));
    let first = repo.commit("three");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;

    repo.remove("kept.yaml");
    repo.remove("gone.yaml");
    let second = repo.commit("two leave");
    let done = wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&second))).await?;
    assert!(ns.exists("configmap/kept")?, "opted out: kept");
    assert!(!ns.exists("configmap/gone")?, "the other one is pruned");
    let skipped = done.status.map(|s| s.prune_skipped).unwrap_or_default();
    assert!(skipped.iter().any(|e| e.name == "kept" && e.state == "Orphaned"), "{skipped:?}");
    let events = events_with(&ns, "app", "Orphaned").await?;
    let orphaned: Vec<_> = events.iter().filter(|(_, reason, _)| reason == "Orphaned").collect();
    assert!(orphaned.iter().any(|(kind, _, note)| kind == "Normal" && note.contains("kept")), "{events:?}");
    assert!(
        !events.iter().any(|(_, reason, _)| reason == "PruneSkipped"),
        "kept on purpose, not a warning: {events:?}"
    );
    // Steady: one Event, not one per interval.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let again = events_for(&ns, "app").await?;
    assert_eq!(again.iter().filter(|(_, reason, _)| reason == "Orphaned").count(), orphaned.len(), "{again:?}");
    Ok(())
}

fn deployment(name: &str, namespace: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  replicas: 0\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n      - name: app\n        image: nginx\n"
    )
}

/// The ReplicaSets of Deployment `name` (by its pod label).
fn replica_sets(ns: &TestNamespace, name: &str) -> Result<String> {
    Ok(ns.kubectl_ok(&["get", "replicasets", "-l", &format!("app={name}"), "-o", "name"], None)?.trim().to_owned())
}

async fn wait_for_replica_set(ns: &TestNamespace, name: &str) -> Result<()> {
    support::eventually(&format!("a ReplicaSet of {name}"), T, || async {
        Ok((!replica_sets(ns, name)?.is_empty()).then_some(()))
    })
    .await
}

/// `prunePropagation`: Orphan leaves the pruned Deployment's ReplicaSet; Foreground deletes
/// it before the Deployment (the prune waits for the Deployment to be gone); Background
/// deletes the Deployment and leaves its ReplicaSet to the garbage collector.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_propagation_orphans_or_deletes_dependents() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("propagation").await?;
    repo.write("orphaned.yaml", deployment("orphaned", &ns.name));
    repo.write("foreground.yaml", deployment("foreground", &ns.name));
    repo.write("background.yaml", deployment("background", &ns.name));
    let first = repo.commit("two Deployments");
    let controller = start_controller(&ns)?;
    let spec = serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s", "prunePropagation": "Orphan" });
    create_applyset(&ns, "app", spec).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    wait_for_replica_set(&ns, "orphaned").await?;
    wait_for_replica_set(&ns, "foreground").await?;
    wait_for_replica_set(&ns, "background").await?;

    repo.remove("orphaned.yaml");
    let second = repo.commit("orphaned leaves");
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&second))).await?;
    assert!(!ns.exists("deployment/orphaned")?);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rs = replica_sets(&ns, "orphaned")?;
    assert!(!rs.is_empty(), "Orphan keeps the ReplicaSet");
    let owners = ns.kubectl_ok(&["get", &rs, "-o", "jsonpath={.metadata.ownerReferences}"], None)?;
    assert!(owners.is_empty(), "and frees it: {owners}");

    patch_spec(&ns, "app", serde_json::json!({ "prunePropagation": "Foreground" })).await?;
    repo.remove("foreground.yaml");
    repo.write("placeholder.yaml", config_map("placeholder", &ns.name, "1"));
    let third = repo.commit("foreground leaves");
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&third))).await?;
    // Foreground: the Deployment is gone only after its ReplicaSet, and the prune waited.
    assert!(!ns.exists("deployment/foreground")?, "the prune waited for the Deployment");
    assert!(replica_sets(&ns, "foreground")?.is_empty(), "its ReplicaSet went first");

    // Background (the default, as kubectl): the Deployment goes at once, its ReplicaSet after.
    patch_spec(&ns, "app", serde_json::json!({ "prunePropagation": "Background" })).await?;
    repo.remove("background.yaml");
    let fourth = repo.commit("background leaves");
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&fourth))).await?;
    assert!(!ns.exists("deployment/background")?);
    support::eventually("the garbage collector deleting the ReplicaSet", T, || async {
        Ok(replica_sets(&ns, "background")?.is_empty().then_some(()))
    })
    .await?;
    Ok(())
}

/// Deleting an ApplySet with a CRD, a custom resource held by a finalizer and a Namespace with
/// contents: the custom resource (and the contents) go first; the CRD and the Namespace wait
/// while the finalizer holds it (`DeleteFailed` names it); once released, all go in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_goes_contents_then_definitions_then_namespaces() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("deleteorder").await?;
    let group = format!("{}.example.com", ns.name);
    let extra = format!("{}-extra", ns.name);
    repo.write("crd.yaml", support::widget_crd(&group));
    repo.write(
        "widget.yaml",
        format!(
            "apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: held\n  namespace: {}\n  finalizers: [example.com/hold]\nspec: {{size: 1}}\n",
            ns.name
        ),
    );
    repo.write("namespace.yaml", format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {extra}\n"));
    repo.write("contents.yaml", config_map("contents", &extra, "1"));
    let first = repo.commit("a CRD, a held custom resource, a Namespace with contents");
    let controller = start_controller(&ns)?;
    let spec = serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s", "timeout": "5s" });
    create_applyset(&ns, "app", spec).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;

    ns.kubectl_ok(&["delete", "applyset", "app", "--wait=false"], None)?;
    let widget = format!("widgets.{group}/held");
    support::eventually("the custom resource being deleted", T, || async {
        let deleting = ns.jsonpath(&widget, "{.metadata.deletionTimestamp}")?;
        Ok((!deleting.is_empty()).then_some(()))
    })
    .await?;
    support::eventually("DeleteFailed naming the held custom resource", T, || async {
        let events = events_for(&ns, "app").await?;
        Ok(events.iter().any(|(_, reason, note)| reason == "DeleteFailed" && note.contains("held")).then_some(()))
    })
    .await?;
    assert!(ns.exists(&format!("crd/widgets.{group}"))?, "the CRD waits for its custom resources");
    let phase = ns.kubectl_ok(&["get", "namespace", &extra, "-o", "jsonpath={.status.phase}"], None)?;
    assert_eq!(phase, "Active", "the Namespace waits for the earlier stages");
    assert!(
        ns.kubectl_ok(&["get", "configmap", "contents", "-n", &extra, "--ignore-not-found", "-o", "name"], None)?
            .is_empty(),
        "the Namespace's contents went in the first stage"
    );

    ns.kubectl_ok(&["patch", &widget, "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#], None)?;
    support::eventually("the ApplySet gone", T, || async { Ok((!ns.exists("applyset/app")?).then_some(())) }).await?;
    assert!(!ns.exists(&format!("crd/widgets.{group}"))?, "the CRD went after its custom resources");
    let namespace = ns.kubectl_ok(&["get", "namespace", &extra, "--ignore-not-found", "-o", "name"], None)?;
    let terminating =
        ns.kubectl_ok(&["get", "namespace", &extra, "--ignore-not-found", "-o", "jsonpath={.status.phase}"], None)?;
    assert!(namespace.is_empty() || terminating == "Terminating", "the Namespace went last: {namespace} {terminating}");
    drop(controller);
    Ok(())
}

const FINALIZER: &str = "applyset.dev/finalizer";

/// A new ApplySet gets the controller's finalizer in its first parent write (a server-side
/// apply the real apiserver merges into the finalizers others set); one whose first run fails
/// before that write gets it right after, by a patch of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_applyset_that_ran_carries_the_finalizer_and_others_keep_theirs() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("finalizer").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.commit("one object");
    let controller = start_controller(&ns)?;
    let held = format!(
        "apiVersion: applyset.dev/v1alpha1\nkind: ApplySet\nmetadata:\n  name: held\n  finalizers: [example.com/keep]\nspec:\n  source: {{url: '{}'}}\n  interval: 1h\n",
        repo.url()
    );
    ns.kubectl_ok(&["create", "-f", "-"], Some(&held))?;
    let missing = format!("file://{}/no-such-repository", repo.bare.parent().unwrap().display());
    create_applyset(&ns, "broken", serde_json::json!({ "source": { "url": missing }, "interval": "1h" })).await?;

    let ready = wait_for_applyset(&ns, "held", &controller, "held Ready", T, is_ready).await?;
    let finalizers = ready.metadata.finalizers.clone().unwrap_or_default();
    assert_eq!(finalizers, ["example.com/keep", FINALIZER], "the server-side apply kept the other finalizer");
    // The controller wrote the ApplySet's metadata once, as the KEP-3659 parent (Apply); the
    // only other writers are kubectl's create and the status.
    let managed = get_applyset(&ns, "held").await?.metadata.managed_fields.unwrap_or_default();
    let mut metadata_writers: Vec<_> = managed
        .iter()
        .filter(|m| m.subresource.is_none())
        .map(|m| (m.manager.clone().unwrap_or_default(), m.operation.clone().unwrap_or_default()))
        .collect();
    metadata_writers.sort();
    assert_eq!(
        metadata_writers,
        [("kubectl-applyset".to_owned(), "Apply".to_owned()), ("kubectl-create".to_owned(), "Update".to_owned())],
        "{managed:?}"
    );

    wait_for_applyset(&ns, "broken", &controller, "broken FetchFailed, with the finalizer", T, |a| {
        failed_with("FetchFailed")(a)
            && a.metadata.finalizers.as_deref().is_some_and(|f| f.iter().any(|f| f == FINALIZER))
    })
    .await?;

    ns.kubectl_ok(
        &["patch", "applyset", "held", "--type=json", "-p", r#"[{"op":"remove","path":"/metadata/finalizers/0"}]"#],
        None,
    )?;
    ns.kubectl_ok(&["delete", "applyset", "held", "broken", "--timeout=60s"], None)?;
    let left =
        ns.kubectl_ok(&["get", "applysets,configmaps", "-l", "applyset.kubernetes.io/part-of", "-o", "name"], None)?;
    assert_eq!(left.trim(), "", "both ApplySets and the object are gone");
    Ok(())
}
