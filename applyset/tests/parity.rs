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

// The harness, beside the scenario directories (only directories are scenarios).
#[path = "parity/compare.rs"]
mod compare;
#[path = "parity/runner.rs"]
mod runner;
#[path = "parity/side.rs"]
mod side;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;
use serde_json::Value;

use runner::on_scenario_thread;

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
    being_deleted,
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
