//! `applyset build` and `applyset plan` on a local checkout of an ApplySet's repository, against
//! what the real controller applied from the same repository (real git, the local control
//! plane): the build renders the checkout with `spec.postBuild` applied, the same with the
//! ApplySet read from the cluster or from its manifest file (no cluster at all); the plan of the
//! unchanged checkout changes nothing (exit 0), the plan of a changed one shows the configured,
//! created and pruned objects (exit 1), `spec.pruneGuard`'s verdict and its approval, runs with
//! get/list rights alone and sends nothing else; once the change is pushed, the controller does
//! what the plan said and the plan is empty again.

mod git;
mod operator;
mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use operator::{ControllerFixture, create_applyset, ready_at, revision, wait_for_applyset};
use support::{AuditLog, CommandOutput, TestNamespace, applyset_cli, run};

const T: Duration = Duration::from_secs(90);

const SETTINGS: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata:\n  greeting: \"${GREETING}\"\n  region: ${REGION}\n";
const SAME: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: same}\ndata: {k: v}\n";
const OLD: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old}\ndata: {k: v}\n";

/// The ApplySet, as its manifest in git and as created in the cluster.
fn applyset_spec(url: &str) -> serde_json::Value {
    serde_json::json!({
        "source": { "url": url, "path": "app" },
        "interval": "2s",
        "postBuild": {
            "substitute": { "REGION": "eu" },
            "substituteFrom": [{ "kind": "ConfigMap", "name": "vars" }]
        }
    })
}

fn applyset_manifest(namespace: &str, url: &str) -> String {
    let manifest = serde_json::json!({
        "apiVersion": "applyset.dev/v1alpha1",
        "kind": "ApplySet",
        "metadata": { "name": "app", "namespace": namespace },
        "spec": applyset_spec(url),
    });
    serde_json::to_string_pretty(&manifest).expect("JSON")
}

fn preview(ns: &TestNamespace, kubeconfig: &Path, command: &str, path: &Path) -> Result<CommandOutput> {
    let path = path.to_str().context("a UTF-8 path")?;
    applyset_cli(kubeconfig, command, &["app", "-n", &ns.name, "--path", path])
}

