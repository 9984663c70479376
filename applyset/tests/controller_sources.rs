//! The controller end to end against real git servers on this machine and the real control
//! plane: HTTPS with Basic auth and a private CA, a wrong password, an unreachable host, SSH
//! with a deploy key, tags and semver ranges; and what users do with kubectl: suspend, ask for a
//! reconcile now, write invalid ApplySets, delete ApplySets, and point `kubectl apply --prune
//! --applyset` at an ApplySet. Every test has its own namespace and its own controller.

mod git;
mod operator;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use applyset::operator::api::ApplySet;
use git::{GitHttpServer, HttpAuth, SilentServer, Sshd};
use kube::Api;
use operator::{
    ControllerFixture, ControllerOptions, ControllerProcess, applied, applied_revision, condition, config_map,
    config_map_value, crd_namespace, create_applyset, failed_with, get_applyset, is_ready, patch_spec,
    request_reconcile, start_controller, wait_for_applyset,
};
use support::TestNamespace;

const T: Duration = Duration::from_secs(60);

fn ready_reason(applyset: &ApplySet) -> Option<String> {
    condition(applyset, "Ready").map(|(_, reason, _)| reason)
}

/// `kubectl create secret generic NAME ARGS… --dry-run=client -o yaml | kubectl apply -f -`:
/// how users create a Secret and later change it.
fn apply_secret(ns: &TestNamespace, name: &str, args: &[String]) -> Result<()> {
    let mut create = vec!["create", "secret", "generic", name, "--dry-run=client", "-o", "yaml"];
    create.extend(args.iter().map(String::as_str));
    let yaml = ns.kubectl_ok(&create, None)?;
    ns.kubectl_ok(&["apply", "-f", "-"], Some(&yaml))?;
    Ok(())
}

/// `secret` appears neither in the ApplySet (spec, metadata, status), nor in any Event of the
/// namespace, nor in the controller's log.
async fn assert_not_leaked(ns: &TestNamespace, name: &str, controller: &ControllerProcess, secret: &str) -> Result<()> {
    let applyset = serde_json::to_string(&get_applyset(ns, name).await?)?;
    ensure!(!applyset.contains(secret), "the ApplySet shows the secret: {applyset}");
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(ns.client.clone(), &ns.name);
    let events = events.list(&Default::default()).await?.items;
    ensure!(!events.is_empty(), "the controller recorded no Events at all");
    let events = serde_json::to_string(&events)?;
    ensure!(!events.contains(secret), "an Event shows the secret: {events}");
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(ns.client.clone(), &ns.name);
    let core = serde_json::to_string(&core.list(&Default::default()).await?.items)?;
    ensure!(!core.contains(secret), "a core/v1 Event shows the secret: {core}");
    let log = controller.log();
    ensure!(log.contains(&ns.name), "the controller log says nothing about the namespace; is it the right log?\n{log}");
    ensure!(!log.contains(secret), "the controller log shows the secret:\n{log}");
    Ok(())
}

