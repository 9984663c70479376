//! The controller's request budget (pure): a request rate that follows what the apiserver can
//! take, under a ceiling the operator sets (`--qps`).
//!
//! A fixed client-side rate is the wrong bound for a controller: set low, it leaves an idle
//! apiserver idle (the first apply of 10,000 objects ran at 300/s where the apiserver took
//! 850/s); set high, it has nothing to say when the apiserver is busy with others. The
//! apiserver says so itself: API Priority and Fairness answers `429 Too Many Requests` with
//! `Retry-After` when our priority level's queues are full, and its latency grows before that.
//! So the budget starts at the ceiling and
//! * halves at each 429 (and holds every request until its `Retry-After` has passed);
//! * takes a fifth off when the latency of writes grows past four times its recent best and
//!   250 ms above it (queueing at the apiserver; the latency that many requests in flight add
//!   on a healthy server is far below that, and cutting for it halved the first apply);
//! * grows back by a twentieth of the ceiling every 100 ms while latency is within 100 ms (or
//!   twice) of its best.
//!
//! Only writes are timed: a watch is open for minutes, and a LIST takes as long as its list.

use std::time::Duration;

use tokio::time::Instant;

/// What the apiserver said about a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Signal {
    /// `429` (or another answer with `Retry-After`): slow down, and wait that long.
    Throttled { retry_after: Option<Duration> },
    /// A write answered after `latency`.
    Write { latency: Duration },
}

/// The longest a `Retry-After` holds requests (a server asking for more is asked again then).
const MAX_HOLD: Duration = Duration::from_secs(30);
/// The hold after a 429 without `Retry-After`.
const DEFAULT_HOLD: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct Budget {
    ceiling: f64,
    floor: f64,
    rate: f64,
    /// Smoothed write latency, milliseconds.
    smoothed: Option<f64>,
    /// The best recent smoothed latency, drifting up 1% a second so that a server that became
    /// slower for good becomes the new normal in about a minute.
    best: Option<(f64, Instant)>,
    last_change: Instant,
    hold_until: Option<Instant>,
    throttled: u64,
}

impl Budget {
    /// A budget of at most `ceiling` requests per second (> 0), starting there.
    pub fn new(ceiling: f64, now: Instant) -> Budget {
        Budget {
            ceiling,
            floor: (ceiling / 50.0).clamp(1.0, ceiling),
            rate: ceiling,
            smoothed: None,
            best: None,
            last_change: now,
            hold_until: None,
            throttled: 0,
        }
    }

    /// Requests per second allowed now.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Until when the server asked us to wait, if it did.
    pub fn hold_until(&self, now: Instant) -> Option<Instant> {
        self.hold_until.filter(|until| *until > now)
    }

    /// How many requests the server refused with 429.
    pub fn throttled(&self) -> u64 {
        self.throttled
    }

    pub fn observe(&mut self, signal: Signal, now: Instant) {
        match signal {
            Signal::Throttled { retry_after } => {
                self.throttled += 1;
                let hold = retry_after.unwrap_or(DEFAULT_HOLD).min(MAX_HOLD);
                let until = now + hold;
                self.hold_until = Some(self.hold_until.map_or(until, |held| held.max(until)));
                // 429s answering requests sent together are one signal: one cut per 100 ms.
                if self.throttled == 1 || now.duration_since(self.last_change) >= Duration::from_millis(100) {
                    self.cut(0.5, now);
                }
            }
            Signal::Write { latency } => {
                let ms = latency.as_secs_f64() * 1000.0;
                let smoothed = self.smoothed.map_or(ms, |s| 0.8 * s + 0.2 * ms);
                self.smoothed = Some(smoothed);
                let best = match self.best {
                    Some((best, at)) => (best * 1.01f64.powf(now.duration_since(at).as_secs_f64())).min(smoothed),
                    None => smoothed,
                };
                self.best = Some((best, now));
                let since = now.duration_since(self.last_change);
                if smoothed > (4.0 * best).max(best + 250.0) {
                    if since >= Duration::from_millis(250) {
                        self.cut(0.8, now);
                    }
                } else if smoothed <= (2.0 * best).max(best + 100.0)
                    && self.rate < self.ceiling
                    && since >= Duration::from_millis(100)
                {
                    self.rate = (self.rate + self.ceiling / 20.0).min(self.ceiling);
                    self.last_change = now;
                }
            }
        }
    }

    fn cut(&mut self, factor: f64, now: Instant) {
        self.rate = (self.rate * factor).max(self.floor);
        self.last_change = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(ms: u64) -> Signal {
        Signal::Write { latency: Duration::from_millis(ms) }
    }

    #[test]
    fn a_429_halves_the_rate_and_holds_requests_for_its_retry_after() {
        let start = Instant::now();
        let mut budget = Budget::new(1000.0, start);
        assert_eq!(budget.rate(), 1000.0);
        budget.observe(Signal::Throttled { retry_after: Some(Duration::from_secs(2)) }, start);
        assert_eq!(budget.rate(), 500.0);
        assert_eq!(budget.hold_until(start), Some(start + Duration::from_secs(2)));
        assert_eq!(budget.hold_until(start + Duration::from_secs(3)), None);
        // An absurd Retry-After holds 30 s at most; more 429s go on halving, down to the floor.
        budget.observe(Signal::Throttled { retry_after: Some(Duration::from_secs(3600)) }, start);
        assert_eq!(budget.hold_until(start), Some(start + MAX_HOLD));
        assert_eq!(budget.rate(), 500.0, "429s at once are one signal");
        let mut now = start;
        for _ in 0..20 {
            now += Duration::from_millis(200);
            budget.observe(Signal::Throttled { retry_after: None }, now);
        }
        assert_eq!(budget.rate(), 20.0, "the floor: a fiftieth of the ceiling");
        assert_eq!(budget.throttled(), 22);
    }

    #[test]
    fn growing_latency_cuts_the_rate_and_fast_answers_restore_it() {
        let start = Instant::now();
        let mut budget = Budget::new(1000.0, start);
        let mut now = start;
        for _ in 0..50 {
            now += Duration::from_millis(10);
            budget.observe(write(5), now);
        }
        assert_eq!(budget.rate(), 1000.0, "fast answers at the ceiling: it stays there");
        // Queueing of many requests in flight (40 ms): no cut.
        for _ in 0..100 {
            now += Duration::from_millis(10);
            budget.observe(write(40), now);
        }
        assert_eq!(budget.rate(), 1000.0);
        // The server slows to 600 ms a write: a fifth off every 250 ms.
        for _ in 0..100 {
            now += Duration::from_millis(10);
            budget.observe(write(600), now);
        }
        let cut = budget.rate();
        assert!(cut < 700.0, "{cut}");
        // Fast again: back to the ceiling by a twentieth every 100 ms.
        for _ in 0..300 {
            now += Duration::from_millis(10);
            budget.observe(write(5), now);
        }
        assert_eq!(budget.rate(), 1000.0);
    }

    #[test]
    fn a_server_slower_for_good_becomes_the_new_normal() {
        let start = Instant::now();
        let mut budget = Budget::new(1000.0, start);
        let mut now = start;
        budget.observe(write(5), now);
        // 600 ms for ten minutes: cut at first; the best drifts up 1% a second until 600 ms is
        // within 250 ms of it (no more cuts) and within 100 ms (growth back to the ceiling).
        for _ in 0..6000 {
            now += Duration::from_millis(100);
            budget.observe(write(600), now);
        }
        assert_eq!(budget.rate(), 1000.0);
    }
}
