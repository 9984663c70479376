//! `applyset tree NAME`: the objects an ApplySet manages (its record of members, wherever it is
//! kept), as a tree by namespace and kind, each with its state and health as the status reports
//! them.

use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;

use super::{FleetError, Target, block_on};
use crate::cli::NamedArgs;
use crate::operator::api::{ApplySet, ApplySetStatus, InventoryObject};
use crate::operator::members::MemberRecords;
use crate::operator::status::{READY, STATE_APPLIED, condition};

pub fn tree(args: NamedArgs) -> ExitCode {
    block_on(|| async move {
        let target = Target::of(&args).await?;
        let applyset = target.read().await?;
        let mut status = applyset.status.clone().unwrap_or_default();
        MemberRecords::default()
            .read_into(target.cluster.client(), &applyset, &mut status)
            .await
            .map_err(|source| FleetError::Record { applyset: target.key(), source: Box::new(source) })?;
        print!("{}", render(&applyset, &status));
        Ok(ExitCode::SUCCESS)
    })
}

/// One object of the tree.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Leaf {
    name: String,
    /// State, and health when known (`Applied`, `Failed: …`, `Current`).
    notes: Vec<String>,
}

/// Where an object sits: its namespace (`None`: cluster-scoped), then its kind.
type Tree = BTreeMap<Option<String>, BTreeMap<String, Vec<Leaf>>>;

/// The tree of `status` (whose record of members is read in): the first line names the
/// ApplySet, its revision and readiness; cluster-scoped objects come first, then each namespace.
fn render(applyset: &ApplySet, status: &ApplySetStatus) -> String {
    let inventory = status.inventory.clone().unwrap_or_default();
    let listed: HashMap<(&str, Option<&str>, &str), &InventoryObject> =
        inventory.objects.iter().map(|o| ((o.kind.as_str(), o.namespace.as_deref(), o.name.as_str()), o)).collect();
    // The status lists failed and drifted objects first: when it lists them all, an object it
    // leaves out was applied.
    let listed_not_applied = inventory.objects.iter().filter(|o| o.state != STATE_APPLIED).count() as u64;
    let not_applied: u64 = inventory.states.iter().filter(|(s, _)| *s != STATE_APPLIED).map(|(_, n)| n).sum();
    let unlisted_state = if listed_not_applied >= not_applied { STATE_APPLIED } else { "-" };

    let mut tree = Tree::new();
    let mut add = |kind: &str, namespace: Option<&str>, name: &str, notes: Vec<String>| {
        let leaf = Leaf { name: name.to_owned(), notes };
        tree.entry(namespace.map(str::to_owned)).or_default().entry(kind.to_owned()).or_default().push(leaf);
    };
    match &inventory.members {
        Some(members) => {
            for m in members {
                let notes = match listed.get(&(m.kind.as_str(), m.namespace.as_deref(), m.name.as_str())) {
                    Some(object) => notes_of(object),
                    None => vec![unlisted_state.to_owned()],
                };
                add(&m.kind, m.namespace.as_deref(), &m.name, notes);
            }
        }
        // No record (an ApplySet not applied yet, or one whose record was lost): what is listed.
        None => inventory.objects.iter().for_each(|o| add(&o.kind, o.namespace.as_deref(), &o.name, notes_of(o))),
    }

    let mut out = header(applyset, status, inventory.count);
    let namespaces = tree.len();
    for (n, (namespace, kinds)) in tree.into_iter().enumerate() {
        let last_namespace = n + 1 == namespaces;
        let label = namespace.unwrap_or_else(|| "(cluster-scoped)".into());
        out.push_str(&format!("{}{label}\n", branch(last_namespace)));
        let indent = if last_namespace { "    " } else { "│   " };
        let count = kinds.len();
        for (k, (kind, mut leaves)) in kinds.into_iter().enumerate() {
            let last_kind = k + 1 == count;
            out.push_str(&format!("{indent}{}{kind}\n", branch(last_kind)));
            let inner = format!("{indent}{}", if last_kind { "    " } else { "│   " });
            leaves.sort();
            let width = leaves.iter().map(|l| l.name.chars().count()).max().unwrap_or(0);
            let leaf_count = leaves.len();
            for (l, leaf) in leaves.into_iter().enumerate() {
                let line = format!("{:width$}   {}", leaf.name, leaf.notes.join("   "));
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
/// Current) of a listed object.
fn notes_of(object: &InventoryObject) -> Vec<String> {
    let with = |what: &str, message: Option<&String>| match message {
        Some(m) if !m.is_empty() => format!("{what}: {}", super::table::one_line(m)),
        _ => what.to_owned(),
    };
    let mut notes = vec![if object.state == STATE_APPLIED {
        object.state.clone()
    } else {
        with(&object.state, object.message.as_ref())
    }];
    if let Some(health) = &object.health {
        notes.push(if health == "Current" { health.clone() } else { with(health, object.health_message.as_ref()) });
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
    }

    #[test]
    fn unlisted_members_are_unknown_when_the_status_does_not_list_every_failure() {
        let applyset: ApplySet = serde_yaml_ng::from_str(
            r#"
apiVersion: applyset.dev/v1alpha1
kind: ApplySet
metadata: {name: web, namespace: a}
spec: {source: {url: "https://git.example/r.git"}, interval: 1m}
status:
  inventory:
    count: 2
    states: {Failed: 2}
    objects:
    - {kind: ConfigMap, namespace: a, name: x, state: Failed}
    members:
    - {kind: ConfigMap, namespace: a, name: x, uid: u1}
    - {kind: ConfigMap, namespace: a, name: y, uid: u2}
"#,
        )
        .expect("an ApplySet");
        let status = applyset.status.clone().expect("a status");
        let text = render(&applyset, &status);
        assert!(text.contains("        ├── x   Failed\n"), "{text}");
        assert!(text.contains("        └── y   -\n"), "{text}");
    }
}
