//! One module per command.

pub mod patch;
