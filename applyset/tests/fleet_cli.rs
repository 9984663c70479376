//! The commands that show and drive ApplySets (`get`, `reconcile`, `suspend`, `resume`, `tree`,
//! `history`, `events`, `completion`), run as a user runs them: the real binary against the
//! real control plane, an ApplySet reconciled by the real controller from a real git
//! repository, and kubectl as the oracle where kubectl has the same case.

mod git;
mod operator;
mod support;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use operator::{
    ControllerFixture, config_map, create_applyset, get_applyset, is_ready, start_controller, wait_for_applyset,
};
use support::TestNamespace;
use support::{CommandOutput, applyset_cli, kubectl_path, run};

const T: Duration = Duration::from_secs(90);

/// `applyset COMMAND ARGS… -n NS` with the namespace's kubeconfig.
fn cli(ns: &TestNamespace, command: &str, args: &[&str]) -> Result<CommandOutput> {
    applyset_cli(&ns.kubeconfig, command, &[args, &["-n", &ns.name][..]].concat())
}

fn ok(output: CommandOutput) -> Result<CommandOutput> {
    ensure!(
        output.code == Some(0),
        "`{}` exited {:?}:\n{}{}",
        output.command,
        output.code,
        output.stderr,
        output.stdout
    );
    Ok(output)
}

