//! `applyset apply` against the real control plane, with kubectl 1.33 as
//! the reference where it matters (the last-applied annotation), and the apply library behind
//! a request-counting, fault-injecting proxy for what the command line cannot show (no PATCH
//! on a no-op re-apply, 409 retries).

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use support::{APP, CrdCleanup, ManifestDir, TestNamespace, applyset_cli, lines, random_suffix, widget_crd};

async fn configmap(ns: &TestNamespace, name: &str) -> Result<ConfigMap> {
    Api::<ConfigMap>::namespaced(ns.client.clone(), &ns.name)
        .get(name)
        .await
        .with_context(|| format!("getting configmap {name}"))
}

fn annotation(annotations: &Option<BTreeMap<String, String>>) -> String {
    annotations
        .as_ref()
        .and_then(|a| a.get("kubectl.kubernetes.io/last-applied-configuration"))
        .cloned()
        .unwrap_or_default()
}

/// Manifests kubectl re-patches on every apply (the server normalises `1.5Gi` to `1536Mi`, and
/// an explicit `null` is sent again each time): we must say `configured` too.
const QUIRKY: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: quirky
spec:
  selector:
    matchLabels: {app: quirky}
  template:
    metadata:
      labels: {app: quirky}
    spec:
      containers:
      - name: app
        image: busybox
        env:
        - {name: A, value: "1"}
        - {name: B, value: null}
        resources:
          limits: {memory: 1.5Gi}
"#;

#[tokio::test]
async fn create_then_unchanged_then_configured_with_kubectls_annotation() -> Result<()> {
    let ours = TestNamespace::create("apply-ours").await?;
    let theirs = TestNamespace::create("apply-kubectl").await?;
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;

    let first = applyset_cli(&ours.kubeconfig, "apply", &["-f", dir.path(), "-n", &ours.name])?.success_stdout()?;
    assert_eq!(lines(&first), ["configmap/settings created", "deployment.apps/web created"]);
    let kubectl_out = theirs.kubectl_ok(&["apply", "-f", dir.path()], None)?;
    assert_eq!(lines(&kubectl_out), lines(&first), "same output as kubectl");

    // The annotation is byte-identical to kubectl's once the namespace is swapped.
    let swap = |text: String| text.replace(&theirs.name, &ours.name);
    let our_cm = configmap(&ours, "settings").await?;
    let their_cm = configmap(&theirs, "settings").await?;
    assert_eq!(annotation(&our_cm.metadata.annotations), swap(annotation(&their_cm.metadata.annotations)));
    assert!(annotation(&our_cm.metadata.annotations).ends_with("}\n"));
    let deployment_annotation = |ns: &TestNamespace| -> Result<String> {
        ns.kubectl_ok(
            &[
                "get",
                "deployment",
                "web",
                "-o",
                r#"jsonpath={.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}"#,
            ],
            None,
        )
    };
    assert_eq!(deployment_annotation(&ours)?, swap(deployment_annotation(&theirs)?));

    let again = applyset_cli(&ours.kubeconfig, "apply", &["-f", dir.path(), "-n", &ours.name])?.success_stdout()?;
    assert_eq!(lines(&again), ["configmap/settings unchanged", "deployment.apps/web unchanged"]);

    dir.write("app.yaml", &APP.replace("mode: \"fast\"", "mode: \"slow\"").replace("replicas: 2", "replicas: 3"))?;
    let changed = applyset_cli(&ours.kubeconfig, "apply", &["-f", dir.path(), "-n", &ours.name])?.success_stdout()?;
    assert_eq!(lines(&changed), ["configmap/settings configured", "deployment.apps/web configured"]);
    theirs.kubectl_ok(&["apply", "-f", dir.path()], None)?;
    let our_cm = configmap(&ours, "settings").await?;
    let their_cm = configmap(&theirs, "settings").await?;
    assert_eq!(our_cm.data.as_ref().unwrap()["mode"], "slow");
    assert_eq!(annotation(&our_cm.metadata.annotations), swap(annotation(&their_cm.metadata.annotations)));
    assert_eq!(deployment_annotation(&ours)?, swap(deployment_annotation(&theirs)?));

    // Where kubectl patches on every run, so do we, with the same annotation.
    let quirky = ManifestDir::new(&[("quirky.yaml", QUIRKY)])?;
    for _ in 0..2 {
        let ours_out =
            applyset_cli(&ours.kubeconfig, "apply", &["-f", quirky.path(), "-n", &ours.name])?.success_stdout()?;
        let theirs_out = theirs.kubectl_ok(&["apply", "-f", quirky.path()], None)?;
        assert_eq!(ours_out, theirs_out);
    }
    let quirky_annotation = |ns: &TestNamespace| -> Result<String> {
        ns.kubectl_ok(
            &[
                "get",
                "deployment",
                "quirky",
                "-o",
                r#"jsonpath={.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}"#,
            ],
            None,
        )
    };
    assert_eq!(quirky_annotation(&ours)?, swap(quirky_annotation(&theirs)?));

    // `-o name` prints only the names.
    let named = applyset_cli(&ours.kubeconfig, "apply", &["-f", dir.path(), "-n", &ours.name, "-o", "name"])?
        .success_stdout()?;
    assert_eq!(lines(&named), ["configmap/settings", "deployment.apps/web"]);
    Ok(())
}

