//! Leader election on a `coordination.k8s.io/v1` Lease, with the semantics of client-go's
//! `leaderelection` package, so that replicas of this operator behave like every other
//! controller in the cluster and `kubectl get lease` reads the same way.
//!
//! - The lease records `holderIdentity`, `leaseDurationSeconds`, `acquireTime`, `renewTime` and
//!   `leaseTransitions`.
//! - A candidate takes the lease when it is absent, released (no holder), already ours, or
//!   expired. Expiry is judged by *local* observation, as in client-go: the lease is expired once
//!   `leaseDurationSeconds` have passed on our own clock since we last saw the record change.
//!   `renewTime` is only informative, so clock skew between replicas does not matter.
//! - Every write is a replace carrying the `resourceVersion` that was read; a conflict (409)
//!   means another candidate wrote first, and the next attempt reads again.
//! - The leader renews every `retry_period`. If no renewal succeeds within `renew_deadline` of
//!   the last successful one, leadership is lost, before any standby can consider the lease
//!   expired (it waits `lease_duration`, which must be longer).
//! - Releasing clears the holder and sets the duration to 1 s, so a standby takes over at once.

use std::time::Duration;

use anyhow::bail;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::time::Instant;

use crate::causes::Chain;

/// client-go's `JitterFactor`: candidates wait between 1 and 2.2 retry periods between
/// attempts, so that standbys do not all hit the apiserver at the same moment.
const RETRY_JITTER_FACTOR: f64 = 1.2;

/// Where the lease lives, who we are, and the timings (client-go's defaults are 15 s, 10 s and
/// 2 s).
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    /// Unique per process (not merely per pod or host): a candidate that finds its own identity
    /// in the lease takes it over at once, as its rightful holder.
    pub identity: String,
    /// How long standbys wait, after they last saw the lease change, before taking it over.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leading.
    pub renew_deadline: Duration,
    /// How often the leader renews, and how often standbys try to acquire.
    pub retry_period: Duration,
}

impl LeaseConfig {
    /// Checks the relations client-go requires of the timings; without them two replicas could
    /// lead at the same time.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.namespace.is_empty() || self.name.is_empty() {
            bail!("the leader election lease needs a namespace and a name");
        }
        if self.identity.is_empty() {
            bail!("the leader election identity must not be empty");
        }
        if self.lease_duration < Duration::from_secs(1) {
            bail!("the lease duration ({:?}) must be at least one second", self.lease_duration);
        }
        // Standbys wait the whole seconds written into the lease, not `lease_duration`.
        let written_duration = Duration::from_secs(self.lease_duration_seconds().unsigned_abs().into());
        if written_duration <= self.renew_deadline {
            bail!(
                "the lease duration ({written_duration:?} in whole seconds) must be longer than the renew deadline ({:?})",
                self.renew_deadline
            );
        }
        if self.retry_period.is_zero()
            || self.renew_deadline.as_secs_f64() <= self.retry_period.as_secs_f64() * RETRY_JITTER_FACTOR
        {
            bail!(
                "the renew deadline ({:?}) must be longer than {RETRY_JITTER_FACTOR} times the retry period ({:?}), which must not be zero",
                self.renew_deadline,
                self.retry_period
            );
        }
        Ok(())
    }

    /// The lease duration as written into the Lease (whole seconds, at least 1).
    fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX).max(1)
    }
}

/// Why `renew_until_lost` returned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LeadershipLost {
    /// Another candidate holds the lease now (it judged ours expired, or it was edited).
    #[error("the lease is held by {holder:?} now")]
    TakenOver { holder: String },
    /// No renewal succeeded within the renew deadline.
    #[error("could not renew the lease within {deadline:?}: {last_error}")]
    RenewDeadlineExceeded { deadline: Duration, last_error: String },
    /// `renew_until_lost` was called while we did not hold the lease.
    #[error("the lease is not held by this replica")]
    NotHeld,
}

