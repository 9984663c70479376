//! When an ApplySet runs next: its intervals, jitter after a success, capped exponential
//! backoff after failures (pure), and the controller's [`Schedule`]: the last run of each
//! ApplySet, its failures in a row, and the one way to ask for a run now.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use kube::runtime::reflector::ObjectRef;
use tokio::sync::mpsc;

use super::api::ApplySet;
use super::fair::{FairGate, Slot};
use super::lock;
use crate::duration;

/// What the controller remembers to schedule runs beside kube-runtime's queue: watch events
/// for its own status writes must not start runs before they are due, failures back off, and
/// anything that wants a run now — a change someone else made to a managed object, an object
/// an ApplySet waits for, a dependency that became Ready — asks through [`Schedule::run_now`].
/// (A webhook push, which may reach another replica, asks through the ApplySet's annotation.)
pub struct Schedule {
    /// The last run of each ApplySet (`namespace/name`).
    runs: Mutex<HashMap<String, LastRun>>,
    /// Failures in a row per ApplySet, for the backoff.
    failures: Mutex<HashMap<String, u32>>,
    /// ApplySets asked to run now, until their run takes the request.
    requests: Arc<Mutex<HashSet<String>>>,
    /// Of those, the ones asked to because someone else changed their objects: that run
    /// must apply (drift), even when git brought nothing new for them.
    drift: Mutex<HashSet<String>>,
    /// Where a run-now request reaches the controller's queue, once it runs.
    queue: OnceLock<mpsc::UnboundedSender<ObjectRef<ApplySet>>>,
    /// ApplySets whose run is in progress (their writes' answers may still be on the way).
    running: Mutex<HashSet<String>>,
    /// How many runs go at once, shared fairly between namespaces.
    gate: Arc<FairGate>,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule::with_slots(4)
    }
}

/// While it lives, the ApplySet's run is in progress ([`Schedule::is_running`]).
pub struct Running<'a> {
    schedule: &'a Schedule,
    key: String,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        lock(&self.schedule.running).remove(&self.key);
    }
}

#[derive(Debug, Clone)]
struct LastRun {
    generation: Option<i64>,
    requested_at: Option<String>,
    at: Instant,
    next: Duration,
}

impl Schedule {
    /// A schedule letting `slots` runs go at once.
    pub fn with_slots(slots: usize) -> Schedule {
        Schedule {
            runs: Mutex::default(),
            failures: Mutex::default(),
            requests: Arc::default(),
            drift: Mutex::default(),
            queue: OnceLock::new(),
            running: Mutex::default(),
            gate: FairGate::new(slots),
        }
    }

    /// Waits for a slot for a run of an ApplySet of `namespace` (see [`FairGate`]).
    pub async fn slot(&self, namespace: &str) -> Slot {
        self.gate.enter(namespace).await
    }

    /// Connects the schedule to the controller's queue; returns the stream of run-now requests
    /// the controller reconciles on.
    pub fn connect(&self) -> Option<mpsc::UnboundedReceiver<ObjectRef<ApplySet>>> {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.queue.set(sender).ok().map(|()| receiver)
    }