#[tokio::test]
async fn crd_and_custom_resource_in_one_directory() -> Result<()> {
    let ns = TestNamespace::create("apply-crd").await?;
    let group = format!("t{}.applyset.example.com", random_suffix());
    let crd = widget_crd(&group);
    let cr = format!("apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n  tags: [a, b]\n");
    // File order puts the custom resource first: the CRD stage runs before it anyway.
    let dir = ManifestDir::new(&[("a-widget.yaml", &cr), ("b-crd.yaml", &crd)])?;
    let cleanup = CrdCleanup::new(&ns.kubeconfig, [format!("widgets.{group}")]);

    let out = applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?.success_stdout()?;
    assert_eq!(
        lines(&out),
        [
            format!("widget.{group}/w1 created").as_str(),
            format!("customresourcedefinition.apiextensions.k8s.io/widgets.{group} created").as_str()
        ]
    );
    let again = applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?.success_stdout()?;
    assert!(again.contains(&format!("widget.{group}/w1 unchanged")), "{again}");
    assert!(again.contains(&format!("widgets.{group} unchanged")), "{again}");

    // Custom resources take the JSON merge patch: the list is replaced whole.
    dir.write("a-widget.yaml", &cr.replace("tags: [a, b]", "tags: [c]"))?;
    let changed =
        applyset_cli(&ns.kubeconfig, "apply", &["-f", &dir.file("a-widget.yaml"), "-n", &ns.name])?.success_stdout()?;
    assert_eq!(lines(&changed), [format!("widget.{group}/w1 configured").as_str()]);
    let tags = ns.kubectl_ok(&["get", &format!("widgets.{group}"), "w1", "-o", "jsonpath={.spec.tags}"], None)?;
    assert_eq!(tags, r#"["c"]"#);
    drop(cleanup);
    Ok(())
}

/// A `Widget` whose spec nests `levels` objects down to `leaf` (JSON: no YAML indentation).
fn nested_widget(group: &str, levels: usize, leaf: &str) -> String {
    let spec = format!("{}{leaf}{}", r#"{"a":"#.repeat(levels), "}".repeat(levels));
    format!(r#"{{"apiVersion": "{group}/v1", "kind": "Widget", "metadata": {{"name": "deep"}}, "spec": {spec}}}"#)
}

#[tokio::test]
async fn documents_nested_to_the_apiservers_limit_apply_like_kubectl() -> Result<()> {
    // Go's JSON decoder (the apiserver's, kubectl's) takes 10,000 levels: the object, 9,998
    // maps from `spec` down, and the leaf's map. Compared through jsonpath (compact JSON), since printing
    // such an object indented takes hundreds of megabytes.
    let ours = TestNamespace::create("apply-deep-ours").await?;
    let theirs = TestNamespace::create("apply-deep-kubectl").await?;
    let group = format!("t{}.applyset.example.com", random_suffix());
    let cleanup = CrdCleanup::new(&ours.kubeconfig, [format!("widgets.{group}")]);
    ours.kubectl_ok(&["apply", "-f", "-"], Some(&widget_crd(&group)))?;
    ours.kubectl_ok(&["wait", "--for=condition=Established", &format!("crd/widgets.{group}")], None)?;
    let widget = format!("widget.{group}/deep");
    let compare = |step: &str| -> Result<()> {
        for path in [r"{.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}", "{.spec}"] {
            let theirs = theirs.jsonpath(&widget, path)?.replace(&theirs.name, &ours.name);
            assert!(ours.jsonpath(&widget, path)? == theirs, "{step}: {path} differs from kubectl's");
        }
        Ok(())
    };
    let versions = [
        ("created", nested_widget(&group, 9_998, r#"{"leaf": 1, "gone": "x"}"#)),
        ("unchanged", nested_widget(&group, 9_998, r#"{"leaf": 1, "gone": "x"}"#)),
        ("configured", nested_widget(&group, 9_998, r#"{"leaf": 2}"#)),
    ];
    let dir = ManifestDir::new(&[])?;
    for (verb, manifest) in &versions {
        dir.write("deep.json", manifest)?;
        theirs.kubectl_ok(&["apply", "-f", &dir.file("deep.json")], None)?;
        let out = applyset_cli(&ours.kubeconfig, "apply", &["-f", &dir.file("deep.json"), "-n", &ours.name])?
            .success_stdout()?;
        assert_eq!(lines(&out), [format!("{widget} {verb}").as_str()]);
        compare(verb)?;
    }
    assert!(!ours.jsonpath(&widget, "{.spec}")?.contains("gone"), "the removed field is deleted");

    // One level more: refused in kubectl's words, nothing changes.
    dir.write("deep.json", &nested_widget(&group, 9_999, r#"{"leaf": 3}"#))?;
    let refused = applyset_cli(&ours.kubeconfig, "apply", &["-f", &dir.file("deep.json"), "-n", &ours.name])?;
    assert!(!refused.success);
    assert!(refused.stderr.contains("invalid character '{' exceeded max depth"), "{}", refused.stderr);
    let kubectl_refused = run_kubectl_apply(&theirs, &dir.file("deep.json"))?;
    assert_eq!(refused.stderr, kubectl_refused);
    compare("refused")?;
    drop(cleanup);
    Ok(())
}

/// kubectl apply's stderr for a file it refuses.
fn run_kubectl_apply(ns: &TestNamespace, file: &str) -> Result<String> {
    let output = support::run(ns.kubectl()?.args(["apply", "-f", file]), None)?;
    anyhow::ensure!(!output.success, "kubectl applied {file}");
    Ok(output.stderr)
}

#[tokio::test]
async fn unknown_kind_fails_only_that_object() -> Result<()> {
    let ns = TestNamespace::create("apply-unknown").await?;
    let dir = ManifestDir::new(&[(
        "mixed.yaml",
        "apiVersion: example.com/v1\nkind: Nope\nmetadata: {name: nope1}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\n",
    )])?;
    let out = applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?;
    assert!(!out.success);
    assert_eq!(lines(&out.stdout), ["configmap/fine created"]);
    assert!(
        out.stderr.contains(&format!(
            r#"resource mapping not found for name: "nope1" namespace: "" from "{}": no matches for kind "Nope" in version "example.com/v1""#,
            dir.file("mixed.yaml")
        )),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.starts_with(&format!(
            "error: {}: document 1 (line 1): resource mapping not found",
            dir.file("mixed.yaml")
        )),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("ensure CRDs are installed first"), "{}", out.stderr);
    configmap(&ns, "fine").await?;
    Ok(())
}

#[tokio::test]
async fn invalid_objects_show_the_apiservers_message_like_kubectl() -> Result<()> {
    let ns = TestNamespace::create("apply-invalid").await?;
    let bad = APP.split("---\n").nth(1).unwrap().replace("replicas: 2", "replicas: -1");
    let dir = ManifestDir::new(&[("bad.yaml", &bad)])?;
    // A lone Invalid error: kubectl's short form, led by the file and document it came from.
    let out = applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?;
    assert!(!out.success);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let kubectl_form =
        "The Deployment \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0\n";
    assert_eq!(out.stderr, format!("{}: document 1 (line 1): {kubectl_form}", dir.file("bad.yaml")));
    let kubectl = ns.kubectl()?.args(["apply", "-f", dir.path()]).output()?;
    assert_eq!(String::from_utf8_lossy(&kubectl.stderr), kubectl_form);

    // Several failures: each names its file, as kubectl's list of errors does.
    dir.write("other.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n")?;
    let out = applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?;
    assert!(!out.success);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    assert!(
        lines[0].starts_with(&format!(
            r#"{0}: document 1 (line 1): Error from server (Invalid): error when creating "{0}": Deployment.apps "web" is invalid"#,
            dir.file("bad.yaml")
        )),
        "{}",
        out.stderr
    );
    assert!(
        lines[1].starts_with(&format!(
            r#"{0}: document 1 (line 1): Error from server (Invalid): error when creating "{0}": ConfigMap "Bad_Name" is invalid"#,
            dir.file("other.yaml")
        )),
        "{}",
        out.stderr
    );
    Ok(())
}

#[tokio::test]
async fn server_warnings_are_printed_once() -> Result<()> {
    let ns = TestNamespace::create("apply-warn").await?;
    let dir = ManifestDir::new(&[(
        "cms.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nbogus: 1\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\nbogus: 2\n",
    )])?;
    let out = applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name, "--validate=warn"])?;
    assert!(out.success, "{}", out.stderr);
    assert_eq!(out.stderr, "Warning: unknown field \"bogus\"\n");
    Ok(())
}

#[tokio::test]
async fn namespace_rules() -> Result<()> {
    let ns = TestNamespace::create("apply-ns").await?;
    let dir = ManifestDir::new(&[(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: elsewhere, namespace: other}\n",
    )])?;
    let out = applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?;
    assert!(!out.success);
    assert!(
        out.stderr.contains(&format!(
            r#"the namespace from the provided object "other" does not match the namespace "{}". You must pass '--namespace=other' to perform this operation."#,
            ns.name
        )),
        "{}",
        out.stderr
    );

    // The same object twice (once defaulted, once explicit) stops the run before any write.
    let dup = ManifestDir::new(&[
        ("a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: twice}\n"),
        ("b.yaml", &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: twice, namespace: {}}}\n", ns.name)),
    ])?;
    let out = applyset_cli(&ns.kubeconfig, "apply", &["-f", dup.path(), "-n", &ns.name])?;
    assert!(!out.success);
    assert!(out.stderr.contains("defined twice"), "{}", out.stderr);
    assert!(out.stderr.contains("a.yaml") && out.stderr.contains("b.yaml"), "{}", out.stderr);
    assert!(configmap(&ns, "twice").await.is_err());
    Ok(())
}

#[tokio::test]
async fn dry_runs_change_nothing() -> Result<()> {
    let ns = TestNamespace::create("apply-dry").await?;
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    for (mode, suffix) in [("client", "(dry run)"), ("server", "(server dry run)")] {
        let out =
            applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name, &format!("--dry-run={mode}")])?
                .success_stdout()?;
        assert_eq!(
            lines(&out),
            [format!("configmap/settings created {suffix}"), format!("deployment.apps/web created {suffix}")]
        );
        assert!(configmap(&ns, "settings").await.is_err(), "--dry-run={mode} created the object");
    }
    applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?.success_stdout()?;
    dir.write("app.yaml", &APP.replace("mode: \"fast\"", "mode: \"slow\""))?;
    for (mode, suffix) in [("client", "(dry run)"), ("server", "(server dry run)")] {
        let out =
            applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name, &format!("--dry-run={mode}")])?
                .success_stdout()?;
        assert_eq!(
            lines(&out),
            [format!("configmap/settings configured {suffix}"), format!("deployment.apps/web unchanged {suffix}")]
        );
        assert_eq!(configmap(&ns, "settings").await?.data.unwrap()["mode"], "fast");
    }
    Ok(())
}

#[tokio::test]
async fn force_recreates_on_an_immutable_change() -> Result<()> {
    let ns = TestNamespace::create("apply-force").await?;
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: frozen}\nimmutable: true\ndata: {a: \"1\"}\n";
    let dir = ManifestDir::new(&[("cm.yaml", cm)])?;
    applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?.success_stdout()?;
    let before = configmap(&ns, "frozen").await?.metadata.uid;
    dir.write("cm.yaml", &cm.replace("a: \"1\"", "a: \"2\""))?;

    let refused = applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?;
    assert!(!refused.success);
    assert!(refused.stderr.contains(r#"The ConfigMap "frozen" is invalid"#), "{}", refused.stderr);

    let forced =
        applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name, "--force"])?.success_stdout()?;
    assert_eq!(lines(&forced), ["configmap/frozen configured"]);
    let after = configmap(&ns, "frozen").await?;
    assert_eq!(after.data.unwrap()["a"], "2");
    assert_ne!(after.metadata.uid, before, "the object was re-created");
    Ok(())
}

#[tokio::test]
async fn missing_annotation_is_warned_about_and_added() -> Result<()> {
    let ns = TestNamespace::create("apply-missing").await?;
    ns.kubectl_ok(&["create", "configmap", "bare", "--from-literal=a=1"], None)?;
    let dir = ManifestDir::new(&[(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bare}\ndata: {a: \"2\"}\n",
    )])?;
    let out = applyset_cli(&ns.kubeconfig, "apply", &["-f", dir.path(), "-n", &ns.name])?;
    assert!(out.success, "{}", out.stderr);
    assert_eq!(lines(&out.stdout), ["configmap/bare configured"]);
    assert!(
        out.stderr.contains("Warning: resource configmaps/bare is missing the kubectl.kubernetes.io/last-applied-configuration annotation which is required by kubectl apply."),
        "{}",
        out.stderr
    );
    assert!(!annotation(&configmap(&ns, "bare").await?.metadata.annotations).is_empty());
    Ok(())
}

#[tokio::test]
async fn unreachable_apiserver_is_one_clear_error() -> Result<()> {
    let dir = ManifestDir::new(&[
        (
            "kubeconfig",
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\", insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
        ),
        ("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"),
    ])?;
    let out = applyset_cli(Path::new(&dir.file("kubeconfig")), "apply", &["-f", &dir.file("cm.yaml")])?;
    assert!(!out.success);
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr.starts_with("error: cannot reach the Kubernetes API server at https://127.0.0.1:1"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    Ok(())
}

// ------------------------------------------------------------------------------------------
// The library behind a counting, fault-injecting proxy.

mod proxy {
    use super::*;
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context as TaskContext, Poll};

    use applyset::apply::ApplyOptions;
    use applyset::cluster::Cluster;
    use kube::client::Body;

    /// Requests seen, as `METHOD path` (query stripped); and how many PATCHes to answer with a
    /// 409 Conflict before letting them through.
    #[derive(Clone, Default)]
    pub struct Log {
        pub requests: Arc<Mutex<Vec<String>>>,
        pub conflicts_to_inject: Arc<Mutex<usize>>,
    }

    impl Log {
        pub fn count(&self, method: &str) -> usize {
            self.requests.lock().unwrap().iter().filter(|r| r.starts_with(&format!("{method} "))).count()
        }
        pub fn count_path(&self, method: &str, path_part: &str) -> usize {
            self.requests
                .lock()
                .unwrap()
                .iter()
                .filter(|r| r.starts_with(&format!("{method} ")) && r.contains(path_part))
                .count()
        }
    }

    #[derive(Clone)]
    pub struct Proxy {
        pub inner: kube::Client,
        pub log: Log,
    }

    impl tower_service::Service<http::Request<Body>> for Proxy {
        type Response = http::Response<Body>;
        type Error = kube::Error;
        type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

        fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: http::Request<Body>) -> Self::Future {
            let this = self.clone();
            Box::pin(async move {
                let method = request.method().to_string();
                let path = request.uri().path().to_owned();
                this.log.requests.lock().unwrap().push(format!("{method} {path}"));
                if method == "PATCH" {
                    let mut left = this.log.conflicts_to_inject.lock().unwrap();
                    if *left > 0 {
                        *left -= 1;
                        let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Operation cannot be fulfilled: the object has been modified","reason":"Conflict","code":409}"#;
                        return Ok(http::Response::builder()
                            .status(409)
                            .body(Body::from(body.as_bytes().to_vec()))
                            .unwrap());
                    }
                }
                this.inner.send(request).await
            })
        }
    }

    pub async fn cluster(kubeconfig: &Path) -> Result<(Cluster, Log)> {
        let inner = support::client_for(kubeconfig).await?;
        let log = Log::default();
        let client = kube::Client::new(Proxy { inner, log: log.clone() }, "default");
        Ok((Cluster::from_client(client, "proxy".into(), "default".into(), 0.0, 1), log))
    }

    pub fn options(namespace: &str) -> ApplyOptions {
        ApplyOptions { namespace: Some(namespace.to_owned()), ..ApplyOptions::default() }
    }
}

fn load(text: &str) -> Vec<applyset::manifest::LoadedObject> {
    applyset::manifest::load_bytes(Path::new("inline.yaml"), text.as_bytes()).expect("valid manifests")
}

#[tokio::test]
async fn no_op_reapply_sends_only_reads() -> Result<()> {
    let ns = TestNamespace::create("apply-lib").await?;
    let many: String = (0..30)
        .map(|i| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}}}\ndata: {{i: \"{i}\"}}\n---\n"))
        .collect::<String>()
        + APP;

    let (cluster, log) = proxy::cluster(&ns.kubeconfig).await?;
    let report = applyset::apply::apply(&cluster, load(&many), &proxy::options(&ns.name)).await?;
    assert!(!report.failed(), "{:?}", report.objects.iter().filter(|o| o.result.is_err()).collect::<Vec<_>>());
    assert_eq!(log.count("POST"), 32);
    assert_eq!(report.visited.len(), 32);
    assert!(report.visited.iter().all(|v| !v.uid.is_empty()));

    // A second run in a fresh cluster handle: discovery + openapi + one LIST per
    // (resource, namespace) of more than 8 objects (the 31 ConfigMaps), a GET each for the
    // others (the one Deployment, as kubectl reads it), and nothing else.
    let (cluster, log) = proxy::cluster(&ns.kubeconfig).await?;
    let report = applyset::apply::apply(&cluster, load(&many), &proxy::options(&ns.name)).await?;
    assert!(report.objects.iter().all(|o| matches!(o.result, Ok(applyset::apply::Verb::Unchanged))));
    let requests = log.requests.lock().unwrap().clone();
    assert_eq!(log.count("PATCH"), 0, "{requests:?}");
    assert_eq!(log.count("POST"), 0, "{requests:?}");
    assert_eq!(log.count_path("GET", &format!("/namespaces/{}/configmaps", ns.name)), 1, "{requests:?}");
    assert_eq!(log.count_path("GET", &format!("/namespaces/{}/deployments/", ns.name)), 1, "{requests:?}");
    assert!(requests.iter().all(|r| !r.contains("/configmaps/")), "{requests:?}");
    Ok(())
}

