//! The steps of a run, each a method on [`super::Reconciliation`], in the order
//! [`super::Reconciliation::run`] calls them: [`source`] (dependencies, fetch), [`build`]
//! (cluster, variables, load, size check, history), [`apply`], [`record`], [`prune`] and
//! [`health`]; [`webhook`] publishes the receiver's path first, [`moved`] deals with the
//! objects a change of cluster leaves behind; a plan ends after the apply with [`dry_run`].

pub(super) mod apply;
pub(super) mod build;
pub(super) mod dry_run;
pub(super) mod health;
pub(super) mod moved;
pub(super) mod prune;
pub(super) mod record;
pub(super) mod source;
pub(super) mod webhook;
