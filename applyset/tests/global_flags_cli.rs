//! kubectl 1.33's global flags (`kubectl options`) on `applyset apply` and `applyset diff`,
//! side by side with real kubectl on the local control plane (one namespace each): impersonation
//! (checked in the apiserver's audit log), a server, token, CA and client certificate given by
//! flags alone, TLS flags, `--request-timeout`, `-v`, `--warnings-as-errors`, the errors kubectl
//! gives for unusable combinations, and the flags that only tune kubectl's internals.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use support::{
    AuditLog, CommandOutput, Impersonated, ManifestDir, TestNamespace, applyset_apply, applyset_cli, eventually,
    kubectl_apply, kubectl_path, run, scratch_dir,
};

const APP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n";

const RBAC_TIMEOUT: Duration = Duration::from_secs(30);

/// Our stderr in kubectl's form: each failure here is prefixed with its source
/// (`FILE: document N (line L): `), where kubectl names none.
fn without_sources(stderr: &str) -> String {
    let strip = |line: &str| -> String {
        match line.find(": document ").and_then(|at| line[at..].find("): ").map(|end| at + end + 3)) {
            Some(start) => line[start..].to_owned(),
            None => line.to_owned(),
        }
    };
    stderr.lines().map(strip).map(|l| l + "\n").collect()
}

/// Both tools' output with their namespaces written `NS`.
fn in_ns(text: &str, ns: &TestNamespace) -> String {
    text.replace(&ns.name, "NS")
}

/// `applyset apply` and `kubectl apply` with the same arguments, each in its namespace.
fn both(ours: &TestNamespace, theirs: &TestNamespace, args: &[&str]) -> Result<(CommandOutput, CommandOutput)> {
    Ok((applyset_apply(ours, args)?, kubectl_apply(theirs, args)?))
}

/// Waits until `user` (with `groups`) may create ConfigMaps in `ns` (RBAC caches take a moment).
async fn wait_for_rbac(ns: &TestNamespace, user: &str, groups: &[&str]) -> Result<()> {
    let mut args = vec!["auth", "can-i", "create", "configmaps", "--as", user];
    for group in groups {
        args.extend(["--as-group", group]);
    }
    eventually(&format!("RBAC to let {user} create ConfigMaps in {}", ns.name), RBAC_TIMEOUT, || {
        let answer = run(ns.kubectl().expect("kubectl").args(&args), None);
        async move { Ok(answer?.stdout.trim().eq("yes").then_some(())) }
    })
    .await
}