/// `applyset build` with the ApplySet from a file and no cluster: no kubeconfig, none in $HOME.
fn build_offline(args: &[&str]) -> Result<CommandOutput> {
    let home = support::scratch_dir("preview", &format!("home-{}", support::random_suffix()));
    let mut command = Command::new(env!("CARGO_BIN_EXE_applyset"));
    command.env_remove("KUBECONFIG").env("HOME", &home).arg("build").args(args);
    run(&mut command, None)
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_and_plan_preview_a_changed_checkout() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("preview").await?;
    repo.write("app/settings.yaml", SETTINGS).write("app/same.yaml", SAME).write("app/old.yaml", OLD);
    repo.write("clusters/app.yaml", applyset_manifest(&ns.name, &repo.url()));
    let first = repo.commit("the app");
    ns.kubectl_ok(&["create", "configmap", "vars", "--from-literal=GREETING=hello"], None)?;
    let controller = operator::start_controller(&ns)?;
    create_applyset(&ns, "app", applyset_spec(&repo.url())).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    let path = repo.work.join("app");
    let n = ns.name.as_str();

    // The unchanged checkout: nothing would change.
    let unchanged = preview(&ns, &ns.kubeconfig, "plan", &path)?;
    assert_eq!(unchanged.code, Some(0), "{}{}", unchanged.stdout, unchanged.stderr);
    assert_eq!(
        lines(&unchanged.stdout),
        [
            format!("unchanged  configmap/old -n {n}"),
            format!("unchanged  configmap/same -n {n}"),
            format!("unchanged  configmap/settings -n {n}"),
            "Plan: 0 created, 0 configured, 3 unchanged, 0 pruned".to_owned(),
        ]
    );

    // The build is what the controller applied: postBuild's values, the namespace, the label.
    let built = preview(&ns, &ns.kubeconfig, "build", &path)?;
    ensure!(built.code == Some(0), "build: {}{}", built.stdout, built.stderr);
    let part_of = ns.jsonpath("configmap/settings", "{.metadata.labels.applyset\\.kubernetes\\.io/part-of}")?;
    let settings = format!(
        "apiVersion: v1\ndata:\n  greeting: hello\n  region: eu\nkind: ConfigMap\nmetadata:\n  labels:\n    applyset.kubernetes.io/part-of: {part_of}\n  name: settings\n  namespace: {n}\n"
    );
    assert!(built.stdout.contains(&settings), "{}", built.stdout);
    assert_eq!(built.stdout.matches("---\n").count(), 2, "three documents: {}", built.stdout);

    // Without a cluster: the ApplySet's manifest from git; substituteFrom needs its objects.
    let manifest = repo.work.join("clusters/app.yaml");
    let (manifest, path_text) = (manifest.to_str().context("UTF-8")?, path.to_str().context("UTF-8")?);
    let refused = build_offline(&["--applyset-file", manifest, "--path", path_text])?;
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("spec.postBuild.substituteFrom ConfigMap vars cannot be read without a cluster"),
        "{}",
        refused.stderr
    );
    repo.write("local/vars.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars}\ndata: {GREETING: hello}\n");
    let vars = repo.work.join("local/vars.yaml");
    let vars = vars.to_str().context("UTF-8")?;
    let offline = build_offline(&["--applyset-file", manifest, "--path", path_text, "--substitute-from-file", vars])?;
    ensure!(offline.code == Some(0), "offline build: {}{}", offline.stdout, offline.stderr);
    assert_eq!(offline.stdout, built.stdout, "the same build with or without the cluster");

    // A change in the checkout (not pushed): one object changed, one added, one removed.
    repo.write("app/settings.yaml", SETTINGS.replace("  region: ${REGION}\n", "  region: ${REGION}\n  tier: gold\n"));
    repo.write("app/new.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new}\ndata: {k: v}\n");
    std::fs::remove_file(path.join("old.yaml"))?;
    let changed = preview(&ns, &ns.kubeconfig, "plan", &path)?;
    assert_eq!(changed.code, Some(1), "{}{}", changed.stdout, changed.stderr);
    let shown = lines(&changed.stdout);
    assert_eq!(
        shown[..5],
        [
            format!("created    configmap/new -n {n}"),
            format!("unchanged  configmap/same -n {n}"),
            format!("configured configmap/settings -n {n}"),
            format!("pruned     configmap/old -n {n}"),
            "Plan: 1 created, 1 configured, 1 unchanged, 1 pruned".to_owned(),
        ]
    );
    assert_eq!(shown[5], "diff configmap/settings (app/settings.yaml: document 1)");
    assert!(changed.stdout.contains("+  tier: gold\n"), "{}", changed.stdout);
    assert!(changed.stderr.contains("note: the work tree has changes not committed"), "{}", changed.stderr);
    let rebuilt = preview(&ns, &ns.kubeconfig, "build", &path)?;
    assert!(rebuilt.stdout.contains("  greeting: hello\n  region: eu\n  tier: gold\n"), "{}", rebuilt.stdout);
    assert!(!rebuilt.stdout.contains("name: old"), "{}", rebuilt.stdout);

    // A reader with get and list rights alone plans the same, and sends nothing but reads.
    let reader = reader_kubeconfig(&ns).await?;
    let audit = AuditLog::from_now(&ns.kubeconfig)?;
    let as_reader = preview(&ns, &reader.path, "plan", &path)?;
    assert_eq!(as_reader.code, Some(1), "{}", as_reader.stderr);
    assert_eq!(as_reader.stdout, changed.stdout);
    let user = format!("system:serviceaccount:{n}:reader");
    let requests: Vec<_> = audit.requests()?.into_iter().filter(|r| r.user == user).collect();
    ensure!(!requests.is_empty(), "the reader's requests are audited");
    let writes: Vec<String> = requests
        .iter()
        .filter(|r| r.verb != "get" && r.verb != "list")
        .map(|r| format!("{} {}", r.verb, r.uri))
        .collect();
    assert!(writes.is_empty(), "only GET and LIST: {writes:?}");

    // spec.pruneGuard holds the prune back; an approval of the checkout's commit lets it through.
    operator::patch_spec(&ns, "app", serde_json::json!({ "pruneGuard": { "maxObjects": 0 } })).await?;
    let guarded = preview(&ns, &ns.kubeconfig, "plan", &path)?;
    assert_eq!(guarded.code, Some(1));
    assert!(
        guarded.stdout.contains(&format!(
            "held       configmap/old -n {n}: spec.pruneGuard holds this revision's prune back\nspec.pruneGuard: this revision would prune 1 of 3 objects (33%), more than spec.pruneGuard.maxObjects 0"
        )),
        "{}",
        guarded.stdout
    );
    let head = git::git(&repo.work, &["rev-parse", "HEAD"]);
    ns.kubectl_ok(&["annotate", "applyset/app", &format!("applyset.dev/approve-prune={head}")], None)?;
    let approved = preview(&ns, &ns.kubeconfig, "plan", &path)?;
    assert!(approved.stdout.contains(&format!("pruned     configmap/old -n {n}\n")), "{}", approved.stdout);
    operator::patch_spec(&ns, "app", serde_json::json!({ "pruneGuard": null })).await?;

    // Pushed: the controller does what the plan said, and the plan is empty again.
    let second = repo.commit("the change");
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&second))).await?;
    assert!(!ns.exists("configmap/old")?, "pruned");
    assert!(ns.exists("configmap/new")?, "created");
    assert_eq!(ns.jsonpath("configmap/settings", "{.data.tier}")?, "gold");
    let after = preview(&ns, &ns.kubeconfig, "plan", &path)?;
    assert_eq!(after.code, Some(0), "{}{}", after.stdout, after.stderr);
    assert!(after.stdout.ends_with("Plan: 0 created, 0 configured, 3 unchanged, 0 pruned\n"), "{}", after.stdout);
    Ok(())
}