    /// What runs the ApplySet now (as [`Schedule::run_now`]) from a task that outlives the
    /// caller: a watch of its external health targets.
    pub fn waker(&self, applyset: &ApplySet) -> impl FnOnce() + Send + 'static {
        let requests = self.requests.clone();
        let queue = self.queue.get().cloned();
        let (key, reference) = (applyset.key(), ObjectRef::from_obj(applyset));
        move || {
            lock(&requests).insert(key);
            if let Some(queue) = queue {
                let _ = queue.send(reference);
            }
        }
    }

    /// Runs the ApplySet now: due at once, and queued.
    pub fn run_now(&self, applyset: &ApplySet) {
        lock(&self.requests).insert(applyset.key());
        if let Some(queue) = self.queue.get() {
            let _ = queue.send(ObjectRef::from_obj(applyset));
        }
    }

    /// Runs the ApplySet now to check for drift someone else made (see [`Schedule::take_drift`]).
    pub fn check_drift_now(&self, applyset: &ApplySet) {
        lock(&self.drift).insert(applyset.key());
        self.run_now(applyset);
    }

    /// Whether a drift check was asked for since the last call.
    pub fn take_drift(&self, key: &str) -> bool {
        lock(&self.drift).remove(key)
    }

    /// Whether a run was asked for since the last call (taken at the start of a run, so that
    /// a change during the run asks for one more).
    pub fn take_request(&self, key: &str) -> bool {
        lock(&self.requests).remove(key)
    }

    /// Whether a run is due: never ran, the spec or the reconcile-now annotation changed, or
    /// the scheduled time has come (with a second of slack for the requeue timer).
    pub fn is_due(&self, key: &str, generation: Option<i64>, requested_at: Option<&str>) -> bool {
        match lock(&self.runs).get(key) {
            None => true,
            Some(run) => {
                run.generation != generation
                    || run.requested_at.as_deref() != requested_at
                    || run.at.elapsed() + Duration::from_secs(1) >= run.next
            }
        }
    }

    /// Time left until the next scheduled run.
    pub fn remaining(&self, key: &str) -> Duration {
        lock(&self.runs).get(key).map_or(Duration::ZERO, |run| run.next.saturating_sub(run.at.elapsed()))
    }

    /// Records a finished run and when the next is due.
    pub fn ran(&self, key: &str, generation: Option<i64>, requested_at: Option<&str>, next: Duration) {
        let run = LastRun { generation, requested_at: requested_at.map(str::to_owned), at: Instant::now(), next };
        lock(&self.runs).insert(key.to_owned(), run);
    }

    /// Records a failure; returns how many in a row.
    pub fn failed(&self, key: &str) -> u32 {
        let mut failures = lock(&self.failures);
        let count = failures.entry(key.to_owned()).or_insert(0);
        *count += 1;
        *count
    }

    /// A success ends the failures in a row.
    pub fn succeeded(&self, key: &str) {
        lock(&self.failures).remove(key);
    }

    /// Marks the ApplySet's run in progress until the value is dropped.
    pub fn start(&self, key: &str) -> Running<'_> {
        lock(&self.running).insert(key.to_owned());
        Running { schedule: self, key: key.to_owned() }
    }

    /// Whether the ApplySet's run is in progress.
    pub fn is_running(&self, key: &str) -> bool {
        lock(&self.running).contains(key)
    }

    /// The ApplySet is gone.
    pub fn forget(&self, key: &str) {
        lock(&self.runs).remove(key);
        lock(&self.failures).remove(key);
        lock(&self.requests).remove(key);
        lock(&self.drift).remove(key);
    }
}

/// The schedule an ApplySet asks for.
#[derive(Debug, Clone, Copy)]
pub struct Intervals {
    pub interval: Duration,
    pub retry: Duration,
    pub timeout: Duration,
}

impl Intervals {
    /// The spec's durations; `interval` and `retryInterval` must be at least `min_interval`
    /// (the CRD's own floor is lower, so that a controller can be run with a lower one).
    pub fn of(applyset: &ApplySet, min_interval: Duration) -> Result<Intervals, IntervalError> {
        let field = |field: &'static str, text: &str| {
            duration::parse(text).map_err(|source| IntervalError::Invalid { field, source })
        };
        let interval = field("interval", &applyset.spec.interval)?;
        let retry =
            applyset.spec.retry_interval.as_deref().map(|t| field("retryInterval", t)).transpose()?.unwrap_or(interval);
        let timeout = applyset
            .spec
            .timeout
            .as_deref()
            .map(|t| field("timeout", t))
            .transpose()?
            .unwrap_or(Duration::from_secs(120));
        if timeout.is_zero() {
            return Err(IntervalError::ZeroTimeout);
        }
        for (field, value) in [("interval", interval), ("retryInterval", retry)] {
            if value < min_interval {
                return Err(IntervalError::BelowMinimum { field, value, min_interval });
            }
        }
        Ok(Intervals { interval, retry, timeout })
    }
}

