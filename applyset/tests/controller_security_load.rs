//! The controller against hostile commits (issue 15): a manifest file too large to load, and
//! strategic-merge-patch directives written in a manifest. Each fails the load (`LoadFailed`)
//! naming the culprit, and leaves what is running as it was.

mod git;
mod operator;
mod support;

use std::io::Write;
use std::time::Duration;

use anyhow::{Context, Result};
use operator::{
    ControllerFixture, ControllerProcess, applied, condition, config_map, create_applyset, failed_with, is_ready,
    ready_at, revision, start_controller, wait_for_applyset,
};

const T: Duration = Duration::from_secs(120);

/// The controller's peak resident memory (`VmHWM`), in bytes.
fn peak_rss(controller: &ControllerProcess) -> Result<u64> {
    let pid = controller.pid().context("the controller is not running")?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).context("no VmHWM")?;
    let kib: u64 = line.split_whitespace().nth(1).context("VmHWM has no value")?.parse()?;
    Ok(kib * 1024)
}

const MI: u64 = 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_mb_manifest_fails_the_load_without_being_read() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("bigfile").await?;
    repo.write("app/a.yaml", config_map("a", &ns.name, "1"));
    repo.write("app/b.yaml", config_map("b", &ns.name, "1"));
    let good = repo.commit("good");
    let mut controller = start_controller(&ns)?;
    create_applyset(
        &ns,
        "app",
        serde_json::json!({ "source": { "url": repo.url(), "path": "app" }, "interval": "2s" }),
    )
    .await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, is_ready).await?;

    // 100 MiB of 10 KiB documents of a kind no cluster has (should a controller load them,
    // nothing gets written), about 100 KiB once compressed in git. b.yaml goes in the same
    // commit: it must not be pruned.
    let big = repo.work.join("app/big.yaml");
    {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&big)?);
        let filler = "x".repeat(10 * 1024 - 120);
        let mut i = 0;
        while out.get_ref().metadata()?.len() + (out.buffer().len() as u64) < 100 * MI {
            write!(
                out,
                "apiVersion: example.invalid/v1\nkind: Blob\nmetadata:\n  name: b{i}\ndata: \"{filler}\"\n---\n"
            )?;
            i += 1;
        }
    }
    let size = std::fs::metadata(&big)?.len();
    repo.remove("app/b.yaml");
    let bad = repo.commit("a 100 MB file");

    let failed = wait_for_applyset(&ns, "app", &controller, "LoadFailed", T, failed_with("LoadFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap();
    // The file relative to the repository, its size and the limit.
    assert!(message.contains(&format!("app/big.yaml: the file is {size} bytes")), "{message}");
    assert!(message.contains("over the limit of 2097152 bytes (2 MiB) per manifest file"), "{message}");
    assert!(!message.contains(&repo.root.display().to_string()), "{message}");
    let status = failed.status.clone().unwrap();
    assert_eq!(status.last_attempted_revision.as_deref(), Some(format!("main@sha1:{bad}").as_str()));
    assert!(applied(revision(&good))(&failed));
    // Nothing applied, nothing pruned.
    for name in ["a", "b"] {
        assert_eq!(ns.kubectl_ok(&["get", "configmap", name, "-o", "jsonpath={.data.value}"], None)?, "1");
    }
    // A few more runs of the failing revision, then the peak: fetching and checking out the
    // blob (libgit2 holds it whole) is the controller's only cost for it.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let peak = peak_rss(&controller)?;
    eprintln!("controller peak RSS (VmHWM): {} MiB", peak / MI);
    assert!(peak < 256 * MI, "the controller's peak RSS is {} MiB", peak / MI);
    assert!(controller.exited().is_none(), "the controller exited:\n{}", controller.log());

    controller.stop();
    let _ = std::fs::remove_dir_all(&controller.cache_dir);
    let _ = std::fs::remove_dir_all(&repo.root);
    Ok(())
}

fn deployment(namespace: &str, container_b_extra: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {namespace}
spec:
  replicas: 0
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: a
        image: registry.invalid/a:1
      - name: b
        image: registry.invalid/b:1
{container_b_extra}"
    )
}

const LAST_APPLIED: &str = "jsonpath={.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_directive_in_git_is_refused_and_a_revert_recovers() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("directive").await?;
    repo.write("web.yaml", deployment(&ns.name, ""));
    repo.write("extra.yaml", config_map("extra", &ns.name, "1"));
    let first = repo.commit("web");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    let live = |what: &str| ns.kubectl_ok(&["get", "deployment", "web", "-o", what], None);
    let containers = "jsonpath={.spec.template.spec.containers[*].name}";
    let annotation = live(LAST_APPLIED)?;
    let generation = live("jsonpath={.metadata.generation}")?;
    assert_eq!(live(containers)?, "a b");
    assert!(!annotation.contains("$patch"), "{annotation}");

    // Deleting container b with a directive written in git (and extra.yaml, a prune
    // candidate, in the same commit).
    repo.write("web.yaml", deployment(&ns.name, "        $patch: delete\n"));
    repo.remove("extra.yaml");
    let second = repo.commit("delete b with a directive");
    let failed = wait_for_applyset(&ns, "app", &controller, "LoadFailed", T, failed_with("LoadFailed")).await?;
    let (_, _, message) = condition(&failed, "Ready").unwrap();
    assert!(
        message.contains(&format!(
            "web.yaml: document 1: line 1: Deployment.apps {}/web: field spec.template.spec.containers[1].$patch: ",
            ns.name
        )),
        "{message}"
    );
    assert_eq!(
        failed.status.as_ref().and_then(|s| s.last_attempted_revision.as_deref()),
        Some(format!("main@sha1:{second}").as_str())
    );
    assert!(applied(revision(&first))(&failed));
    // Let a few more runs fail, then: nothing changed, nothing pruned, the annotation never
    // got the key.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(live(containers)?, "a b");
    assert_eq!(live(LAST_APPLIED)?, annotation);
    assert_eq!(live("jsonpath={.metadata.generation}")?, generation);
    assert_eq!(ns.kubectl_ok(&["get", "configmap", "extra", "-o", "jsonpath={.data.value}"], None)?, "1");

    // The revert applies.
    repo.write("web.yaml", deployment(&ns.name, ""));
    repo.write("extra.yaml", config_map("extra", &ns.name, "1"));
    let third = repo.commit("revert");
    wait_for_applyset(&ns, "app", &controller, "Ready after the revert", T, ready_at(revision(&third))).await?;
    assert_eq!(live(containers)?, "a b");
    assert_eq!(live(LAST_APPLIED)?, annotation);
    Ok(())
}
