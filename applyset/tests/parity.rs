//! Differential tests: `applyset apply` against the real `kubectl apply` (client-side, v1.33).
//!
//! Every scenario is a directory under `tests/parity/` holding manifest versions (`v1/`,
//! `v2/`, …) and a `scenario.yaml` listing the steps: applies of a version (with flags) and
//! out-of-band `kubectl` commands (scale, rollout restart/undo, patch, annotate, label, …).
//! One generic runner plays the steps on two fresh namespaces of the test control plane:
//! with `kubectl.1.33 apply` in one and `applyset apply` in the other (out-of-band commands
//! run on both sides with kubectl). After every step it compares
//!
//! * the exit status, the per-object lines on stdout (same order; except that kubectl's
//!   ApplySet prune prints its `pruned` lines in Go map order, so those are compared as a set)
//!   and the lines on stderr (warnings and errors; klog headers stripped), with namespace and
//!   directory substituted;
//! * every live object of the compared kinds, normalised: server-owned metadata, status and
//!   owner UIDs dropped, server-assigned values (clusterIP, nodePort, restartedAt) replaced by
//!   placeholders numbered in order of appearance (so a value reassigned on one side only
//!   shows), namespaces and ApplySet IDs substituted. The last-applied annotation is part of
//!   the comparison, so it must be byte-identical.
//!
//! `scenario.yaml` format:
//!
//! ```yaml
//! description: what the scenario shows
//! kinds: [widgets.parity.applyset.test]   # compared in addition to the default kinds
//! setup:    [[apply, -f, "${DIR}/crd.yaml"]]          # cluster-wide kubectl, once, not compared
//! teardown: [[delete, -f, "${DIR}/crd.yaml"]]         # cluster-wide kubectl, always run at the end
//! cleanup:  [[delete, clusterrole, "parity-${NAMESPACE}"]] # per side, always run at the end
//! steps:
//! - apply: v1                      # `… apply -f <copy of v1/> -n NS` (file contents: ${NAMESPACE} substituted)
//!   flags: [--prune, -l, app=x]    # extra flags, the same for both tools
//!   check:                         # assertions on the normalised live objects (both sides)
//!     deployment.apps/web: {/spec/replicas: 5, /spec/paused: null}   # null = absent
//!     configmap/gone: null                                            # object must not exist
//! - kubectl: [scale, deployment/web, --replicas=5]   # out-of-band, `-n NS` added, both sides
//! ```
//!
//! Until `applyset apply` exists the runner plays the kubectl side alone (so the scenarios and
//! their checks are exercised) and then fails with "applyset apply not implemented".

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;
use serde_json::{Value, json};
use support::{CommandOutput, TestNamespace, applyset_ids_blanked, kubectl_path, run, server_values_blanked};

/// Kinds compared in every scenario (plus the scenario's own `kinds`).
const DEFAULT_KINDS: &[&str] = &["configmaps", "secrets", "services", "deployments.apps"];
/// Objects the control plane creates in every namespace by itself.
const IGNORED_OBJECTS: &[&str] = &["configmap/kube-root-ca.crt"];
/// Bound on waiting for the Deployment controller to catch up.
const CONTROLLER_TIMEOUT: Duration = Duration::from_secs(120);
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const APPLYSET_TOOLING: &str = "applyset.kubernetes.io/tooling";
const APPLYSET_ID: &str = "applyset.kubernetes.io/id";

// ------------------------------------------------------------------------------ scenarios

/// One test per scenario directory; `every_scenario_directory_is_listed` keeps the list and
/// the directories in sync.
macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        const SCENARIOS: &[&str] = &[$(stringify!($name)),*];
        $(
            #[test]
            fn $name() -> Result<()> {
                on_scenario_thread(stringify!($name).replace('_', "-"))
            }
        )*
    };
}