/// An ApplySet's `interval`, `retryInterval` or `timeout` this controller cannot use.
#[derive(Debug, thiserror::Error)]
pub enum IntervalError {
    #[error("spec.{field}")]
    Invalid { field: &'static str, source: duration::InvalidDuration },
    #[error("spec.timeout must be greater than zero")]
    ZeroTimeout,
    #[error("spec.{field} {value:?} is shorter than this controller's minimum of {min_interval:?} (--min-interval)")]
    BelowMinimum { field: &'static str, value: Duration, min_interval: Duration },
}

/// The next run after a success: the interval plus up to 10% jitter, so that ApplySets created
/// together do not fetch together forever.
pub fn with_jitter(interval: Duration) -> Duration {
    interval + interval.mul_f64(fastrand::f64() * 0.1)
}

/// Capped exponential backoff after `failures` failures in a row: retry, 2×retry, 4×retry…,
/// never more than the interval (nor less than the retry interval when that is larger).
pub fn backoff(retry: Duration, interval: Duration, failures: u32) -> Duration {
    let factor = 2f64.powi(failures.saturating_sub(1).min(16) as i32);
    retry.mul_f64(factor).min(interval.max(retry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_in_progress_while_its_marker_lives() {
        let schedule = Schedule::default();
        let running = schedule.start("team/web");
        assert!(schedule.is_running("team/web"));
        assert!(!schedule.is_running("team/db"), "only the ApplySet that runs");
        drop(running);
        assert!(!schedule.is_running("team/web"), "ended with the run, whatever way it ended");
    }

    #[tokio::test]
    async fn a_run_now_request_is_due_at_once_queued_and_taken_once() {
        let schedule = Schedule::default();
        let applyset = {
            let spec = serde_json::from_value(serde_json::json!({ "source": { "url": "https://git.example/r.git" } }))
                .expect("a valid spec");
            let mut applyset = ApplySet::new("web", spec);
            applyset.metadata.namespace = Some("team".into());
            applyset
        };
        schedule.ran("team/web", Some(1), None, Duration::from_secs(3600));
        assert!(!schedule.is_due("team/web", Some(1), None), "an hour to go");
        assert!(schedule.is_due("team/web", Some(2), None), "a new generation is due");
        assert!(schedule.is_due("team/web", Some(1), Some("now")), "a reconcile-now annotation is due");
        let mut queue = schedule.connect().expect("the first connection");
        assert!(schedule.connect().is_none(), "one queue");
        schedule.run_now(&applyset);
        assert_eq!(queue.recv().await.map(|r| r.name), Some("web".to_owned()));
        assert!(schedule.take_request("team/web"));
        assert!(!schedule.take_request("team/web"), "taken once");
        assert_eq!((schedule.failed("team/web"), schedule.failed("team/web")), (1, 2));
        schedule.succeeded("team/web");
        assert_eq!(schedule.failed("team/web"), 1, "a success ends the streak");
        schedule.forget("team/web");
        assert!(schedule.is_due("team/web", Some(1), None), "forgotten: never ran");
    }

    #[test]
    fn backoff_doubles_up_to_the_interval() {
        let retry = Duration::from_secs(10);
        let interval = Duration::from_secs(300);
        let steps: Vec<u64> = (1..=7).map(|n| backoff(retry, interval, n).as_secs()).collect();
        assert_eq!(steps, [10, 20, 40, 80, 160, 300, 300]);
        assert_eq!(backoff(Duration::from_secs(600), interval, 3), Duration::from_secs(600));
    }

    #[test]
    fn jitter_adds_at_most_a_tenth() {
        for _ in 0..1000 {
            let next = with_jitter(Duration::from_secs(100));
            assert!(next >= Duration::from_secs(100) && next <= Duration::from_secs(110), "{next:?}");
        }
    }
}
