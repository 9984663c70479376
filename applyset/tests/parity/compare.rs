//! Comparing the two sides: their outputs (made comparable) and their snapshots, and checking the
//! scenario's expectations.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::Value;

use super::LAST_APPLIED;
use super::side::Tool;

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
pub(crate) fn stderr_lines(stderr: &str) -> Vec<String> {
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
pub(crate) fn comparable_stdout(lines: &[String], flags: &[String]) -> Vec<String> {
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
pub(crate) fn compare_snapshots(kubectl: &BTreeMap<String, Value>, applyset: &BTreeMap<String, Value>) -> Vec<String> {
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

pub(crate) fn check_expectations(
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
