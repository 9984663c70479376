//! The `applyset` operator and its command-line tools.

pub mod apply;
pub mod applyset;
pub mod causes;
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod digest;
pub mod document;
pub mod duration;
pub mod fields;
pub mod health;
pub mod keys;
pub mod manifest;
pub mod operator;
pub mod printers;
pub mod redact;
pub mod reference;
pub mod sops;
pub mod source;
pub mod ui;

/// The stack of every thread that handles documents (the command's main thread, the async
/// runtime's workers). The merge engine grows its own stack as it recurses
/// ([`applyset_merge::value::deeper`]); the other walks over documents here recurse one level at
/// a time, and this is room for documents at the nesting limit
/// ([`applyset_merge::value::MAX_DEPTH`]) in a debug build with margin. It is address space
/// reserved, not memory used: only the pages a thread touches are backed.
pub const DOCUMENT_THREAD_STACK: usize = 256 << 20;
