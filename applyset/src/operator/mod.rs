//! The operator: the `ApplySet` custom resource and the controller that keeps the cluster in
//! sync with git (`applyset controller`).

pub mod api;
pub mod cache;
pub mod context;
pub mod controller;
pub mod decryption;
pub mod dependencies;
pub mod drift;
pub mod events;
pub mod external_health;
pub mod fair;
pub mod history;
pub mod http;
pub mod inventory;
pub mod leader;
pub mod leftover;
pub mod members;
pub mod metrics;
pub mod moved;
pub mod outcome;
pub mod postbuild;
pub mod prune;
pub mod reconcile;
pub mod remote;
pub mod schedule;
pub mod secret_key;
pub mod status;
pub mod waiting;
pub mod webhook;
pub mod written;

/// Locks `mutex`, going on with the data if a panicking thread poisoned it: what the
/// controller keeps under its locks (counts, caches, schedules) is updated in single steps
/// that cannot be left half-written.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
