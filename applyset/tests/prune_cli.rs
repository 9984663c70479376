//! `applyset apply --prune` against the real test control plane, side by side with the real
//! `kubectl.1.33`: legacy label-selector prune and ApplySet (KEP-3659) prune with Secret and
//! custom resource parents.

mod support;

use std::collections::BTreeMap;

use anyhow::{Context, Result, ensure};
use applyset::applyset::{FIELD_MANAGER, KUBECTL_TOOLING, applyset_id};
use applyset::keys::{
    ADDITIONAL_NAMESPACES_ANNOTATION, GROUP_KINDS_ANNOTATION, PARENT_ID_LABEL, PART_OF_LABEL, TOOLING_ANNOTATION,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::DynamicObject;
use kube::core::{ApiResource, GroupVersionKind};
use support::{
    CommandOutput, CrdCleanup, ManifestDir, TestNamespace, applyset_apply as applyset, applyset_cli, lines,
    random_suffix, run,
};

/// A label key no other object on the cluster uses: the default allow-list also lists
/// cluster-scoped kinds (Namespace, PersistentVolume).
const SEL_KEY: &str = "prune-test.applyset.io/sel";
const SEL_X: &str = "prune-test.applyset.io/sel=one";
const SEL_ANY: &str = "prune-test.applyset.io/sel!=none";

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn config_map(name: &str, labels: &[(&str, &str)]) -> String {
    let labels: String = labels.iter().map(|(k, v)| format!("    {k}: {v}\n")).collect();
    let labels = if labels.is_empty() { String::new() } else { format!("  labels:\n{labels}") };
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{labels}data:\n  key: {name}\n")
}

fn deployment(name: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: 0\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n      - name: c\n        image: registry.invalid/c:1\n"
    )
}

/// `applyset apply` without `-n`.
fn applyset_no_namespace(ns: &TestNamespace, args: &[&str]) -> Result<CommandOutput> {
    applyset_cli(&ns.kubeconfig, "apply", args)
}

/// `KUBECTL_APPLYSET=true kubectl.1.33 --namespace NS <args>`.
fn kubectl_applyset(ns: &TestNamespace, args: &[&str]) -> Result<CommandOutput> {
    let mut command = ns.kubectl()?;
    command.env("KUBECTL_APPLYSET", "true").args(args);
    run(&mut command, None)
}

async fn config_map_names(ns: &TestNamespace) -> Result<Vec<String>> {
    let api: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &ns.name);
    let mut names: Vec<String> = api
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter_map(|cm| cm.metadata.name)
        .filter(|name| name != "kube-root-ca.crt")
        .collect();
    names.sort();
    Ok(names)
}

async fn secret_meta(
    ns: &TestNamespace,
    name: &str,
) -> Result<(BTreeMap<String, String>, BTreeMap<String, String>, Vec<String>)> {
    let secret = Api::<Secret>::namespaced(ns.client.clone(), &ns.name).get(name).await?;
    let managers =
        secret.metadata.managed_fields.unwrap_or_default().into_iter().filter_map(|entry| entry.manager).collect();
    Ok((secret.metadata.labels.unwrap_or_default(), secret.metadata.annotations.unwrap_or_default(), managers))
}

