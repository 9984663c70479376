//! Regression tests for the holes an adversarial probe found in the controller (issue 15),
//! each end to end: the real controller binary, real git repositories, the local control
//! plane, kubectl as the user's (and the attacker's) tool.

mod git;
mod operator;
mod support;

use std::time::Duration;

use anyhow::{Context, Result};
use applyset::operator::api::ApplySet;
use operator::{
    ControllerFixture, ControllerOptions, ControllerProcess, condition, config_map, create_applyset, failed_with,
    is_ready, ready_at, revision, start_controller, wait_for_applyset,
};
use support::TestNamespace;

const T: Duration = Duration::from_secs(90);

fn namespace_manifest(name: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n")
}

/// Everything a user (or anyone who may read the ApplySet) sees: its status, its Events, the
/// controller's log and metrics.
async fn published_text(ns: &TestNamespace, name: &str, controller: &ControllerProcess) -> Result<String> {
    let status = ns.kubectl_ok(&["get", "applyset", name, "-o", "json"], None)?;
    let events = operator::events_for(ns, name).await?;
    let metrics = controller.metrics()?;
    Ok(format!("{status}\n{events:?}\n{}\n{metrics}", controller.log()))
}

fn id_of(applyset: &ApplySet) -> String {
    applyset
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("applyset.kubernetes.io/id"))
        .cloned()
        .expect("parent id label")
}

