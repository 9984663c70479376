//! The two sides of a scenario: a namespace driven by kubectl or by applyset, its commands and
//! the normalised snapshots of its live objects.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{APPLYSET_ID, APPLYSET_TOOLING, CONTROLLER_TIMEOUT, IGNORED_OBJECTS, scenarios_root};
use crate::support::{CommandOutput, TestNamespace, applyset_ids_blanked, kubectl_path, run, server_values_blanked};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Tool {
    Kubectl,
    Applyset,
}

impl Tool {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tool::Kubectl => "kubectl",
            Tool::Applyset => "applyset",
        }
    }
}

pub(crate) fn applyset_binary() -> &'static str {
    env!("CARGO_BIN_EXE_applyset")
}

/// Whether this build of applyset has the `apply` command.
pub(crate) fn applyset_apply_available() -> bool {
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
pub(crate) struct Side {
    pub(crate) tool: Tool,
    namespace: TestNamespace,
    /// Where this side's copies of the manifest versions go.
    workdir: PathBuf,
    /// Server-assigned value → placeholder, numbered in order of first appearance.
    assigned: HashMap<String, String>,
}

impl Side {
    pub(crate) async fn create(tool: Tool, scenario: &str) -> Result<Self> {
        let namespace = TestNamespace::create(&format!("{}-{}", tool.name(), short(scenario))).await?;
        let workdir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parity").join(&namespace.name);
        let _ = std::fs::remove_dir_all(&workdir);
        std::fs::create_dir_all(&workdir)?;
        Ok(Self { tool, namespace, workdir, assigned: HashMap::new() })
    }

    pub(crate) fn ns(&self) -> &str {
        &self.namespace.name
    }

    pub(crate) fn kubectl(&self) -> Result<Command> {
        let mut command = Command::new(kubectl_path()?);
        command.arg("--kubeconfig").arg(&self.namespace.kubeconfig);
        command.env("KUBECTL_APPLYSET", "true");
        Ok(command)
    }

    /// Out-of-band kubectl in this side's namespace.
    pub(crate) fn kubectl_in_ns(&self, args: &[String]) -> Result<CommandOutput> {
        let mut command = self.kubectl()?;
        command.arg("-n").arg(self.ns()).args(args);
        run(&mut command, None)
    }

    /// Applies `dir` with this side's tool.
    pub(crate) fn apply(&self, dir: &Path, flags: &[String]) -> Result<CommandOutput> {
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
    pub(crate) fn materialise(&self, scenario: &str, version: &str, step: usize) -> Result<PathBuf> {
        let target = self.workdir.join(format!("step{step}-{version}"));
        copy_substituted(&scenarios_root().join(scenario).join(version), &target, self.ns())?;
        Ok(target)
    }

    pub(crate) fn substitute_args(&self, args: &[String], scenario: &str) -> Vec<String> {
        args.iter().map(|arg| substitute(arg, self.ns(), scenario)).collect()
    }

    /// Text with this side's namespace and directories replaced by placeholders.
    fn neutral(&self, text: &str) -> String {
        text.replace(&self.workdir.display().to_string(), "<dir>").replace(self.ns(), "<ns>")
    }

    /// A step's output, neutral, with what the server assigns (uids, resource versions,
    /// timestamps, cluster IPs, ApplySet IDs) blanked in the objects `-o` printed. The live
    /// objects keep those values: the snapshots compare them with numbered placeholders.
    pub(crate) fn neutral_output(&self, text: &str) -> String {
        server_values_blanked(&applyset_ids_blanked(&self.neutral(text)))
    }

    /// Waits until every Deployment's controller has observed its generation.
    pub(crate) fn wait_for_deployments(&self) -> Result<()> {
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
    pub(crate) fn snapshot(&mut self, kinds: &[String]) -> Result<BTreeMap<String, Value>> {
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
    pub(crate) fn cleanup(&self, kinds: &[String], commands: &[Vec<String>], scenario: &str) {
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

pub(crate) fn substitute(text: &str, namespace: &str, scenario: &str) -> String {
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

/// JSON without serde_json's depth limit: objects may nest 10,000 levels (the deep-documents
/// scenario), which the scenario thread's stack holds.
fn parse_unbounded(text: &str) -> Result<Value> {
    let mut reader = serde_json::Deserializer::from_str(text);
    reader.disable_recursion_limit();
    Ok(Value::deserialize(&mut reader)?)
}
