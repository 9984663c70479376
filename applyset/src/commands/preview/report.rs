//! What `applyset plan` prints (pure): on stdout one line per object, in the apply's input
//! order and then prune's (`VERB NAME [-n NAMESPACE][: why]`, the verb padded to one column),
//! a summary line, then for each configured object the patch and diff `applyset diff` prints;
//! on stderr the apiserver's warnings and every failure.

use std::fmt::Write as _;

use crate::apply::{ErrorCategory, Verb};
use crate::applyset::Candidate;
use crate::cluster::mapper::{GroupKind, printed_kind_name};
use crate::operator::api::InventoryObject;
use crate::operator::outcome::Planned;
use crate::operator::prune::Decision;

/// How a plan ended: what its exit code says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Outcome {
    /// Something would be created, configured or pruned.
    pub(super) changes: bool,
    /// An object would fail (the run would fail), or the prune could not be decided.
    pub(super) failed: bool,
}

impl Outcome {
    /// `kubectl diff`'s: 0 nothing would change, 1 something would, 2 an error.
    pub(super) fn exit_code(self) -> u8 {
        if self.failed {
            2
        } else if self.changes {
            1
        } else {
            0
        }
    }
}

/// The text for stdout and stderr, and what the exit code says.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Printed {
    pub(super) stdout: String,
    pub(super) stderr: String,
    pub(super) outcome: Outcome,
}

#[derive(Default)]
struct Counts {
    created: usize,
    configured: usize,
    unchanged: usize,
    pruned: usize,
    held_back: usize,
}

/// The plan's report: what the run's plan-only end found ([`Planned`]), and `spec.prune`.
pub(super) fn render(planned: &Planned, prune: bool) -> Printed {
    let (mut stdout, mut stderr, mut diffs) = (String::new(), String::new(), String::new());
    let mut counts = Counts::default();
    let mut failed = false;
    let mut warned = std::collections::HashSet::new();
    for (index, object) in planned.report.objects.iter().enumerate() {
        for warning in &object.warnings {
            if warned.insert(warning.as_str()) {
                let _ = writeln!(stderr, "{warning}");
            }
        }
        let details = object.details.as_deref();
        let shown = details.and_then(|d| d.result.as_ref().or(d.live.as_ref()));
        let namespace = shown.and_then(|o| crate::apply::object::meta_str(o, "namespace"));
        match &object.result {
            Ok(verb) => {
                line(&mut stdout, verb.word(), &object.name, namespace, None);
                match verb {
                    Verb::Created => counts.created += 1,
                    Verb::Unchanged => counts.unchanged += 1,
                    Verb::Configured => {
                        counts.configured += 1;
                        let details = details.cloned().unwrap_or_default();
                        diffs.push_str(&crate::commands::diff::change_text(&object.name, &object.source, &details));
                    }
                }
            }
            Err(error) => match planned.crd_kinds.0.get(index) {
                Some((true, namespace)) if error.category == ErrorCategory::NoMatch => {
                    let note = Some("its kind comes with a CustomResourceDefinition of this build");
                    line(&mut stdout, "created", &object.name, namespace.as_deref(), note);
                    counts.created += 1;
                }
                _ => {
                    failed = true;
                    // Bodies left out: a live Secret quoted in a patch error holds its values.
                    let text = error.render_without_bodies();
                    let text = text.strip_prefix("error: ").unwrap_or(&text);
                    let (path, document) = (object.source.path.display(), object.source.document);
                    let _ = writeln!(stderr, "error: {path}: document {document}: {text}");
                }
            },
        }
    }
    if failed {
        stderr.push_str("nothing would be pruned: a run prunes only once every object applied\n");
    } else if let Some(decision) = &planned.decision {
        failed |= prune_lines(decision, &mut stdout, &mut stderr, &mut counts);
    } else if !prune {
        stderr.push_str("spec.prune is false: nothing is pruned\n");
    }
    let _ = writeln!(stdout, "{}", summary(&counts));
    stdout.push_str(&diffs);
    let changes = counts.created + counts.configured + counts.pruned + counts.held_back > 0;
    Printed { stdout, stderr, outcome: Outcome { changes, failed } }
}