// ------------------------------------------------------------------------------------------
// Legacy label-selector prune
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn label_selector_prune_removes_only_departed_applied_objects() -> Result<()> {
    let ns = TestNamespace::create("prune-selector").await?;
    // Not created by apply (no last-applied annotation), but matching the selector: kept.
    ns.kubectl_ok(&["create", "-f", "-"], Some(&config_map("manual", &[(SEL_KEY, "one")])))?;
    // Applied, but with another label: kept.
    ns.kubectl_ok(&["apply", "-f", "-"], Some(&config_map("other", &[(SEL_KEY, "two")])))?;

    let dir = ManifestDir::new(&[
        ("a.yaml", &config_map("a", &[(SEL_KEY, "one")])),
        ("b.yaml", &config_map("b", &[(SEL_KEY, "one")])),
    ])?;
    let first = applyset(&ns, &["-f", dir.path(), "-l", SEL_X, "--prune"])?.success_stdout()?;
    assert_eq!(lines(&first), ["configmap/a created", "configmap/b created"]);

    dir.remove("b.yaml")?;
    let client_dry =
        applyset(&ns, &["-f", dir.path(), "-l", SEL_X, "--prune", "--dry-run=client"])?.success_stdout()?;
    assert_eq!(lines(&client_dry), ["configmap/a unchanged (dry run)", "configmap/b pruned (dry run)"]);
    let server_dry =
        applyset(&ns, &["-f", dir.path(), "-l", SEL_X, "--prune", "--dry-run=server"])?.success_stdout()?;
    assert_eq!(lines(&server_dry), ["configmap/a unchanged (server dry run)", "configmap/b pruned (server dry run)"]);
    assert_eq!(config_map_names(&ns).await?, ["a", "b", "manual", "other"]);

    let output = applyset(&ns, &["-f", dir.path(), "-l", SEL_X, "--prune"])?;
    let pruned = output.success_stdout()?;
    assert_eq!(lines(&pruned), ["configmap/a unchanged", "configmap/b pruned"]);
    assert_eq!(config_map_names(&ns).await?, ["a", "manual", "other"]);

    // kubectl, given the same directory and flags, finds nothing more to prune.
    let kubectl = ns.kubectl_ok(&["apply", "-f", dir.path(), "-l", SEL_X, "--prune"], None)?;
    assert_eq!(lines(&kubectl), ["configmap/a unchanged"]);
    Ok(())
}

