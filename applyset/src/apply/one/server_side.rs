//! The controller's fallback for an object whose last-applied annotation would exceed the
//! apiserver's limit (kubectl fails it): server-side apply under a field manager of its own,
//! with no annotation.
//!
//! Conflicts are forced only on fields the ApplySet owned before, decided before anything is
//! sent: a field the manifest changes that the live object's `managedFields` give to another
//! manager fails the object, naming the field and the manager, unless the run re-applies a
//! revision applied before ([`crate::apply::ApplyOptions::server_side_force`]: every field of it
//! was the ApplySet's, and the change is drift to correct). When every changed field is
//! unowned, the server-side manager's or the client-side manager's, the apply is sent with
//! `force=true` (taking back the tool's own client-side fields). Nothing is sent when no
//! manifest field differs and the manager owns no field the manifest dropped.

use applyset_merge::value::go_quote;
use applyset_merge::{Value, json_merge};

use super::{Live, One, Outcome, ownership_conflict};
use crate::apply::error::{ErrorCategory, ObjectError};
use crate::apply::object::last_applied;
use crate::apply::options::Verb;
use crate::cluster::{DryRun, PatchType};
use crate::fields::server_side::{differing, owned_but_absent};
use crate::keys::LAST_APPLIED_ANNOTATION;

impl One<'_> {
    /// Applies the object server-side as `manager`; `why` says why it is not client-side.
    pub(super) async fn server_side(&mut self, live: Live, manager: &str, why: String) -> Outcome {
        self.details.server_side = Some(why.clone());
        let current = match self.read_live(live).await {
            Ok(current) => current,
            Err(error) => return (Err(error), None),
        };
        let body = self.object.clone();
        let mut params = self.params.clone();
        params.field_manager = manager.to_owned();
        let mut drop_annotation = false;
        if let Some(current) = &current {
            if let Some(error) = ownership_conflict(self.options, self.item, &self.object, current) {
                return (Err(error), None);
            }
            let changed = differing(&body, current);
            let own = [manager, self.options.field_manager.as_str()];
            let theirs: Vec<String> = changed
                .iter()
                .filter_map(|d| d.manager.as_deref().filter(|m| !own.contains(m)).map(|m| format!("{} ({m})", d.path)))
                .collect();
            if !theirs.is_empty() && !self.options.server_side_force {
                let message = format!(
                    "{} from {} is applied server-side ({why}), and it would change fields other field managers own: {}; nothing was sent (leave those fields out of git, or take them from their managers)",
                    self.item.display(),
                    go_quote(&self.source),
                    theirs.join(", ")
                );
                return (Err(ObjectError::plain(ErrorCategory::FieldConflict, message)), Some(self.visited(current)));
            }
            self.details.live = Some(current.clone());
            drop_annotation = last_applied(current).is_some();
            if changed.is_empty() && owned_but_absent(&body, current, manager).is_empty() && !drop_annotation {
                self.details.result = Some(current.clone());
                return (Ok(Verb::Unchanged), Some(self.visited(current)));
            }
            // Only unowned fields or the ApplySet's own differ: take its client-side ones back.
            params.force = true;
        }
        self.details.patch = Some(body.clone());
        self.details.patch_type = Some(PatchType::Apply);
        let verb = if current.is_some() { Verb::Configured } else { Verb::Created };
        if self.options.dry_run == DryRun::Client {
            let base = current.clone().unwrap_or_else(|| Value::Object(Default::default()));
            let result = json_merge::merge_patch(&base, &body).unwrap_or(body);
            let visited = self.visited(&result);
            self.details.result = Some(result);
            return (Ok(verb), Some(visited));
        }
        let (mapping, namespace, name) = (self.mapping, self.namespace(), &self.item.name);
        let mut result = match self.cluster.patch(mapping, namespace, name, PatchType::Apply, &body, &params).await {
            Ok(result) => result,
            Err(error) => {
                let error = ObjectError::wrap("applying server-side", &self.source, error);
                return (Err(error), current.as_ref().map(|c| self.visited(c)));
            }
        };
        // The client-side annotation it had is out of date from now on: a later return to
        // client-side apply must not compute deletions from it.
        if drop_annotation {
            let patch = Value::from_json_str(&format!(
                r#"{{"metadata":{{"annotations":{{"{LAST_APPLIED_ANNOTATION}":null}}}}}}"#
            ))
            .expect("a constant JSON document");
            match self.cluster.patch(mapping, namespace, name, PatchType::JsonMerge, &patch, &self.params).await {
                Ok(dropped) => result = dropped,
                Err(error) => {
                    let error = ObjectError::wrap("removing the last-applied annotation of", &self.source, error);
                    return (Err(error), Some(self.visited(&result)));
                }
            }
        }
        let visited = self.visited(&result);
        self.details.result = Some(result);
        (Ok(verb), Some(visited))
    }
}
