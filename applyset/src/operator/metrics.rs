//! Prometheus metrics of the controller.
//!
//! Everything lives in a registry of our own (not the process-wide default one), so tests can
//! build as many `Metrics` as they like and nothing a library registers leaks into `/metrics`.
//! Labels only ever take values from small fixed sets: a git URL or an object's name would
//! give every object its own time series, and a large fleet would overwhelm the Prometheus
//! that scrapes us. The one exception is `applyset_condition` ([`Metrics::set_conditions`]),
//! labelled by ApplySet so that alerts can name the ApplySet that is not Ready: its series are
//! bounded by the number of ApplySets, never by their objects.

mod conditions;
mod described;
mod git;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use prometheus::{
    Encoder, Gauge, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, TextEncoder,
};

use self::conditions::ConditionGauge;
use self::described::DescribedRegistry;
pub use self::described::MetricDescription;
use self::git::GitMetrics;
pub use self::git::SourceStep;
use super::lock;
use super::webhook::Outcome;
use crate::causes::Chain;
use crate::operator::reconcile::Stage;
use crate::source::ErrorCategory;

/// Reconciles take from a few milliseconds (nothing changed) to minutes (a large first apply).
const RECONCILE_BUCKETS: &[f64] =
    &[0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0];

/// The values of the `state` label of `applyset_objects`.
const OBJECT_STATES: [&str; 3] = ["applied", "drifted", "failed"];

/// The results of `applyset_reconcile_total` that are not a failed stage
/// ([`Stage::metric_label`]).
const RESULTS_BESIDES_STAGES: [&str; 4] = ["success", "inputs_unchanged", "waiting", "suspended"];

/// The controller's metrics and the registry that exports them.
pub struct Metrics {
    registry: DescribedRegistry,
    reconciles: IntCounterVec,
    reconcile_duration: HistogramVec,
    objects: IntGaugeVec,
    pruned: IntCounter,
    drift_corrected: IntCounter,
    git: GitMetrics,
    last_successful_sync: Gauge,
    leader: IntGauge,
    request_budget: Gauge,
    throttled: IntCounter,
    webhook_requests: IntCounterVec,
    watched_kinds: IntGauge,
    cached_objects: IntGauge,
    watch_failures: IntCounter,
    watch_changes: IntCounterVec,
    conditions: ConditionGauge,
    /// Each ApplySet's latest counts, and their sums (what `objects` exports), updated together
    /// under one lock so a scrape never sees an ApplySet counted twice or half removed.
    object_counts: Mutex<ObjectCounts>,
    /// Serialises the read-compare-write of the "latest sync" maximum.
    last_sync_lock: Mutex<()>,
}

#[derive(Default)]
struct ObjectCounts {
    per_applyset: HashMap<String, [u64; 3]>,
    totals: [u64; 3],
}

/// Registers a metric (the definitions are constants: failing is a bug) and returns it.
fn register<C: prometheus::core::Collector + Clone + 'static>(
    registry: &mut DescribedRegistry,
    metric: prometheus::Result<C>,
) -> C {
    let metric = metric.expect("valid metric definition");
    registry.register(metric.clone());
    metric
}

