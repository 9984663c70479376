//! Objects too large for client-side apply (their last-applied annotation would pass the
//! apiserver's 262144-byte limit), end to end: the controller applies them server-side, keeps
//! them in the set (Ready, `method: ServerSide`), sends nothing on a no-op run, corrects drift,
//! returns them to client-side apply when they shrink (no field left behind), and prunes them;
//! a CRD too large for the annotation works the same way.

mod git;
mod operator;
mod support;

use std::time::Duration;

use anyhow::{Context, Result};
use operator::{ControllerFixture, create_applyset, ready_at, revision, start_controller, wait_for_applyset};
use support::TestNamespace;

const T: Duration = Duration::from_secs(90);
/// Over the annotation limit, under the apiserver's request limit.
const BLOB: usize = 300 * 1024;

fn big_config_map(namespace: &str, small: &str, blob: Option<usize>) -> String {
    let blob = blob.map(|size| format!("  blob: \"{}\"\n", "x".repeat(size))).unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: {namespace}\ndata:\n  small: \"{small}\"\n{blob}"
    )
}

fn managers(ns: &TestNamespace, resource: &str) -> Result<String> {
    ns.jsonpath(resource, "{range .metadata.managedFields[*]}{.manager}/{.operation} {end}")
}

fn annotation(ns: &TestNamespace, resource: &str) -> Result<String> {
    ns.jsonpath(resource, "{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_config_map_is_applied_server_side_and_comes_back() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("oversized").await?;
    repo.write("big.yaml", big_config_map(&ns.name, "1", Some(BLOB)));
    repo.write("other.yaml", operator::config_map("other", &ns.name, "1"));
    let first = repo.commit("a 300 KiB ConfigMap");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    let ready = wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    assert_eq!(ns.jsonpath("configmap/big", "{.data.small}")?, "1");
    assert_eq!(annotation(&ns, "configmap/big")?, "", "no last-applied annotation");
    assert!(managers(&ns, "configmap/big")?.contains("applyset/Apply"), "{}", managers(&ns, "configmap/big")?);
    let inventory = ready.status.and_then(|s| s.inventory).context("inventory")?;
    let entry = inventory.objects.iter().find(|o| o.name == "big").context("big in the inventory")?;
    assert_eq!(entry.method.as_deref(), Some("ServerSide"), "{entry:?}");
    assert!(entry.message.as_deref().unwrap_or_default().contains("over the apiserver's limit of 262144"), "{entry:?}");

    // A no-op run sends nothing.
    let version = ns.jsonpath("configmap/big", "{.metadata.resourceVersion}")?;
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(ns.jsonpath("configmap/big", "{.metadata.resourceVersion}")?, version);

    // Changed in git: applied.
    repo.write("big.yaml", big_config_map(&ns.name, "2", Some(BLOB)));
    let second = repo.commit("small is 2");
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&second))).await?;
    assert_eq!(ns.jsonpath("configmap/big", "{.data.small}")?, "2");

    // Changed by hand: a steady run corrects it (forcing the field back).
    ns.kubectl_ok(&["patch", "configmap", "big", "--type=merge", "-p", r#"{"data":{"small":"hand"}}"#], None)?;
    support::eventually("the drift corrected", T, || async {
        Ok((ns.jsonpath("configmap/big", "{.data.small}")? == "2").then_some(()))
    })
    .await?;

    // Shrunk back under the limit: client-side again, and the blob git dropped is gone.
    repo.write("big.yaml", big_config_map(&ns.name, "3", None));
    let third = repo.commit("small again");
    let back = wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&third))).await?;
    assert_eq!(ns.jsonpath("configmap/big", "{.data.small}")?, "3");
    assert_eq!(ns.jsonpath("configmap/big", "{.data.blob}")?, "", "no field left behind");
    assert!(annotation(&ns, "configmap/big")?.contains("\"small\":\"3\""), "client-side again");
    let entry = back.status.and_then(|s| s.inventory).map(|i| i.objects).unwrap_or_default();
    assert!(entry.iter().all(|o| o.method.is_none()), "{entry:?}");

    // Large again, then pruned.
    repo.write("big.yaml", big_config_map(&ns.name, "4", Some(BLOB)));
    let fourth = repo.commit("large again");
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&fourth))).await?;
    assert_eq!(annotation(&ns, "configmap/big")?, "", "the out-of-date annotation is dropped");
    assert_eq!(ns.jsonpath("configmap/big", "{.data.small}")?, "4");
    repo.remove("big.yaml");
    let fifth = repo.commit("big leaves");
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&fifth))).await?;
    assert!(!ns.exists("configmap/big")?, "pruned like the others");
    Ok(())
}