fn config_map_value(ns: &TestNamespace, name: &str) -> Result<String> {
    ns.kubectl_ok(&["get", "configmap", name, "-o", "jsonpath={.data.value}"], None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_lists_drives_and_inspects_an_applyset() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("fleet-cli").await?;
    repo.write("app/a.yaml", config_map("a", &ns.name, "1"));
    repo.write("app/b.yaml", config_map("b", &ns.name, "1"));
    let first = repo.commit("first");
    let controller = start_controller(&ns)?;
    // A long interval: every run after the first is one the CLI asked for.
    let spec = serde_json::json!({ "source": { "url": repo.url(), "path": "app" }, "interval": "1h", "prune": true });
    create_applyset(&ns, "web", spec).await?;
    wait_for_applyset(&ns, "web", &controller, "Ready", T, is_ready).await?;

    // get: the table, and the objects.
    let table = ok(cli(&ns, "get", &[])?)?.stdout;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "STATUS", "REVISION", "SUSPENDED", "DRIFTED", "HEALTHY", "AGE"]);
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(&row[..5], ["web", "True", "Succeeded", &format!("main@sha1:{first}"), "False"], "{table}");
    let all = ok(cli(&ns, "get", &["-A"])?)?.stdout;
    assert!(all.starts_with("NAMESPACE "), "{all}");
    let ours = |l: &&str| l.split_whitespace().take(3).collect::<Vec<_>>() == [ns.name.as_str(), "web", "True"];
    assert!(all.lines().any(|l| ours(&l)), "{all}");
    let json: serde_json::Value = serde_json::from_str(&ok(cli(&ns, "get", &["web", "-o", "json"])?)?.stdout)?;
    assert_eq!(json["metadata"]["name"], "web");
    assert_eq!(json["status"]["lastAppliedRevision"], format!("main@sha1:{first}"));
    assert_eq!(ok(cli(&ns, "get", &["web", "-o", "name"])?)?.stdout, "applyset.applyset.dev/web\n");

    // A missing ApplySet: kubectl's words and exit code.
    let missing = cli(&ns, "get", &["missing"])?;
    let mut kubectl = ns.kubectl()?;
    kubectl.args(["get", "applysets.applyset.dev", "missing"]);
    let expected = run(&mut kubectl, None)?;
    assert_eq!((missing.code, missing.stderr.as_str()), (expected.code, expected.stderr.as_str()));

    // reconcile: returns once the new commit is applied.
    repo.write("app/a.yaml", config_map("a", &ns.name, "2"));
    repo.remove("app/b.yaml");
    let second = repo.commit("second");
    let reconciled = ok(cli(&ns, "reconcile", &["web", "--with-source", "--timeout", "60s"])?)?;
    assert!(reconciled.stderr.contains(&format!("✔ applied revision main@sha1:{second}")), "{}", reconciled.stderr);
    assert_eq!(config_map_value(&ns, "a")?, "2", "applied when reconcile returned");
    assert!(!ns.exists("configmap/b")?, "pruned when reconcile returned");

    // history: both commits, newest first, each with the time it was applied.
    let history = ok(cli(&ns, "history", &["web"])?)?.stdout;
    let revisions: Vec<&str> = history.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(revisions, [format!("main@sha1:{second}"), format!("main@sha1:{first}")], "{history}");
    assert!(history.lines().nth(1).is_some_and(|l| l.ends_with("Applied (current)")), "{history}");
    let entries: serde_json::Value = serde_json::from_str(&ok(cli(&ns, "history", &["web", "-o", "json"])?)?.stdout)?;
    assert!(entries[0]["appliedAt"].is_string(), "{entries}");

    // tree: the objects by namespace and kind.
    let tree = ok(cli(&ns, "tree", &["web"])?)?.stdout;
    let expected_tree = format!(
        "ApplySet {ns}/web   main@sha1:{second}   Ready=True   1 object(s)\n└── {ns}\n    └── ConfigMap\n        └── a   Applied\n",
        ns = ns.name
    );
    assert_eq!(tree, expected_tree);
    let entries: serde_json::Value = serde_json::from_str(&ok(cli(&ns, "tree", &["web", "-o", "json"])?)?.stdout)?;
    assert_eq!(
        entries,
        serde_json::json!([{ "kind": "ConfigMap", "namespace": ns.name, "name": "a", "state": "Applied" }])
    );

    // events: what the controller reported, oldest first.
    let events = ok(cli(&ns, "events", &["web"])?)?.stdout;
    assert!(events.starts_with("LAST SEEN"), "{events}");
    assert!(events.lines().any(|l| l.contains("Pruned") && l.contains("applyset/web")), "{events}");
    let listed: serde_json::Value = serde_json::from_str(&ok(cli(&ns, "events", &["web", "-o", "json"])?)?.stdout)?;
    let items = listed["items"].as_array().cloned().unwrap_or_else(|| vec![listed.clone()]);
    assert!(items.iter().any(|e| e["reason"] == "Pruned" && e["involvedObject"]["name"] == "web"), "{listed}");

    // suspend, then reconcile refuses; resume waits for the run.
    ok(cli(&ns, "suspend", &["web"])?)?;
    assert!(get_applyset(&ns, "web").await?.spec.suspend);
    let refused = cli(&ns, "reconcile", &["web"])?;
    assert_eq!(refused.code, Some(1));
    assert!(refused.stderr.contains("is suspended"), "{}", refused.stderr);
    let table = ok(cli(&ns, "get", &["web"])?)?.stdout;
    assert!(table.lines().nth(1).is_some_and(|l| l.split_whitespace().nth(4) == Some("True")), "{table}");
    repo.write("app/a.yaml", config_map("a", &ns.name, "3"));
    let third = repo.commit("third");
    let resumed = ok(cli(&ns, "resume", &["web"])?)?;
    assert!(!get_applyset(&ns, "web").await?.spec.suspend);
    assert!(resumed.stderr.contains(&format!("applied revision main@sha1:{third}")), "{}", resumed.stderr);
    assert_eq!(config_map_value(&ns, "a")?, "3");

    // A run that fails: exit 1 with the Ready condition's reason and message.
    repo.write("app/bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad\n");
    repo.commit("broken");
    let failed = cli(&ns, "reconcile", &["web"])?;
    assert_eq!(failed.code, Some(1), "{}", failed.stderr);
    assert!(failed.stderr.contains("LoadFailed") && failed.stderr.contains("bad.yaml"), "{}", failed.stderr);
    let history = ok(cli(&ns, "history", &["web"])?)?.stdout;
    assert!(history.lines().nth(1).is_some_and(|l| l.contains("LoadFailed")), "{history}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_gives_up_after_its_timeout_when_no_controller_answers() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("fleet-cli-timeout").await?;
    repo.write("app/a.yaml", config_map("a", &ns.name, "1"));
    repo.commit("first");
    create_applyset(
        &ns,
        "web",
        serde_json::json!({ "source": { "url": repo.url(), "path": "app" }, "interval": "1h" }),
    )
    .await?;
    let waited = cli(&ns, "reconcile", &["web", "--timeout", "2s"])?;
    assert_eq!(waited.code, Some(1));
    assert!(waited.stderr.contains("timed out after 2s"), "{}", waited.stderr);
    // The request stays: a controller that starts later handles it.
    let annotation = ns.jsonpath("applyset/web", "{.metadata.annotations.applyset\\.dev/reconcile-requested-at}")?;
    assert!(!annotation.is_empty());
    let bad_timeout = cli(&ns, "reconcile", &["web", "--timeout", "soon"])?;
    assert_eq!(bad_timeout.code, Some(1));
    assert!(bad_timeout.stderr.starts_with("error: invalid --timeout \"soon\""), "{}", bad_timeout.stderr);
    Ok(())
}

/// A kubeconfig whose context's namespace is `ns` (completion lists the current context's).
fn kubeconfig_in_namespace(ns: &TestNamespace) -> Result<std::path::PathBuf> {
    let copy = ns.kubeconfig.with_file_name(format!("{}-completion.kubeconfig", ns.name));
    std::fs::copy(&ns.kubeconfig, &copy).context("copying the kubeconfig")?;
    let mut kubectl = std::process::Command::new(kubectl_path()?);
    kubectl.arg("--kubeconfig").arg(&copy).args(["config", "set-context", "--current", "--namespace", &ns.name]);
    run(&mut kubectl, None)?.success_stdout()?;
    Ok(copy)
}