#[tokio::test]
async fn prune_all_with_allowlist_prunes_what_kubectl_applied() -> Result<()> {
    let ns = TestNamespace::create("prune-all").await?;
    // Applied by kubectl: carries the last-applied annotation, so `--all` prunes it.
    ns.kubectl_ok(&["apply", "-f", "-"], Some(&config_map("from-kubectl", &[])))?;
    ns.kubectl_ok(&["apply", "-f", "-"], Some(&deployment("web")))?;
    let dir = ManifestDir::new(&[("keep.yaml", &config_map("keep", &[]))])?;

    let output = applyset(&ns, &["-f", dir.path(), "--prune", "--all", "--prune-allowlist=core/v1/ConfigMap"])?;
    assert_eq!(lines(&output.success_stdout()?), ["configmap/keep created", "configmap/from-kubectl pruned"]);
    assert_eq!(config_map_names(&ns).await?, ["keep"]);
    // Deployments were not allow-listed.
    ns.kubectl_ok(&["get", "deployment", "web"], None)?;

    // kubectl's own error texts for bad allow-lists and missing selectors.
    for (args, kubectl_args) in [
        (
            vec!["--prune", "--all", "--prune-allowlist=v1/ConfigMap"],
            vec!["--prune", "--all", "--prune-allowlist=v1/ConfigMap"],
        ),
        (
            vec!["--prune", "--all", "--prune-allowlist=apps/v1/Foo"],
            vec!["--prune", "--all", "--prune-allowlist=apps/v1/Foo"],
        ),
        (vec!["--prune"], vec!["--prune"]),
    ] {
        let ours = applyset(&ns, &[&["-f", dir.path()][..], &args].concat())?;
        let theirs = run(ns.kubectl()?.args([&["apply", "-f", dir.path()][..], &kubectl_args].concat()), None)?;
        ensure!(!ours.success && !theirs.success, "both must fail: {ours:?} {theirs:?}");
        let theirs_error =
            theirs.stderr.lines().find(|l| l.starts_with("error: ")).context("kubectl error")?.to_owned();
        ensure!(ours.stderr.lines().any(|l| l == theirs_error), "expected {theirs_error:?} in {:?}", ours.stderr);
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// ApplySet prune
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn applyset_secret_parent_is_kubectls_and_prunes() -> Result<()> {
    let ours = TestNamespace::create("applyset-ours").await?;
    let theirs = TestNamespace::create("applyset-kubectl").await?;
    let dir = ManifestDir::new(&[
        ("a.yaml", &config_map("a", &[])),
        ("b.yaml", &config_map("b", &[("app", "b")])),
        ("web.yaml", &deployment("web")),
    ])?;
    let applied = applyset(&ours, &["-f", dir.path(), "--prune", "--applyset=set"])?.success_stdout()?;
    assert_eq!(lines(&applied), ["configmap/a created", "configmap/b created", "deployment.apps/web created"]);
    let kubectl =
        kubectl_applyset(&theirs, &["apply", "-f", dir.path(), "--prune", "--applyset=set"])?.success_stdout()?;
    assert_eq!(lines(&kubectl), lines(&applied));

    let (our_labels, our_annotations, our_managers) = secret_meta(&ours, "set").await?;
    let (their_labels, their_annotations, their_managers) = secret_meta(&theirs, "set").await?;
    let our_id = applyset_id("set", &ours.name, "Secret", "");
    let their_id = applyset_id("set", &theirs.name, "Secret", "");
    // Same derivation as kubectl: kubectl's ID for its namespace is ours for that namespace.
    assert_eq!(their_labels, BTreeMap::from([(PARENT_ID_LABEL.to_owned(), their_id.clone())]));
    assert_eq!(our_labels, BTreeMap::from([(PARENT_ID_LABEL.to_owned(), our_id.clone())]));
    assert_eq!(our_annotations.keys().collect::<Vec<_>>(), their_annotations.keys().collect::<Vec<_>>());
    assert_eq!(our_annotations[GROUP_KINDS_ANNOTATION], "ConfigMap,Deployment.apps");
    assert_eq!(our_annotations[GROUP_KINDS_ANNOTATION], their_annotations[GROUP_KINDS_ANNOTATION]);
    assert_eq!(our_annotations[ADDITIONAL_NAMESPACES_ANNOTATION], "");
    assert_eq!(our_annotations[ADDITIONAL_NAMESPACES_ANNOTATION], their_annotations[ADDITIONAL_NAMESPACES_ANNOTATION]);
    // The CLI manages kubectl's sets as kubectl does: the same tooling value.
    assert_eq!(our_annotations[TOOLING_ANNOTATION], KUBECTL_TOOLING);
    assert!(their_annotations[TOOLING_ANNOTATION].starts_with("kubectl/v1.33."), "{their_annotations:?}");
    assert_eq!(our_managers, [FIELD_MANAGER]);
    assert_eq!(our_managers, their_managers);

    // Members carry the part-of label, also inside their last-applied annotation.
    for name in ["a", "b"] {
        let cm = Api::<ConfigMap>::namespaced(ours.client.clone(), &ours.name).get(name).await?;
        assert_eq!(cm.metadata.labels.as_ref().and_then(|l| l.get(PART_OF_LABEL)), Some(&our_id));
        let annotation = &cm.metadata.annotations.as_ref().context("annotations")?[LAST_APPLIED];
        let last_applied: serde_json::Value = serde_json::from_str(annotation)?;
        assert_eq!(last_applied["metadata"]["labels"][PART_OF_LABEL], our_id.as_str());
    }

    // Dropping a file prunes its object (dry runs first), like kubectl does in its namespace.
    dir.remove("b.yaml")?;
    let dry =
        applyset(&ours, &["-f", dir.path(), "--prune", "--applyset=set", "--dry-run=server"])?.success_stdout()?;
    assert_eq!(
        lines(&dry),
        [
            "configmap/a unchanged (server dry run)",
            "deployment.apps/web unchanged (server dry run)",
            "configmap/b pruned (server dry run)"
        ]
    );
    let dry =
        applyset(&ours, &["-f", dir.path(), "--prune", "--applyset=set", "--dry-run=client"])?.success_stdout()?;
    assert!(lines(&dry).contains(&"configmap/b pruned (dry run)"), "{dry}");
    assert_eq!(config_map_names(&ours).await?, ["a", "b"]);
    let pruned = applyset(&ours, &["-f", dir.path(), "--prune", "--applyset=set"])?.success_stdout()?;
    let kubectl =
        kubectl_applyset(&theirs, &["apply", "-f", dir.path(), "--prune", "--applyset=set"])?.success_stdout()?;
    assert_eq!(lines(&pruned), ["configmap/a unchanged", "deployment.apps/web unchanged", "configmap/b pruned"]);
    assert_eq!(lines(&pruned), lines(&kubectl));
    assert_eq!(config_map_names(&ours).await?, ["a"]);

    // The latest set: dropping every ConfigMap leaves only the Deployment recorded.
    dir.remove("a.yaml")?;
    let pruned = applyset(&ours, &["-f", dir.path(), "--prune", "--applyset=set"])?.success_stdout()?;
    assert_eq!(lines(&pruned), ["deployment.apps/web unchanged", "configmap/a pruned"]);
    let (_, annotations, _) = secret_meta(&ours, "set").await?;
    assert_eq!(annotations[GROUP_KINDS_ANNOTATION], "Deployment.apps");
    Ok(())
}

#[tokio::test]
async fn failed_apply_means_no_prune() -> Result<()> {
    let ns = TestNamespace::create("applyset-failure").await?;
    let dir = ManifestDir::new(&[("a.yaml", &config_map("a", &[])), ("b.yaml", &config_map("b", &[]))])?;
    applyset(&ns, &["-f", dir.path(), "--prune", "--applyset=set"])?.success_stdout()?;
    applyset(&ns, &["-f", dir.path(), "--prune", "-l", SEL_ANY, "--prune-allowlist=core/v1/ConfigMap"])?
        .success_stdout()?;

    dir.remove("b.yaml")?;
    // An invalid object (the apiserver refuses the name) makes the run fail before pruning.
    dir.write("c.yaml", &config_map("Not_Valid", &[]))?;
    for args in
        [&["--prune", "--applyset=set"][..], &["--prune", "-l", SEL_ANY, "--prune-allowlist=core/v1/ConfigMap"][..]]
    {
        let output = applyset(&ns, &[&["-f", dir.path()][..], args].concat())?;
        assert!(!output.success, "{output:?}");
        assert!(!output.stdout.contains("pruned"), "{output:?}");
        assert_eq!(config_map_names(&ns).await?, ["a", "b"]);
    }
    // The parent kept the superset.
    let (_, annotations, _) = secret_meta(&ns, "set").await?;
    assert_eq!(annotations[GROUP_KINDS_ANNOTATION], "ConfigMap");
    Ok(())
}

/// A team alternates `kubectl apply --applyset` and `applyset apply --applyset` on one set,
/// with prune, both ways.
#[tokio::test]
async fn kubectl_and_applyset_alternate_on_one_set() -> Result<()> {
    let ns = TestNamespace::create("applyset-interop").await?;
    let dir = ManifestDir::new(&[
        ("a.yaml", &config_map("a", &[])),
        ("b.yaml", &config_map("b", &[])),
        ("c.yaml", &config_map("c", &[])),
    ])?;
    applyset(&ns, &["-f", dir.path(), "--prune", "--applyset=set"])?.success_stdout()?;

    // kubectl takes our set over and prunes a member we labelled...
    dir.remove("c.yaml")?;
    let pruned = kubectl_applyset(&ns, &["apply", "-f", dir.path(), "--prune", "--applyset=set"])?.success_stdout()?;
    assert_eq!(lines(&pruned), ["configmap/a unchanged", "configmap/b unchanged", "configmap/c pruned"]);
    // ...and we prune a member kubectl labelled.
    dir.write("d.yaml", &config_map("d", &[]))?;
    kubectl_applyset(&ns, &["apply", "-f", dir.path(), "--prune", "--applyset=set"])?.success_stdout()?;
    dir.remove("d.yaml")?;
    dir.remove("b.yaml")?;
    let ours = applyset(&ns, &["-f", dir.path(), "--prune", "--applyset=set"])?.success_stdout()?;
    assert_eq!(lines(&ours), ["configmap/a unchanged", "configmap/b pruned", "configmap/d pruned"]);
    assert_eq!(config_map_names(&ns).await?, ["a"]);
    let (_, annotations, _) = secret_meta(&ns, "set").await?;
    assert_eq!(annotations[TOOLING_ANNOTATION], KUBECTL_TOOLING);
    Ok(())
}

/// An invalid parent kubectl wrote: both name the actual defect, in the same words.
#[tokio::test]
async fn invalid_parents_are_named_as_kubectl_names_them() -> Result<()> {
    let ns = TestNamespace::create("applyset-invalid").await?;
    let dir = ManifestDir::new(&[("a.yaml", &config_map("a", &[]))])?;
    let parent = |name: &str, labels: &str, annotations: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  labels: {{{labels}}}\n  annotations: {{{annotations}}}\n"
        )
    };
    let id = |name: &str| applyset_id(name, &ns.name, "Secret", "");
    let tooling = format!("{TOOLING_ANNOTATION}: {KUBECTL_TOOLING}");
    let cases = [
        ("nokinds", parent("nokinds", &format!("{PARENT_ID_LABEL}: {}", id("nokinds")), &tooling)),
        (
            "badkind",
            parent(
                "badkind",
                &format!("{PARENT_ID_LABEL}: {}", id("badkind")),
                &format!("{tooling}, {GROUP_KINDS_ANNOTATION}: Nope.example.com"),
            ),
        ),
        ("noid", parent("noid", "", &format!("{tooling}, {GROUP_KINDS_ANNOTATION}: ConfigMap"))),
        (
            "wrongid",
            parent(
                "wrongid",
                &format!("{PARENT_ID_LABEL}: applyset-wrong-v1"),
                &format!("{tooling}, {GROUP_KINDS_ANNOTATION}: ConfigMap"),
            ),
        ),
    ];
    for (name, manifest) in cases {
        ns.kubectl_ok(&["create", "-f", "-"], Some(&manifest))?;
        let flag = format!("--applyset={name}");
        let ours = applyset(&ns, &["-f", dir.path(), "--prune", &flag])?;
        let theirs = kubectl_applyset(&ns, &["apply", "-f", dir.path(), "--prune", &flag])?;
        assert!(!ours.success && !theirs.success, "{name}: {ours:?} {theirs:?}");
        assert_eq!(ours.stderr.trim(), theirs.stderr.trim(), "{name}");
        assert!(!ours.stderr.contains("managed by tooling"), "{name}: the defect, not the tooling: {}", ours.stderr);
    }
    Ok(())
}