/// A ServiceAccount `reader` of the namespace that may only get and list (every kind of it), and
/// a kubeconfig with its token.
async fn reader_kubeconfig(ns: &TestNamespace) -> Result<support::TokenKubeconfig> {
    ns.kubectl_ok(&["create", "serviceaccount", "reader"], None)?;
    ns.kubectl_ok(&["create", "role", "get-list", "--verb=get,list", "--resource=*.*"], None)?;
    let subject = format!("--serviceaccount={}:reader", ns.name);
    ns.kubectl_ok(&["create", "rolebinding", "reader-gets-and-lists", "--role=get-list", &subject], None)?;
    let token = ns.kubectl_ok(&["create", "token", "reader", "--duration=10m"], None)?;
    ns.token_kubeconfig(token.trim(), "reader")
}

/// What a build without a cluster knows of the kinds' scopes is what the apiserver serves: every
/// kind it serves that can be created and read is known, with the same scope.
#[tokio::test]
async fn built_in_scopes_are_the_apiservers() -> Result<()> {
    let kubeconfig = &support::control_plane()?.kubeconfig;
    let out = run(support::kubectl_cluster(kubeconfig)?.args(["api-resources", "--no-headers", "-o", "wide"]), None)?
        .success_stdout()?;
    // Kinds of CustomResourceDefinitions (those other tests or a demo left) are not built in.
    let crd_groups = run(
        support::kubectl_cluster(kubeconfig)?.args([
            "get",
            "crd",
            "-o",
            "jsonpath={range .items[*]}{.spec.group}{\"\\n\"}{end}",
        ]),
        None,
    )?
    .success_stdout()?;
    let crd_groups: std::collections::BTreeSet<&str> = crd_groups.lines().collect();
    let mut checked = 0;
    for row in out.lines() {
        let fields: Vec<&str> = row.split_whitespace().collect();
        // NAME [SHORTNAMES] APIVERSION NAMESPACED KIND VERBS [CATEGORIES]
        let Some(at) = fields.iter().position(|f| *f == "true" || *f == "false") else { continue };
        let (api_version, namespaced, kind) = (fields[at - 1], fields[at] == "true", fields[at + 1]);
        let verbs = fields.get(at + 2).copied().unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        if crd_groups.contains(group) || !(verbs.contains("create") && verbs.contains("get")) {
            continue;
        }
        let known = applyset::commands::preview::scope::built_in(group, kind);
        assert_eq!(known, Some(namespaced), "{kind} of {group:?}");
        checked += 1;
    }
    ensure!(checked > 50, "only {checked} kinds were compared:\n{out}");
    Ok(())
}

