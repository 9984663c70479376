//! When an ApplySet runs next: its intervals, jitter after a success, capped exponential
//! backoff after failures (pure).

use std::time::Duration;

use super::api::ApplySet;
use crate::duration;

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
    pub fn of(applyset: &ApplySet, min_interval: Duration) -> Result<Intervals, String> {
        let field = |name: &str, text: &str| duration::parse(text).map_err(|e| format!("spec.{name}: {e}"));
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
            return Err("spec.timeout must be greater than zero".into());
        }
        for (name, value) in [("interval", interval), ("retryInterval", retry)] {
            if value < min_interval {
                return Err(format!(
                    "spec.{name} {value:?} is shorter than this controller's minimum of {min_interval:?} (--min-interval)"
                ));
            }
        }
        Ok(Intervals { interval, retry, timeout })
    }
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