// 1. A Secret patch the apiserver refuses: kubectl's error quotes the whole patch (stringData
//    and the last-applied annotation with the old values); none of it may be published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_secret_patches_publish_no_values() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("secretleak").await?;
    ns.kubectl_ok(&["create", "serviceaccount", "deployer"], None)?;
    // May create Secrets, not patch them.
    ns.kubectl_ok(
        &["create", "role", "deployer", "--verb=get,list,watch,create", "--resource=secrets,configmaps"],
        None,
    )?;
    ns.kubectl_ok(
        &["create", "rolebinding", "deployer", "--role=deployer", &format!("--serviceaccount={}:deployer", ns.name)],
        None,
    )?;
    let old_password = "first-Pa55/word#?x";
    let new_password = "second \"Pa55\" <word>";
    let token = "tok-en-VALUE-0001";
    let secret = |password: &str| {
        let escaped = password.replace('\\', "\\\\").replace('"', "\\\"");
        let encoded = base64_encode(token);
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: {}\nstringData:\n  password: \"{escaped}\"\ndata:\n  token: {encoded}\n",
            ns.name
        )
    };
    repo.write("creds.yaml", secret(old_password));
    let first = repo.commit("a secret");
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "app",
        serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s", "serviceAccountName": "deployer" }),
    )
    .await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;

    repo.write("creds.yaml", secret(new_password));
    repo.commit("a new password");
    let failed = wait_for_applyset(&ns, "app", &controller, "ApplyFailed", T, failed_with("ApplyFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap();
    assert!(message.contains("forbidden") && message.contains("creds"), "the failure is still explained: {message}");
    // Let the Warning Event and the log line land.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let published = published_text(&ns, "app", &controller).await?;
    for value in [old_password, new_password, token, "Pa55", &base64_encode(token), &base64_encode(old_password)] {
        assert!(!published.contains(value), "{value:?} was published:\n{}", operator::tail(&published, 80));
    }
    Ok(())
}

fn base64_encode(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

// 3 and 10. A label is not a delete permission: an object someone labelled as a member is
//    reported, not pruned; the ApplySet's own Namespace and a Namespace holding objects the set
//    does not manage are kept and reported; an empty Namespace that left git is pruned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_deletes_only_what_the_applyset_applied() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("strangers").await?;
    let (busy, empty) = (format!("{}-busy", ns.name), format!("{}-empty", ns.name));
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.write("b.yaml", config_map("b", &ns.name, "1"));
    repo.write("ns-own.yaml", namespace_manifest(&ns.name));
    repo.write("ns-busy.yaml", namespace_manifest(&busy));
    repo.write("ns-empty.yaml", namespace_manifest(&empty));
    let first = repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    let ready = wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    let id = id_of(&ready);
    let members = ready
        .status
        .as_ref()
        .and_then(|s| s.inventory.as_ref())
        .and_then(applyset::operator::members::codec::members_in_status)
        .unwrap_or_default();
    assert_eq!(members.len(), 5, "{members:?}");

    // Someone who may only patch ConfigMaps labels one of theirs as a member.
    ns.kubectl_ok(&["create", "configmap", "stranger", "--from-literal=keep=me"], None)?;
    ns.kubectl_ok(&["label", "configmap", "stranger", &format!("applyset.kubernetes.io/part-of={id}")], None)?;
    ns.kubectl_ok(&["-n", &busy, "create", "configmap", "data", "--from-literal=k=v"], None)?;

    repo.remove("b.yaml");
    repo.remove("ns-own.yaml");
    repo.remove("ns-busy.yaml");
    repo.remove("ns-empty.yaml");
    let second = repo.commit("b and the namespaces leave");
    let done = wait_for_applyset(&ns, "app", &controller, "Ready at the second commit", T, ready_at(revision(&second)))
        .await?;
    let status = done.status.clone().unwrap();
    let skipped: Vec<(String, String)> =
        status.prune_skipped.iter().map(|o| (o.name.clone(), o.state.clone())).collect();
    assert!(skipped.contains(&("stranger".into(), "NotInInventory".into())), "{skipped:?}");
    assert!(skipped.contains(&(ns.name.clone(), "OwnNamespace".into())), "{skipped:?}");
    assert!(skipped.contains(&(busy.clone(), "NamespaceNotEmpty".into())), "{skipped:?}");
    assert!(!ns.exists("configmap/b")?, "b left git: pruned");
    assert!(ns.exists("configmap/stranger")?, "a labelled stranger is never pruned");
    assert!(ns.exists(&format!("namespace/{busy}"))?, "a namespace with unmanaged objects is kept");
    // Pruned at this revision, or at a later interval when the emptiness check could not list
    // everything (under load a LIST can fail, and the guard then keeps the Namespace).
    support::eventually("the empty namespace pruned", T, || async {
        let phase =
            ns.kubectl_ok(&["get", "namespace", &empty, "--ignore-not-found", "-o", "jsonpath={.status.phase}"], None)?;
        Ok((phase.is_empty() || phase == "Terminating").then_some(()))
    })
    .await?;
    let events = operator::events_with(&ns, "app", "PruneSkipped").await?;
    assert!(
        events
            .iter()
            .any(|(kind, reason, note)| kind == "Warning" && reason == "PruneSkipped" && note.contains("stranger")),
        "{events:?}"
    );
    ns.kubectl_ok(&["delete", "namespace", &busy, "--wait=false"], None)?;
    Ok(())
}

// 4. Two ApplySets that list the same object: the second does not take it (OwnershipConflict
//    naming the first, its other objects applied), and a deliberate move with
//    `applyset.dev/take-ownership` keeps the object (same UID) instead of delete-and-recreate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_applyset_does_not_take_an_object() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("owners").await?;
    repo.write("a/shared.yaml", config_map("shared", &ns.name, "from-a"));
    repo.write("a/only-a.yaml", config_map("only-a", &ns.name, "1"));
    repo.write("b/shared.yaml", config_map("shared", &ns.name, "from-b"));
    repo.write("b/only-b.yaml", config_map("only-b", &ns.name, "1"));
    let first = repo.commit("two sets, one shared object");
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "alpha",
        serde_json::json!({ "source": { "url": repo.url(), "path": "a" }, "interval": "2s" }),
    )
    .await?;
    let alpha = wait_for_applyset(&ns, "alpha", &controller, "alpha Ready", T, ready_at(revision(&first))).await?;
    let uid = ns.jsonpath("configmap/shared", "{.metadata.uid}")?;

    create_applyset(&ns, "beta", serde_json::json!({ "source": { "url": repo.url(), "path": "b" }, "interval": "2s" }))
        .await?;
    let beta =
        wait_for_applyset(&ns, "beta", &controller, "beta OwnershipConflict", T, failed_with("OwnershipConflict"))
            .await?;
    let (_, _, message) = condition(&beta, "Ready").unwrap();
    assert!(message.contains(&format!("ApplySet {}/alpha", ns.name)), "names the owner: {message}");
    assert!(message.contains("configmap/shared"), "{message}");
    assert!(ns.exists("configmap/only-b")?, "the rest of the set applies");
    // Give both a few intervals: nobody fights over the object.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(ns.jsonpath("configmap/shared", "{.data.value}")?, "from-a");
    assert_eq!(
        ns.jsonpath("configmap/shared", "{.metadata.labels.applyset\\.kubernetes\\.io/part-of}")?,
        id_of(&alpha)
    );
    let alpha_now = operator::get_applyset(&ns, "alpha").await?;
    assert!(is_ready(&alpha_now), "alpha is untouched");

    // The move: beta takes it deliberately, then alpha lets go.
    repo.write(
        "b/shared.yaml",
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: {}\n  annotations:\n    applyset.dev/take-ownership: \"true\"\ndata:\n  value: from-b\n",
            ns.name
        ),
    );
    let second = repo.commit("beta takes shared");
    wait_for_applyset(&ns, "beta", &controller, "beta Ready", T, ready_at(revision(&second))).await?;
    wait_for_applyset(&ns, "alpha", &controller, "alpha refuses to take it back", T, failed_with("OwnershipConflict"))
        .await?;
    repo.remove("a/shared.yaml");
    let third = repo.commit("alpha lets go");
    wait_for_applyset(&ns, "alpha", &controller, "alpha Ready", T, ready_at(revision(&third))).await?;
    assert_eq!(ns.jsonpath("configmap/shared", "{.metadata.uid}")?, uid, "moved, never deleted");
    assert_eq!(ns.jsonpath("configmap/shared", "{.data.value}")?, "from-b");
    Ok(())
}