#[tokio::test]
async fn parent_validation_messages_are_kubectls() -> Result<()> {
    let ns = TestNamespace::create("applyset-validation").await?;
    let dir = ManifestDir::new(&[("a.yaml", &config_map("a", &[]))])?;
    let cases: [&[&str]; 4] = [
        &["--applyset=deployments.apps/x"],
        &["--applyset=namespaces/x"],
        &["--applyset=foo/x"],
        &["--applyset=secret/"],
    ];
    for case in cases {
        let ours = applyset(&ns, &[&["-f", dir.path(), "--prune"][..], case].concat())?;
        let theirs = kubectl_applyset(&ns, &[&["apply", "-f", dir.path(), "--prune"][..], case].concat())?;
        assert!(!ours.success && !theirs.success);
        assert_eq!(ours.stderr.trim(), theirs.stderr.trim(), "{case:?}");
    }
    // Without -n (kubectl prints the two aggregated errors one per line, without a prefix).
    let ours = applyset_no_namespace(&ns, &["-f", dir.path(), "--prune", "--applyset=set"])?;
    assert!(!ours.success);
    assert_eq!(ours.stderr.trim(), "error: namespace is required to use namespace-scoped ApplySet");
    assert_eq!(config_map_names(&ns).await?, Vec::<String>::new());
    Ok(())
}