scenarios! {
    scale_survives,
    rollout_restart_survives,
    rollback_postmortem,
    null_deletes,
    finalizers_ordered_set,
    containers_merged_by_name,
    ports_by_container_port,
    args_replaced_wholesale,
    strategy_recreate_retain_keys,
    crd_json_merge,
    service_ports,
    configmap_secret_data,
    annotate_label_out_of_band,
    missing_annotation,
    prune_legacy,
    prune_applyset,
    dry_run,
    reading_files,
    cluster_scoped,
    server_warnings_and_errors,
    unreadable_files,
    deep_documents,
    output_formats,
}

#[test]
fn every_scenario_directory_is_listed() -> Result<()> {
    let mut on_disk = BTreeSet::new();
    for entry in std::fs::read_dir(scenarios_root())? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            on_disk.insert(entry.file_name().to_string_lossy().into_owned());
        }
    }
    let listed: BTreeSet<String> = SCENARIOS.iter().map(|name| name.replace('_', "-")).collect();
    ensure!(
        on_disk == listed,
        "tests/parity/ and the scenarios! list differ: only on disk {:?}, only listed {:?}",
        on_disk.difference(&listed).collect::<Vec<_>>(),
        listed.difference(&on_disk).collect::<Vec<_>>()
    );
    for name in &listed {
        Scenario::load(name)?;
    }
    Ok(())
}

fn scenarios_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parity")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    description: String,
    #[serde(default)]
    kinds: Vec<String>,
    #[serde(default)]
    setup: Vec<Vec<String>>,
    #[serde(default)]
    teardown: Vec<Vec<String>>,
    #[serde(default)]
    cleanup: Vec<Vec<String>>,
    steps: Vec<Step>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    /// A manifest version (a directory of the scenario) to apply.
    apply: Option<String>,
    /// Extra flags for both tools' apply.
    #[serde(default)]
    flags: Vec<String>,
    /// An out-of-band kubectl command run on both sides (`-n NS` added).
    kubectl: Option<Vec<String>>,
    /// Object key (`kind[.group]/name`) → JSON pointer → expected value (null = absent);
    /// a null object = the object must not exist.
    #[serde(default)]
    check: BTreeMap<String, Option<BTreeMap<String, Value>>>,
}

impl Scenario {
    fn load(name: &str) -> Result<Self> {
        let path = scenarios_root().join(name).join("scenario.yaml");
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let scenario: Scenario =
            serde_yaml_ng::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        for (index, step) in scenario.steps.iter().enumerate() {
            match (&step.apply, &step.kubectl) {
                (Some(version), None) => {
                    let dir = scenarios_root().join(name).join(version);
                    ensure!(dir.is_dir(), "{}: step {} applies missing {}", path.display(), index + 1, dir.display());
                }
                (None, Some(args)) => ensure!(
                    step.flags.is_empty() && !args.is_empty(),
                    "{}: step {}: kubectl steps take their arguments in the list",
                    path.display(),
                    index + 1
                ),
                _ => bail!("{}: step {} needs exactly one of apply/kubectl", path.display(), index + 1),
            }
        }
        Ok(scenario)
    }
}

// ------------------------------------------------------------------------------ tools

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tool {
    Kubectl,
    Applyset,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Kubectl => "kubectl",
            Tool::Applyset => "applyset",
        }
    }
}

fn applyset_binary() -> &'static str {
    env!("CARGO_BIN_EXE_applyset")
}

/// Whether this build of applyset has the `apply` command.
fn applyset_apply_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        Command::new(applyset_binary())
            .args(["apply", "--help"])
            .output()
            .map(|output| output.status.success())
            .unwrap_or(false)
    })
}

/// One namespace driven by one tool.
struct Side {
    tool: Tool,
    namespace: TestNamespace,
    /// Where this side's copies of the manifest versions go.
    workdir: PathBuf,
    /// Server-assigned value → placeholder, numbered in order of first appearance.
    assigned: HashMap<String, String>,
}