// 8a. allowEmpty: a source with no objects applies nothing and prunes everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_empty_prunes_everything() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("empty").await?;
    repo.write("app/a.yaml", config_map("a", &ns.name, "1"));
    repo.write("app/README.md", "docs only\n");
    let first = repo.commit("one object");
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "app",
        serde_json::json!({ "source": { "url": repo.url(), "path": "app" }, "interval": "2s", "allowEmpty": true }),
    )
    .await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    repo.remove("app/a.yaml");
    let second = repo.commit("nothing left");
    let done = wait_for_applyset(&ns, "app", &controller, "Ready with an empty source", T, ready_at(revision(&second)))
        .await?;
    assert!(!ns.exists("configmap/a")?, "everything is pruned");
    assert_eq!(done.status.and_then(|s| s.inventory).map(|i| i.count), Some(0));
    Ok(())
}

// 8b. Intervals: the CRD refuses sub-second ones, the controller anything under --min-interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn intervals_have_a_floor() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("floor").await?;
    let refused = create_applyset(
        &ns,
        "tiny",
        serde_json::json!({ "source": { "url": "https://example.com/r.git" }, "interval": "1ms" }),
    )
    .await;
    let error = format!("{:#}", refused.expect_err("the apiserver refuses a 1ms interval"));
    assert!(error.contains("interval must be at least 1s"), "{error}");

    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.commit("one");
    let controller = ControllerOptions::for_namespace(&ns).local_sources().arg("--min-interval").arg("10s").start()?;
    create_applyset(&ns, "fast", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    let stalled = wait_for_applyset(&ns, "fast", &controller, "InvalidSpec", T, failed_with("InvalidSpec")).await?;
    let (_, _, message) = condition(&stalled, "Ready").unwrap();
    assert!(message.contains("--min-interval"), "{message}");
    assert_eq!(condition(&stalled, "Stalled").map(|c| c.0), Some("True".into()));
    assert!(!ns.exists("configmap/a")?, "nothing is applied");
    Ok(())
}

