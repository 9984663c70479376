//! The health of an applied object, with kstatus semantics (`sigs.k8s.io/cli-utils`'s
//! `status.Compute`, which `kubectl wait`, Flux and cli-utils share): Current, InProgress,
//! Failed, Terminating, Unknown — pure functions of the object as the apiserver returns it.
//!
//! The order of the checks is kstatus's: an object being deleted is Terminating; one whose
//! controller has not observed its latest generation is InProgress; a `Reconciling=True` or
//! `Stalled=True` condition decides next; then the built-in kinds' own rules (`kinds`); then
//! a `Ready` condition; anything else is Current.

pub mod cel;
mod kinds;
pub mod targets;
#[cfg(test)]
mod tests;

use applyset_merge::Value;

use crate::causes::with_causes;

/// kstatus's statuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Fully reconciled: the object is what its spec asks for.
    Current,
    /// Still being reconciled.
    InProgress,
    /// Reconciling failed and will not get better by waiting.
    Failed,
    /// Being deleted.
    Terminating,
    /// The status could not be computed (a malformed object).
    Unknown,
}

impl Status {
    /// kstatus's spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Status::Current => "Current",
            Status::InProgress => "InProgress",
            Status::Failed => "Failed",
            Status::Terminating => "Terminating",
            Status::Unknown => "Unknown",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An object's health: its status, kstatus's message, and the reason (a `CamelCase` word from
/// the rule that decided, e.g. `LessAvailable`, `ProgressDeadlineExceeded`) when not Current.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Health {
    pub status: Status,
    pub reason: Option<String>,
    pub message: String,
}

impl Health {
    fn current(message: impl Into<String>) -> Health {
        Health { status: Status::Current, reason: None, message: message.into() }
    }

    fn in_progress(reason: impl Into<String>, message: impl Into<String>) -> Health {
        Health { status: Status::InProgress, reason: Some(reason.into()), message: message.into() }
    }

    fn failed(reason: impl Into<String>, message: impl Into<String>) -> Health {
        Health { status: Status::Failed, reason: Some(reason.into()), message: message.into() }
    }
}

/// A condition of `status.conditions` (the fields kstatus reads).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Condition<'a> {
    pub kind: &'a str,
    pub status: &'a str,
    pub reason: &'a str,
    pub message: &'a str,
}

/// Facts kstatus needs beside the object (time, for a Pod's scheduling window).
#[derive(Clone, Copy, Debug)]
pub struct Context {
    /// Seconds since the Unix epoch, now.
    pub now: i64,
}

