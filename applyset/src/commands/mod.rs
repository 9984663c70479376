//! One module per command.

pub mod apply;
pub mod decryption;
pub mod diff;
pub(crate) mod error;
pub(crate) mod flags;
pub mod fleet;
pub mod last_applied;
pub mod patch;
pub mod preview;
mod print;
pub mod wait;