/// `apiserver_request_total` for DELETEs of single objects of one resource, summed over
/// response codes (the namespace controller's DELETECOLLECTIONs of deleted test namespaces
/// have another scope).
fn deletes_of(ns: &TestNamespace, resource: &str) -> Result<f64> {
    let metrics = ns.kubectl_ok(&["get", "--raw", "/metrics"], None)?;
    let needle = format!("resource=\"{resource}\"");
    Ok(metrics
        .lines()
        .filter(|l| {
            l.starts_with("apiserver_request_total{")
                && l.contains(&needle)
                && l.contains("verb=\"DELETE\"")
                && l.contains("scope=\"resource\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

// 8c. An object held by a finalizer: PruneFailed names it and the finalizer, it is not DELETEd
//    again at every interval, and the set becomes Ready once it is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminating_object_is_reported_not_deleted_again() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("finalizer").await?;
    // PodTemplates: a kind no other test deletes, so the apiserver's DELETE count is ours.
    let held = format!(
        "apiVersion: v1\nkind: PodTemplate\nmetadata:\n  name: held\n  namespace: {}\n  finalizers: [example.com/hold]\ntemplate:\n  spec:\n    containers: [{{name: c, image: busybox}}]\n",
        ns.name
    );
    repo.write("held.yaml", held);
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    let first = repo.commit("first");
    let controller = start_controller(&ns)?;
    // The prune waits up to the timeout for a held object before it reports it.
    let spec = serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s", "timeout": "5s" });
    create_applyset(&ns, "app", spec).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;

    let before = deletes_of(&ns, "podtemplates")?;
    repo.remove("held.yaml");
    repo.commit("held leaves");
    let failed = wait_for_applyset(&ns, "app", &controller, "PruneFailed", T, failed_with("PruneFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap();
    assert!(message.contains("podtemplate/held") && message.contains("example.com/hold"), "{message}");
    tokio::time::sleep(Duration::from_secs(8)).await;
    let after = deletes_of(&ns, "podtemplates")?;
    assert!(after - before <= 1.0, "one DELETE, not one per interval: {before} → {after}");
    let still = operator::get_applyset(&ns, "app").await?;
    assert!(failed_with("PruneFailed")(&still), "{:?}", condition(&still, "Ready"));

    ns.kubectl_ok(
        &["patch", "podtemplate", "held", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#],
        None,
    )?;
    wait_for_applyset(&ns, "app", &controller, "Ready once it is gone", T, is_ready).await?;
    assert!(!ns.exists("podtemplate/held")?);
    Ok(())
}

// 7. After a failure heals, the status holds no trace of it and a no-op interval writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healed_failure_leaves_a_clean_status_that_is_not_rewritten() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("heal").await?;
    let invalid = format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: {}\nspec:\n  ports: []\n",
        ns.name
    );
    let valid = format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: {}\nspec:\n  ports: [{{port: 80}}]\n",
        ns.name
    );
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.write("web.yaml", invalid);
    repo.commit("an invalid Service");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    let failed = wait_for_applyset(&ns, "app", &controller, "ApplyFailed", T, failed_with("ApplyFailed")).await?;
    let states = failed.status.and_then(|s| s.inventory).map(|i| i.states).unwrap_or_default();
    assert_eq!(states.get("Failed"), Some(&1), "{states:?}");

    repo.write("web.yaml", valid);
    let fixed = repo.commit("fixed");
    let healed = wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&fixed))).await?;
    let inventory = healed.status.clone().and_then(|s| s.inventory).context("inventory")?;
    assert!(!inventory.states.contains_key("Failed"), "stale state left behind: {:?}", inventory.states);
    assert!(inventory.objects.iter().all(|o| o.message.is_none()), "{:?}", inventory.objects);

    // Let one interval settle (the Ready write itself), then three no-op intervals.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let version = operator::get_applyset(&ns, "app").await?.metadata.resource_version;
    tokio::time::sleep(Duration::from_secs(7)).await;
    let later = operator::get_applyset(&ns, "app").await?;
    assert_eq!(later.metadata.resource_version, version, "a no-op interval wrote the ApplySet");
    Ok(())
}

// 12. Each distinct failure is visible as an Event: a series keeps repeats, not new messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_distinct_failure_is_its_own_event() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("events").await?;
    repo.write("a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n data: [\n");
    repo.write("b.yaml", config_map("b", &ns.name, "1"));
    repo.commit("a is broken");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    wait_for_applyset(&ns, "app", &controller, "LoadFailed on a.yaml", T, |a| {
        failed_with("LoadFailed")(a) && condition(a, "Ready").is_some_and(|c| c.2.contains("a.yaml"))
    })
    .await?;
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.write("b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n data: [\n");
    repo.commit("b is broken");
    wait_for_applyset(&ns, "app", &controller, "LoadFailed on b.yaml", T, |a| {
        failed_with("LoadFailed")(a) && condition(a, "Ready").is_some_and(|c| c.2.contains("b.yaml"))
    })
    .await?;
    let notes = support::eventually("both failures as Events", T, || async {
        let events = operator::events_for(&ns, "app").await?;
        let notes: Vec<String> =
            events.into_iter().filter(|(_, reason, _)| reason == "LoadFailed").map(|(_, _, note)| note).collect();
        let both = notes.iter().any(|n| n.contains("a.yaml")) && notes.iter().any(|n| n.contains("b.yaml"));
        Ok(both.then_some(notes))
    })
    .await?;
    assert!(notes.len() >= 2, "{notes:?}");
    Ok(())
}