#[tokio::test]
async fn custom_resource_parent_whose_crd_is_labelled() -> Result<()> {
    let ns = TestNamespace::create("applyset-cr").await?;
    let group = format!("g{}.applyset.test", random_suffix());
    let crd_name = format!("sets.{group}");
    let crd = |labelled: bool, plural: &str, kind: &str| {
        let label = if labelled { "  labels:\n    applyset.kubernetes.io/is-parent-type: \"true\"\n" } else { "" };
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.{group}\n{label}spec:\n  group: {group}\n  scope: Cluster\n  names: {{plural: {plural}, singular: {}, kind: {kind}, listKind: {kind}List}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}\n",
            plural.trim_end_matches('s')
        )
    };
    let cleanup = CrdCleanup::new(&ns.kubeconfig, [crd_name.clone(), format!("others.{group}")]);
    ns.kubectl_ok(&["apply", "-f", "-"], Some(&crd(true, "sets", "Set")))?;
    ns.kubectl_ok(&["apply", "-f", "-"], Some(&crd(false, "others", "Other")))?;
    ns.kubectl_ok(
        &["wait", "--for=condition=established", &format!("crd/{crd_name}"), &format!("crd/others.{group}")],
        None,
    )?;

    let dir = ManifestDir::new(&[("a.yaml", &config_map("a", &[])), ("b.yaml", &config_map("b", &[]))])?;
    let reference = format!("--applyset=sets.{group}/parent");

    // A CRD without the label is refused; a missing custom resource parent is not created.
    let other = applyset(&ns, &["-f", dir.path(), "--prune", &format!("--applyset=others.{group}/parent")])?;
    assert_eq!(
        other.stderr.trim(),
        format!(r#"error: resource "{group}/v1, Resource=others" is not permitted as an ApplySet parent"#)
    );
    let missing = applyset(&ns, &["-f", dir.path(), "--prune", &reference])?;
    let kubectl_missing = kubectl_applyset(&ns, &["apply", "-f", dir.path(), "--prune", &reference])?;
    assert_eq!(missing.stderr.trim(), "error: custom resource ApplySet parents cannot be created automatically");
    assert_eq!(missing.stderr.trim(), kubectl_missing.stderr.trim());

    // The parent exists (created by hand, as the KEP expects for custom resources).
    ns.kubectl_ok(
        &["create", "-f", "-"],
        Some(&format!("apiVersion: {group}/v1\nkind: Set\nmetadata:\n  name: parent\n  annotations:\n    {TOOLING_ANNOTATION}: {}\n    {GROUP_KINDS_ANNOTATION}: \"\"\n  labels:\n    {PARENT_ID_LABEL}: {}\n", KUBECTL_TOOLING, applyset_id("parent", "", "Set", &group))),
    )?;
    let applied = applyset(&ns, &["-f", dir.path(), "--prune", &reference])?.success_stdout()?;
    assert_eq!(lines(&applied), ["configmap/a created", "configmap/b created"]);
    let sets = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(&group, "v1", "Set"), "sets");
    let parent = Api::<DynamicObject>::all_with(ns.client.clone(), &sets).get("parent").await?;
    let annotations = parent.metadata.annotations.unwrap_or_default();
    assert_eq!(annotations[GROUP_KINDS_ANNOTATION], "ConfigMap");
    // A cluster-scoped parent records the members' namespace as an additional one.
    assert_eq!(annotations[ADDITIONAL_NAMESPACES_ANNOTATION], ns.name);

    dir.remove("b.yaml")?;
    let pruned = applyset(&ns, &["-f", dir.path(), "--prune", &reference])?.success_stdout()?;
    assert_eq!(lines(&pruned), ["configmap/a unchanged", "configmap/b pruned"]);
    assert_eq!(config_map_names(&ns).await?, ["a"]);
    drop(cleanup);
    Ok(())
}