/// The prune decision's lines; returns whether it could not be made.
fn prune_lines(decision: &Decision, stdout: &mut String, stderr: &mut String, counts: &mut Counts) -> bool {
    if let Some(error) = &decision.error {
        let _ = writeln!(stderr, "error: deciding what to prune: {error}");
        return true;
    }
    for warning in &decision.warnings {
        let _ = writeln!(stderr, "warning: {warning}");
    }
    let candidate = |c: &Candidate| (c.printed_name(), c.listed.namespace.clone());
    for (name, namespace) in decision.to_delete.iter().map(candidate) {
        if decision.guarded.is_some() {
            line(stdout, "held", &name, namespace.as_deref(), Some("spec.pruneGuard holds this revision's prune back"));
            counts.held_back += 1;
        } else {
            line(stdout, "pruned", &name, namespace.as_deref(), None);
            counts.pruned += 1;
        }
    }
    for held in &decision.held {
        let (name, namespace) = candidate(held);
        let note = format!("already being deleted, held by finalizers ({})", held.listed.finalizers.join(", "));
        line(stdout, "deleting", &name, namespace.as_deref(), Some(&note));
    }
    for kept in &decision.skipped {
        let note = format!("{}: {}", kept.state, kept.message.as_deref().unwrap_or_default());
        line(stdout, "kept", &kept_name(kept), kept.namespace.as_deref(), Some(&note));
    }
    if let Some(guarded) = &decision.guarded {
        let _ = writeln!(stdout, "spec.pruneGuard: {guarded}");
    }
    false
}

/// `kind[.group]/name` of a `pruneSkipped` entry, as kubectl prints names (its `kind` is
/// `Kind[.group]`).
fn kept_name(entry: &InventoryObject) -> String {
    let GroupKind { group, kind } = GroupKind::parse(&entry.kind);
    printed_kind_name(&group, &kind, &entry.name)
}

fn line(out: &mut String, verb: &str, name: &str, namespace: Option<&str>, note: Option<&str>) {
    let _ = write!(out, "{verb:<10} {name}");
    if let Some(namespace) = namespace {
        let _ = write!(out, " -n {namespace}");
    }
    if let Some(note) = note {
        let _ = write!(out, ": {note}");
    }
    out.push('\n');
}

fn summary(counts: &Counts) -> String {
    let mut text = format!(
        "Plan: {} created, {} configured, {} unchanged, {} pruned",
        counts.created, counts.configured, counts.unchanged, counts.pruned
    );
    if counts.held_back > 0 {
        let _ = write!(text, ", {} held back by spec.pruneGuard", counts.held_back);
    }
    text
}

#[cfg(test)]
mod tests {
    use kube::core::{ApiResource, GroupVersionKind};

    use super::*;
    use crate::apply::{ApplyReport, CrdKinds, Details, ObjectError, ObjectReport};
    use crate::applyset::RecordedKind;
    use crate::cluster::list::Listed;
    use crate::manifest::Source;

    fn json(text: &str) -> applyset_merge::Value {
        applyset_merge::Value::from_json_str(text).unwrap()
    }

    fn object(
        document: usize,
        name: &str,
        result: Result<Verb, ObjectError>,
        details: Option<Details>,
    ) -> ObjectReport {
        ObjectReport {
            source: Source { path: "apps/web/all.yaml".into(), document, line: 1 },
            name: name.into(),
            result,
            warnings: Vec::new(),
            details: details.map(Box::new),
        }
    }