// 11. A tenant's refused namespace does not poison the parent: once it leaves git, the set heals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_namespace_does_not_poison_later_runs() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("poison").await?;
    let other = format!("{}-other", ns.name);
    ns.kubectl_ok(&["create", "namespace", &other], None)?;
    ns.kubectl_ok(&["create", "serviceaccount", "deployer"], None)?;
    ns.kubectl_ok(
        &["create", "role", "deployer", "--verb=get,list,watch,create,update,patch,delete", "--resource=configmaps"],
        None,
    )?;
    ns.kubectl_ok(
        &["create", "rolebinding", "deployer", "--role=deployer", &format!("--serviceaccount={}:deployer", ns.name)],
        None,
    )?;
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.write("x.yaml", config_map("x", &other, "1"));
    repo.commit("one object out of bounds");
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "app",
        serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s", "serviceAccountName": "deployer" }),
    )
    .await?;
    let failed = wait_for_applyset(&ns, "app", &controller, "ApplyFailed", T, failed_with("ApplyFailed")).await?;
    assert!(condition(&failed, "Ready").unwrap().2.contains("forbidden"));
    repo.remove("x.yaml");
    let fixed = repo.commit("back in bounds");
    wait_for_applyset(&ns, "app", &controller, "Ready after the refused object left", T, ready_at(revision(&fixed)))
        .await?;
    let namespaces =
        ns.jsonpath("applyset/app", "{.metadata.annotations.applyset\\.kubernetes\\.io/additional-namespaces}")?;
    assert!(!namespaces.contains(&other), "the parent no longer records {other}: {namespaces}");
    ns.kubectl_ok(&["delete", "namespace", &other, "--wait=false"], None)?;
    Ok(())
}

// 8d. An unusable last-applied annotation (JSON, but not an object) does not fail the run as it
//    fails `kubectl apply`: the controller treats it as absent, applies the change, writes the
//    annotation anew, says so in a Warning Event, and prunes what left git in the same run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_annotation_is_treated_as_absent_and_prune_goes_on() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("annotation").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.write("b.yaml", config_map("b", &ns.name, "1"));
    let first = repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;

    let annotation = "kubectl.kubernetes.io/last-applied-configuration";
    repo.write("a.yaml", config_map("a", &ns.name, "2"));
    repo.remove("b.yaml");
    let second = repo.commit("a changes, b leaves");
    ns.kubectl_ok(&["annotate", "configmap", "a", "--overwrite", &format!("{annotation}=[1,2,3]")], None)?;
    wait_for_applyset(&ns, "app", &controller, "Ready at the second commit", T, ready_at(revision(&second))).await?;
    assert_eq!(ns.jsonpath("configmap/a", "{.data.value}")?, "2");
    assert!(!ns.exists("configmap/b")?, "b is pruned");
    let written =
        ns.jsonpath("configmap/a", "{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}")?;
    let written: serde_json::Value = serde_json::from_str(&written)?;
    assert_eq!(written["data"]["value"], "2", "the annotation is written anew");
    let events = operator::events_with(&ns, "app", "LastAppliedDiscarded").await?;
    assert!(
        events.iter().any(|(kind, reason, note)| kind == "Warning"
            && reason == "LastAppliedDiscarded"
            && note.contains("configmap/a")),
        "{events:?}"
    );
    Ok(())
}
