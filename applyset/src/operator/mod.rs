//! The operator: the `ApplySet` custom resource and the controller that keeps the cluster in
//! sync with git (`applyset controller`).

pub mod http;
pub mod leader;
pub mod metrics;
pub mod api;
pub mod duration;
pub mod drift;
pub mod status;
pub mod context;
pub mod inventory;
pub mod prune;
pub mod events;
pub mod outcome;
pub mod reconcile;
pub mod schedule;
pub mod controller;
