//! Health judged by CEL expressions (`spec.healthCheckExprs`), as Flux 2.5 judges custom
//! resources: the object's top-level fields (`metadata`, `spec`, `status` …) are the variables;
//! an object whose controller has not observed its latest generation is in progress; otherwise
//! `inProgress`, `failed` and `current` are evaluated in that order and the first that is true
//! decides, none true meaning in progress. An expression that cannot be evaluated yet (a field
//! the object does not have so far) leaves the object in progress, so the wait reports it when
//! it times out; guard with `has(…)` or `.?field.orValue(…)` (optional syntax is on). `metadata`,
//! `spec` and `status` are always defined (empty when the object has none yet).

use std::sync::Arc;

use ::cel::{Context, Env, Program};
use applyset_merge::Value;

use super::{Health, Status, generic_generation};

use crate::causes::Chain;

/// One kind's expressions, as written in the spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expressions {
    pub api_version: String,
    pub kind: String,
    pub current: String,
    pub in_progress: Option<String>,
    pub failed: Option<String>,
}

/// The compiled expressions of one ApplySet.
pub struct Rules {
    env: Arc<Env>,
    rules: Vec<Rule>,
}

struct Rule {
    api_version: String,
    kind: String,
    /// In evaluation order: inProgress, failed, current.
    programs: Vec<(Status, Program)>,
}

/// An expression that does not compile: the entry and its field, named as in the spec, and the
/// CEL parser's errors.
#[derive(Debug, thiserror::Error)]
#[error("spec.healthCheckExprs[{index}].{field} ({api_version} {kind})")]
pub struct CompileError {
    pub index: usize,
    /// `inProgress`, `failed` or `current`.
    pub field: &'static str,
    pub api_version: String,
    pub kind: String,
    #[source]
    pub error: ::cel::ParseErrors,
}

