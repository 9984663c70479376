//! `applyset_condition`: the status of each ApplySet's `Ready`, `Healthy` and `Drifted`
//! conditions, in the style of Flux's `gotk_reconcile_condition`.
//!
//! This is the one metric labelled by ApplySet (`namespace`, `name`): alerts must say which
//! ApplySet is not Ready. It stays bounded by the number of ApplySets (at most three condition
//! types times three statuses each), never by their objects, and an ApplySet's series are
//! removed when it is deleted.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use prometheus::Opts;
use prometheus::core::{Collector, Desc, Describer};
use prometheus::proto::{Gauge, LabelPair, Metric, MetricFamily, MetricType};

use super::described::DescribedRegistry;

use crate::operator::lock;
use crate::operator::status::{DRIFTED, HEALTHY, READY};

/// The condition types exported; the others (`Reconciling`, `Stalled`) say less than the
/// reason already in `Ready`.
const TYPES: [&str; 3] = [READY, HEALTHY, DRIFTED];

/// The values of the `status` label: a condition's status is one of these (anything else is
/// exported as "Unknown").
const STATUSES: [&str; 3] = ["True", "False", "Unknown"];

const NAME: &str = "applyset_condition";
const HELP: &str = "The status of each ApplySet's Ready, Healthy and Drifted conditions: 1 for the current status (True, False or Unknown), 0 for the others; removed with the ApplySet.";

/// Per exported type (in [`TYPES`]' order), its current status (one of [`STATUSES`]); `None`
/// when the ApplySet has no such condition.
type Statuses = [Option<&'static str>; 3];

/// `applyset_condition{namespace, name, type, status}`: 1 for a condition's current status,
/// 0 for the two others.
///
/// Kept as three small numbers per ApplySet and made into series only when scraped: a
/// labelled gauge child per series holds its own copy of the metric's description and labels,
/// about 700 bytes, so 4 MB for a thousand ApplySets' six series each (measured).
pub(super) struct ConditionGauge {
    shared: Arc<Shared>,
}

struct Shared {
    desc: Desc,
    /// By `(namespace, name)`: sorted, so that a scrape lists series in a stable order.
    by_applyset: Mutex<BTreeMap<(String, String), Statuses>>,
}

/// What the registry holds and scrapes.
struct Scraped(Arc<Shared>);

impl ConditionGauge {
    pub(super) fn new(registry: &mut DescribedRegistry) -> ConditionGauge {
        let labels = ["namespace", "name", "type", "status"].map(String::from).to_vec();
        let desc = Opts::new(NAME, HELP).variable_labels(labels).describe().expect("a valid metric definition");
        let shared = Arc::new(Shared { desc, by_applyset: Mutex::new(BTreeMap::new()) });
        registry.register(Scraped(shared.clone()));
        registry.bound_label(NAME, "type", &TYPES);
        registry.bound_label(NAME, "status", &STATUSES);
        ConditionGauge { shared }
    }

    /// Exports the ApplySet's conditions as written to its status; an exported type it no
    /// longer has (`Healthy` once it stopped waiting) loses its series.
    pub(super) fn set(&self, namespace: &str, name: &str, conditions: &[Condition]) {
        let statuses: Statuses = TYPES.map(|type_| {
            let condition = conditions.iter().find(|c| c.type_ == type_)?;
            Some(STATUSES.into_iter().find(|s| *s == condition.status).unwrap_or("Unknown"))
        });
        let mut by_applyset = lock(&self.shared.by_applyset);
        if statuses.iter().all(Option::is_none) {
            by_applyset.remove(&(namespace.to_owned(), name.to_owned()));
        } else {
            by_applyset.insert((namespace.to_owned(), name.to_owned()), statuses);
        }
    }

    /// The ApplySet `key` ("namespace/name") is gone: all its series are removed.
    pub(super) fn forget(&self, key: &str) {
        let Some((namespace, name)) = key.split_once('/') else { return };
        lock(&self.shared.by_applyset).remove(&(namespace.to_owned(), name.to_owned()));
    }
}

impl Collector for Scraped {
    fn desc(&self) -> Vec<&Desc> {
        vec![&self.0.desc]
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let by_applyset = lock(&self.0.by_applyset);
        let mut metrics = Vec::with_capacity(by_applyset.len() * 6);
        for ((namespace, name), statuses) in by_applyset.iter() {
            for (type_, current) in TYPES.iter().zip(statuses) {
                let Some(current) = current else { continue };
                for status in STATUSES {
                    // Label pairs sorted by name, as the text format and the registry expect.
                    let labels =
                        [("name", name.as_str()), ("namespace", namespace), ("status", status), ("type", type_)];
                    let mut metric = Metric::from_label(labels.iter().map(|(k, v)| pair(k, v)).collect());
                    let mut gauge = Gauge::default();
                    gauge.set_value(f64::from(u8::from(status == *current)));
                    metric.set_gauge(gauge);
                    metrics.push(metric);
                }
            }
        }
        // Empty, the family still says the metric's type (the reference reads it); a scrape
        // leaves empty families out.
        let mut family = MetricFamily::default();
        family.set_name(NAME.into());
        family.set_help(HELP.into());
        family.set_field_type(MetricType::GAUGE);
        family.set_metric(metrics);
        vec![family]
    }
}

fn pair(name: &str, value: &str) -> LabelPair {
    let mut pair = LabelPair::default();
    pair.set_name(name.into());
    pair.set_value(value.into());
    pair
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