    fn config_map(name: &str, value: &str) -> applyset_merge::Value {
        json(&format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"shop"}},"data":{{"value":"{value}"}}}}"#
        ))
    }

    fn candidate(name: &str) -> Candidate {
        let gvk = GroupVersionKind::gvk("", "v1", "ConfigMap");
        Candidate {
            kind: RecordedKind {
                api_resource: ApiResource::from_gvk_with_plural(&gvk, "configmaps"),
                namespaced: true,
            },
            listed: Listed { name: name.into(), namespace: Some("shop".into()), uid: "1".into(), ..Listed::default() },
        }
    }

    fn report() -> ApplyReport {
        let configured = Details {
            live: Some(config_map("settings", "one")),
            patch: Some(json(r#"{"data":{"value":"two"}}"#)),
            patch_type: Some(crate::cluster::PatchType::Strategic),
            result: Some(config_map("settings", "two")),
            ..Details::default()
        };
        let unchanged = Details { result: Some(config_map("same", "x")), ..Details::default() };
        let no_match = ObjectError { category: ErrorCategory::NoMatch, ..ObjectError::default() };
        ApplyReport {
            objects: vec![
                object(1, "configmap/settings", Ok(Verb::Configured), Some(configured)),
                object(2, "configmap/same", Ok(Verb::Unchanged), Some(unchanged)),
                object(3, "widget.example.com/w", Err(no_match), None),
            ],
            ..ApplyReport::default()
        }
    }

    /// The third object's kind comes with a CRD of the build.
    fn planned(report: ApplyReport, decision: Option<Decision>) -> Planned {
        let crd_kinds = CrdKinds(vec![(false, None), (false, None), (true, None)]);
        Planned { report, crd_kinds, decision }
    }

    /// Golden: the lines, the summary, the diff of the configured object; exit 1.
    #[test]
    fn a_plan_lists_each_object_and_diffs_what_is_configured() {
        let report = report();
        let decision = Decision {
            to_delete: vec![candidate("old")],
            skipped: vec![InventoryObject {
                kind: "ConfigMap".into(),
                namespace: Some("shop".into()),
                name: "keep".into(),
                state: "Orphaned".into(),
                message: Some("left git with applyset.dev/prune: disabled: kept, no longer applied".into()),
                ..InventoryObject::default()
            }],
            ..Decision::default()
        };
        let printed = render(&planned(report, Some(decision)), true);
        let expected = "configured configmap/settings -n shop
unchanged  configmap/same -n shop
created    widget.example.com/w: its kind comes with a CustomResourceDefinition of this build
pruned     configmap/old -n shop
kept       configmap/keep -n shop: Orphaned: left git with applyset.dev/prune: disabled: kept, no longer applied
Plan: 1 created, 1 configured, 1 unchanged, 1 pruned
diff configmap/settings (apps/web/all.yaml: document 1)
patch (application/strategic-merge-patch+json):
{\"data\":{\"value\":\"two\"}}
--- live/configmap/settings
+++ applied/configmap/settings
@@ -1,6 +1,6 @@
 apiVersion: v1
 data:
-  value: one
+  value: two
 kind: ConfigMap
 metadata:
   name: settings
";
        assert_eq!(printed.stdout, expected);
        assert_eq!(printed.stderr, "");
        assert_eq!(printed.outcome.exit_code(), 1);
    }

    #[test]
    fn a_guarded_prune_is_held_back_and_a_failure_prunes_nothing() {
        let report = report();
        let guarded = Decision {
            to_delete: vec![candidate("old")],
            guarded: Some("this revision would prune 1 of 2 objects (50%), more than …".into()),
            ..Decision::default()
        };
        let printed = render(&planned(report.clone(), Some(guarded)), true);
        assert!(printed.stdout.contains("held       configmap/old -n shop: spec.pruneGuard holds this revision's prune back\nspec.pruneGuard: this revision would prune 1 of 2"), "{}", printed.stdout);
        assert!(
            printed
                .stdout
                .contains("Plan: 1 created, 1 configured, 1 unchanged, 0 pruned, 1 held back by spec.pruneGuard\n")
        );

        let mut failing = report;
        failing.objects[1].result = Err(ObjectError { message: "boom".into(), ..ObjectError::default() });
        let printed = render(&planned(failing, None), true);
        assert_eq!(
            printed.stderr,
            "error: apps/web/all.yaml: document 2: boom\nnothing would be pruned: a run prunes only once every object applied\n"
        );
        assert_eq!(printed.outcome.exit_code(), 2);
    }

    #[test]
    fn nothing_to_change_exits_zero() {
        let report = ApplyReport {
            objects: vec![object(1, "configmap/same", Ok(Verb::Unchanged), None)],
            ..ApplyReport::default()
        };
        let printed = render(&Planned { report, ..Planned::default() }, false);
        assert_eq!(printed.stdout, "unchanged  configmap/same\nPlan: 0 created, 0 configured, 1 unchanged, 0 pruned\n");
        assert_eq!(printed.stderr, "spec.prune is false: nothing is pruned\n");
        assert_eq!(printed.outcome.exit_code(), 0);
    }
}
