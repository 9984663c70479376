//! One module per command.

pub mod apply;
pub mod decryption;
pub mod diff;
mod error;
mod flags;
pub mod fleet;
pub mod last_applied;
pub mod patch;
pub mod preview;
mod print;
pub mod wait;
