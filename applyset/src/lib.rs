//! The `applyset` operator and its command-line tools.

pub mod apply;
pub mod applyset;
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod digest;
pub mod document;
pub mod fields;
pub mod manifest;
pub mod operator;
pub mod redact;
pub mod source;
