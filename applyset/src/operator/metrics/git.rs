//! The git source's metrics: how long the network took (listings and fetches only), and what
//! each run's source step came to, so that sharing shows: twenty ApplySets of one repository
//! make twenty source steps an interval, of which about one touches the network.

use std::time::Duration;

use prometheus::{Histogram, HistogramOpts, IntCounterVec, Opts};

use super::described::DescribedRegistry;
use super::register;
use crate::source::ErrorCategory;

/// Network operations range from a no-op listing to a full clone of a big repository.
const NETWORK_BUCKETS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// What a run's source step came to (the `outcome` label of `applyset_source_steps_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceStep {
    /// The remote was listed; the commit was already cached (nothing fetched).
    Listed,
    /// The remote was listed and the commit fetched.
    Fetched,
    /// No network: the listing another run of the same source made within the interval, or a
    /// pinned commit already cached.
    Shared,
    Failed,
}

impl SourceStep {
    pub const ALL: [SourceStep; 4] = [SourceStep::Listed, SourceStep::Fetched, SourceStep::Shared, SourceStep::Failed];

    pub fn label(self) -> &'static str {
        match self {
            SourceStep::Listed => "listed",
            SourceStep::Fetched => "fetched",
            SourceStep::Shared => "shared",
            SourceStep::Failed => "failed",
        }
    }
}

pub(super) struct GitMetrics {
    network_duration: Histogram,
    failures: IntCounterVec,
    steps: IntCounterVec,
}

impl GitMetrics {
    pub(super) fn new(registry: &mut DescribedRegistry) -> GitMetrics {
        let network_duration = register(
            registry,
            Histogram::with_opts(
                HistogramOpts::new(
                    "applyset_git_fetch_duration_seconds",
                    "How long network operations on git remotes took (a listing, with the fetch when the commit was new), failed ones included; a source step served from a shared listing touches no network and is not observed.",
                )
                .buckets(NETWORK_BUCKETS.to_vec()),
            ),
        );
        let failures = register(
            registry,
            IntCounterVec::new(
                Opts::new("applyset_git_fetch_failures_total", "Source steps that failed, by category."),
                &["category"],
            ),
        );
        let steps = register(
            registry,
            IntCounterVec::new(
                Opts::new(
                    "applyset_source_steps_total",
                    "Source steps of ApplySet runs, by outcome: listed (the remote listed, nothing new), fetched (listed and fetched), shared (no network: another run's listing of the same source, or a cached pinned commit), failed.",
                ),
                &["outcome"],
            ),
        );
        for category in ErrorCategory::ALL {
            failures.with_label_values(&[category.as_str()]).reset();
        }
        for step in SourceStep::ALL {
            steps.with_label_values(&[step.label()]).reset();
        }
        GitMetrics { network_duration, failures, steps }
    }

    /// A source step that succeeded: `network` is the time it spent on the remote (`None`:
    /// none), `fetched` whether it downloaded the commit.
    pub(super) fn synced(&self, network: Option<Duration>, fetched: bool) {
        let step = match network {
            None => SourceStep::Shared,
            Some(took) => {
                self.network_duration.observe(took.as_secs_f64());
                if fetched { SourceStep::Fetched } else { SourceStep::Listed }
            }
        };
        self.steps.with_label_values(&[step.label()]).inc();
    }

    /// A source step that failed after `took`: observed as a network operation when its
    /// category is one only the remote gives.
    pub(super) fn failed(&self, category: ErrorCategory, took: Duration) {
        if category.is_remote() {
            self.network_duration.observe(took.as_secs_f64());
        }
        self.failures.with_label_values(&[category.as_str()]).inc();
        self.steps.with_label_values(&[SourceStep::Failed.label()]).inc();
    }
}