impl Metrics {
    /// Creates and registers all metrics, including the `process_*` ones (resident memory, CPU
    /// time, open file descriptors) on Linux.
    pub fn new() -> Metrics {
        let mut registry = DescribedRegistry::new();

        let reconciles = register(
            &mut registry,
            IntCounterVec::new(
                Opts::new(
                    "applyset_reconcile_total",
                    "Reconciles of ApplySets that finished, by result: \"success\", \"inputs_unchanged\" (skipped: nothing it reads changed), \"waiting\" (applied, its objects not yet healthy), \"suspended\", or the failed stage's category.",
                ),
                &["result"],
            ),
        );
        let reconcile_duration = register(
            &mut registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "applyset_reconcile_duration_seconds",
                    "How long reconciles of ApplySets took, by result.",
                )
                .buckets(RECONCILE_BUCKETS.to_vec()),
                &["result"],
            ),
        );
        let objects = register(
            &mut registry,
            IntGaugeVec::new(
                Opts::new(
                    "applyset_objects",
                    "Objects of all ApplySets by state at their latest reconcile: applied, drifted (differs from git), failed (could not be applied).",
                ),
                &["state"],
            ),
        );
        let pruned = register(
            &mut registry,
            IntCounter::new(
                "applyset_pruned_objects_total",
                "Objects deleted because they left an ApplySet's manifests.",
            ),
        );
        let drift_corrected = register(
            &mut registry,
            IntCounter::new(
                "applyset_drift_corrected_objects_total",
                "Objects re-applied because they had drifted from git.",
            ),
        );
        let git = GitMetrics::new(&mut registry);
        let last_successful_sync = register(
            &mut registry,
            Gauge::new(
                "applyset_last_successful_sync_timestamp_seconds",
                "Unix time of the latest successful sync of any ApplySet (0 before the first).",
            ),
        );
        let leader = register(
            &mut registry,
            IntGauge::new("applyset_leader", "1 while this replica holds the leader lease and reconciles, else 0."),
        );
        let request_budget = register(
            &mut registry,
            Gauge::new(
                "applyset_apiserver_request_budget",
                "Requests per second the controller allows itself now: under --qps, following the apiserver.",
            ),
        );
        let throttled = register(
            &mut registry,
            IntCounter::new(
                "applyset_apiserver_throttled_total",
                "Requests the apiserver refused with 429 Too Many Requests (each sent again after its Retry-After).",
            ),
        );

        let webhook_requests = register(
            &mut registry,
            IntCounterVec::new(
                Opts::new("applyset_webhook_requests_total", "Requests to the webhook receiver, by outcome."),
                &["outcome"],
            ),
        );

        let watched_kinds = register(
            &mut registry,
            IntGauge::new("applyset_watched_kinds", "Resource types the watch cache of managed objects watches."),
        );
        let cached_objects = register(
            &mut registry,
            IntGauge::new("applyset_watch_cache_objects", "Managed objects held by the watch cache."),
        );
        let watch_failures = register(
            &mut registry,
            IntCounter::new(
                "applyset_watch_failures_total",
                "Watches of managed objects that failed (410 Gone, connection lost, forbidden) and were started again with a fresh list.",
            ),
        );
        let watch_changes = register(
            &mut registry,
            IntCounterVec::new(
                Opts::new(
                    "applyset_watch_changes_total",
                    "Changes to managed objects seen by the watch cache, by origin: own (the controller's writes) or other (started a drift check).",
                ),
                &["origin"],
            ),
        );

        let conditions = ConditionGauge::new(&mut registry);

        #[cfg(target_os = "linux")]
        registry.register(prometheus::process_collector::ProcessCollector::for_self());

        // Export every state and every counter's labels from the start, so dashboards show 0
        // rather than "no data", and `increase()` in an alert sees a counter's first step (a
        // series born at 1 has no increase).
        for state in OBJECT_STATES {
            objects.with_label_values(&[state]).set(0);
        }
        let stages = Stage::ALL.map(Stage::metric_label);
        let results: Vec<&str> = RESULTS_BESIDES_STAGES.iter().chain(&stages).copied().collect();
        for result in &results {
            reconciles.with_label_values(&[*result]).reset();
        }
        // Unlike the counter's, the histogram's series are not exported from the start (each
        // would be a line per bucket, for nothing): its results are declared instead.
        registry.bound_label("applyset_reconcile_duration_seconds", "result", &results);
        for outcome in Outcome::ALL {
            webhook_requests.with_label_values(&[outcome.label()]).reset();
        }
        for origin in ["own", "other"] {
            watch_changes.with_label_values(&[origin]).reset();
        }

        Metrics {
            registry,
            reconciles,
            reconcile_duration,
            objects,
            pruned,
            drift_corrected,
            git,
            last_successful_sync,
            leader,
            request_budget,
            throttled,
            webhook_requests,
            watched_kinds,
            cached_objects,
            watch_failures,
            watch_changes,
            conditions,
            object_counts: Mutex::new(ObjectCounts::default()),
            last_sync_lock: Mutex::new(()),
        }
    }

    /// Counts a finished reconcile. `result` must come from a small fixed set: "success" or a
    /// failure category such as "fetch_failed", "load_failed", "apply_failed", "prune_failed",
    /// "prune_guarded", "suspended" ([`super::reconcile::Stage::metric_label`]).
    pub fn reconcile_finished(&self, result: &'static str, duration: Duration) {
        self.reconciles.with_label_values(&[result]).inc();
        self.reconcile_duration.with_label_values(&[result]).observe(duration.as_secs_f64());
    }

    /// Records the object counts of one ApplySet (`key`, e.g. "namespace/name", never exported),
    /// replacing what it reported before; the exported gauges are the sums over all ApplySets.
    pub fn set_objects(&self, key: &str, applied: u64, drifted: u64, failed: u64) {
        let mut counts = lock(&self.object_counts);
        let updated = [applied, drifted, failed];
        let previous = counts.per_applyset.insert(key.to_owned(), updated).unwrap_or_default();
        for ((total, old), new) in counts.totals.iter_mut().zip(previous).zip(updated) {
            // `total` includes `old`, so this cannot underflow.
            *total = *total - old + new;
        }
        self.export_object_totals(&counts.totals);
    }

    /// Exports the ApplySet's `Ready`, `Healthy` and `Drifted` conditions (`applyset_condition`)
    /// as its status now has them.
    pub fn set_conditions(&self, namespace: &str, name: &str, conditions: &[Condition]) {
        self.conditions.set(namespace, name, conditions);
    }

    /// The ApplySet `key` ("namespace/name") is gone: its objects no longer count, and its
    /// condition series are removed.
    pub fn forget(&self, key: &str) {
        self.conditions.forget(key);
        let mut counts = lock(&self.object_counts);
        if let Some(previous) = counts.per_applyset.remove(key) {
            for (total, old) in counts.totals.iter_mut().zip(previous) {
                *total -= old;
            }
            self.export_object_totals(&counts.totals);
        }
    }

    fn export_object_totals(&self, totals: &[u64; 3]) {
        for (state, total) in OBJECT_STATES.iter().zip(totals) {
            self.objects.with_label_values(&[*state]).set(i64::try_from(*total).unwrap_or(i64::MAX));
        }
    }

    /// Counts objects deleted by pruning.
    pub fn pruned(&self, count: u64) {
        self.pruned.inc_by(count);
    }

    /// Counts objects re-applied because they had drifted.
    pub fn drift_corrected(&self, count: u64) {
        self.drift_corrected.inc_by(count);
    }

    /// A run's source step that succeeded: the time it spent on the remote (`None`: it touched
    /// no network), and whether it fetched.
    pub fn source_synced(&self, network: Option<Duration>, fetched: bool) {
        self.git.synced(network, fetched);
    }

    /// A run's source step that failed, after `took`.
    pub fn source_failed(&self, category: ErrorCategory, took: Duration) {
        self.git.failed(category, took);
    }

    /// Records a successful sync at `at_unix_seconds`; the gauge keeps the latest over all
    /// ApplySets, so a reconcile that finishes late with an earlier time does not move it back.
    pub fn sync_succeeded(&self, at_unix_seconds: f64) {
        let _serialised = lock(&self.last_sync_lock);
        if at_unix_seconds > self.last_successful_sync.get() {
            self.last_successful_sync.set(at_unix_seconds);
        }
    }

    /// Counts a webhook request; `outcome` comes from a small fixed set (accepted, ignored,
    /// unauthorized, not_found, too_large, bad_request, method_not_allowed).
    pub fn webhook_request(&self, outcome: &'static str) {
        self.webhook_requests.with_label_values(&[outcome]).inc();
    }

    /// How many resource types the watch cache watches.
    pub fn set_watched_kinds(&self, kinds: u64) {
        self.watched_kinds.set(kinds as i64);
    }

    /// The watch cache holds `delta` more objects (or fewer).
    pub fn cached_objects_changed(&self, delta: i64) {
        self.cached_objects.add(delta);
    }

    pub fn watch_failed(&self) {
        self.watch_failures.inc();
    }

    /// A change seen by the watch cache; `own`: the controller's own write.
    pub fn watch_change(&self, own: bool) {
        self.watch_changes.with_label_values(&[if own { "own" } else { "other" }]).inc();
    }

    /// The request budget as the limiter has it now (`throttled`: its count so far).
    pub fn set_request_budget(&self, rate: f64, throttled: u64) {
        self.request_budget.set(rate);
        self.throttled.inc_by(throttled.saturating_sub(self.throttled.get()));
    }

    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// Every metric registered, by name, with the label values exported from the start (what
    /// the reference page of the metrics lists); see [`MetricDescription`].
    pub fn describe(&self) -> Vec<MetricDescription> {
        self.registry.describe()
    }

    /// All metrics in the Prometheus text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut rendered = Vec::new();
        if let Err(error) = TextEncoder::new().encode(&self.registry.gather(), &mut rendered) {
            // Only a malformed metric family fails to encode; serve what was written so far
            // rather than nothing.
            tracing::warn!(error = %Chain(&error), "could not encode all metrics");
        }
        String::from_utf8(rendered).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The value of the sample line `series` (name with labels, as rendered) in `rendered`.
    pub(super) fn sample(rendered: &str, series: &str) -> Option<f64> {
        rendered.lines().find_map(|line| {
            let value = line.strip_prefix(series)?.strip_prefix(' ')?;
            value.parse().ok()
        })
    }

    #[test]
    fn every_metric_has_help_and_type() {
        let rendered = Metrics::new().render();
        for name in [
            "applyset_objects",
            "applyset_pruned_objects_total",
            "applyset_drift_corrected_objects_total",
            "applyset_git_fetch_duration_seconds",
            "applyset_source_steps_total",
            "applyset_last_successful_sync_timestamp_seconds",
            "applyset_leader",
            "applyset_apiserver_request_budget",
            "applyset_apiserver_throttled_total",
        ] {
            assert!(rendered.contains(&format!("# HELP {name} ")), "no HELP for {name} in:\n{rendered}");
            assert!(rendered.contains(&format!("# TYPE {name} ")), "no TYPE for {name} in:\n{rendered}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn exports_process_metrics() {
        let rendered = Metrics::new().render();
        let resident = sample(&rendered, "process_resident_memory_bytes")
            .unwrap_or_else(|| panic!("no process_resident_memory_bytes in:\n{rendered}"));
        assert!(resident > 0.0);
        assert!(sample(&rendered, "process_open_fds").is_some());
        assert!(sample(&rendered, "process_cpu_seconds_total").is_some());
    }

    #[test]
    fn counts_reconciles_by_result() {
        let metrics = Metrics::new();
        metrics.reconcile_finished("success", Duration::from_millis(20));
        metrics.reconcile_finished("success", Duration::from_secs(3));
        metrics.reconcile_finished("apply_failed", Duration::from_secs(700));
        let rendered = metrics.render();

        assert_eq!(sample(&rendered, r#"applyset_reconcile_total{result="success"}"#), Some(2.0));
        assert_eq!(sample(&rendered, r#"applyset_reconcile_total{result="apply_failed"}"#), Some(1.0));
        assert_eq!(sample(&rendered, r#"applyset_reconcile_duration_seconds_count{result="success"}"#), Some(2.0));
        let success_seconds = sample(&rendered, r#"applyset_reconcile_duration_seconds_sum{result="success"}"#);
        assert!(success_seconds.is_some_and(|seconds| (seconds - 3.02).abs() < 1e-9), "{success_seconds:?}");
        // 20 ms falls in the 25 ms bucket, 3 s in the 5 s one; 700 s only in +Inf.
        assert_eq!(
            sample(&rendered, r#"applyset_reconcile_duration_seconds_bucket{result="success",le="0.025"}"#),
            Some(1.0)
        );
        assert_eq!(
            sample(&rendered, r#"applyset_reconcile_duration_seconds_bucket{result="success",le="5"}"#),
            Some(2.0)
        );
        assert_eq!(
            sample(&rendered, r#"applyset_reconcile_duration_seconds_bucket{result="apply_failed",le="600"}"#),
            Some(0.0)
        );
        assert_eq!(
            sample(&rendered, r#"applyset_reconcile_duration_seconds_bucket{result="apply_failed",le="+Inf"}"#),
            Some(1.0)
        );
    }

    #[test]
    fn counters_export_every_label_from_the_start() {
        let rendered = Metrics::new().render();
        let results = RESULTS_BESIDES_STAGES.into_iter().chain(Stage::ALL.map(Stage::metric_label));
        for result in results {
            let series = format!(r#"applyset_reconcile_total{{result="{result}"}}"#);
            assert_eq!(sample(&rendered, &series), Some(0.0), "{series} in:\n{rendered}");
        }
        // A held-back prune and a failed health check are results of their own.
        assert_eq!(sample(&rendered, r#"applyset_reconcile_total{result="prune_guarded"}"#), Some(0.0));
        assert_eq!(sample(&rendered, r#"applyset_reconcile_total{result="health_check_failed"}"#), Some(0.0));
        for category in ErrorCategory::ALL {
            let series = format!(r#"applyset_git_fetch_failures_total{{category="{}"}}"#, category.as_str());
            assert_eq!(sample(&rendered, &series), Some(0.0), "{series}");
        }
        for outcome in Outcome::ALL {
            let series = format!(r#"applyset_webhook_requests_total{{outcome="{}"}}"#, outcome.label());
            assert_eq!(sample(&rendered, &series), Some(0.0), "{series}");
        }
        assert_eq!(sample(&rendered, r#"applyset_watch_changes_total{origin="own"}"#), Some(0.0));
        assert_eq!(sample(&rendered, r#"applyset_watch_changes_total{origin="other"}"#), Some(0.0));
    }

    #[test]
    fn object_gauges_sum_over_applysets() {
        let metrics = Metrics::new();
        let objects = |rendered: &str| {
            OBJECT_STATES.map(|state| {
                sample(rendered, &format!(r#"applyset_objects{{state="{state}"}}"#))
                    .unwrap_or_else(|| panic!("no applyset_objects {state} in:\n{rendered}"))
            })
        };
        assert_eq!(objects(&metrics.render()), [0.0, 0.0, 0.0]);

        metrics.set_objects("team-a/web", 10, 2, 1);
        metrics.set_objects("team-b/db", 5, 0, 3);
        assert_eq!(objects(&metrics.render()), [15.0, 2.0, 4.0]);

        // A later reconcile replaces the ApplySet's counts rather than adding to them.
        metrics.set_objects("team-a/web", 12, 0, 0);
        assert_eq!(objects(&metrics.render()), [17.0, 0.0, 3.0]);

        metrics.forget("team-b/db");
        assert_eq!(objects(&metrics.render()), [12.0, 0.0, 0.0]);
        // Forgetting twice, or an ApplySet never seen, changes nothing.
        metrics.forget("team-b/db");
        metrics.forget("never/seen");
        assert_eq!(objects(&metrics.render()), [12.0, 0.0, 0.0]);

        metrics.forget("team-a/web");
        assert_eq!(objects(&metrics.render()), [0.0, 0.0, 0.0]);
        // The key never becomes a label.
        assert!(!metrics.render().contains("team-a"));
    }

    #[test]
    fn counts_pruned_and_drift_corrected_objects() {
        let metrics = Metrics::new();
        metrics.pruned(3);
        metrics.pruned(0);
        metrics.pruned(2);
        metrics.drift_corrected(4);
        let rendered = metrics.render();
        assert_eq!(sample(&rendered, "applyset_pruned_objects_total"), Some(5.0));
        assert_eq!(sample(&rendered, "applyset_drift_corrected_objects_total"), Some(4.0));
    }

    #[test]
    fn git_network_time_is_observed_only_when_the_network_was_used() {
        let metrics = Metrics::new();
        metrics.source_synced(Some(Duration::from_millis(300)), false);
        metrics.source_synced(Some(Duration::from_secs(2)), true);
        for _ in 0..18 {
            metrics.source_synced(None, false);
        }
        metrics.source_failed(ErrorCategory::Unreachable, Duration::from_secs(40));
        metrics.source_failed(ErrorCategory::InvalidSpec, Duration::from_millis(1));
        let rendered = metrics.render();
        assert_eq!(sample(&rendered, "applyset_git_fetch_duration_seconds_count"), Some(3.0));
        let fetch_seconds = sample(&rendered, "applyset_git_fetch_duration_seconds_sum");
        assert!(fetch_seconds.is_some_and(|seconds| (seconds - 42.3).abs() < 1e-9), "{fetch_seconds:?}");
        assert_eq!(sample(&rendered, r#"applyset_git_fetch_duration_seconds_bucket{le="0.5"}"#), Some(1.0));
        let steps =
            |outcome: &str| sample(&rendered, &format!(r#"applyset_source_steps_total{{outcome="{outcome}"}}"#));
        assert_eq!(
            [steps("listed"), steps("fetched"), steps("shared"), steps("failed")],
            [Some(1.0), Some(1.0), Some(18.0), Some(2.0)]
        );
        let failures = |category: &str| {
            sample(&rendered, &format!(r#"applyset_git_fetch_failures_total{{category="{category}"}}"#))
        };
        assert_eq!(failures("Unreachable"), Some(1.0));
        assert_eq!(failures("InvalidSpec"), Some(1.0));
        assert_eq!(failures("AuthFailed"), Some(0.0), "every category is exported from the start");
    }

    #[test]
    fn last_successful_sync_keeps_the_latest() {
        let metrics = Metrics::new();
        let last_sync =
            |metrics: &Metrics| sample(&metrics.render(), "applyset_last_successful_sync_timestamp_seconds");
        assert_eq!(last_sync(&metrics), Some(0.0));
        metrics.sync_succeeded(1_700_000_100.5);
        assert_eq!(last_sync(&metrics), Some(1_700_000_100.5));
        metrics.sync_succeeded(1_700_000_000.0);
        assert_eq!(last_sync(&metrics), Some(1_700_000_100.5));
        metrics.sync_succeeded(1_700_000_200.0);
        assert_eq!(last_sync(&metrics), Some(1_700_000_200.0));
    }

    #[test]
    fn leader_gauge_follows_leadership() {
        let metrics = Metrics::new();
        assert_eq!(sample(&metrics.render(), "applyset_leader"), Some(0.0));
        metrics.set_leader(true);
        assert_eq!(sample(&metrics.render(), "applyset_leader"), Some(1.0));
        metrics.set_leader(false);
        assert_eq!(sample(&metrics.render(), "applyset_leader"), Some(0.0));
    }

    #[test]
    fn registries_are_independent() {
        let first = Metrics::new();
        let second = Metrics::new();
        first.pruned(7);
        assert_eq!(sample(&second.render(), "applyset_pruned_objects_total"), Some(0.0));
    }
}