#[tokio::test]
async fn conflicts_are_retried_with_a_fresh_get() -> Result<()> {
    let ns = TestNamespace::create("apply-409").await?;
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: contested}\ndata: {a: \"1\"}\n";
    let (cluster, _) = proxy::cluster(&ns.kubeconfig).await?;
    applyset::apply::apply(&cluster, load(cm), &proxy::options(&ns.name)).await?;

    let (cluster, log) = proxy::cluster(&ns.kubeconfig).await?;
    *log.conflicts_to_inject.lock().unwrap() = 2;
    let started = std::time::Instant::now();
    let report =
        applyset::apply::apply(&cluster, load(&cm.replace("\"1\"", "\"2\"")), &proxy::options(&ns.name)).await?;
    assert!(matches!(report.objects[0].result, Ok(applyset::apply::Verb::Configured)), "{:?}", report.objects[0]);
    // kubectl: first retry immediately, the second after 1 s; one GET per retry (after the
    // first read: one object is read with a GET, not a LIST).
    assert_eq!(log.count("PATCH"), 3);
    assert_eq!(log.count_path("GET", "/configmaps/contested"), 3);
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    assert_eq!(configmap(&ns, "contested").await?.data.unwrap()["a"], "2");

    // Six conflicts in a row exhaust the retries.
    let (cluster, log) = proxy::cluster(&ns.kubeconfig).await?;
    *log.conflicts_to_inject.lock().unwrap() = 6;
    let report =
        applyset::apply::apply(&cluster, load(&cm.replace("\"1\"", "\"3\"")), &proxy::options(&ns.name)).await?;
    let error = report.objects[0].result.as_ref().unwrap_err();
    assert_eq!(log.count("PATCH"), 6);
    assert!(
        error.render().starts_with("Error from server (Conflict): error when applying patch:"),
        "{}",
        error.render()
    );
    if report.objects.len() != 1 {
        bail!("one object expected");
    }
    Ok(())
}
