//! The chart, rendered by `helm template` with the lockdown values: its ServiceAccount and RBAC
//! objects, and what its Deployment would run.

use anyhow::{Context as _, Result, bail, ensure};
use serde_json::{Value, json};

use super::CHART;
use crate::support::{self, run};

const LOCKDOWN_VALUES: &str = "deploy/helm/applyset/ci/lockdown-values.yaml";
const RBAC_KINDS: [&str; 5] = ["ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"];

/// The chart, rendered: what is applied, and what the Deployment would run.
pub(crate) struct Chart {
    /// The ServiceAccount and RBAC objects.
    pub(crate) rbac: Vec<Value>,
    /// The container's arguments after `controller`.
    pub(crate) args: Vec<String>,
    /// The container's environment, `fieldRef`s resolved as the kubelet would for the pod.
    pub(crate) env: Vec<(String, String)>,
    pub(crate) service_account: String,
}

impl Chart {
    pub(crate) fn env(&self, name: &str) -> Option<&str> {
        self.env.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    pub(crate) fn role(&self, name: &str) -> Result<&Value> {
        self.rbac
            .iter()
            .find(|o| o["kind"] == "Role" && o["metadata"]["name"] == name)
            .with_context(|| format!("no Role {name} rendered"))
    }
}

pub(crate) fn name_of(object: &Value) -> String {
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or("(cluster)");
    let (kind, name) =
        (object["kind"].as_str().unwrap_or_default(), object["metadata"]["name"].as_str().unwrap_or_default());
    format!("{kind} {namespace}/{name}")
}

/// `helm template` of the chart with the lockdown values, release `release` in `release_ns`,
/// watching `tenant`; the pod is named `pod_name`.
pub(crate) fn render(release: &str, release_ns: &str, tenant: &str, pod_name: &str) -> Result<Chart> {
    let helm_home = support::scratch_dir("chart_rbac", &format!("helm-{release}"));
    let mut command = std::process::Command::new(support::helm_path()?);
    command
        .current_dir(support::repo_root())
        .env("HELM_CACHE_HOME", helm_home.join("cache"))
        .env("HELM_CONFIG_HOME", helm_home.join("config"))
        .env("HELM_DATA_HOME", helm_home.join("data"))
        .args(["template", release, CHART, "--namespace", release_ns, "--values", LOCKDOWN_VALUES])
        .args(["--set", &format!("watchNamespace={tenant}"), "--set", "metrics.serviceMonitor.enabled=false"]);
    let rendered = run(&mut command, None)?.success_stdout()?;
    let mut documents = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(&rendered) {
        let value: Value = serde::Deserialize::deserialize(document).context("helm's output is not YAML")?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    let (rbac, others): (Vec<Value>, Vec<Value>) =
        documents.into_iter().partition(|d| RBAC_KINDS.iter().any(|kind| d["kind"] == *kind));
    for object in &rbac {
        eprintln!("apply  {}", name_of(object));
    }
    for object in &others {
        eprintln!("skip   {}", name_of(object));
    }

    let deployments: Vec<&Value> = others.iter().filter(|d| d["kind"] == "Deployment").collect();
    ensure!(deployments.len() == 1, "{} Deployments rendered", deployments.len());
    let pod = &deployments[0]["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let args: Vec<String> = container["args"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| a.as_str().map(str::to_owned).context("a non-string argument"))
        .collect::<Result<_>>()?;
    ensure!(args.first().map(String::as_str) == Some("controller"), "args {args:?}");
    let mut env = Vec::new();
    for variable in container["env"].as_array().into_iter().flatten() {
        let name = variable["name"].as_str().context("an env variable without a name")?.to_owned();
        let value = match &variable["value"] {
            Value::String(value) => value.clone(),
            Value::Null => match variable["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                Some("metadata.name") => pod_name.to_owned(),
                Some("metadata.namespace") => release_ns.to_owned(),
                other => bail!("{name}: unexpected valueFrom {other:?}"),
            },
            other => other.to_string(),
        };
        ensure!(!value.contains('\n'), "{name}={value:?}");
        env.push((name, value));
    }
    let service_account = pod["serviceAccountName"].as_str().context("no serviceAccountName")?.to_owned();
    Ok(Chart { rbac, args: args[1..].to_vec(), env, service_account })
}

/// `object` as YAML for `kubectl apply -f -` (JSON is YAML), several as a v1 List.
pub(crate) fn manifest(objects: &[&Value]) -> String {
    json!({ "apiVersion": "v1", "kind": "List", "items": objects }).to_string()
}