/// A CRD with a schema of many documented properties: over the annotation limit.
fn large_crd(group: &str, description: &str) -> String {
    let properties: String = (0..1500)
        .map(|i| format!("              field{i:04}:\n                type: string\n                description: \"{description} {i} {}\"\n", "d".repeat(150)))
        .collect();
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.{group}\nspec:\n  group: {group}\n  scope: Namespaced\n  names: {{plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n{properties}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_crd_and_its_custom_resources_apply() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("bigcrd").await?;
    let group = format!("{}.example.com", ns.name);
    let crd = format!("crd/gadgets.{group}");
    repo.write("crd.yaml", large_crd(&group, "v1"));
    repo.write(
        "gadget.yaml",
        format!(
            "apiVersion: {group}/v1\nkind: Gadget\nmetadata:\n  name: g\n  namespace: {}\nspec:\n  field0001: a\n",
            ns.name
        ),
    );
    let first = repo.commit("a large CRD and a Gadget");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "app", serde_json::json!({ "source": { "url": repo.url() }, "interval": "2s" })).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    assert_eq!(annotation(&ns, &crd)?, "");
    assert!(managers(&ns, &crd)?.contains("applyset/Apply"));
    assert_eq!(ns.jsonpath(&format!("gadgets.{group}/g"), "{.spec.field0001}")?, "a");

    repo.write("crd.yaml", large_crd(&group, "v2"));
    let second = repo.commit("descriptions changed");
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&second))).await?;
    let description = ns.jsonpath(
        &crd,
        "{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.field0001.description}",
    )?;
    assert!(description.starts_with("v2 1 "), "{}", &description[..20.min(description.len())]);
    ns.kubectl_ok(&["delete", "applyset", "app", "--timeout=60s"], None)?;
    assert!(!ns.exists(&crd)?, "deleted with the ApplySet, after its custom resources");
    Ok(())
}

/// A source with more objects than the status can record for prune (20,000 ConfigMaps: about
/// 2 MiB of `status.inventory.members`, past etcd's request limit) fails safely: nothing is
/// applied, `Ready=False`/`Stalled=True` with `InventoryTooLarge` naming the size and the limit,
/// one Warning Event, retries at the backoff only, and the controller's memory stays bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_too_large_to_record_fails_before_applying_anything() -> Result<()> {
    const COUNT: usize = 20_000;
    let ControllerFixture { ns, repo } = ControllerFixture::new("toolarge").await?;
    // Files under the 2 MiB file cap; the revision under the 4 MiB cap.
    for file in 0..4 {
        let text: String = (file * COUNT / 4..(file + 1) * COUNT / 4)
            .map(|i| format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata: {{k: v}}\n"))
            .collect();
        repo.write(&format!("part{file}.yaml"), text);
    }
    repo.commit("20,000 ConfigMaps");
    let controller = start_controller(&ns)?;
    let spec = serde_json::json!({ "source": { "url": repo.url() }, "interval": "1m", "retryInterval": "2s" });
    create_applyset(&ns, "huge", spec).await?;
    let failed = wait_for_applyset(&ns, "huge", &controller, "InventoryTooLarge", T, |a| {
        operator::condition(a, "Ready").is_some_and(|c| c.1 == "InventoryTooLarge")
    })
    .await?;
    let (_, reason, message) = operator::condition(&failed, "Stalled").context("a Stalled condition")?;
    assert_eq!(reason, "InventoryTooLarge");
    assert!(
        message.starts_with("20000 object(s): recording them for prune")
            && message.contains("over the limit of 1048576 bytes")
            && message.contains("nothing was applied or pruned"),
        "{message}"
    );
    // The retries of 20 s: at the backoff (2 s, 4 s, 8 s, 16 s), not a storm; one Event.
    let rss = |metrics: &str| operator::sample(metrics, "process_resident_memory_bytes").unwrap_or(0.0) / 1048576.0;
    let first_rss = rss(&controller.metrics()?);
    tokio::time::sleep(Duration::from_secs(20)).await;
    let metrics = controller.metrics()?;
    let runs = operator::sample(&metrics, r#"applyset_reconcile_total{result="inventory_too_large"}"#).unwrap_or(0.0);
    assert!((1.0..=6.0).contains(&runs), "{runs} runs in about 20 s");
    let events = operator::events_for(&ns, "huge").await?;
    let warnings: Vec<_> =
        events.iter().filter(|(kind, reason, _)| kind == "Warning" && reason == "InventoryTooLarge").collect();
    assert_eq!(warnings.len(), 1, "{events:?}");
    let created = ns.kubectl_ok(&["get", "configmaps", "-l", "applyset.kubernetes.io/part-of", "-o", "name"], None)?;
    assert_eq!(created.trim(), "", "nothing was applied");
    // Memory follows the set, not the retries.
    let last_rss = rss(&metrics);
    eprintln!(
        "20,000 objects refused in {runs} run(s); RSS {first_rss:.1} MiB after the first, {last_rss:.1} MiB after 20 s"
    );
    assert!(last_rss < first_rss + 64.0, "RSS grew from {first_rss:.1} to {last_rss:.1} MiB");
    assert!(last_rss < 512.0, "over the chart's limit: {last_rss:.1} MiB");
    Ok(())
}
