//! The controller's [`FieldPolicy`]: stale and foreign fields found on every object it applies,
//! reported or removed as `spec.drift.staleFields` and `spec.drift.foreignFields` say.

use std::sync::Arc;

use applyset_merge::Value;

use super::api::{DriftSpec, ForeignFields, StaleFields};
use super::drift::IgnoreRules;
use super::history::HistoryIndex;
use crate::causes::Chain;
use crate::fields::{
    self, FieldPath, FieldPolicy, Guard, Merger, Reason, SYSTEM_MANAGERS, Verdict, foreign_fields, stale_fields,
};

pub struct LeftoverPolicy {
    pub stale: StaleFields,
    pub foreign: ForeignFields,
    /// The run writes (not a Report-mode dry run): only then is anything removed.
    pub writes: bool,
    /// This controller's field manager: its fields are never foreign.
    pub own_manager: String,
    pub ignore: Arc<IgnoreRules>,
    pub history: Arc<HistoryIndex>,
}

impl LeftoverPolicy {
    pub fn new(
        drift: &DriftSpec,
        writes: bool,
        own_manager: &str,
        ignore: Arc<IgnoreRules>,
        history: Arc<HistoryIndex>,
    ) -> Self {
        LeftoverPolicy {
            stale: drift.stale_fields,
            foreign: drift.foreign_fields,
            writes,
            own_manager: own_manager.to_owned(),
            ignore,
            history,
        }
    }

    /// Whether it can find anything at all (no history and foreign fields ignored: nothing).
    pub fn is_idle(&self) -> bool {
        (self.history.is_empty() || self.stale == StaleFields::Ignore) && self.foreign == ForeignFields::Ignore
    }
}

impl FieldPolicy for LeftoverPolicy {
    fn inspect(
        &self,
        manifest: &Value,
        annotation: &Value,
        modified: &Value,
        live: &Value,
        merger: &dyn Merger,
    ) -> Verdict {
        let mut ignored_managers: Vec<&str> = SYSTEM_MANAGERS.to_vec();
        ignored_managers.extend(self.ignore.managers_for(manifest));
        let guard = Guard { ignored_managers, pointers: self.ignore.pointers_for(manifest) };
        let mut verdict = Verdict::default();
        let versions = match self.stale {
            StaleFields::Ignore => &[],
            _ => self.history.versions_for(manifest),
        };
        match stale_fields(versions, annotation, modified, live, merger, &guard) {
            Ok(found) => verdict.findings.extend(found),
            Err(error) => {
                verdict.warnings.push(format!("stale fields could not be computed: {error}", error = Chain(&error)))
            }
        }
        if self.foreign != ForeignFields::Ignore {
            verdict.findings.extend(foreign_fields(annotation, modified, live, &self.own_manager, merger, &guard));
        }
        if !self.writes {
            return verdict;
        }
        let union = match (self.stale, versions.is_empty()) {
            (StaleFields::Remove, false) => fields::applied_union(versions, merger).ok(),
            _ => None,
        };
        let mut removals: Vec<(&FieldPath, &Value)> = Vec::new();
        for finding in &mut verdict.findings {
            let source = match finding.reason {
                Reason::Stale => union.as_ref(),
                Reason::Foreign if self.foreign == ForeignFields::Remove => Some(live),
                _ => None,
            };
            if let Some(source) = source {
                finding.removed = true;
                removals.push((&finding.path, source));
            }
        }
        if removals.is_empty() {
            return verdict;
        }
        match fields::original_with(annotation, &removals, merger) {
            Ok(original) => verdict.original = Some(original),
            Err(error) => {
                verdict
                    .warnings
                    .push(format!("stale or foreign fields could not be removed: {error}", error = Chain(&error)));
                for finding in &mut verdict.findings {
                    finding.removed = false;
                }
            }
        }
        verdict
    }
}