impl Rules {
    /// Compiles every expression; the error names the entry and the expression that does not
    /// parse.
    pub fn compile(expressions: &[Expressions]) -> Result<Rules, CompileError> {
        let env = Arc::new(Env::stdlib().with_optional_support(true));
        let mut rules = Vec::with_capacity(expressions.len());
        for (index, entry) in expressions.iter().enumerate() {
            let mut programs = Vec::new();
            for (field, status, source) in [
                ("inProgress", Status::InProgress, entry.in_progress.as_deref()),
                ("failed", Status::Failed, entry.failed.as_deref()),
                ("current", Status::Current, Some(entry.current.as_str())),
            ] {
                let Some(source) = source.filter(|s| !s.trim().is_empty()) else { continue };
                let program = env.compile(source).map_err(|error| CompileError {
                    index,
                    field,
                    api_version: entry.api_version.clone(),
                    kind: entry.kind.clone(),
                    error,
                })?;
                programs.push((status, program));
            }
            rules.push(Rule { api_version: entry.api_version.clone(), kind: entry.kind.clone(), programs });
        }
        Ok(Rules { env, rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The object's health by the rule for its apiVersion and kind; `None` when none matches
    /// (kstatus decides).
    pub fn judge(&self, object: &Value) -> Option<Health> {
        let root = object.as_object()?;
        let api_version = root.get("apiVersion").and_then(Value::as_str)?;
        let kind = root.get("kind").and_then(Value::as_str)?;
        let rule = self.rules.iter().find(|r| r.api_version == api_version && r.kind == kind)?;
        if let Ok(Some(health)) = generic_generation(object) {
            return Some(health);
        }
        let mut context = Context::with_env(self.env.clone());
        // An object without a status yet (or a spec) still has the variable, empty, so that
        // `status.?phase` and `has(status.conditions)` ask what they mean to ask.
        for name in ["metadata", "spec", "status"] {
            context.add_variable_from_value(name, std::collections::HashMap::<String, ::cel::Value>::new());
        }
        for (name, value) in root {
            match ::cel::to_value(value) {
                Ok(value) => context.add_variable_from_value(name.clone(), value),
                Err(error) => {
                    return Some(not_yet(format!("{name} cannot be read by CEL: {error}", error = Chain(&error))));
                }
            }
        }
        for (status, program) in &rule.programs {
            match program.execute(&context) {
                Ok(::cel::Value::Bool(true)) => return Some(decided(*status, kind)),
                Ok(::cel::Value::Bool(false)) => {}
                Ok(other) => return Some(not_yet(format!("a health expression gave {other:?}, not a bool"))),
                Err(error) => {
                    return Some(not_yet(format!(
                        "a health expression cannot be evaluated yet: {error}",
                        error = Chain(&error)
                    )));
                }
            }
        }
        Some(Health::in_progress("HealthExpressions", format!("{kind} is not current by its health expressions")))
    }
}

fn decided(status: Status, kind: &str) -> Health {
    match status {
        Status::Current => Health::current(format!("{kind} is current by its health expressions")),
        Status::Failed => Health::failed("HealthExpressions", format!("{kind} failed by its health expressions")),
        _ => Health::in_progress("HealthExpressions", format!("{kind} is in progress by its health expressions")),
    }
}

fn not_yet(message: String) -> Health {
    Health::in_progress("HealthExpressionError", message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(current: &str, in_progress: Option<&str>, failed: Option<&str>) -> Rules {
        Rules::compile(&[Expressions {
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            current: current.into(),
            in_progress: in_progress.map(Into::into),
            failed: failed.map(Into::into),
        }])
        .expect("compiles")
    }

    fn widget(json: serde_json::Value) -> Value {
        let mut object = serde_json::json!({ "apiVersion": "example.com/v1", "kind": "Widget",
                                              "metadata": { "name": "w", "generation": 2 } });
        for (key, value) in json.as_object().expect("an object") {
            object[key] = value.clone();
        }
        Value::from_json_str(&object.to_string()).expect("valid JSON")
    }

    const READY_TRUE: &str = "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')";
    const READY_FALSE: &str = "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')";
    const ISSUING: &str = "status.conditions.exists(e, e.type == 'Issuing' && e.status == 'True')";

    fn status_of(rules: &Rules, object: serde_json::Value) -> Status {
        rules.judge(&widget(object)).expect("a rule matches").status
    }

    #[test]
    fn the_first_true_expression_decides_in_flux_order() {
        let rules = rules(READY_TRUE, Some(ISSUING), Some(READY_FALSE));
        let conditions = |ready: &str, issuing: &str| {
            serde_json::json!({ "status": { "observedGeneration": 2, "conditions": [
                { "type": "Ready", "status": ready }, { "type": "Issuing", "status": issuing } ] } })
        };
        assert_eq!(status_of(&rules, conditions("True", "False")), Status::Current);
        assert_eq!(status_of(&rules, conditions("False", "False")), Status::Failed);
        assert_eq!(status_of(&rules, conditions("True", "True")), Status::InProgress, "inProgress is checked first");
        assert_eq!(status_of(&rules, conditions("Unknown", "False")), Status::InProgress, "none true");
    }

    #[test]
    fn an_unobserved_generation_is_in_progress_whatever_the_expressions_say() {
        let rules = rules("true", None, None);
        let stale = serde_json::json!({ "status": { "observedGeneration": 1 } });
        assert_eq!(status_of(&rules, stale), Status::InProgress);
        assert_eq!(status_of(&rules, serde_json::json!({ "status": { "observedGeneration": 2 } })), Status::Current);
    }

    #[test]
    fn a_missing_field_waits_and_optional_syntax_guards() {
        let plain = rules(READY_TRUE, None, None);
        let health = plain.judge(&widget(serde_json::json!({}))).expect("a rule matches");
        assert_eq!(health.status, Status::InProgress);
        assert_eq!(health.reason.as_deref(), Some("HealthExpressionError"));
        let guarded =
            rules("status.?conditions.orValue([]).exists(e, e.type == 'Ready' && e.status == 'True')", None, None);
        assert_eq!(status_of(&guarded, serde_json::json!({})), Status::InProgress);
        let ready = serde_json::json!({ "status": { "conditions": [{ "type": "Ready", "status": "True" }] } });
        assert_eq!(status_of(&guarded, ready), Status::Current);
    }

    #[test]
    fn other_kinds_are_left_to_kstatus_and_bad_expressions_are_named() {
        let rules = rules("true", None, None);
        let other = Value::from_json_str(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}"#)
            .expect("valid JSON");
        assert!(rules.judge(&other).is_none());
        let error = Rules::compile(&[Expressions {
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            current: "status.(".into(),
            in_progress: None,
            failed: None,
        }])
        .err()
        .expect("does not compile");
        assert_eq!((error.index, error.field), (0, "current"));
        assert_eq!(error.to_string(), "spec.healthCheckExprs[0].current (example.com/v1 Widget)");
        let reported = crate::causes::with_causes(&error);
        let parse_errors = std::error::Error::source(&error).expect("the parse errors").to_string();
        assert_eq!(reported, format!("spec.healthCheckExprs[0].current (example.com/v1 Widget): {parse_errors}"));
    }
}