impl Side {
    async fn create(tool: Tool, scenario: &str) -> Result<Self> {
        let namespace = TestNamespace::create(&format!("{}-{}", tool.name(), short(scenario))).await?;
        let workdir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parity").join(&namespace.name);
        let _ = std::fs::remove_dir_all(&workdir);
        std::fs::create_dir_all(&workdir)?;
        Ok(Self { tool, namespace, workdir, assigned: HashMap::new() })
    }

    fn ns(&self) -> &str {
        &self.namespace.name
    }

    fn kubectl(&self) -> Result<Command> {
        let mut command = Command::new(kubectl_path()?);
        command.arg("--kubeconfig").arg(&self.namespace.kubeconfig);
        command.env("KUBECTL_APPLYSET", "true");
        Ok(command)
    }

    /// Out-of-band kubectl in this side's namespace.
    fn kubectl_in_ns(&self, args: &[String]) -> Result<CommandOutput> {
        let mut command = self.kubectl()?;
        command.arg("-n").arg(self.ns()).args(args);
        run(&mut command, None)
    }

    /// Applies `dir` with this side's tool.
    fn apply(&self, dir: &Path, flags: &[String]) -> Result<CommandOutput> {
        let mut command = match self.tool {
            Tool::Kubectl => {
                let mut command = self.kubectl()?;
                command.arg("apply");
                command
            }
            Tool::Applyset => {
                let mut command = Command::new(applyset_binary());
                command.arg("apply").arg("--kubeconfig").arg(&self.namespace.kubeconfig);
                command.env("KUBECTL_APPLYSET", "true");
                command
            }
        };
        command.arg("-f").arg(dir).arg("-n").arg(self.ns()).args(flags);
        run(&mut command, None)
    }

    /// Copies version `version` of `scenario` into the work dir with `${NAMESPACE}` substituted.
    fn materialise(&self, scenario: &str, version: &str, step: usize) -> Result<PathBuf> {
        let target = self.workdir.join(format!("step{step}-{version}"));
        copy_substituted(&scenarios_root().join(scenario).join(version), &target, self.ns())?;
        Ok(target)
    }

    fn substitute_args(&self, args: &[String], scenario: &str) -> Vec<String> {
        args.iter().map(|arg| substitute(arg, self.ns(), scenario)).collect()
    }

    /// Text with this side's namespace and directories replaced by placeholders.
    fn neutral(&self, text: &str) -> String {
        text.replace(&self.workdir.display().to_string(), "<dir>").replace(self.ns(), "<ns>")
    }

    /// A step's output, neutral, with what the server assigns (uids, resource versions,
    /// timestamps, cluster IPs, ApplySet IDs) blanked in the objects `-o` printed. The live
    /// objects keep those values: the snapshots compare them with numbered placeholders.
    fn neutral_output(&self, text: &str) -> String {
        server_values_blanked(&applyset_ids_blanked(&self.neutral(text)))
    }

