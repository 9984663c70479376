//! One module per command.

pub mod apply;
pub mod diff;
mod error;
mod flags;
pub mod patch;
mod print;
pub mod wait;