fn complete(kubeconfig: &Path, words: &[&str]) -> Result<CommandOutput> {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_applyset"));
    command.env("COMPLETE", "fish").env("KUBECONFIG", kubeconfig).arg("--").arg("applyset").args(words);
    run(&mut command, None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_scripts_load_and_complete_commands_flags_and_applyset_names() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("fleet-cli-complete").await?;
    for name in ["web", "worker"] {
        let spec = serde_json::json!({ "source": { "url": repo.url() }, "interval": "1h", "suspend": true });
        create_applyset(&ns, name, spec).await?;
    }
    let script_for = |shell: &str| -> Result<String> {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_applyset"));
        command.args(["completion", shell]);
        ok(run(&mut command, None)?)?.success_stdout()
    };
    for shell in ["bash", "zsh", "fish"] {
        let script = script_for(shell)?;
        assert!(script.contains("COMPLETE=") || script.contains("COMPLETE "), "{shell}: {script}");
    }
    // bash parses its script.
    let script = script_for("bash")?;
    let mut bash = std::process::Command::new("bash");
    bash.args(["-n", "-c", &script]);
    ok(run(&mut bash, None)?)?;

    let kubeconfig = kubeconfig_in_namespace(&ns)?;
    let commands = ok(complete(&kubeconfig, &["re"])?)?.stdout;
    let names: Vec<&str> = commands.lines().map(|l| l.split('\t').next().unwrap_or_default()).collect();
    assert!(names.contains(&"reconcile") && names.contains(&"resume"), "{commands}");
    let applysets = ok(complete(&kubeconfig, &["tree", "w"])?)?.stdout;
    let mut names: Vec<&str> = applysets.lines().map(|l| l.split('\t').next().unwrap_or_default()).collect();
    names.sort();
    assert_eq!(names, ["web", "worker"], "{applysets}");
    let flags = ok(complete(&kubeconfig, &["reconcile", "web", "--with"])?)?.stdout;
    assert!(flags.lines().any(|l| l.starts_with("--with-source")), "{flags}");
    Ok(())
}

/// A watching command as a user leaves it running: its output lines, read as they come.
struct Watching {
    child: std::process::Child,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Watching {
    fn start(ns: &TestNamespace, command: &str, args: &[&str]) -> Result<Watching> {
        use std::io::BufRead;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_applyset"))
            .env_remove("KUBECONFIG")
            .arg(command)
            .arg("--kubeconfig")
            .arg(&ns.kubeconfig)
            .args(args)
            .args(["-n", &ns.name])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().context("its stdout")?;
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Ok(Watching { child, lines })
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits for a line that `matches`, printed after the first `after` lines.
    async fn line_after(&self, what: &str, after: usize, matches: impl Fn(&str) -> bool) -> Result<String> {
        support::eventually(what, T, || async { Ok(self.lines().into_iter().skip(after).find(|l| matches(l))) })
            .await
            .map_err(|e| e.context(self.lines().join("\n")))
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `get -w` prints the table and then a line for each change of an ApplySet; `events -w` the
/// Events so far and then each new one: both follow a new commit applied, until stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_events_watch_print_each_change_as_it_comes() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("fleet-watch").await?;
    repo.write("a.yaml", config_map("a", &ns.name, "1"));
    repo.commit("first");
    let controller = start_controller(&ns)?;
    create_applyset(&ns, "web", serde_json::json!({ "source": { "url": repo.url() }, "interval": "1h" })).await?;
    wait_for_applyset(&ns, "web", &controller, "Ready", T, is_ready).await?;

    let get = Watching::start(&ns, "get", &["-w"])?;
    let events = Watching::start(&ns, "events", &["web", "-w"])?;
    get.line_after("the table", 0, |l| l.starts_with("web ")).await?;
    events.line_after("the first Event", 0, |l| l.contains("Applied") || l.contains("Succeeded")).await?;
    let (seen_get, seen_events) = (get.lines().len(), events.lines().len());

    repo.write("a.yaml", config_map("a", &ns.name, "2"));
    let second = repo.commit("second");
    operator::request_reconcile(&ns, "web").await?;
    let short = &second[..7];
    let line =
        get.line_after("a line for the new revision", seen_get, |l| l.starts_with("web ") && l.contains(short)).await?;
    eprintln!("get -w: {line}");
    let event =
        events.line_after("the new Event", seen_events, |l| l.contains(short) || l.contains("configured")).await?;
    eprintln!("events -w: {event}");
    ensure!(config_map_value(&ns, "a")? == "2");
    Ok(())
}
