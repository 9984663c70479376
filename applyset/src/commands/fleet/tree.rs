//! `applyset tree NAME`: the objects an ApplySet manages (its record of members, wherever it is
//! kept), as a tree by namespace and kind, each with its state and health as the status reports
//! them.

use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;

use super::{FleetError, Target, block_on};
use crate::cli::TreeArgs;
use crate::operator::api::{ApplySet, ApplySetStatus, InventoryObject};
use crate::operator::members::MemberRecords;
use crate::operator::status::{HEALTH_CURRENT, HEALTHY, READY, STATE_APPLIED, condition};

pub fn tree(args: TreeArgs) -> ExitCode {
    block_on(|| async move {
        let target = Target::of(&args.target).await?;
        let applyset = target.read().await?;
        let mut status = applyset.status.clone().unwrap_or_default();
        MemberRecords::default()
            .read_into(target.cluster.client(), &applyset, &mut status)
            .await
            .map_err(|source| FleetError::Record { applyset: target.key(), source: Box::new(source) })?;
        let text = match args.output.as_deref() {
            None => render(&applyset, &status),
            Some("json") => format!("{}\n", serde_json::to_string_pretty(&entries(&status)).unwrap_or_default()),
            Some("yaml") => serde_yaml_ng::to_string(&entries(&status)).unwrap_or_default(),
            Some(other) => return Err(FleetError::Output(other.to_owned())),
        };
        print!("{text}");
        Ok(ExitCode::SUCCESS)
    })
}

/// One object the ApplySet manages, with what the status says of it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Entry {
    pub(crate) kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) namespace: Option<String>,
    pub(crate) name: String,
    /// `Applied`, `Drifted`, `Failed`; `-` when the status does not say.
    pub(crate) state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) health: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) health_message: Option<String>,
}

/// Every member of `status` (whose record is read in), sorted by namespace (cluster-scoped
/// first), kind and name, with the state and health the status lists for it.
pub(crate) fn entries(status: &ApplySetStatus) -> Vec<Entry> {
    let inventory = status.inventory.clone().unwrap_or_default();
    let listed: HashMap<(&str, Option<&str>, &str), &InventoryObject> =
        inventory.objects.iter().map(|o| ((o.kind.as_str(), o.namespace.as_deref(), o.name.as_str()), o)).collect();
    // The status lists failed and drifted objects first: when it lists them all, an object it
    // leaves out was applied.
    let listed_not_applied = inventory.objects.iter().filter(|o| o.state != STATE_APPLIED).count() as u64;
    let not_applied: u64 = inventory.states.iter().filter(|(s, _)| *s != STATE_APPLIED).map(|(_, n)| n).sum();
    let unlisted_state = if listed_not_applied >= not_applied { STATE_APPLIED } else { "-" };
    // Healthy=True: every object waited for is Current, and the status lists none of those.
    let unlisted_health = condition(status, HEALTHY).filter(|c| c.status == "True").map(|_| HEALTH_CURRENT.to_owned());
    let of_listed = |o: &InventoryObject| Entry {
        kind: o.kind.clone(),
        namespace: o.namespace.clone(),
        name: o.name.clone(),
        state: o.state.clone(),
        message: o.message.clone().filter(|m| !m.is_empty()),
        health: o.health.clone(),
        health_message: o.health_message.clone().filter(|m| !m.is_empty()),
    };
    let mut entries: Vec<Entry> = match &inventory.members {
        Some(members) => members
            .iter()
            .map(|m| match listed.get(&(m.kind.as_str(), m.namespace.as_deref(), m.name.as_str())) {
                Some(object) => of_listed(object),
                None => Entry {
                    kind: m.kind.clone(),
                    namespace: m.namespace.clone(),
                    name: m.name.clone(),
                    state: unlisted_state.to_owned(),
                    message: None,
                    health: unlisted_health.clone(),
                    health_message: None,
                },
            })
            .collect(),
        // No record (an ApplySet not applied yet, or one whose record was lost): what is listed.
        None => inventory.objects.iter().map(of_listed).collect(),
    };
    entries.sort_by(|a, b| (&a.namespace, &a.kind, &a.name).cmp(&(&b.namespace, &b.kind, &b.name)));
    entries
}

