//! Patch metadata: for each field, the patch strategy and merge key kubectl uses.
//!
//! One trait, [`Schema`], is implemented by every source of metadata: the OpenAPI v2 and v3
//! documents ([`crate::openapi`]), tables built by tests, and later the cluster's own
//! `/openapi/v3`. A schema node answers lookups for its child fields.

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};

/// A shared handle on a schema node.
pub type SchemaRef = Arc<dyn Schema>;

/// A node of a type tree that knows the patch metadata of its fields.
pub trait Schema: fmt::Debug + Send + Sync {
    /// Metadata of field `key` when both sides hold objects; returns the child's node.
    fn lookup_struct(&self, key: &str) -> Result<(SchemaRef, PatchMeta)>;
    /// Metadata of field `key` when both sides hold lists; returns the *element's* node.
    fn lookup_slice(&self, key: &str) -> Result<(SchemaRef, PatchMeta)>;
    /// The name used in messages such as `cannot merge lists without merge key for <name>`.
    fn name(&self) -> String;
}

/// The raw metadata of one field: the comma-split strategy extension and the merge key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchMeta {
    pub strategies: Vec<String>,
    pub merge_key: String,
}

/// The interpreted strategy of a field (spec §2.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Strategy {
    pub merge: bool,
    pub replace: bool,
    pub retain_keys: bool,
}

impl PatchMeta {
    pub fn new(strategy: &str, merge_key: &str) -> PatchMeta {
        let strategies =
            if strategy.is_empty() { Vec::new() } else { strategy.split(',').map(str::to_owned).collect() };
        PatchMeta { strategies, merge_key: merge_key.to_owned() }
    }

    /// Interprets the strategy list as kubectl does: at most one real strategy, optionally
    /// combined with `retainKeys`; unknown single strategies behave like "none".
    pub fn strategy(&self) -> Result<Strategy> {
        let pick = |s: &str| Strategy { merge: s == "merge", replace: s == "replace", retain_keys: false };
        match self.strategies.as_slice() {
            [] => Ok(Strategy::default()),
            [one] if one == "retainKeys" => Ok(Strategy { retain_keys: true, ..Strategy::default() }),
            [one] => Ok(pick(one)),
            [a, b] if a == "retainKeys" || b == "retainKeys" => {
                let other = if a == "retainKeys" { b } else { a };
                Ok(Strategy { retain_keys: true, ..pick(other) })
            }
            other => Err(Error::BadStrategy(format!("[{}]", other.join(" ")))),
        }
    }
}

/// A node about which nothing is known: every lookup succeeds with no metadata, so lists are
/// replaced and objects merged key by key. Used below untyped fields and when no schema exists.
#[derive(Debug, Clone, Copy, Default)]
pub struct Untyped;

impl Schema for Untyped {
    fn lookup_struct(&self, _key: &str) -> Result<(SchemaRef, PatchMeta)> {
        Ok((Arc::new(Untyped), PatchMeta::default()))
    }
    fn lookup_slice(&self, _key: &str) -> Result<(SchemaRef, PatchMeta)> {
        Ok((Arc::new(Untyped), PatchMeta::default()))
    }
    fn name(&self) -> String {
        String::new()
    }
}
