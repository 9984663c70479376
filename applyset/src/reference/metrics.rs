//! `metrics.md`: every metric the controller serves on `/metrics`, read from a fresh
//! [`Metrics`] registry ([`Metrics::describe`]): name, type, help, labels and the values of
//! those that take a fixed set.

use prometheus::proto::MetricType;

use super::markdown::{Table, cell, code, code_list};
use crate::operator::metrics::{MetricDescription, Metrics};

pub fn page() -> String {
    page_of(&Metrics::new().describe())
}

/// The page listing `metrics`: the controller's own (`applyset_*`), then the process's.
pub fn page_of(metrics: &[MetricDescription]) -> String {
    let mut out = super::header("applyset/src/operator/metrics.rs (the metrics registry of a fresh controller)");
    out.push_str("# Metrics reference\n\n");
    out.push_str(
        "The controller serves these metrics on `/metrics` of `--metrics-bind-address` (Prometheus text \
         format). A label whose values are listed takes only those; the others (`namespace`, `name`) \
         name an ApplySet.\n\n",
    );
    let (own, other): (Vec<&MetricDescription>, Vec<&MetricDescription>) =
        metrics.iter().partition(|metric| metric.name.starts_with("applyset_"));
    let sections: Vec<String> = [("The controller's metrics", own), ("Process metrics", other)]
        .into_iter()
        .filter(|(_, metrics)| !metrics.is_empty())
        .map(|(heading, metrics)| format!("## {heading}\n\n{}", metrics_table(&metrics).render()))
        .collect();
    out.push_str(&sections.join("\n"));
    out
}

fn metrics_table(metrics: &[&MetricDescription]) -> Table {
    let mut table = Table::new(&["Metric", "Type", "Labels", "Description"]);
    for metric in metrics {
        let labels: Vec<String> = metric
            .labels
            .iter()
            .map(|label| match metric.label_values.get(label) {
                Some(values) => format!("{}: {}", code(label), code_list(values)),
                None => code(label),
            })
            .collect();
        table.row(vec![code(&metric.name), kind_name(metric.kind).to_owned(), labels.join("<br>"), cell(&metric.help)]);
    }
    table
}

fn kind_name(kind: MetricType) -> &'static str {
    match kind {
        MetricType::COUNTER => "counter",
        MetricType::GAUGE => "gauge",
        MetricType::HISTOGRAM => "histogram",
        MetricType::SUMMARY => "summary",
        MetricType::UNTYPED => "untyped",
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn metric(name: &str, kind: MetricType, labels: &[&str], values: &[(&str, &[&str])]) -> MetricDescription {
        MetricDescription {
            name: name.to_owned(),
            help: format!("Help of {name} | piped."),
            kind,
            labels: labels.iter().map(|label| (*label).to_owned()).collect(),
            label_values: values
                .iter()
                .map(|(label, values)| ((*label).to_owned(), values.iter().map(|v| (*v).to_owned()).collect()))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn the_table_of_some_metrics() {
        let page = page_of(&[
            metric("applyset_runs_total", MetricType::COUNTER, &["result"], &[("result", &["failed", "success"])]),
            metric("applyset_condition", MetricType::GAUGE, &["name", "type"], &[("type", &["Ready"])]),
            metric("process_open_fds", MetricType::GAUGE, &[], &[]),
        ]);
        let expected = "\
## The controller's metrics

| Metric | Type | Labels | Description |
| --- | --- | --- | --- |
| `applyset_runs_total` | counter | `result`: `failed`, `success` | Help of applyset_runs_total \\| piped. |
| `applyset_condition` | gauge | `name`<br>`type`: `Ready` | Help of applyset_condition \\| piped. |

## Process metrics

| Metric | Type | Labels | Description |
| --- | --- | --- | --- |
| `process_open_fds` | gauge |  | Help of process_open_fds \\| piped. |
";
        assert!(page.ends_with(expected), "{page}");
    }

    #[test]
    fn the_controllers_page_lists_metrics_without_series_and_their_bounded_labels() {
        let page = page();
        assert!(page.contains("| `applyset_reconcile_duration_seconds` | histogram | `result`: "), "{page}");
        assert!(page.contains("`type`: `Drifted`, `Healthy`, `Ready`"), "{page}");
        assert!(page.contains("| `applyset_condition` | gauge | `namespace`<br>`name`<br>"), "{page}");
    }
}
