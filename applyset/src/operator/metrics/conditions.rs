//! `applyset_condition`: the status of each ApplySet's `Ready`, `Healthy` and `Drifted`
//! conditions, in the style of Flux's `gotk_reconcile_condition`.
//!
//! This is the one metric labelled by ApplySet (`namespace`, `name`): alerts must say which
//! ApplySet is not Ready. It stays bounded by the number of ApplySets (at most three condition
//! types times three statuses each), never by their objects, and an ApplySet's series are
//! removed when it is deleted.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use prometheus::{IntGaugeVec, Opts, Registry};

use super::register;
use crate::operator::status::{DRIFTED, HEALTHY, READY};

/// The condition types exported; the others (`Reconciling`, `Stalled`) say less than the
/// reason already in `Ready`.
const TYPES: [&str; 3] = [READY, HEALTHY, DRIFTED];

/// The values of the `status` label: a condition's status is one of these (anything else is
/// exported as "Unknown").
const STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// `applyset_condition{namespace, name, type, status}`: 1 for a condition's current status,
/// 0 for the two others.
pub(super) struct ConditionGauge {
    gauge: IntGaugeVec,
}

impl ConditionGauge {
    pub(super) fn new(registry: &Registry) -> ConditionGauge {
        let gauge = register(
            registry,
            IntGaugeVec::new(
                Opts::new(
                    "applyset_condition",
                    "The status of each ApplySet's Ready, Healthy and Drifted conditions: 1 for the current status (True, False or Unknown), 0 for the others; removed with the ApplySet.",
                ),
                &["namespace", "name", "type", "status"],
            ),
        );
        ConditionGauge { gauge }
    }

    /// Exports the ApplySet's conditions as written to its status; an exported type it no
    /// longer has (`Healthy` once it stopped waiting) loses its series.
    pub(super) fn set(&self, namespace: &str, name: &str, conditions: &[Condition]) {
        for type_ in TYPES {
            match conditions.iter().find(|c| c.type_ == type_) {
                Some(condition) => {
                    let current = STATUSES.iter().copied().find(|s| *s == condition.status).unwrap_or("Unknown");
                    for status in STATUSES {
                        self.gauge
                            .with_label_values(&[namespace, name, type_, status])
                            .set(i64::from(status == current));
                    }
                }
                None => self.remove(namespace, name, type_),
            }
        }
    }

    /// The ApplySet `key` ("namespace/name") is gone: all its series are removed.
    pub(super) fn forget(&self, key: &str) {
        let Some((namespace, name)) = key.split_once('/') else { return };
        for type_ in TYPES {
            self.remove(namespace, name, type_);
        }
    }

    fn remove(&self, namespace: &str, name: &str, type_: &str) {
        for status in STATUSES {
            // Err: not exported (never set, or removed already).
            let _ = self.gauge.remove_label_values(&[namespace, name, type_, status]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Metrics;
    use super::super::tests::sample;
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn condition(type_: &str, status: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: "Test".into(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: Time(Default::default()),
        }
    }

    /// The value of `applyset_condition` for the ApplySet, type and status, if exported.
    fn value(rendered: &str, namespace: &str, name: &str, type_: &str, status: &str) -> Option<f64> {
        let series =
            format!(r#"applyset_condition{{name="{name}",namespace="{namespace}",status="{status}",type="{type_}"}}"#);
        sample(rendered, &series)
    }

    #[test]
    fn exports_the_current_status_of_each_condition() {
        let metrics = Metrics::new();
        metrics.set_conditions("team-a", "web", &[condition(READY, "True"), condition(DRIFTED, "False")]);
        metrics.set_conditions("team-b", "db", &[condition(READY, "False"), condition(HEALTHY, "False")]);
        let rendered = metrics.render();

        assert_eq!(value(&rendered, "team-a", "web", READY, "True"), Some(1.0));
        assert_eq!(value(&rendered, "team-a", "web", READY, "False"), Some(0.0));
        assert_eq!(value(&rendered, "team-a", "web", READY, "Unknown"), Some(0.0));
        assert_eq!(value(&rendered, "team-a", "web", DRIFTED, "False"), Some(1.0));
        assert_eq!(value(&rendered, "team-a", "web", HEALTHY, "True"), None, "no Healthy condition, no series");
        assert_eq!(value(&rendered, "team-b", "db", READY, "False"), Some(1.0));
        assert_eq!(value(&rendered, "team-b", "db", READY, "True"), Some(0.0));
        assert_eq!(value(&rendered, "team-b", "db", HEALTHY, "False"), Some(1.0));
        assert!(rendered.contains("# TYPE applyset_condition gauge"), "{rendered}");
    }

    #[test]
    fn follows_status_changes_and_dropped_conditions() {
        let metrics = Metrics::new();
        metrics.set_conditions("team-a", "web", &[condition(READY, "Unknown"), condition(HEALTHY, "Unknown")]);
        assert_eq!(value(&metrics.render(), "team-a", "web", READY, "Unknown"), Some(1.0));

        // Healthy: the wait ended, the condition is removed; Ready became True.
        metrics.set_conditions("team-a", "web", &[condition(READY, "True")]);
        let rendered = metrics.render();
        assert_eq!(value(&rendered, "team-a", "web", READY, "True"), Some(1.0));
        assert_eq!(value(&rendered, "team-a", "web", READY, "Unknown"), Some(0.0));
        for status in STATUSES {
            assert_eq!(value(&rendered, "team-a", "web", HEALTHY, status), None, "{rendered}");
        }
    }

    #[test]
    fn an_unexpected_status_is_unknown_and_other_types_are_not_exported() {
        let metrics = Metrics::new();
        metrics.set_conditions("team-a", "web", &[condition(READY, "Maybe"), condition("Reconciling", "True")]);
        let rendered = metrics.render();
        assert_eq!(value(&rendered, "team-a", "web", READY, "Unknown"), Some(1.0));
        assert!(!rendered.contains("Maybe"), "{rendered}");
        assert!(!rendered.contains("Reconciling"), "{rendered}");
    }

    #[test]
    fn forgetting_an_applyset_removes_only_its_series() {
        let metrics = Metrics::new();
        metrics.set_conditions("team-a", "web", &[condition(READY, "False"), condition(DRIFTED, "True")]);
        metrics.set_conditions("team-b", "web", &[condition(READY, "True")]);
        metrics.set_objects("team-a/web", 3, 1, 0);

        metrics.forget("team-a/web");
        let rendered = metrics.render();
        assert!(!rendered.contains(r#"namespace="team-a""#), "{rendered}");
        assert_eq!(value(&rendered, "team-b", "web", READY, "True"), Some(1.0));
        // Forgetting twice, or what was never seen, changes nothing.
        metrics.forget("team-a/web");
        metrics.forget("never/seen");
        metrics.forget("not-a-key");
        assert_eq!(value(&metrics.render(), "team-b", "web", READY, "True"), Some(1.0));

        metrics.forget("team-b/web");
        assert!(!metrics.render().contains("applyset_condition{"), "{}", metrics.render());
    }
}
