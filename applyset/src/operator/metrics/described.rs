//! The registry the controller's metrics live in, keeping hold of what was registered: a
//! scrape ([`Registry::gather`]) leaves out a metric that has no series yet (the reconcile
//! histogram before the first run, `applyset_condition` before the first ApplySet), while the
//! reference page of the metrics (`crate::reference::metrics`) lists every one, from
//! [`DescribedRegistry::describe`], so that a metric added here appears there by itself.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use prometheus::Registry;
use prometheus::core::{Collector, Desc};
use prometheus::proto::{MetricFamily, MetricType};

/// What the reference says of one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricDescription {
    pub name: String,
    pub help: String,
    pub kind: MetricType,
    /// The label names, in the metric's order.
    pub labels: Vec<String>,
    /// The values a label takes, by label, for those whose values are a fixed set: the values
    /// of the series exported from the start, and those the metrics code declares. A label
    /// absent here takes values of the cluster's (namespaces, names).
    pub label_values: BTreeMap<String, Vec<String>>,
}

pub(in crate::operator) struct DescribedRegistry {
    registry: Registry,
    /// The collectors registered, shared with the registry.
    collectors: Vec<Arc<dyn Collector>>,
    /// Fixed values of labels that no series shows at the start, by metric and label.
    bounds: BTreeMap<(String, String), Vec<String>>,
}

/// What the registry holds: a handle on a collector the [`DescribedRegistry`] holds too.
struct Shared(Arc<dyn Collector>);

impl Collector for Shared {
    fn desc(&self) -> Vec<&Desc> {
        self.0.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.0.collect()
    }
}

impl DescribedRegistry {
    pub(in crate::operator) fn new() -> DescribedRegistry {
        DescribedRegistry { registry: Registry::new(), collectors: Vec::new(), bounds: BTreeMap::new() }
    }

    /// Registers `collector`. The metrics are definitions of ours: a name registered twice is a
    /// bug, and panics.
    pub(in crate::operator) fn register(&mut self, collector: impl Collector + 'static) {
        let collector: Arc<dyn Collector> = Arc::new(collector);
        self.registry.register(Box::new(Shared(collector.clone()))).expect("metric names are unique");
        self.collectors.push(collector);
    }

    /// Declares the values `label` of `metric` takes when the code knows them but exports no
    /// series of them before they happen (every result of a histogram).
    pub(in crate::operator) fn bound_label(&mut self, metric: &str, label: &str, values: &[&str]) {
        self.bounds.insert((metric.to_owned(), label.to_owned()), values.iter().map(|v| (*v).to_owned()).collect());
    }

    /// The metrics that have series, as a scrape exports them.
    pub(in crate::operator) fn gather(&self) -> Vec<MetricFamily> {
        self.registry.gather()
    }

    /// Every metric registered, sorted by name. Called on fresh metrics, the label values are
    /// those exported from the start (fixed sets) and those declared bounded.
    pub(in crate::operator) fn describe(&self) -> Vec<MetricDescription> {
        let mut described = Vec::new();
        for collector in &self.collectors {
            let families = collector.collect();
            for desc in collector.desc() {
                let family = families.iter().find(|family| family.name() == desc.fq_name);
                described.push(self.description(desc, family));
            }
        }
        described.sort_by(|a, b| a.name.cmp(&b.name));
        described
    }

    fn description(&self, desc: &Desc, family: Option<&MetricFamily>) -> MetricDescription {
        let mut label_values: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for metric in family.map(MetricFamily::get_metric).unwrap_or_default() {
            for pair in metric.get_label() {
                label_values.entry(pair.name().to_owned()).or_default().insert(pair.value().to_owned());
            }
        }
        for label in &desc.variable_labels {
            if let Some(values) = self.bounds.get(&(desc.fq_name.clone(), label.clone())) {
                label_values.entry(label.clone()).or_default().extend(values.iter().cloned());
            }
        }
        MetricDescription {
            name: desc.fq_name.clone(),
            help: desc.help.clone(),
            kind: family.map_or(MetricType::UNTYPED, MetricFamily::get_field_type),
            labels: desc.variable_labels.clone(),
            label_values: label_values
                .into_iter()
                .map(|(label, values)| (label, values.into_iter().collect()))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts};

    use super::*;

    #[test]
    fn describes_every_metric_registered_with_or_without_series() {
        let mut registry = DescribedRegistry::new();
        let outcomes = IntCounterVec::new(Opts::new("demo_total", "Demo runs."), &["outcome"]).unwrap();
        registry.register(outcomes.clone());
        for outcome in ["b", "a"] {
            outcomes.with_label_values(&[outcome]).reset();
        }
        let durations =
            HistogramVec::new(HistogramOpts::new("demo_seconds", "How long."), &["outcome", "namespace"]).unwrap();
        registry.register(durations);
        registry.bound_label("demo_seconds", "outcome", &["a", "b"]);
        registry.register(IntGauge::new("demo_leader", "1 when leading.").unwrap());

        assert_eq!(registry.gather().len(), 2, "the histogram has no series to scrape");
        let described = registry.describe();
        let names: Vec<&str> = described.iter().map(|metric| metric.name.as_str()).collect();
        assert_eq!(names, ["demo_leader", "demo_seconds", "demo_total"]);
        let seconds = &described[1];
        assert_eq!(seconds.kind, MetricType::HISTOGRAM);
        assert_eq!(seconds.labels, ["outcome", "namespace"]);
        assert_eq!(
            seconds.label_values,
            BTreeMap::from([("outcome".to_owned(), vec!["a".to_owned(), "b".to_owned()])])
        );
        assert_eq!(described[2].label_values["outcome"], ["a", "b"]);
        assert_eq!(described[2].kind, MetricType::COUNTER);
        assert_eq!(described[0].help, "1 when leading.");
    }
}