/// The tree of `status` (whose record of members is read in): the first line names the
/// ApplySet, its revision and readiness; cluster-scoped objects come first, then each namespace.
fn render(applyset: &ApplySet, status: &ApplySetStatus) -> String {
    let mut tree: BTreeMap<Option<String>, BTreeMap<String, Vec<Entry>>> = BTreeMap::new();
    for entry in entries(status) {
        tree.entry(entry.namespace.clone()).or_default().entry(entry.kind.clone()).or_default().push(entry);
    }
    let count = status.inventory.as_ref().map_or(0, |i| i.count);
    let mut out = header(applyset, status, count);
    let namespaces = tree.len();
    for (n, (namespace, kinds)) in tree.into_iter().enumerate() {
        let last_namespace = n + 1 == namespaces;
        let label = namespace.unwrap_or_else(|| "(cluster-scoped)".into());
        out.push_str(&format!("{}{label}\n", branch(last_namespace)));
        let indent = if last_namespace { "    " } else { "│   " };
        let kind_count = kinds.len();
        for (k, (kind, leaves)) in kinds.into_iter().enumerate() {
            let last_kind = k + 1 == kind_count;
            out.push_str(&format!("{indent}{}{kind}\n", branch(last_kind)));
            let inner = format!("{indent}{}", if last_kind { "    " } else { "│   " });
            let width = leaves.iter().map(|l| l.name.chars().count()).max().unwrap_or(0);
            let leaf_count = leaves.len();
            for (l, leaf) in leaves.iter().enumerate() {
                let line = format!("{:width$}   {}", leaf.name, notes_of(leaf).join("   "));
                out.push_str(&format!("{inner}{}{}\n", branch(l + 1 == leaf_count), line.trim_end()));
            }
        }
    }
    out
}

fn branch(last: bool) -> &'static str {
    if last { "└── " } else { "├── " }
}

fn header(applyset: &ApplySet, status: &ApplySetStatus, count: u64) -> String {
    let ready = condition(status, READY).map_or_else(|| "Ready=Unknown".to_owned(), |c| format!("Ready={}", c.status));
    format!(
        "ApplySet {}/{}   {}   {ready}   {count} object(s)\n",
        applyset.metadata.namespace.as_deref().unwrap_or_default(),
        applyset.metadata.name.as_deref().unwrap_or_default(),
        status.last_applied_revision.as_deref().unwrap_or("(nothing applied yet)"),
    )
}