/// `spec.secrets: Hashed`: the annotation holds hashes under the controller's key, which a plan
/// does not have; the Secret is planned by its values (unchanged when they are the live ones),
/// and no value is shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hashed_secret_is_planned_by_its_values() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("preview-hashed").await?;
    let (before, after) = (format!("pw-{}", support::random_suffix()), format!("pw-{}", support::random_suffix()));
    let secret = |password: &str, user: bool| {
        let user = if user { ", user: admin" } else { "" };
        format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: db}}\nstringData: {{password: {password}{user}}}\n")
    };
    repo.write("app/db.yaml", secret(&before, true));
    let first = repo.commit("a Secret");
    let controller = operator::ControllerOptions::for_namespace(&ns)
        .local_sources()
        .arg("--leader-election-namespace")
        .arg(ns.name.clone())
        .start()?;
    let spec =
        serde_json::json!({ "source": { "url": repo.url(), "path": "app" }, "interval": "2s", "secrets": "Hashed" });
    create_applyset(&ns, "app", spec).await?;
    wait_for_applyset(&ns, "app", &controller, "Ready", T, ready_at(revision(&first))).await?;
    let path = repo.work.join("app");
    let n = ns.name.as_str();

    let unchanged = preview(&ns, &ns.kubeconfig, "plan", &path)?;
    assert_eq!(unchanged.code, Some(0), "{}{}", unchanged.stdout, unchanged.stderr);
    assert_eq!(
        unchanged.stdout,
        format!("unchanged  secret/db -n {n}\nPlan: 0 created, 0 configured, 1 unchanged, 0 pruned\n")
    );

    repo.write("app/db.yaml", secret(&after, false));
    let changed = preview(&ns, &ns.kubeconfig, "plan", &path)?;
    assert_eq!(changed.code, Some(1), "{}{}", changed.stdout, changed.stderr);
    assert!(changed.stdout.starts_with(&format!("configured secret/db -n {n}\n")), "{}", changed.stdout);
    assert!(
        changed.stdout.contains(
            "patch (application/strategic-merge-patch+json):\n{\"data\":{\"password\":\"***\",\"user\":null}}\n"
        ),
        "the values that differ, and the key git dropped; the hashed annotation kept: {}",
        changed.stdout
    );
    for line in ["-  password: '*** (before)'\n", "-  user: '***'\n", "+  password: '*** (after)'\n"] {
        assert!(changed.stdout.contains(line), "{line:?} in {}", changed.stdout);
    }
    let b64 = |value: &str| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, value);
    for value in [&before, &after] {
        for text in [&changed.stdout, &changed.stderr] {
            assert!(!text.contains(value.as_str()) && !text.contains(&b64(value)), "a value shown: {text}");
        }
    }
    Ok(())
}

/// Without a cluster, a kustomization is built as a run builds it: kustomize, the post-build
/// variables, the namespace and label, and its refusal of what reaches out of the repository.
#[test]
fn an_offline_build_runs_kustomize_as_a_run_does() -> Result<()> {
    let repo = git::Fixture::new(&format!("preview-kustomize-{}", support::random_suffix()));
    repo.write("base/kustomization.yaml", "resources: [settings.yaml]\n");
    repo.write(
        "base/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: \"${MODE}\"}\n",
    );
    repo.write("overlay/kustomization.yaml", "resources: [../base]\nnamePrefix: prod-\n");
    let manifest = serde_json::json!({
        "apiVersion": "applyset.dev/v1alpha1",
        "kind": "ApplySet",
        "metadata": { "name": "app", "namespace": "shop" },
        "spec": { "source": { "url": repo.url(), "path": "overlay" }, "postBuild": { "substitute": { "MODE": "fast" } } },
    });
    repo.write("applyset.yaml", serde_json::to_string(&manifest)?);
    repo.commit("an overlay");
    let kustomize = support::kustomize_binary()?;
    let (file, overlay) = (repo.work.join("applyset.yaml"), repo.work.join("overlay"));
    let args = |overlay: &Path| -> Result<Vec<String>> {
        Ok([
            "--applyset-file",
            file.to_str().context("UTF-8")?,
            "--path",
            overlay.to_str().context("UTF-8")?,
            "--kustomize-binary",
            kustomize.to_str().context("UTF-8")?,
        ]
        .map(str::to_owned)
        .to_vec())
    };
    let built = build_offline(&args(&overlay)?.iter().map(String::as_str).collect::<Vec<_>>())?;
    assert_eq!(built.code, Some(0), "{}", built.stderr);
    let id = applyset::applyset::applyset_id("app", "shop", "ApplySet", "applyset.dev");
    assert_eq!(
        built.stdout,
        format!(
            "apiVersion: v1\ndata:\n  mode: fast\nkind: ConfigMap\nmetadata:\n  labels:\n    applyset.kubernetes.io/part-of: {id}\n  name: prod-settings\n  namespace: shop\n"
        )
    );

    repo.write("overlay/kustomization.yaml", "resources: [../base, https://example.com/x.yaml]\n");
    let refused = build_offline(&args(&overlay)?.iter().map(String::as_str).collect::<Vec<_>>())?;
    assert_eq!(refused.code, Some(1));
    assert!(
        refused
            .stderr
            .contains("error: BuildFailed: overlay/kustomization.yaml: resources names \"https://example.com/x.yaml\""),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("nothing was applied or pruned"), "{}", refused.stderr);
    Ok(())
}