/// Campaigns for, holds and releases one Lease.
pub struct LeaderElector {
    leases: Api<Lease>,
    config: LeaseConfig,
    /// The lease record as we last saw it, and when we (locally) saw it change.
    observed: Option<ObservedRecord>,
    /// While we lead: when the latest successful write started. The write took effect at some
    /// moment after that, so standbys began their wait no earlier, and measuring the renew
    /// deadline from here keeps us on the safe side.
    last_renewed: Option<Instant>,
    /// The holder we last reported as blocking us, to log changes only.
    reported_holder: Option<String>,
}

struct ObservedRecord {
    spec: LeaseSpec,
    at: Instant,
}

/// The result of one acquire-or-renew attempt.
enum Attempt {
    /// We hold the lease (we took it or renewed it).
    Held,
    /// Another candidate holds a lease that has not expired.
    HeldByOther { holder: String },
    /// The attempt failed (apiserver error, or another candidate wrote first).
    Failed(String),
}

impl LeaderElector {
    /// An elector for `config` (see [`LeaseConfig::validate`]); nothing is sent until
    /// [`LeaderElector::acquire`].
    pub fn new(client: kube::Client, config: LeaseConfig) -> Self {
        LeaderElector {
            leases: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
            last_renewed: None,
            reported_holder: None,
        }
    }

    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    /// Whether we hold the lease, as far as we know: between a successful `acquire` and the
    /// return of `renew_until_lost` or `release`.
    pub fn is_leader(&self) -> bool {
        self.last_renewed.is_some()
    }

    /// Returns once we hold the lease; retries forever, logging why it cannot take it yet.
    pub async fn acquire(&mut self) {
        tracing::info!(
            lease = %self.lease_display(),
            identity = %self.config.identity,
            "waiting to acquire the leader lease"
        );
        loop {
            let started = Instant::now();
            // A request that hangs must not stall the campaign; the next attempt reads anew.
            let attempt = tokio::time::timeout(self.config.renew_deadline, self.try_acquire_or_renew())
                .await
                .unwrap_or_else(|_| {
                    Attempt::Failed(format!("the apiserver did not answer within {:?}", self.config.renew_deadline))
                });
            match attempt {
                Attempt::Held => {
                    self.last_renewed = Some(started);
                    self.reported_holder = None;
                    tracing::info!(
                        lease = %self.lease_display(),
                        identity = %self.config.identity,
                        "acquired the leader lease"
                    );
                    return;
                }
                Attempt::HeldByOther { holder } => {
                    if self.reported_holder.as_ref() != Some(&holder) {
                        tracing::info!(lease = %self.lease_display(), %holder, "the leader lease is held by another replica");
                        self.reported_holder = Some(holder);
                    }
                }
                Attempt::Failed(error) => {
                    tracing::warn!(lease = %self.lease_display(), %error, "could not acquire the leader lease");
                }
            }
            tokio::time::sleep(self.jittered_retry_period()).await;
        }
    }

    /// Renews the lease every retry period while we lead; returns when leadership is lost. The
    /// caller must stop acting as leader at once.
    ///
    /// Cancelling it (to shut down and `release`) is safe.
    pub async fn renew_until_lost(&mut self) -> LeadershipLost {
        let Some(mut last_renewed) = self.last_renewed else {
            return LeadershipLost::NotHeld;
        };
        let retry_period = self.config.retry_period;
        let renew_deadline = self.config.renew_deadline;
        let mut next_attempt = last_renewed + retry_period;
        let mut last_error = String::from("no renewal was attempted in time");
        let lost = loop {
            let deadline = last_renewed + renew_deadline;
            tokio::time::sleep_until(next_attempt.min(deadline)).await;
            if Instant::now() >= deadline {
                break LeadershipLost::RenewDeadlineExceeded { deadline: renew_deadline, last_error };
            }
            let started = Instant::now();
            match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await {
                Ok(Attempt::Held) => {
                    last_renewed = started;
                    self.last_renewed = Some(started);
                    next_attempt = started + retry_period;
                    tracing::trace!(lease = %self.lease_display(), "renewed the leader lease");
                }
                Ok(Attempt::HeldByOther { holder }) => break LeadershipLost::TakenOver { holder },
                Ok(Attempt::Failed(error)) => {
                    tracing::warn!(lease = %self.lease_display(), %error, "could not renew the leader lease");
                    last_error = error;
                    next_attempt = Instant::now() + retry_period;
                }
                Err(_elapsed) => {
                    break LeadershipLost::RenewDeadlineExceeded {
                        deadline: renew_deadline,
                        last_error: String::from("the apiserver did not answer in time"),
                    };
                }
            }
        };
        self.last_renewed = None;
        tracing::warn!(lease = %self.lease_display(), reason = %lost, "lost the leader lease");
        lost
    }

