//! One module per command.

pub mod apply;
pub mod diff;
pub mod patch;
pub mod wait;
