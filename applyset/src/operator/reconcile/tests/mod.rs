//! The reconcile without a cluster: [`fake`] is an in-process apiserver, [`fixture`] a git
//! repository and a `Context` around it; the tests drive the controller's entry point
//! (`reconcile`) through whole runs and assert what reached the apiserver, the status it
//! wrote, its Events and metrics.

pub(crate) mod fake;
pub(crate) mod fixture;

mod deletion;
mod drift;
mod failures;
mod gates;
mod moved;
mod order;
mod prune;
mod record;
mod secrets;
mod skip;