fn write_file(dir: &Path, name: &str, content: impl AsRef<[u8]>) -> Result<String> {
    let path = dir.join(name);
    std::fs::write(&path, content).with_context(|| format!("writing {}", path.display()))?;
    Ok(path.display().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_basic_auth_with_a_private_ca() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("https").await?;
    repo.write("deploy/a.yaml", config_map("a", &ns.name, "1"));
    let first = repo.commit("first");
    let password = "s3cr3t-Pa55word-9f2c";
    let pki = git::test_pki();
    let server = GitHttpServer::start(
        repo.bare.parent().unwrap(),
        HttpAuth::Basic { user: "deployer".into(), password: password.into() },
        Some(pki.acceptor.clone()),
    );
    let url = format!("https://127.0.0.1:{}/repo.git", server.port);
    let ca = write_file(&repo.root, "ca.crt", &pki.ca_pem)?;
    let controller = ControllerOptions::for_namespace(&ns).start()?;

    // Without the CA the server's certificate is not trusted.
    apply_secret(
        &ns,
        "git-auth",
        &["--from-literal=username=deployer".into(), format!("--from-literal=password={password}")],
    )?;
    create_applyset(
        &ns,
        "app",
        serde_json::json!({ "source": { "url": url, "path": "deploy", "secretRef": { "name": "git-auth" } }, "interval": "1h" }),
    )
    .await?;
    let untrusted =
        wait_for_applyset(&ns, "app", &controller, "FetchFailed (untrusted)", T, failed_with("FetchFailed")).await?;
    let (_, _, message) = condition(&untrusted, "Ready").unwrap();
    assert!(message.contains("untrusted host") && message.contains(&url), "{message}");
    assert_eq!(config_map_value(&ns, "a")?, None);

    // With ca.crt in the Secret (as Flux's GitRepository takes it), a reconcile now succeeds.
    apply_secret(
        &ns,
        "git-auth",
        &[
            "--from-literal=username=deployer".into(),
            format!("--from-literal=password={password}"),
            format!("--from-file=ca.crt={ca}"),
        ],
    )?;
    request_reconcile(&ns, "app").await?;
    let ready = wait_for_applyset(&ns, "app", &controller, "Ready over HTTPS", T, is_ready).await?;
    assert_eq!(applied_revision(&ready), Some(format!("main@sha1:{first}").as_str()));
    assert_eq!(ready_reason(&ready).as_deref(), Some("Succeeded"));
    assert_eq!(config_map_value(&ns, "a")?.as_deref(), Some("1"));
    assert!(server.upload_packs.load(std::sync::atomic::Ordering::SeqCst) >= 1, "the objects came over HTTPS");
    assert!(server.unauthorized.load(std::sync::atomic::Ordering::SeqCst) >= 1, "the server asked for credentials");

    assert_not_leaked(&ns, "app", &controller, password).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_password_fails_the_fetch_and_prunes_nothing() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("badpass").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.write("b.yaml", config_map("b", &ns.name, "1"));
    let good = repo.commit("good");
    let password = "right-Horse-7781";
    let wrong = "wrong-Battery-4410";
    let server = GitHttpServer::start(
        repo.bare.parent().unwrap(),
        HttpAuth::Basic { user: "deployer".into(), password: password.into() },
        None,
    );
    let url = server.url("repo.git");
    let controller = ControllerOptions::for_namespace(&ns).start()?;
    apply_secret(
        &ns,
        "git-auth",
        &["--from-literal=username=deployer".into(), format!("--from-literal=password={password}")],
    )?;
    create_applyset(
        &ns,
        "app",
        serde_json::json!({ "source": { "url": url, "secretRef": { "name": "git-auth" } }, "interval": "1h" }),
    )
    .await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;
    assert_eq!(config_map_value(&ns, "b")?.as_deref(), Some("1"));

    // The Secret gets a wrong password and b.yaml is removed upstream: the fetch must fail,
    // and b must survive.
    apply_secret(
        &ns,
        "git-auth",
        &["--from-literal=username=deployer".into(), format!("--from-literal=password={wrong}")],
    )?;
    repo.remove("b.yaml");
    repo.write("a.yaml", config_map("a", &ns.name, "2"));
    let removed = repo.commit("remove b");
    let requested = request_reconcile(&ns, "app").await?;
    let failed = wait_for_applyset(&ns, "app", &controller, "FetchFailed", T, failed_with("FetchFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap();
    assert!(message.contains("authentication failed"), "{message}");
    assert!(message.contains(&url), "the message names the repository: {message}");
    let status = failed.status.clone().unwrap();
    assert_eq!(status.last_handled_reconcile_at.as_deref(), Some(requested.as_str()));
    assert_eq!(status.last_applied_revision.as_deref(), Some(format!("main@sha1:{good}").as_str()));
    assert_eq!(config_map_value(&ns, "b")?.as_deref(), Some("1"), "nothing is pruned when the fetch fails");
    assert_eq!(config_map_value(&ns, "a")?.as_deref(), Some("1"), "nothing is applied when the fetch fails");
    let events = operator::events_with(&ns, "app", "FetchFailed").await?;
    assert!(
        events.iter().any(|(kind, reason, note)| kind == "Warning"
            && reason == "FetchFailed"
            && note.contains("authentication failed")),
        "{events:?}"
    );
    assert_not_leaked(&ns, "app", &controller, wrong).await?;
    assert_not_leaked(&ns, "app", &controller, password).await?;

    // Fixing the Secret recovers: the new commit is applied and b is pruned.
    apply_secret(
        &ns,
        "git-auth",
        &["--from-literal=username=deployer".into(), format!("--from-literal=password={password}")],
    )?;
    request_reconcile(&ns, "app").await?;
    wait_for_applyset(&ns, "app", &controller, "the fixed Secret used", T, applied(format!("main@sha1:{removed}")))
        .await?;
    assert_eq!(config_map_value(&ns, "b")?, None);
    assert_eq!(config_map_value(&ns, "a")?.as_deref(), Some("2"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_repository_times_out_and_prunes_nothing() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("unreach").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    let good = repo.commit("good");
    let server = GitHttpServer::start(repo.bare.parent().unwrap(), HttpAuth::None, None);
    let controller = ControllerOptions::for_namespace(&ns).start()?;
    create_applyset(
        &ns,
        "app",
        serde_json::json!({ "source": { "url": server.url("repo.git") }, "interval": "1h", "timeout": "2s" }),
    )
    .await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;

    // A closed port (the git host is down): refused at once.
    let closed_url = format!("http://127.0.0.1:{}/repo.git", support::free_port());
    patch_spec(&ns, "app", serde_json::json!({ "source": { "url": closed_url } })).await?;
    let failed =
        wait_for_applyset(&ns, "app", &controller, "FetchFailed (closed port)", Duration::from_secs(30), |a| {
            failed_with("FetchFailed")(a) && condition(a, "Ready").is_some_and(|(_, _, m)| m.contains(&closed_url))
        })
        .await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap();
    assert!(message.contains("unreachable"), "{message}");
    assert_eq!(config_map_value(&ns, "a")?.as_deref(), Some("1"), "nothing is pruned when the fetch fails");

    // A host that accepts connections and never answers: the 2s timeout applies, not the 2m
    // default. (Last: the abandoned fetch keeps this ApplySet's git cache locked until libgit2's
    // own socket timeout, so a following fetch would time out too.)
    let silent = SilentServer::start();
    let silent_url = format!("http://127.0.0.1:{}/repo.git", silent.port);
    let started = Instant::now();
    patch_spec(&ns, "app", serde_json::json!({ "source": { "url": silent_url } })).await?;
    let failed = wait_for_applyset(&ns, "app", &controller, "FetchFailed (timeout)", Duration::from_secs(30), |a| {
        failed_with("FetchFailed")(a) && condition(a, "Ready").is_some_and(|(_, _, m)| m.contains(&silent_url))
    })
    .await?;
    let took = started.elapsed();
    let (_, _, message) = condition(&failed, "Ready").unwrap();
    assert!(message.contains("timed out"), "{message}");
    assert!(took < Duration::from_secs(20), "a 2s fetch timeout took {took:?} to report");
    assert_eq!(failed.status.as_ref().unwrap().observed_generation, failed.metadata.generation);
    assert_eq!(applied_revision(&failed), Some(format!("main@sha1:{good}").as_str()));
    assert_eq!(config_map_value(&ns, "a")?.as_deref(), Some("1"), "nothing is pruned when the fetch fails");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_with_a_deploy_key() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("ssh").await?;
    repo.write("deploy/a.yaml", config_map("a", &ns.name, "over-ssh"));
    let first = repo.commit("first");
    let sshd = Sshd::start(&repo.root.join("sshd"));
    let identity = repo.root.join("sshd/client_key").display().to_string();
    let known_hosts = write_file(&repo.root, "known_hosts", &sshd.known_hosts)?;
    let controller = ControllerOptions::for_namespace(&ns).start()?;
    apply_secret(
        &ns,
        "deploy-key",
        &[format!("--from-file=identity={identity}"), format!("--from-file=known_hosts={known_hosts}")],
    )?;
    create_applyset(
        &ns,
        "app",
        serde_json::json!({
            "source": { "url": sshd.url(&repo.bare), "path": "deploy", "secretRef": { "name": "deploy-key" } },
            "interval": "2s",
        }),
    )
    .await?;
    let ready = match wait_for_applyset(&ns, "app", &controller, "Ready over SSH", T, is_ready).await {
        Ok(ready) => ready,
        Err(error) => panic!("{error:#}\nsshd log:\n{}", sshd.log()),
    };
    assert_eq!(applied_revision(&ready), Some(format!("main@sha1:{first}").as_str()));
    assert_eq!(config_map_value(&ns, "a")?.as_deref(), Some("over-ssh"));

    // It keeps following the branch over SSH.
    repo.write("deploy/a.yaml", config_map("a", &ns.name, "second"));
    let second = repo.commit("second");
    wait_for_applyset(&ns, "app", &controller, "the second commit over SSH", T, applied(format!("main@sha1:{second}")))
        .await?;
    assert_eq!(config_map_value(&ns, "a")?.as_deref(), Some("second"));
    let key = std::fs::read_to_string(&identity)?;
    let key_body = key.lines().nth(1).expect("an OpenSSH private key has a body");
    assert_not_leaked(&ns, "app", &controller, key_body).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspend_stops_applying_until_resumed() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("suspend").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.write("b.yaml", config_map("b", &ns.name, "1"));
    let first = repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;

    ns.kubectl_ok(&["patch", "applyset", "app", "--type=merge", "-p", r#"{"spec":{"suspend":true}}"#], None)?;
    let suspended = wait_for_applyset(&ns, "app", &controller, "Suspended", T, |a| {
        ready_reason(a).as_deref() == Some("Suspended")
            && a.status.as_ref().unwrap().observed_generation == a.metadata.generation
    })
    .await?;
    let (status, _, message) = condition(&suspended, "Ready").unwrap();
    assert_eq!(status, "True", "suspending keeps the last known readiness");
    assert!(message.contains("suspended"), "{message}");

    // New commits (a change and a removal) are neither applied nor pruned while suspended, even
    // when a reconcile is asked for: the controller handles the request and does nothing.
    repo.write("a.yaml", config_map("a", &ns.name, "2"));
    repo.remove("b.yaml");
    let second = repo.commit("second");
    let requested = request_reconcile(&ns, "app").await?;
    let handled = wait_for_applyset(&ns, "app", &controller, "the request handled while suspended", T, |a| {
        a.status.as_ref().and_then(|s| s.last_handled_reconcile_at.as_deref()) == Some(requested.as_str())
    })
    .await?;
    assert_eq!(ready_reason(&handled).as_deref(), Some("Suspended"));
    assert_eq!(applied_revision(&handled), Some(format!("main@sha1:{first}").as_str()));
    assert_eq!(config_map_value(&ns, "a")?.as_deref(), Some("1"));
    assert_eq!(config_map_value(&ns, "b")?.as_deref(), Some("1"));

    ns.kubectl_ok(&["patch", "applyset", "app", "--type=merge", "-p", r#"{"spec":{"suspend":false}}"#], None)?;
    let resumed = wait_for_applyset(&ns, "app", &controller, "the second commit after resuming", T, |a| {
        applied(format!("main@sha1:{second}"))(a) && is_ready(a)
    })
    .await?;
    assert_eq!(ready_reason(&resumed).as_deref(), Some("Succeeded"));
    assert_eq!(config_map_value(&ns, "a")?.as_deref(), Some("2"));
    assert_eq!(config_map_value(&ns, "b")?, None);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_request_applies_a_new_commit_before_the_interval() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("request").await?;
    repo.write("slow/a.yaml", config_map("slow", &ns.name, "1"));
    let first = repo.commit("first");
    // The witness follows a repository of its own: ApplySets of one source share its listing,
    // and one that finds a new commit wakes the others (see git_shared_source.rs).
    let witness = git::Fixture::new(&format!("witness-{}", ns.name));
    witness.write("fast/a.yaml", config_map("fast", &ns.name, "1"));
    witness.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "slow",
        serde_json::json!({ "source": { "url": repo.url(), "path": "slow" }, "interval": "1h" }),
    )
    .await?;
    // A witness polling every 2s.
    create_applyset(
        &ns,
        "fast",
        serde_json::json!({ "source": { "url": witness.url(), "path": "fast" }, "interval": "2s" }),
    )
    .await?;
    wait_for_applyset(&ns, "slow", &controller, "slow Ready", T, is_ready).await?;
    wait_for_applyset(&ns, "fast", &controller, "fast Ready", T, is_ready).await?;

    repo.write("slow/a.yaml", config_map("slow", &ns.name, "2"));
    let second = repo.commit("second");
    witness.write("fast/a.yaml", config_map("fast", &ns.name, "2"));
    let witness_second = witness.commit("second");
    // The witness has fetched and applied its commit: the controller is polling, and the
    // hourly ApplySet has not applied its own.
    wait_for_applyset(
        &ns,
        "fast",
        &controller,
        "the witness applied the commit",
        T,
        applied(format!("main@sha1:{witness_second}")),
    )
    .await?;
    let slow = get_applyset(&ns, "slow").await?;
    assert_eq!(applied_revision(&slow), Some(format!("main@sha1:{first}").as_str()));
    assert_eq!(config_map_value(&ns, "slow")?.as_deref(), Some("1"));
    assert_eq!(slow.status.as_ref().unwrap().last_handled_reconcile_at, None);

    let requested = request_reconcile(&ns, "slow").await?;
    let done = wait_for_applyset(
        &ns,
        "slow",
        &controller,
        "the requested reconcile",
        T,
        applied(format!("main@sha1:{second}")),
    )
    .await?;
    assert_eq!(done.status.as_ref().unwrap().last_handled_reconcile_at.as_deref(), Some(requested.as_str()));
    assert_eq!(config_map_value(&ns, "slow")?.as_deref(), Some("2"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apiserver_rejects_invalid_applysets() -> Result<()> {
    let ns = crd_namespace("invalid").await?;
    let applyset = |name: &str, spec: &str| {
        format!("apiVersion: applyset.dev/v1alpha1\nkind: ApplySet\nmetadata:\n  name: {name}\nspec:\n{spec}")
    };
    let source = "  source:\n    url: https://git.example.com/org/repo.git\n";
    let cases = [
        ("bad-interval", format!("{source}  interval: 5 minutes\n"), vec!["spec.interval", "should match"]),
        (
            "branch-and-tag",
            "  source:\n    url: https://git.example.com/org/repo.git\n    ref:\n      branch: main\n      tag: v1.0.0\n".to_owned(),
            vec!["spec.source.ref", "set one of branch, tag, semver or commit"],
        ),
        (
            "short-commit",
            "  source:\n    url: https://git.example.com/org/repo.git\n    ref:\n      commit: abc123\n".to_owned(),
            vec!["spec.source.ref", "commit must be a full 40-hex-digit SHA-1"],
        ),
        (
            "drift-sometimes",
            format!("{source}  drift:\n    mode: Sometimes\n"),
            vec!["spec.drift.mode", "Unsupported value: \"Sometimes\"", "\"Correct\"", "\"Report\""],
        ),
    ];
    for (name, spec, expected) in &cases {
        let out = support::run(ns.kubectl()?.args(["apply", "-f", "-"]), Some(&applyset(name, spec)))?;
        assert!(!out.success, "{name} was accepted: {}", out.stdout);
        for needle in expected {
            assert!(out.stderr.contains(needle), "{name}: expected {needle:?} in:\n{}", out.stderr);
        }
    }
    // The same shapes, written correctly, are accepted: the rejections are about the fields.
    let valid = format!(
        "{source}    ref:\n      branch: main\n      commit: 0123456789abcdef0123456789abcdef01234567\n  interval: 5m\n  drift:\n    mode: Report\n"
    );
    ns.kubectl_ok(&["apply", "-f", "-"], Some(&applyset("valid", &valid)))?;
    let names = ns.kubectl_ok(&["get", "applysets", "-o", "name"], None)?;
    assert_eq!(names.trim(), "applyset.applyset.dev/valid");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_an_applyset_deletes_or_orphans_its_objects() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("delete").await?;
    repo.write("owned/a.yaml", config_map("owned-a", &ns.name, "1"));
    repo.write("owned/b.yaml", config_map("owned-b", &ns.name, "1"));
    repo.write("kept/a.yaml", config_map("kept-a", &ns.name, "1"));
    repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "owned",
        serde_json::json!({ "source": { "url": repo.url(), "path": "owned" }, "interval": "1h" }),
    )
    .await?;
    create_applyset(
        &ns,
        "kept",
        serde_json::json!({ "source": { "url": repo.url(), "path": "kept" }, "interval": "1h", "deletionPolicy": "Orphan" }),
    )
    .await?;
    let owned = wait_for_applyset(&ns, "owned", &controller, "owned Ready", T, is_ready).await?;
    wait_for_applyset(&ns, "kept", &controller, "kept Ready", T, is_ready).await?;
    assert_eq!(owned.metadata.finalizers.as_deref(), Some(&["applyset.dev/finalizer".to_owned()][..]));
    assert_eq!(config_map_value(&ns, "owned-a")?.as_deref(), Some("1"));

    // kubectl delete waits for the finalizer: when it returns, the objects are gone already.
    ns.kubectl_ok(&["delete", "applyset", "owned", "--timeout=60s"], None)?;
    assert_eq!(config_map_value(&ns, "owned-a")?, None);
    assert_eq!(config_map_value(&ns, "owned-b")?, None);
    assert_eq!(config_map_value(&ns, "kept-a")?.as_deref(), Some("1"), "another ApplySet's objects are not touched");
    let events = operator::events_with(&ns, "owned", "Pruned").await?;
    assert!(
        events
            .iter()
            .any(|(_, reason, note)| reason == "Pruned" && note.contains("owned-a") && note.contains("owned-b")),
        "{events:?}"
    );

    ns.kubectl_ok(&["delete", "applyset", "kept", "--timeout=60s"], None)?;
    let left = ns.kubectl_ok(&["get", "applysets", "-o", "name"], None)?;
    assert_eq!(left.trim(), "", "both ApplySets are gone");
    assert_eq!(config_map_value(&ns, "kept-a")?.as_deref(), Some("1"), "deletionPolicy Orphan keeps the objects");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_recognises_the_applyset_as_a_parent_it_does_not_manage() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("kubectl").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "1h" })).await?;
    let ready = wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;
    let tooling = ready.metadata.annotations.as_ref().and_then(|a| a.get("applyset.kubernetes.io/tooling")).cloned();
    assert!(tooling.as_deref().is_some_and(|t| t.starts_with("applyset/")), "{tooling:?}");

    let manifest = write_file(&repo.root, "other.yaml", config_map("other", &ns.name, "x"))?;
    let parent = "applysets.applyset.dev/app";
    let mut command = ns.kubectl()?;
    command.env("KUBECTL_APPLYSET", "true").args([
        "apply",
        "--prune",
        &format!("--applyset={parent}"),
        "-f",
        &manifest,
    ]);
    let out = support::run(&mut command, None)?;
    assert!(!out.success, "kubectl took over the ApplySet:\n{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains(r#"is managed by tooling "applyset" instead of "kubectl""#), "{}", out.stderr);
    assert_eq!(config_map_value(&ns, "other")?, None, "kubectl applied nothing");
    assert_eq!(config_map_value(&ns, "a")?.as_deref(), Some("1"), "kubectl pruned nothing");
    let after = get_applyset(&ns, "app").await?;
    assert_eq!(after.metadata.annotations, ready.metadata.annotations, "the parent's metadata is unchanged");
    assert_eq!(after.metadata.labels, ready.metadata.labels);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_and_semver_ranges_pick_the_right_commit() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("tags").await?;
    let release = |version: &str| {
        repo.write("pinned/a.yaml", config_map("pinned", &ns.name, version));
        repo.write("ranged/a.yaml", config_map("ranged", &ns.name, version));
        repo.commit(version)
    };
    let v100 = release("1.0.0");
    repo.tag("v1.0.0", true); // annotated: the revision names the commit, not the tag object
    let v120 = release("1.2.0");
    repo.tag("v1.2.0", false);
    release("1.9.0-rc.1");
    repo.tag("v1.9.0-rc.1", true); // a pre-release is not in >=1.0.0 <2.0.0
    release("2.0.0");
    repo.tag("v2.0.0", true);
    release("unreleased"); // main moves on, untagged
    let controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "pinned",
        serde_json::json!({ "source": { "url": repo.url(), "path": "pinned", "ref": { "tag": "v1.0.0" } }, "interval": "2s" }),
    )
    .await?;
    create_applyset(
        &ns,
        "ranged",
        serde_json::json!({ "source": { "url": repo.url(), "path": "ranged", "ref": { "semver": ">=1.0.0 <2.0.0" } }, "interval": "2s" }),
    )
    .await?;
    let pinned = wait_for_applyset(&ns, "pinned", &controller, "pinned Ready", T, is_ready).await?;
    let ranged = wait_for_applyset(&ns, "ranged", &controller, "ranged Ready", T, is_ready).await?;
    assert_eq!(applied_revision(&pinned), Some(format!("v1.0.0@sha1:{v100}").as_str()));
    assert_eq!(applied_revision(&ranged), Some(format!("v1.2.0@sha1:{v120}").as_str()));
    assert_eq!(config_map_value(&ns, "pinned")?.as_deref(), Some("1.0.0"));
    assert_eq!(config_map_value(&ns, "ranged")?.as_deref(), Some("1.2.0"));
    let columns = ns.kubectl_ok(&["get", "applyset", "ranged", "--no-headers"], None)?;
    assert!(columns.contains(&format!("v1.2.0@sha1:{v120}")), "kubectl get shows the revision: {columns}");

    // A new matching release is picked up; the pinned tag stays.
    let v130 = release("1.3.0");
    repo.tag("v1.3.0", false);
    wait_for_applyset(&ns, "ranged", &controller, "v1.3.0 applied", T, applied(format!("v1.3.0@sha1:{v130}"))).await?;
    assert_eq!(config_map_value(&ns, "ranged")?.as_deref(), Some("1.3.0"));
    let pinned = get_applyset(&ns, "pinned").await?;
    assert_eq!(applied_revision(&pinned), Some(format!("v1.0.0@sha1:{v100}").as_str()));
    assert_eq!(config_map_value(&ns, "pinned")?.as_deref(), Some("1.0.0"));
    Ok(())
}