#[tokio::test]
async fn impersonation_is_kubectls() -> Result<()> {
    let (ours, theirs) = (TestNamespace::create("as-ours").await?, TestNamespace::create("as-kubectl").await?);
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    for ns in [&ours, &theirs] {
        let role = ["create", "role", "cm-editor", "--verb=get,list,create,patch,update", "--resource=configmaps"];
        ns.kubectl_ok(&role, None)?;
        ns.kubectl_ok(
            &["create", "rolebinding", "cm-editors", "--role=cm-editor", "--user=bob", "--group=editors"],
            None,
        )?;
        wait_for_rbac(ns, "carol", &["editors"]).await?;
    }

    // A user without rights gets kubectl's Forbidden, naming that user.
    let (a, b) = both(&ours, &theirs, &["-f", dir.path(), "--as=alice"])?;
    assert!(!a.success && !b.success, "{a:?}\n{b:?}");
    assert_eq!(in_ns(&without_sources(&a.stderr), &ours), in_ns(&b.stderr, &theirs));
    assert!(a.stderr.contains(r#"User "alice" cannot get resource "configmaps""#), "{}", a.stderr);

    // A group with rights: every request carries the user, the groups and the UID.
    let audit = AuditLog::from_now(&ours.kubeconfig)?;
    let flags = ["--as=carol", "--as-group=editors", "--as-group=viewers", "--as-uid=u-42"];
    let (a, b) = both(&ours, &theirs, &[&["-f", dir.path()][..], &flags].concat())?;
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    let expected = Impersonated {
        username: "carol".into(),
        uid: Some("u-42".into()),
        groups: vec!["editors".into(), "viewers".into(), "system:authenticated".into()],
    };
    for ns in [&ours, &theirs] {
        let requests = eventually(&format!("the audit log to hold {}'s writes", ns.name), RBAC_TIMEOUT, || async {
            let requests: Vec<_> = audit
                .requests()?
                .into_iter()
                .filter(|r| r.namespace.as_deref() == Some(&ns.name) && r.resource == "configmaps")
                .collect();
            Ok((requests.iter().filter(|r| r.verb == "create").count() == 2).then_some(requests))
        })
        .await?;
        for request in &requests {
            assert_eq!(request.impersonated.as_ref(), Some(&expected), "{request:?}");
        }
    }

    // The user alone is refused; a user with rights of its own passes.
    let (a, b) = both(&ours, &theirs, &["-f", dir.path(), "--as=carol"])?;
    assert!(!a.success && !b.success, "{a:?}\n{b:?}");
    assert_eq!(in_ns(&without_sources(&a.stderr), &ours), in_ns(&b.stderr, &theirs));
    let (a, b) = both(&ours, &theirs, &["-f", dir.path(), "--as=bob"])?;
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    Ok(())
}

/// The admin kubeconfig (one cluster, one user, as `scripts/control-plane` writes it).
fn kubeconfig_yaml(kubeconfig: &Path) -> Result<serde_json::Value> {
    Ok(serde_yaml_ng::from_str(&std::fs::read_to_string(kubeconfig)?)?)
}

/// The pieces of the admin kubeconfig as the files the flags name; removed on drop.
struct ClusterFiles {
    dir: PathBuf,
    server: String,
    ca: String,
    client_certificate: String,
    client_key: String,
}

impl ClusterFiles {
    fn of(kubeconfig: &Path, name: &str) -> Result<ClusterFiles> {
        use base64::Engine;
        let config = kubeconfig_yaml(kubeconfig)?;
        let cluster = |key: &str| -> Result<String> {
            config["clusters"][0]["cluster"][key].as_str().map(str::to_owned).context(key.to_owned())
        };
        let user = |key: &str| -> Result<String> {
            config["users"][0]["user"][key].as_str().map(str::to_owned).context(key.to_owned())
        };
        let dir = scratch_dir("global-flags", name);
        let decode = |data: String| base64::engine::general_purpose::STANDARD.decode(data);
        let write = |file: &str, data: String| -> Result<String> {
            let path = dir.join(file);
            std::fs::write(&path, decode(data)?)?;
            Ok(path.to_str().context("UTF-8 path")?.to_owned())
        };
        Ok(ClusterFiles {
            server: cluster("server")?,
            ca: write("ca.crt", cluster("certificate-authority-data")?)?,
            client_certificate: write("client.crt", user("client-certificate-data")?)?,
            client_key: write("client.key", user("client-key-data")?)?,
            dir,
        })
    }
}

impl Drop for ClusterFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `TOOL apply -n NS ARGS` with no kubeconfig anywhere: no `--kubeconfig`, no `$KUBECONFIG`, and
/// a `$HOME` without `.kube/config`.
fn without_kubeconfig(tool: &Path, home: &Path, ns: &str, args: &[&str]) -> Result<CommandOutput> {
    let mut command = Command::new(tool);
    command.env_remove("KUBECONFIG").env("HOME", home).args(["apply", "-n", ns]).args(args);
    run(&mut command, None)
}

#[tokio::test]
async fn server_token_and_certificates_given_by_flags_alone() -> Result<()> {
    let (ours, theirs) =
        (TestNamespace::create("flags-only-ours").await?, TestNamespace::create("flags-only-kubectl").await?);
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    let files = ClusterFiles::of(&ours.kubeconfig, &ours.name)?;
    let home = scratch_dir("global-flags", &format!("{}-home", ours.name));
    let mut tokens = Vec::new();
    for ns in [&ours, &theirs] {
        ns.kubectl_ok(&["create", "serviceaccount", "deployer"], None)?;
        let subject = format!("--serviceaccount={}:deployer", ns.name);
        ns.kubectl_ok(&["create", "rolebinding", "deployer-edits", "--clusterrole=edit", &subject], None)?;
        wait_for_rbac(ns, &format!("system:serviceaccount:{}:deployer", ns.name), &[]).await?;
        tokens.push(ns.kubectl_ok(&["create", "token", "deployer"], None)?.trim().to_owned());
    }
    let (applyset, kubectl) = (PathBuf::from(env!("CARGO_BIN_EXE_applyset")), kubectl_path()?);
    let pair = |extra: &[&str]| -> Result<(CommandOutput, CommandOutput)> {
        let run_with = |tool: &Path, ns: &TestNamespace, token: &str| {
            let args = [&["-f", dir.path(), "-s", &files.server, "--token", token][..], extra].concat();
            without_kubeconfig(tool, &home, &ns.name, &args)
        };
        Ok((run_with(&applyset, &ours, &tokens[0])?, run_with(&kubectl, &theirs, &tokens[1])?))
    };

    // -s, --token and --certificate-authority suffice; the token is never printed.
    let (a, b) = pair(&["--certificate-authority", &files.ca])?;
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    assert!(!a.stdout.contains(&tokens[0]) && !a.stderr.contains(&tokens[0]));
    assert_eq!(ours.jsonpath("configmap/a", "{.data.k}")?, "v");
    // Without the CA the server's certificate is refused; --insecure-skip-tls-verify accepts it.
    let (a, b) = pair(&[])?;
    assert!(!a.success && !b.success, "{a:?}\n{b:?}");
    assert!(a.stderr.contains("UnknownIssuer"), "{}", a.stderr);
    let (a, b) = pair(&["--insecure-skip-tls-verify"])?;
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    // Both at once: kubectl's refusal.
    let (a, b) = pair(&["--insecure-skip-tls-verify", "--certificate-authority", &files.ca])?;
    assert!(!a.success && !b.success && a.code == b.code, "{a:?}\n{b:?}");
    assert_eq!(a.stderr, b.stderr);
    // --tls-server-name: a name the certificate holds passes, another is refused.
    let (a, b) = pair(&["--certificate-authority", &files.ca, "--tls-server-name=kubernetes"])?;
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    let (a, b) = pair(&["--certificate-authority", &files.ca, "--tls-server-name=elsewhere.example"])?;
    assert!(!a.success && !b.success, "{a:?}\n{b:?}");
    assert!(a.stderr.contains(r#"certificate not valid for name "elsewhere.example""#), "{}", a.stderr);

    // A client certificate and key from files (the admin's) instead of a token.
    let certificate = |ns: &TestNamespace, tool: &Path| {
        let args = [
            "-f",
            dir.path(),
            "-s",
            &files.server,
            "--certificate-authority",
            &files.ca,
            "--client-certificate",
            &files.client_certificate,
            "--client-key",
            &files.client_key,
        ];
        without_kubeconfig(tool, &home, &ns.name, &args)
    };
    dir.write("app.yaml", &APP.replace("k: v", "k: w"))?;
    let (a, b) = (certificate(&ours, &applyset)?, certificate(&theirs, &kubectl)?);
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(ours.jsonpath("configmap/a", "{.data.k}")?, "w");
    let _ = std::fs::remove_dir_all(&home);
    Ok(())
}

/// Accepts connections and never answers: a hung apiserver.
fn silent_server() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    Ok(port)
}

#[tokio::test]
async fn request_timeout_is_kubectls() -> Result<()> {
    let (ours, theirs) =
        (TestNamespace::create("timeout-ours").await?, TestNamespace::create("timeout-kubectl").await?);
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;

    // A value that is neither whole seconds nor a Go duration: kubectl's message and exit code,
    // for apply (1) and diff (2).
    for value in ["bogus", "-1", "5x"] {
        let flag = format!("--request-timeout={value}");
        let (a, b) = both(&ours, &theirs, &["-f", dir.path(), &flag])?;
        assert_eq!((a.code, b.code), (Some(1), Some(1)), "{a:?}\n{b:?}");
        assert_eq!(a.stderr, b.stderr);
        let a = applyset_cli(&ours.kubeconfig, "diff", &["-n", &ours.name, "-f", dir.path(), &flag])?;
        let b = run(theirs.kubectl()?.args(["diff", "-f", dir.path(), &flag]), None)?;
        assert_eq!((a.code, b.code), (Some(2), Some(2)), "{a:?}\n{b:?}");
        assert_eq!(a.stderr, b.stderr);
    }

    // A valid one is sent to the apiserver with each request, as kubectl sends it.
    let audit = AuditLog::from_now(&ours.kubeconfig)?;
    let (a, b) = both(&ours, &theirs, &["-f", dir.path(), "--request-timeout=5"])?;
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    for ns in [&ours, &theirs] {
        let requests = eventually("the audit log to hold the writes", RBAC_TIMEOUT, || async {
            let requests: Vec<_> =
                audit.requests()?.into_iter().filter(|r| r.namespace.as_deref() == Some(&ns.name)).collect();
            Ok((requests.iter().filter(|r| r.verb == "create").count() == 2).then_some(requests))
        })
        .await?;
        for request in requests.iter().filter(|r| r.resource == "configmaps") {
            assert!(request.uri.contains("timeout=5s"), "{request:?}");
        }
    }

    // An apiserver that never answers: the request gives up after the timeout, not never.
    let port = silent_server()?;
    let server = format!("https://127.0.0.1:{port}");
    let hung = ["-f", dir.path(), "-s", &server, "--insecure-skip-tls-verify", "--request-timeout=1s"];
    for (tool, ns) in [(PathBuf::from(env!("CARGO_BIN_EXE_applyset")), &ours), (kubectl_path()?, &theirs)] {
        let started = Instant::now();
        let mut command = Command::new(&tool);
        command.env_remove("KUBECONFIG").args(["apply", "-n", &ns.name, "--token=t"]).args(hung);
        let out = run(&mut command, None)?;
        assert!(!out.success, "{out:?}");
        assert!(started.elapsed() < Duration::from_secs(15), "{}: {:?}", tool.display(), started.elapsed());
        if ns.name == ours.name {
            assert!(out.stderr.contains("Client.Timeout exceeded while awaiting headers"), "{}", out.stderr);
        }
    }
    Ok(())
}

/// `(verb, URL, status)` of each request to the namespace's ConfigMaps in a `-v=6` log,
/// kubectl's `"Response" verb="GET" url="…" status="200 OK"` and ours alike, sorted.
fn logged_requests(log: &str, ns: &TestNamespace) -> Vec<(String, String, String)> {
    let quoted = |line: &str, key: &str| -> Option<String> {
        let start = line.find(&format!("{key}=\""))? + key.len() + 2;
        let end = line[start..].find('"')?;
        Some(line[start..start + end].to_owned())
    };
    let mut requests: Vec<_> = log
        .lines()
        .filter(|line| line.contains("Response"))
        .filter_map(|line| Some((quoted(line, "verb")?, quoted(line, "url")?, quoted(line, "status")?)))
        .filter(|(_, url, _)| url.contains(&format!("/namespaces/{}/configmaps", ns.name)))
        .map(|(verb, url, status)| (verb, in_ns(&url, ns), status))
        .collect();
    requests.sort();
    requests
}

#[tokio::test]
async fn verbosity_logs_requests_as_kubectl_does() -> Result<()> {
    let (ours, theirs) = (TestNamespace::create("v-ours").await?, TestNamespace::create("v-kubectl").await?);
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    let (a, b) = both(&ours, &theirs, &["-f", dir.path(), "-v=6"])?;
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    let (mine, kubectls) = (logged_requests(&a.stderr, &ours), logged_requests(&b.stderr, &theirs));
    assert_eq!(mine.len(), 4, "a GET and a POST per object:\n{}", a.stderr);
    assert_eq!(mine, kubectls, "\n{}\n{}", a.stderr, b.stderr);
    assert!(!a.stderr.contains("\"Request\""), "headers only from 7 on");
    // 7: each request with its headers first; 0: nothing.
    let seven = applyset_apply(&ours, &["-f", dir.path(), "--v=7"])?;
    assert!(seven.success, "{seven:?}");
    assert!(seven.stderr.contains(r#"Request verb="GET""#) && seven.stderr.contains("accept: application/json"));
    let quiet = applyset_apply(&ours, &["-f", dir.path(), "-v", "0"])?;
    assert!(quiet.success && quiet.stderr.is_empty(), "{quiet:?}");
    Ok(())
}

#[tokio::test]
async fn warnings_as_errors_is_kubectls() -> Result<()> {
    let (ours, theirs) = (TestNamespace::create("wae-ours").await?, TestNamespace::create("wae-kubectl").await?);
    // Two objects with the same unknown field: one warning text, printed and counted once.
    let unknown = APP.replace("kind: ConfigMap\n", "kind: ConfigMap\nbogus: 1\n");
    let dir = ManifestDir::new(&[("app.yaml", &unknown)])?;
    let args = ["-f", dir.path(), "--validate=warn", "--warnings-as-errors"];
    let (a, b) = both(&ours, &theirs, &args)?;
    assert_eq!((a.code, b.code), (Some(1), Some(1)), "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(a.stderr, b.stderr);
    assert_eq!(a.stderr, "Warning: unknown field \"bogus\"\nerror: 1 warning received\n");
    // The objects were applied all the same; without the flag the warning is only printed.
    assert!(ours.exists("configmap/b")?);
    let (a, b) = both(&ours, &theirs, &["-f", dir.path(), "--validate=warn", "--warnings-as-errors=false"])?;
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    // No warning: no error.
    let clean = ManifestDir::new(&[("app.yaml", APP)])?;
    let (a, b) = both(&ours, &theirs, &["-f", clean.path(), "--warnings-as-errors"])?;
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    Ok(())
}

#[tokio::test]
async fn unusable_flag_combinations_fail_with_kubectls_messages() -> Result<()> {
    let (ours, theirs) = (TestNamespace::create("cfgerr-ours").await?, TestNamespace::create("cfgerr-kubectl").await?);
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    let not_pem = dir.file("app.yaml");
    let ca = format!("--certificate-authority={not_pem}");
    let cases: [&[&str]; 11] = [
        &["--token=x", "--username=y"],
        &["--as-group=g"],
        &["--as-uid=u"],
        &["--context=nope"],
        &["--cluster=nope"],
        &["--user=nope"],
        &["--certificate-authority=/nonexistent/ca.crt"],
        &["--insecure-skip-tls-verify", &ca],
        &[&ca],
        &[&format!("--client-certificate={not_pem}")],
        &["--profile=bogus"],
    ];
    for case in cases {
        let args = [&["-f", dir.path()][..], case].concat();
        let (a, b) = both(&ours, &theirs, &args)?;
        assert!(!a.success && a.code == b.code, "{case:?}: {a:?}\n{b:?}");
        assert_eq!(a.stderr, b.stderr, "{case:?}");
        // kubectl diff exits 2 with the same message.
        let a = applyset_cli(&ours.kubeconfig, "diff", &[&["-n", &ours.name][..], &args].concat())?;
        assert_eq!(a.code, Some(2), "{case:?}: {a:?}");
        assert_eq!(a.stderr, b.stderr, "{case:?}");
    }
    // The configuration is checked before the input is read, as kubectl does.
    let (a, b) = both(&ours, &theirs, &["-f", "/nonexistent/app.yaml", "--token=x", "--username=y"])?;
    assert!(!a.success && a.code == b.code, "{a:?}\n{b:?}");
    assert_eq!(a.stderr, b.stderr);
    // A --kubeconfig that names no file.
    let missing = |tool: &Path| {
        let mut command = Command::new(tool);
        command.env_remove("KUBECONFIG").args(["apply", "--kubeconfig=/nonexistent/config", "-f", dir.path()]);
        run(&mut command, None)
    };
    let (a, b) = (missing(Path::new(env!("CARGO_BIN_EXE_applyset")))?, missing(&kubectl_path()?)?);
    assert!(!a.success && a.code == b.code, "{a:?}\n{b:?}");
    assert_eq!(a.stderr, b.stderr);
    Ok(())
}

#[tokio::test]
async fn flags_that_tune_kubectl_internals_are_accepted() -> Result<()> {
    let (ours, theirs) = (TestNamespace::create("noop-ours").await?, TestNamespace::create("noop-kubectl").await?);
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    let cache = scratch_dir("global-flags", &format!("{}-cache", ours.name));
    let profile = cache.join("profile.pprof");
    let (cache_dir, profile_output) = (cache.to_str().context("UTF-8")?, profile.to_str().context("UTF-8")?);
    let flags = [
        "-f",
        dir.path(),
        "--cache-dir",
        cache_dir,
        "--disable-compression",
        "--log-flush-frequency=1s",
        "--vmodule=apply*=3",
        "--profile=none",
        "--profile-output",
        profile_output,
        "--match-server-version=false",
    ];
    let (a, b) = both(&ours, &theirs, &flags)?;
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    // --cluster and --user naming the kubeconfig's own entries.
    let config = kubeconfig_yaml(&ours.kubeconfig)?;
    let name = |section: &str| config[section][0]["name"].as_str().map(str::to_owned).context(section.to_owned());
    let (cluster, user) = (format!("--cluster={}", name("clusters")?), format!("--user={}", name("users")?));
    let (a, b) = both(&ours, &theirs, &["-f", dir.path(), &cluster, &user])?;
    assert!(a.success && b.success, "{a:?}\n{b:?}");
    assert_eq!(a.stdout, b.stdout);
    // --profile writes nothing here (there is no Go runtime to profile).
    let a = applyset_apply(&ours, &["-f", dir.path(), "--profile=cpu", "--profile-output", profile_output])?;
    assert!(a.success && !profile.exists(), "{a:?}");

    // --match-server-version compares major.minor with the emulated kubectl 1.33 (kubectl itself
    // compares its whole build, so a kubectl 1.33.1 refuses a 1.33.13 server).
    let version: serde_json::Value =
        serde_json::from_str(&run(theirs.kubectl()?.args(["version", "-o", "json"]), None)?.stdout)?;
    let minor = version["serverVersion"]["minor"].as_str().context("the server's minor version")?;
    let a = applyset_apply(&ours, &["-f", dir.path(), "--match-server-version"])?;
    match minor.trim_end_matches('+') {
        "33" => assert!(a.success, "{a:?}"),
        other => {
            assert!(!a.success, "a 1.{other} server: {a:?}");
            assert!(a.stderr.contains("differs from client version"), "{}", a.stderr);
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    Ok(())
}