/// Why kstatus cannot compute an object's status: a field of an unexpected type. The status is
/// then Unknown, and this (kstatus's words) is its message.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum HealthError {
    /// kstatus's `NestedInt64` on a field that is present but not an integer.
    #[error("looking up {path} from resource: {value} is not an integer")]
    NotAnInteger { path: &'static str, value: Value },
    #[error("status.conditions is not a list")]
    ConditionsNotAList,
    #[error("a condition is not an object")]
    ConditionNotAnObject,
    /// A condition whose field (`type`, `status`, `reason`, `message`) is not a string.
    #[error("condition field {0} is not a string")]
    ConditionFieldNotAString(&'static str),
    /// A Pod phase kstatus does not know.
    #[error("unknown phase {0}")]
    UnknownPodPhase(String),
}

/// kstatus's `Compute`.
pub fn compute(object: &Value, context: Context) -> Health {
    match compute_checked(object, context) {
        Ok(health) => health,
        Err(error) => Health { status: Status::Unknown, reason: None, message: with_causes(&error) },
    }
}

fn compute_checked(object: &Value, context: Context) -> Result<Health, HealthError> {
    if let Some(health) = generic_properties(object)? {
        return Ok(health);
    }
    if let Some(rule) = kinds::rule_for(object) {
        return rule(object, context);
    }
    if let Some(health) = ready_condition(object)? {
        return Ok(health);
    }
    Ok(Health::current("Resource is current"))
}

/// Deletion, generation and the standard `Reconciling`/`Stalled` conditions.
fn generic_properties(object: &Value) -> Result<Option<Health>, HealthError> {
    if let Some(health) = generic_generation(object)? {
        return Ok(Some(health));
    }
    for condition in conditions(object)? {
        if condition.kind == "Reconciling" && condition.status == "True" {
            return Ok(Some(Health::in_progress(condition.reason, condition.message)));
        }
        if condition.kind == "Stalled" && condition.status == "True" {
            return Ok(Some(Health::failed(condition.reason, condition.message)));
        }
    }
    Ok(None)
}

/// Deletion, and a latest generation the object's controller has not observed yet.
fn generic_generation(object: &Value) -> Result<Option<Health>, HealthError> {
    if field(object, "metadata.deletionTimestamp").and_then(Value::as_str).is_some_and(|t| !t.is_empty()) {
        return Ok(Some(Health {
            status: Status::Terminating,
            reason: None,
            message: "Resource scheduled for deletion".into(),
        }));
    }
    if let (Some(generation), Some(observed)) =
        (int_field(object, "metadata.generation")?, int_field(object, "status.observedGeneration")?)
        && observed != generation
    {
        let message =
            format!("{} generation is {generation}, but latest observed generation is {observed}", kind(object));
        return Ok(Some(Health::in_progress("LatestGenerationNotObserved", message)));
    }
    Ok(None)
}

/// A `Ready` condition, for kinds without their own rule.
fn ready_condition(object: &Value) -> Result<Option<Health>, HealthError> {
    for condition in conditions(object)? {
        if condition.kind != "Ready" {
            continue;
        }
        match condition.status {
            "True" => return Ok(Some(Health::current("Resource is Ready"))),
            "False" | "Unknown" => return Ok(Some(Health::in_progress(condition.reason, condition.message))),
            _ => {}
        }
    }
    Ok(None)
}

/// The value at a dotted path (`status.readyReplicas`), if every step is an object member.
pub(crate) fn field<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(object, |value, key| value.as_object()?.get(key))
}

/// An integer field, kstatus's `NestedInt64`: absent is `None`; present but not an integer
/// is an error (kstatus reports it, and the status is Unknown).
pub(crate) fn int_field(object: &Value, path: &'static str) -> Result<Option<i64>, HealthError> {
    match field(object, path) {
        None => Ok(None),
        Some(Value::Int(i)) => Ok(Some(*i)),
        Some(other) => Err(HealthError::NotAnInteger { path, value: other.clone() }),
    }
}

/// kstatus's `GetIntField`: an integer, or the default when absent or of another type.
pub(crate) fn int_or(object: &Value, path: &str, default: i64) -> i64 {
    match field(object, path) {
        Some(Value::Int(i)) => *i,
        _ => default,
    }
}

/// kstatus's `GetStringField`: a string, or the default when absent or of another type.
pub(crate) fn string_or<'a>(object: &'a Value, path: &str, default: &'a str) -> &'a str {
    field(object, path).and_then(Value::as_str).unwrap_or(default)
}

pub(crate) fn kind(object: &Value) -> &str {
    string_or(object, "kind", "")
}

/// `status.conditions`, as kstatus decodes them: a list of objects whose fields are strings.
pub(crate) fn conditions(object: &Value) -> Result<Vec<Condition<'_>>, HealthError> {
    let Some(list) = field(object, "status.conditions") else { return Ok(Vec::new()) };
    let Value::Array(items) = list else {
        return Err(HealthError::ConditionsNotAList);
    };
    items
        .iter()
        .map(|item| {
            let Some(map) = item.as_object() else { return Err(HealthError::ConditionNotAnObject) };
            let text = |key: &'static str| match map.get(key) {
                None | Some(Value::Null) => Ok(""),
                Some(Value::String(s)) => Ok(s.as_str()),
                Some(_) => Err(HealthError::ConditionFieldNotAString(key)),
            };
            Ok(Condition {
                kind: text("type")?,
                status: text("status")?,
                reason: text("reason")?,
                message: text("message")?,
            })
        })
        .collect()
}
