//! Sharding (`--shard-selector`): controllers with different label selectors split one
//! namespace's ApplySets, each reconciling only its own and electing its own leader; an
//! ApplySet relabelled to another shard moves to that shard's controller.

mod git;
mod operator;
mod support;

use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};
use operator::{
    ControllerFixture, ControllerOptions, config_map, create_applyset, get_applyset, is_ready, request_reconcile,
    wait_for_applyset,
};

const T: Duration = Duration::from_secs(60);
const SHARD_KEY: &str = "sharding.applyset.dev/key";

fn shard_controller(fixture: &ControllerFixture, selector: &str) -> Result<operator::ControllerProcess> {
    ControllerOptions::for_namespace(&fixture.ns)
        .local_sources()
        .arg(format!("--shard-selector={selector}"))
        .arg("--leader-elect")
        .arg(format!("--leader-election-namespace={}", fixture.ns.name))
        .start()
}

#[tokio::test]
async fn shards_split_the_applysets_and_elect_their_own_leaders() -> Result<()> {
    let fixture = ControllerFixture::new("shard").await?;
    let (ns, repo) = (&fixture.ns, &fixture.repo);
    repo.write("one/cm.yaml", config_map("one", &ns.name, "1"));
    repo.write("two/cm.yaml", config_map("two", &ns.name, "1"));
    repo.commit("first");
    for (name, shard) in [("one", "a"), ("two", "b")] {
        create_applyset(
            ns,
            name,
            serde_json::json!({ "source": { "url": repo.url(), "path": name }, "interval": "1h" }),
        )
        .await?;
        ns.kubectl_ok(&["label", "applyset", name, &format!("{SHARD_KEY}={shard}")], None)?;
    }

    // Shard a alone: "one" is reconciled, "two" is left to its shard's controller.
    let mut shard_a = shard_controller(&fixture, &format!("{SHARD_KEY}=a"))?;
    wait_for_applyset(ns, "one", &shard_a, "shard a applies one", T, is_ready).await?;
    let requested = request_reconcile(ns, "two").await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let two = get_applyset(ns, "two").await?;
    assert!(two.status.is_none(), "shard a reconciled an ApplySet of shard b: {:?}", two.status);
    assert!(!ns.exists("configmap/two")?, "shard a applied an object of shard b");

    // Shard b's controller leads its own Lease beside shard a's and takes "two".
    let shard_b = shard_controller(&fixture, &format!("{SHARD_KEY}=b"))?;
    wait_for_applyset(ns, "two", &shard_b, "shard b applies two", T, |s| {
        is_ready(s)
            && s.status.as_ref().and_then(|s| s.last_handled_reconcile_at.as_deref()) == Some(requested.as_str())
    })
    .await?;
    let leases: Api<Lease> = Api::namespaced(ns.client.clone(), &ns.name);
    let names: Vec<String> =
        leases.list(&ListParams::default()).await?.items.into_iter().filter_map(|l| l.metadata.name).collect();
    let shard_leases: Vec<&String> = names.iter().filter(|n| n.starts_with("applyset-controller-shard-")).collect();
    assert_eq!(shard_leases.len(), 2, "one Lease per shard: {names:?}");

    // Relabelled to shard a, "two" is shard a's: with shard b stopped, a reconcile request on it
    // is handled.
    drop(shard_b);
    ns.kubectl_ok(&["label", "--overwrite", "applyset", "two", &format!("{SHARD_KEY}=a")], None)?;
    let moved = request_reconcile(ns, "two").await?;
    wait_for_applyset(ns, "two", &shard_a, "shard a takes two over", T, |s| {
        s.status.as_ref().and_then(|s| s.last_handled_reconcile_at.as_deref()) == Some(moved.as_str())
    })
    .await?;
    shard_a.stop();
    Ok(())
}

#[tokio::test]
async fn an_invalid_shard_selector_is_refused_at_start() -> Result<()> {
    let fixture = ControllerFixture::new("shardbad").await?;
    let mut options = ControllerOptions::for_namespace(&fixture.ns).arg("--shard-selector=a b c");
    options.wait_ready = false;
    let mut controller = options.start()?;
    let deadline = std::time::Instant::now() + T;
    let status = loop {
        if let Some(status) = controller.exited() {
            break status;
        }
        anyhow::ensure!(std::time::Instant::now() < deadline, "the controller kept running:\n{}", controller.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(!status.success());
    assert!(controller.log().contains("--shard-selector \"a b c\""), "{}", controller.log());
    Ok(())
}