    /// Waits until every Deployment's controller has observed its generation.
    fn wait_for_deployments(&self) -> Result<()> {
        let started = Instant::now();
        loop {
            let list = self.get_json(&["deployments.apps".to_owned()])?;
            let pending: Vec<String> = list
                .iter()
                .filter(|item| {
                    let generation = item["metadata"]["generation"].as_i64().unwrap_or(0);
                    let observed = item["status"]["observedGeneration"].as_i64().unwrap_or(-1);
                    observed < generation
                })
                .map(|item| item["metadata"]["name"].as_str().unwrap_or("?").to_owned())
                .collect();
            if pending.is_empty() {
                return Ok(());
            }
            if started.elapsed() > CONTROLLER_TIMEOUT {
                bail!(
                    "{}: the deployment controller did not observe {pending:?} within {CONTROLLER_TIMEOUT:?}",
                    self.ns()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn get_json(&self, kinds: &[String]) -> Result<Vec<Value>> {
        let mut command = self.kubectl()?;
        command.arg("-n").arg(self.ns()).arg("get").arg(kinds.join(",")).args(["-o", "json"]);
        let stdout = run(&mut command, None)?.success_stdout()?;
        let list = parse_unbounded(&stdout).context("parsing kubectl get -o json")?;
        Ok(list["items"].as_array().cloned().unwrap_or_default())
    }

    /// The live objects of `kinds`, normalised, keyed `kind[.group]/name`.
    fn snapshot(&mut self, kinds: &[String]) -> Result<BTreeMap<String, Value>> {
        let items = self.get_json(kinds)?;
        let mut raw = BTreeMap::new();
        for item in items {
            let key = object_key(&item);
            // Cluster-scoped objects of both sides are listed from either side; each side's
            // carry its namespace in their names.
            let foreign = item["metadata"]["namespace"].is_null()
                && !item["metadata"]["name"].as_str().unwrap_or_default().contains(self.ns());
            if !foreign && !IGNORED_OBJECTS.contains(&key.as_str()) {
                raw.insert(key, item);
            }
        }
        // ApplySet IDs hash the parent's namespace: substitute them like the namespace.
        let ids: BTreeSet<String> = raw
            .values()
            .filter_map(|item| item["metadata"]["labels"][APPLYSET_ID].as_str().map(str::to_owned))
            .collect();
        let mut snapshot = BTreeMap::new();
        for (key, mut item) in raw {
            self.normalise(&mut item);
            let mut text = self.neutral(&serde_json::to_string(&item)?);
            for id in &ids {
                text = text.replace(id, "<applyset-id>");
            }
            snapshot.insert(self.neutral(&key), parse_unbounded(&text)?);
        }
        Ok(snapshot)
    }

    fn normalise(&mut self, item: &mut Value) {
        let Some(object) = item.as_object_mut() else { return };
        object.remove("status");
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in
                ["uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "namespace", "selfLink"]
            {
                metadata.remove(field);
            }
            if let Some(owners) = metadata.get_mut("ownerReferences").and_then(Value::as_array_mut) {
                for owner in owners.iter_mut().filter_map(Value::as_object_mut) {
                    owner.remove("uid");
                }
            }
            if let Some(tooling) =
                metadata.get_mut("annotations").and_then(|annotations| annotations.get_mut(APPLYSET_TOOLING))
            {
                // The CLI writes kubectl's tooling value (it manages kubectl's sets).
                let expected = "kubectl/".to_owned();
                let text = tooling.as_str().unwrap_or_default();
                *tooling = if text.starts_with(&expected) {
                    json!("<tool>/<version>")
                } else {
                    json!(format!("unexpected tooling {text:?}, wanted {expected}<version>"))
                };
            }
        }
        // Server-assigned values: numbered placeholders, so a value that changes on one side
        // only (reassigned because an apply dropped it) still shows.
        let assigned = &mut self.assigned;
        let mut assign = |value: &mut Value| {
            if value.as_str() == Some("None") {
                return;
            }
            let next = assigned.len() + 1;
            let placeholder = assigned.entry(value.to_string()).or_insert_with(|| format!("<assigned-{next}>"));
            *value = json!(placeholder);
        };
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
            for field in ["clusterIP", "healthCheckNodePort"] {
                spec.get_mut(field).map(&mut assign);
            }
            for ip in spec.get_mut("clusterIPs").and_then(Value::as_array_mut).into_iter().flatten() {
                assign(ip);
            }
            for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                port.get_mut("nodePort").map(&mut assign);
            }
            spec.get_mut("template")
                .and_then(|template| template.get_mut("metadata"))
                .and_then(|metadata| metadata.get_mut("annotations"))
                .and_then(|annotations| annotations.get_mut("kubectl.kubernetes.io/restartedAt"))
                .map(&mut assign);
        }
    }

    /// Clears finalizers (a namespace with finalized objects never goes away) and runs the
    /// scenario's cleanup commands; best effort.
    fn cleanup(&self, kinds: &[String], commands: &[Vec<String>], scenario: &str) {
        if let Ok(items) = self.get_json(kinds) {
            for item in items {
                if item["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty()) {
                    let target = format!(
                        "{}/{}",
                        resource_of(&item, kinds),
                        item["metadata"]["name"].as_str().unwrap_or_default()
                    );
                    let args = [
                        "patch".to_owned(),
                        target,
                        "--type=merge".to_owned(),
                        "-p".to_owned(),
                        r#"{"metadata":{"finalizers":null}}"#.to_owned(),
                    ];
                    if let Ok(output) = self.kubectl_in_ns(&args)
                        && !output.success
                    {
                        eprintln!("warning: {}: {}", output.command, output.stderr);
                    }
                }
            }
        }
        for args in commands {
            let _ = self.kubectl_in_ns(&self.substitute_args(args, scenario));
        }
    }
}

/// The resource (plural[.group]) under which `kubectl get` listed `item`.
fn resource_of(item: &Value, kinds: &[String]) -> String {
    let kind = item["kind"].as_str().unwrap_or_default().to_lowercase();
    kinds
        .iter()
        .find(|resource| resource.split('.').next().is_some_and(|plural| plural.trim_end_matches('s') == kind))
        .cloned()
        .unwrap_or(kind)
}

/// `kind-lower[.group]/name`, as kubectl prints objects.
fn object_key(item: &Value) -> String {
    let api_version = item["apiVersion"].as_str().unwrap_or_default();
    let kind = item["kind"].as_str().unwrap_or_default().to_lowercase();
    let name = item["metadata"]["name"].as_str().unwrap_or_default();
    match api_version.split_once('/') {
        Some((group, _)) => format!("{kind}.{group}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

fn short(scenario: &str) -> String {
    scenario.chars().filter(|c| c.is_ascii_alphanumeric()).take(12).collect()
}

fn substitute(text: &str, namespace: &str, scenario: &str) -> String {
    text.replace("${NAMESPACE}", namespace).replace("${DIR}", &scenarios_root().join(scenario).display().to_string())
}

fn copy_substituted(from: &Path, to: &Path, namespace: &str) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_substituted(&entry.path(), &target, namespace)?;
        } else {
            let bytes = std::fs::read(entry.path())?;
            let bytes = match String::from_utf8(bytes) {
                Ok(text) => text.replace("${NAMESPACE}", namespace).into_bytes(),
                Err(error) => error.into_bytes(),
            };
            std::fs::write(target, bytes)?;
        }
    }
    Ok(())
}

/// applyset leads each failure with where the object came from (`<file>: document N (line L): `,
/// after `error: ` when the line has it), which kubectl's lone-error form lacks; the rest of
/// the line must be kubectl's.
fn without_source(line: &str) -> String {
    let (lead, rest) = line.strip_prefix("error: ").map_or(("", line), |rest| ("error: ", rest));
    let message = rest.find(": document ").and_then(|at| {
        let after = &rest[at + ": document ".len()..];
        let close = after.find("): ")?;
        after[..close].contains(" (line ").then(|| &after[close + "): ".len()..])
    });
    match message {
        Some(message) => format!("{lead}{message}"),
        None => line.to_owned(),
    }
}

/// stderr lines, klog headers (`W0612 10:00:00.000000 123 file.go:1] `, which carry times and
/// pids) removed so that only the messages are compared.
fn stderr_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .map(without_source)
        .map(|line| {
            let line = line.as_str();
            let bytes = line.as_bytes();
            let klog = bytes.len() > 5 && b"IWEF".contains(&bytes[0]) && bytes[1..5].iter().all(u8::is_ascii_digit);
            match line.split_once("] ") {
                Some((_, message)) if klog => message.to_owned(),
                _ => line.to_owned(),
            }
        })
        .collect()
}

/// kubectl's ApplySet prune walks a Go map of resource types, so the order of its `pruned`
/// lines is random between types: compare each run of `pruned` lines as a sorted block.
fn comparable_stdout(lines: &[String], flags: &[String]) -> Vec<String> {
    let mut lines = lines.to_vec();
    if flags.iter().any(|flag| flag.starts_with("--applyset")) {
        let is_pruned = |line: &String| line.contains(" pruned");
        let mut start = 0;
        while start < lines.len() {
            if !is_pruned(&lines[start]) {
                start += 1;
                continue;
            }
            let end = (start..lines.len()).find(|&i| !is_pruned(&lines[i])).unwrap_or(lines.len());
            lines[start..end].sort();
            start = end;
        }
    }
    lines
}

// ------------------------------------------------------------------------------ comparison

/// JSON pointers where `a` and `b` differ.
fn differing_paths(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let child = format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
                match (x.get(key), y.get(key)) {
                    (Some(u), Some(v)) => differing_paths(u, v, &child, out),
                    (Some(u), None) => out.push(format!("{child}: kubectl {u}, applyset absent")),
                    (None, Some(v)) => out.push(format!("{child}: kubectl absent, applyset {v}")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (index, (u, v)) in x.iter().zip(y).enumerate() {
                differing_paths(u, v, &format!("{path}/{index}"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{path}: kubectl {a}, applyset {b}")),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default().lines().map(|line| format!("      {line}\n")).collect()
}

/// Compares the two snapshots; returns one message per difference.
fn compare_snapshots(kubectl: &BTreeMap<String, Value>, applyset: &BTreeMap<String, Value>) -> Vec<String> {
    let mut problems = Vec::new();
    let keys: BTreeSet<&String> = kubectl.keys().chain(applyset.keys()).collect();
    for key in keys {
        match (kubectl.get(key), applyset.get(key)) {
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                let mut paths = Vec::new();
                differing_paths(a, b, "", &mut paths);
                let mut message = format!("{key} differs:\n");
                for path in &paths {
                    let _ = writeln!(message, "    {path}");
                }
                let annotation = |v: &Value| v["metadata"]["annotations"][LAST_APPLIED].as_str().map(str::to_owned);
                if annotation(a) != annotation(b) {
                    let _ = writeln!(
                        message,
                        "    last-applied annotation (kubectl):\n      {}\n    last-applied annotation (applyset):\n      {}",
                        annotation(a).unwrap_or_else(|| "<absent>".into()),
                        annotation(b).unwrap_or_else(|| "<absent>".into())
                    );
                }
                let _ = write!(message, "    kubectl object:\n{}    applyset object:\n{}", pretty(a), pretty(b));
                problems.push(message);
            }
            (Some(a), None) => problems.push(format!("{key} exists only on the kubectl side:\n{}", pretty(a))),
            (None, Some(b)) => problems.push(format!("{key} exists only on the applyset side:\n{}", pretty(b))),
            (None, None) => {}
        }
    }
    problems
}

fn check_expectations(
    tool: Tool,
    snapshot: &BTreeMap<String, Value>,
    checks: &BTreeMap<String, Option<BTreeMap<String, Value>>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (key, expected) in checks {
        match (snapshot.get(key), expected) {
            (None, None) => {}
            (Some(_), None) => problems.push(format!("{}: {key} should not exist", tool.name())),
            (None, Some(_)) => problems.push(format!("{}: {key} should exist", tool.name())),
            (Some(object), Some(pointers)) => {
                for (pointer, want) in pointers {
                    let got = object.pointer(pointer).cloned().unwrap_or(Value::Null);
                    if &got != want {
                        problems
                            .push(format!("{}: {key} {pointer} is {got}, the scenario expects {want}", tool.name()));
                    }
                }
            }
        }
    }
    problems
}

// ------------------------------------------------------------------------------ runner

/// Cleans up both sides and the cluster-wide setup (best effort; runs whatever the outcome).
fn clean_up(name: &str, scenario: &Scenario, kinds: &[String], sides: &[&Side]) {
    for side in sides {
        side.cleanup(kinds, &scenario.cleanup, name);
    }
    for args in &scenario.teardown {
        if let Ok(mut command) = sides[0].kubectl() {
            let args: Vec<String> = args.iter().map(|arg| substitute(arg, "<no-namespace>", name)).collect();
            let _ = run(command.args(&args), None);
        }
    }
}

/// JSON without serde_json's depth limit: objects may nest 10,000 levels (the deep-documents
/// scenario), which the scenario thread's stack holds.
fn parse_unbounded(text: &str) -> Result<Value> {
    let mut reader = serde_json::Deserializer::from_str(text);
    reader.disable_recursion_limit();
    Ok(Value::deserialize(&mut reader)?)
}

/// Runs a scenario on a thread whose stack holds documents nested to the apiserver's limit
/// (the comparison walks them recursively), with its own runtime.
fn on_scenario_thread(name: String) -> Result<()> {
    std::thread::Builder::new()
        .stack_size(applyset::DOCUMENT_THREAD_STACK)
        .spawn(move || {
            tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(run_scenario(&name))
        })?
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

async fn run_scenario(name: &str) -> Result<()> {
    let scenario = Scenario::load(name)?;
    let with_applyset = applyset_apply_available();
    let mut kinds: Vec<String> = DEFAULT_KINDS.iter().map(|kind| (*kind).to_owned()).collect();
    kinds.extend(scenario.kinds.iter().cloned());

    let mut kubectl_side = Side::create(Tool::Kubectl, name).await?;
    let mut applyset_side = match with_applyset {
        true => Some(Side::create(Tool::Applyset, name).await?),
        false => None,
    };

    let mut report = format!("scenario {name}: {}\n", scenario.description.trim());
    let _ = writeln!(
        report,
        "  kubectl side: {}; applyset side: {}",
        kubectl_side.ns(),
        applyset_side.as_ref().map_or("(applyset apply not implemented)", |side| side.ns())
    );

    let setup = (|| -> Result<()> {
        for args in &scenario.setup {
            let args: Vec<String> = args.iter().map(|arg| substitute(arg, "<no-namespace>", name)).collect();
            run(kubectl_side.kubectl()?.args(&args), None)?
                .success_stdout()
                .with_context(|| format!("setup of scenario {name}"))?;
        }
        Ok(())
    })();
    let outcome =
        setup.and_then(|()| play(name, &scenario, &kinds, &mut kubectl_side, applyset_side.as_mut(), &mut report));
    let mut sides: Vec<&Side> = vec![&kubectl_side];
    sides.extend(applyset_side.as_ref());
    clean_up(name, &scenario, &kinds, &sides);
    println!("{report}");
    let mismatches = outcome?;
    if mismatches > 0 {
        bail!("scenario {name}: {mismatches} mismatch(es) between kubectl and applyset (see the report above)");
    }
    if !with_applyset {
        bail!(
            "applyset apply not implemented: `{} apply --help` fails; the kubectl side of scenario {name} ran \
             and its checks passed",
            applyset_binary()
        );
    }
    Ok(())
}

/// Plays the steps; returns the number of mismatches (errors = harness/scenario failures).
fn play(
    name: &str,
    scenario: &Scenario,
    kinds: &[String],
    kubectl_side: &mut Side,
    mut applyset_side: Option<&mut Side>,
    report: &mut String,
) -> Result<usize> {
    let mut mismatches = 0;
    for (index, step) in scenario.steps.iter().enumerate() {
        let number = index + 1;
        let title = match (&step.apply, &step.kubectl) {
            (Some(version), _) => format!("apply {version} {}", step.flags.join(" ")),
            (_, Some(args)) => format!("kubectl {}", args.join(" ")),
            _ => unreachable!("checked by Scenario::load"),
        };
        let mut problems = Vec::new();
        let mut outputs = Vec::new();
        let mut sides: Vec<&mut Side> = vec![&mut *kubectl_side];
        if let Some(side) = applyset_side.as_deref_mut() {
            sides.push(side);
        }
        for side in sides.iter_mut() {
            let output = match (&step.apply, &step.kubectl) {
                (Some(version), _) => {
                    let dir = side.materialise(name, version, number)?;
                    let flags = side.substitute_args(&step.flags, name);
                    side.apply(&dir, &flags)?
                }
                (_, Some(args)) => side.kubectl_in_ns(&side.substitute_args(args, name))?,
                _ => unreachable!(),
            };
            if step.kubectl.is_some() && !output.success {
                bail!(
                    "step {number} ({title}) failed on the {} side:\n{}{}",
                    side.tool.name(),
                    output.stderr,
                    output.stdout
                );
            }
            outputs.push((
                output.success,
                side.neutral_output(&output.stdout).lines().map(str::to_owned).collect::<Vec<_>>(),
                stderr_lines(&side.neutral_output(&output.stderr)),
                output.stderr.clone(),
            ));
        }
        if outputs.len() == 2 && step.apply.is_some() {
            let (a, b) = (&outputs[0], &outputs[1]);
            if a.0 != b.0 {
                problems.push(format!(
                    "exit status: kubectl {}, applyset {}\n    kubectl stderr: {}\n    applyset stderr: {}",
                    if a.0 { "success" } else { "failure" },
                    if b.0 { "success" } else { "failure" },
                    a.3.trim(),
                    b.3.trim()
                ));
            }
            if comparable_stdout(&a.1, &step.flags) != comparable_stdout(&b.1, &step.flags) {
                problems.push(format!(
                    "stdout differs:\n    kubectl:\n{}    applyset:\n{}",
                    a.1.iter().map(|l| format!("      {l}\n")).collect::<String>(),
                    b.1.iter().map(|l| format!("      {l}\n")).collect::<String>()
                ));
            }
            if a.2 != b.2 {
                problems.push(format!(
                    "stderr differs (klog headers stripped):\n    kubectl:\n{}    applyset:\n{}",
                    a.2.iter().map(|l| format!("      {l}\n")).collect::<String>(),
                    b.2.iter().map(|l| format!("      {l}\n")).collect::<String>()
                ));
            }
        }

        for side in sides.iter() {
            side.wait_for_deployments()?;
        }
        let mut snapshots = Vec::new();
        for side in sides.iter_mut() {
            snapshots.push(side.snapshot(kinds)?);
        }
        // The checks pin what the scenario is about; on the kubectl side a failure is a
        // scenario bug, so it aborts.
        let kubectl_check = check_expectations(Tool::Kubectl, &snapshots[0], &step.check);
        if !kubectl_check.is_empty() {
            bail!(
                "scenario {name} step {number} ({title}): kubectl does not behave as the scenario says:\n  {}\n  \
                 kubectl said:\n{}\n{}\n  objects: {}",
                kubectl_check.join("\n  "),
                outputs[0].1.join("\n"),
                outputs[0].2.join("\n"),
                serde_json::to_string_pretty(&snapshots[0])?
            );
        }
        if snapshots.len() == 2 {
            problems.extend(check_expectations(Tool::Applyset, &snapshots[1], &step.check));
            problems.extend(compare_snapshots(&snapshots[0], &snapshots[1]));
        }

        let (_, stdout, stderr, _) = &outputs[0];
        let mut summary: Vec<String> = stdout.clone();
        summary.extend(stderr.iter().map(|line| format!("stderr: {line}")));
        let status =
            if problems.is_empty() { if outputs.len() == 2 { "same" } else { "kubectl only" } } else { "MISMATCH" };
        let _ = writeln!(
            report,
            "  step {number} {}: {status} ({} objects) {}",
            title.trim(),
            snapshots[0].len(),
            if summary.is_empty() { String::new() } else { format!("[{}]", summary.join("; ")) }
        );
        for problem in &problems {
            for line in problem.lines() {
                let _ = writeln!(report, "    | {line}");
            }
        }
        mismatches += problems.len();
    }
    Ok(mismatches)
}