    /// Gives the lease up so that a standby takes over at once, if we hold it. Best effort:
    /// failures are logged, and the lease then simply expires.
    pub async fn release(&mut self) {
        let might_hold = self.last_renewed.is_some()
            || self
                .observed
                .as_ref()
                .is_some_and(|observed| observed.spec.holder_identity.as_deref() == Some(&self.config.identity));
        self.last_renewed = None;
        if !might_hold {
            return;
        }
        let released = tokio::time::timeout(self.config.renew_deadline, self.write_release()).await;
        match released {
            Ok(Ok(true)) => {
                tracing::info!(lease = %self.lease_display(), "released the leader lease");
            }
            Ok(Ok(false)) => {}
            Ok(Err(error)) => {
                tracing::warn!(lease = %self.lease_display(), error = %Chain(&error), "could not release the leader lease; it will expire");
            }
            Err(_elapsed) => {
                tracing::warn!(lease = %self.lease_display(), "the apiserver did not answer in time to release the leader lease; it will expire");
            }
        }
    }

    /// Clears the holder if it is still us. Returns whether it wrote.
    async fn write_release(&mut self) -> Result<bool, kube::Error> {
        // Read afresh: the resourceVersion must be current, and the lease may have been taken
        // over since we last looked, in which case it is not ours to release.
        let Some(mut lease) = self.leases.get_opt(&self.config.name).await? else {
            return Ok(false);
        };
        let mut spec = lease.spec.take().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(&self.config.identity) {
            self.observe(spec);
            return Ok(false);
        }
        let now = MicroTime(Timestamp::now());
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.acquire_time = Some(now.clone());
        spec.renew_time = Some(now);
        lease.spec = Some(spec);
        let written = self.leases.replace(&self.config.name, &PostParams::default(), &lease).await?;
        self.observe(written.spec.unwrap_or_default());
        Ok(true)
    }

    /// One round of client-go's `tryAcquireOrRenew`: read the lease, and write ourselves into it
    /// if it is absent, released, ours or expired.
    async fn try_acquire_or_renew(&mut self) -> Attempt {
        let now = MicroTime(Timestamp::now());
        let existing = match self.leases.get_opt(&self.config.name).await {
            Ok(Some(lease)) => lease,
            Ok(None) => return self.create_lease(now).await,
            Err(error) => return Attempt::Failed(format!("reading the lease: {error}", error = Chain(&error))),
        };

        let current = existing.spec.clone().unwrap_or_default();
        let changed = self.observed.as_ref().is_none_or(|observed| observed.spec != current);
        if changed {
            self.observe(current.clone());
        }
        let holder = current.holder_identity.clone().unwrap_or_default();
        let held_by_us = holder == self.config.identity;
        if !holder.is_empty() && !held_by_us && self.observed_lease_valid() {
            return Attempt::HeldByOther { holder };
        }

        let mut spec = current;
        spec.lease_transitions = if held_by_us {
            spec.lease_transitions
        } else {
            Some(spec.lease_transitions.unwrap_or(0).saturating_add(1))
        };
        if !held_by_us || spec.acquire_time.is_none() {
            spec.acquire_time = Some(now.clone());
        }
        spec.holder_identity = Some(self.config.identity.clone());
        spec.lease_duration_seconds = Some(self.config.lease_duration_seconds());
        spec.renew_time = Some(now);
        let updated = Lease {
            spec: Some(spec),
            // Carries the resourceVersion we read: the write fails if anyone wrote since.
            metadata: existing.metadata,
        };
        match self.leases.replace(&self.config.name, &PostParams::default(), &updated).await {
            Ok(written) => {
                self.observe(written.spec.unwrap_or_default());
                Attempt::Held
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                Attempt::Failed(String::from("another replica updated the lease first"))
            }
            Err(error) => Attempt::Failed(format!("updating the lease: {error}", error = Chain(&error))),
        }
    }

