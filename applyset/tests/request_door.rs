//! One door to the apiserver: every request of a KEP-3659 run (discovery, the parent's GET and
//! server-side applies, the apply path's LIST and writes, prune's LIST and DELETEs) passes the
//! cluster's rate limiter. Proven on the local control plane with a low rate: the requests the
//! limiter counted include every one the run needs, and the run took at least the time that
//! count implies.

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use applyset::apply::{self, ApplyOptions};
use applyset::applyset::{DeleteOptions, Parent, ParentWrites, Run};
use applyset::cluster::{Cluster, ConnectOptions, DryRun};
use support::TestNamespace;

fn config_maps(dir: &std::path::Path, names: &[&str], namespace: &str) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(dir)? {
        std::fs::remove_file(entry?.path())?;
    }
    for name in names {
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  k: v\n"
        );
        std::fs::write(dir.join(format!("{name}.yaml")), text)?;
    }
    Ok(())
}

/// One `applyset apply --applyset=configmap/parent --prune` run through the library, on a
/// cluster limited to `qps`; returns the requests the limiter let through and the time taken.
async fn run(ns: &TestNamespace, dir: &std::path::Path, qps: f64) -> Result<(u64, Duration, usize)> {
    let connect = ConnectOptions { kubeconfig: Some(ns.kubeconfig.clone()), ..ConnectOptions::default() };
    let mut config = Cluster::load_config(&connect).await?;
    config.default_namespace = ns.name.clone();
    let cluster = Cluster::from_config(config, qps, 1)?;
    let started = Instant::now();
    let parent = Parent::prepare(&cluster, "configmap/parent", Some(&ns.name)).await?;
    let options = ApplyOptions { applyset_label: Some(parent.id().to_owned()), ..ApplyOptions::default() };
    let objects = applyset::manifest::load(&[PathBuf::from(dir)], false, std::io::empty())
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let plan = apply::plan(&cluster, objects, &options).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut run = Run::new(&cluster, parent, ParentWrites::Kubectl, DryRun::None);
    run.begin(&plan).await?;
    let report = apply::execute(&cluster, plan, &options).await;
    assert!(!report.failed(), "{:?}", report.objects.iter().map(|o| &o.result).collect::<Vec<_>>());
    let summary = run.prune(&report.visited, &DeleteOptions::new(DryRun::None)).await;
    assert!(summary.errors.is_empty(), "{:?}", summary.errors);
    run.finish().await?;
    Ok((cluster.requests_sent(), started.elapsed(), summary.pruned.len()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_a_run_passes_the_limiter() -> Result<()> {
    let ns = TestNamespace::create("door").await?;
    let dir = std::env::temp_dir().join(format!("applyset-door-{}", ns.name));
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
    config_maps(&dir, &names, &ns.name)?;
    run(&ns, &dir, 0.0).await?;

    // Two objects stay, eight leave: the second run prunes them.
    config_maps(&dir, &names[..2], &ns.name)?;
    let qps = 4.0;
    let (sent, elapsed, pruned) = run(&ns, &dir, qps).await?;
    assert_eq!(pruned, 8);
    eprintln!("{sent} requests passed the limiter in {elapsed:?} at {qps}/s");
    // At the least: one aggregated discovery (2) that the parent and the apply path share, the
    // parent's GET and two server-side applies, the apply path's LIST, prune's LIST and 8 DELETEs.
    let needed = 2 + 3 + 1 + 1 + 8;
    assert!(sent >= needed, "the limiter saw only {sent} requests of the {needed} the run needs at the least");
    let implied = Duration::from_secs_f64((sent - 1) as f64 / qps);
    assert!(
        elapsed + Duration::from_millis(100) >= implied,
        "{sent} requests at {qps}/s took {elapsed:?} < {implied:?}"
    );
    let left = ns.kubectl_ok(&["get", "configmaps", "-l", "applyset.kubernetes.io/part-of", "-o", "name"], None)?;
    assert_eq!(left.lines().count(), 2, "{left}");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