/// The state (with its message when not applied) and the health (with its message when not
/// Current) of an object.
fn notes_of(entry: &Entry) -> Vec<String> {
    let with = |what: &str, message: Option<&String>| match message {
        Some(m) => format!("{what}: {}", super::table::one_line(m)),
        None => what.to_owned(),
    };
    let mut notes = vec![if entry.state == STATE_APPLIED {
        entry.state.clone()
    } else {
        with(&entry.state, entry.message.as_ref())
    }];
    if let Some(health) = &entry.health {
        notes.push(if health == "Current" { health.clone() } else { with(health, entry.health_message.as_ref()) });
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_grouped_by_namespace_then_kind_with_states_from_the_status() {
        let applyset: ApplySet = serde_yaml_ng::from_str(
            r#"
apiVersion: applyset.dev/v1alpha1
kind: ApplySet
metadata: {name: web, namespace: team-a}
spec: {source: {url: "https://git.example/r.git"}, interval: 1m}
status:
  lastAppliedRevision: main@sha1:ab
  conditions:
  - {type: Ready, status: "False", reason: ApplyFailed, message: m, lastTransitionTime: "2026-11-27T10:00:00Z"}
  inventory:
    count: 4
    states: {Applied: 3, Failed: 1}
    objects:
    - {kind: Deployment.apps, namespace: team-a, name: web, state: Failed, message: "spec.replicas:\n invalid", health: InProgress, healthMessage: "1 of 2 updated"}
    - {kind: ConfigMap, namespace: team-a, name: settings, state: Applied, health: Current}
    members:
    - {kind: Namespace, name: team-a, uid: u1}
    - {kind: ConfigMap, namespace: team-a, name: settings, uid: u2}
    - {kind: Deployment.apps, namespace: team-a, name: web, uid: u3}
    - {kind: ConfigMap, namespace: team-a, name: a-long-name, uid: u4}
"#,
        )
        .expect("an ApplySet");
        let status = applyset.status.clone().expect("a status");
        let expected = "\
ApplySet team-a/web   main@sha1:ab   Ready=False   4 object(s)
├── (cluster-scoped)
│   └── Namespace
│       └── team-a   Applied
└── team-a
    ├── ConfigMap
    │   ├── a-long-name   Applied
    │   └── settings      Applied   Current
    └── Deployment.apps
        └── web   Failed: spec.replicas: invalid   InProgress: 1 of 2 updated
";
        assert_eq!(render(&applyset, &status), expected);
        let listed = entries(&status);
        let names: Vec<(&str, &str, &str)> =
            listed.iter().map(|e| (e.kind.as_str(), e.name.as_str(), e.state.as_str())).collect();
        assert_eq!(
            names,
            [
                ("Namespace", "team-a", "Applied"),
                ("ConfigMap", "a-long-name", "Applied"),
                ("ConfigMap", "settings", "Applied"),
                ("Deployment.apps", "web", "Failed")
            ]
        );
        assert_eq!(listed[3].health_message.as_deref(), Some("1 of 2 updated"));
    }

    /// The tree of an ApplySet `a/web` whose status is `status` (YAML, indented by two).
    fn tree_of(status: &str) -> String {
        let yaml = format!(
            "apiVersion: applyset.dev/v1alpha1\nkind: ApplySet\nmetadata: {{name: web, namespace: a}}\n\
             spec: {{source: {{url: \"https://git.example/r.git\"}}, interval: 1m}}\nstatus:{status}"
        );
        let applyset: ApplySet = serde_yaml_ng::from_str(&yaml).expect("an ApplySet");
        render(&applyset, applyset.status.as_ref().expect("a status"))
    }

    #[test]
    fn unlisted_members_are_current_once_the_set_is_healthy() {
        let text = tree_of(
            r#"
  conditions:
  - {type: Healthy, status: "True", reason: Healthy, message: "2 object(s) healthy", lastTransitionTime: "2026-11-28T10:00:00Z"}
  inventory:
    count: 2
    states: {Applied: 2}
    omitted: 2
    members:
    - {kind: ConfigMap, namespace: a, name: x, uid: u1}
    - {kind: ConfigMap, namespace: a, name: y, uid: u2}
"#,
        );
        assert!(text.contains("        ├── x   Applied   Current\n"), "{text}");
        assert!(text.contains("        └── y   Applied   Current\n"), "{text}");
    }

    #[test]
    fn unlisted_members_are_unknown_when_the_status_does_not_list_every_failure() {
        let text = tree_of(
            r#"
  inventory:
    count: 2
    states: {Failed: 2}
    objects:
    - {kind: ConfigMap, namespace: a, name: x, state: Failed}
    members:
    - {kind: ConfigMap, namespace: a, name: x, uid: u1}
    - {kind: ConfigMap, namespace: a, name: y, uid: u2}
"#,
        );
        assert!(text.contains("        ├── x   Failed\n"), "{text}");
        assert!(text.contains("        └── y   -\n"), "{text}");
    }
}