    async fn create_lease(&mut self, now: MicroTime) -> Attempt {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.config.name.clone()),
                namespace: Some(self.config.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.config.identity.clone()),
                lease_duration_seconds: Some(self.config.lease_duration_seconds()),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        match self.leases.create(&PostParams::default(), &lease).await {
            Ok(created) => {
                self.observe(created.spec.unwrap_or_default());
                Attempt::Held
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                Attempt::Failed(String::from("another replica created the lease first"))
            }
            Err(error) => Attempt::Failed(format!("creating the lease: {error}", error = Chain(&error))),
        }
    }

    /// Remembers `spec` as the current record, seen now.
    fn observe(&mut self, spec: LeaseSpec) {
        self.observed = Some(ObservedRecord { spec, at: Instant::now() });
    }

    /// Whether the observed record's holder may still be renewing: its lease duration has not
    /// passed on our clock since we saw the record change.
    fn observed_lease_valid(&self) -> bool {
        self.observed.as_ref().is_some_and(|observed| {
            let seconds = observed.spec.lease_duration_seconds.unwrap_or(0).max(0);
            observed.at + Duration::from_secs(seconds.unsigned_abs().into()) > Instant::now()
        })
    }

    fn jittered_retry_period(&self) -> Duration {
        self.config.retry_period.mul_f64(1.0 + fastrand::f64() * RETRY_JITTER_FACTOR)
    }

    fn lease_display(&self) -> String {
        format!("{}/{}", self.config.namespace, self.config.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> LeaseConfig {
        LeaseConfig {
            namespace: String::from("applyset-system"),
            name: String::from("applyset-controller"),
            identity: String::from("pod-a_1234"),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    #[test]
    fn client_go_defaults_are_valid() {
        config().validate().expect("valid");
    }

    #[test]
    fn rejects_timings_that_allow_two_leaders() {
        let renew_not_shorter = LeaseConfig { renew_deadline: Duration::from_secs(15), ..config() };
        assert!(renew_not_shorter.validate().is_err());
        let retry_too_long = LeaseConfig { retry_period: Duration::from_secs(9), ..config() };
        assert!(retry_too_long.validate().is_err());
        let retry_zero = LeaseConfig { retry_period: Duration::ZERO, ..config() };
        assert!(retry_zero.validate().is_err());
        // 10.9 s is written as 10 s, no longer than the deadline.
        let truncated_to_deadline = LeaseConfig { lease_duration: Duration::from_millis(10_900), ..config() };
        assert!(truncated_to_deadline.validate().is_err());
        let no_identity = LeaseConfig { identity: String::new(), ..config() };
        assert!(no_identity.validate().is_err());
    }

    #[test]
    fn lease_duration_is_whole_seconds_at_least_one() {
        let config = LeaseConfig { lease_duration: Duration::from_millis(3900), ..config() };
        assert_eq!(config.lease_duration_seconds(), 3);
        let config = LeaseConfig { lease_duration: Duration::from_millis(300), ..config };
        assert_eq!(config.lease_duration_seconds(), 1);
    }
}
