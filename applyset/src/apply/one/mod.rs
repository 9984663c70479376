//! The per-object algorithm (spec §10.3), kubectl's `apply` of one object in its steps: check
//! the annotation size, read the live object (from the stage's LIST, else a GET), create it when
//! missing, refuse another ApplySet's object, then compute and send the three-way patch —
//! re-reading and retrying on conflicts, and with `--force` deleting and re-creating the object
//! when the patch cannot be applied.

mod server_side;

use std::time::Duration;

use applyset_merge::Value;
use applyset_merge::value::go_quote;

use super::error::{ErrorCategory, ObjectError, PatchError};
use super::metadata::{self, ComputedPatch};
use super::object::{self, last_applied, meta_str};
use super::options::{ApplyOptions, Keep, Ownership, UnusableLastApplied, Verb};
use super::plan::{Prepared, source_text};
use super::report::{Details, ObjectReport, Visited};
use crate::causes::with_causes;
use crate::cluster::cache::LiveText;
use crate::cluster::{Cluster, DryRun, Error, Mapping, WriteParams};
use crate::keys::{LAST_APPLIED_ANNOTATION, PART_OF_LABEL, TAKE_OWNERSHIP_ANNOTATION};

/// kubectl retries a conflicting patch 5 more times.
const MAX_PATCH_RETRIES: usize = 5;

/// What the stage's LISTs said about an object.
pub(super) enum Live {
    /// Listed: present (with its state) or absent.
    Listed(Option<Value>),
    /// Listed or cached, not parsed yet (see [`LiveText`]).
    Text(LiveText),
    /// The LIST failed (e.g. no list permission): GET the object.
    Unknown,
}

/// How one object's apply ended: its verb or error, and whether it counts as visited (the set's
/// own object, present in the cluster: recorded and never pruned).
type Outcome = (Result<Verb, ObjectError>, Option<Visited>);

/// Applies one object given what the LIST said.
pub(super) async fn apply_one(
    cluster: &Cluster,
    options: &ApplyOptions,
    item: &Prepared,
    live: Live,
) -> (ObjectReport, Option<Visited>) {
    let mut one = One {
        cluster,
        options,
        item,
        object: item.object.unpack(),
        mapping: item.mapping.as_ref().expect("resolved before apply"),
        source: source_text(&item.source),
        params: options.write_params(),
        warnings: Vec::new(),
        details: Details::default(),
    };
    let (result, visited) = one.run(live).await;
    // The watch event of this write is the run's own, not drift.
    if let (Some(cache), Ok(Verb::Created | Verb::Configured), Some(written), DryRun::None) =
        (&options.cache, &result, &one.details.result, options.dry_run)
    {
        cache.cache.wrote(written);
    }
    let mut details = one.details;
    let keep = match (options.keep_results, &result) {
        (Keep::Nothing, _) => false,
        (Keep::Changed, Ok(Verb::Created | Verb::Unchanged) | Err(_)) => {
            details.keep_names_only();
            true
        }
        (Keep::Everything | Keep::Changed, _) => true,
    };
    let mut report = item.report(result, one.warnings);
    if keep {
        report.details = Some(Box::new(details));
    }
    (report, visited)
}

/// One object's apply: what every step needs, and what the report collects on the way.
struct One<'a> {
    cluster: &'a Cluster,
    options: &'a ApplyOptions,
    item: &'a Prepared,
    /// The manifest, unpacked for this apply.
    object: Value,
    mapping: &'a Mapping,
    /// The source path, as kubectl's messages quote it.
    source: String,
    params: WriteParams,
    warnings: Vec<String>,
    details: Details,
}

/// The create step's result.
enum Created {
    Created(Value),
    /// Created by someone else since the LIST: the object as it is now, to be patched.
    Exists(Value),
}

impl One<'_> {
    async fn run(&mut self, live: Live) -> Outcome {
        let codec = self.options.last_applied.as_ref().map(|codec| codec.0.as_ref());
        let (_, modified) = object::modified_configuration_with(&self.object, codec);
        if let Some(error) = self.annotations_too_large(&modified) {
            return match self.options.server_side_fallback.clone() {
                Some(manager) => {
                    let size = object::annotations_size(&modified);
                    let why = format!(
                        "its {LAST_APPLIED_ANNOTATION} annotation would make its annotations {size} bytes, over the apiserver's limit of {}",
                        object::ANNOTATIONS_SIZE_LIMIT
                    );
                    self.server_side(live, &manager, why).await
                }
                None => (Err(error), None),
            };
        }
        let current = match self.read_live(live).await {
            Ok(Some(current)) => current,
            Ok(None) => match self.create(&modified).await {
                Ok(Created::Created(created)) => {
                    let visited = self.visited(&created);
                    self.details.result = Some(created);
                    return (Ok(Verb::Created), Some(visited));
                }
                Ok(Created::Exists(current)) => current,
                Err(error) => return (Err(error), None),
            },
            Err(error) => return (Err(error), None),
        };
        if let Some(error) = ownership_conflict(self.options, self.item, &self.object, &current) {
            // Not visited: the object is not this set's, so it is never recorded or pruned by it.
            return (Err(error), None);
        }
        if last_applied(&current).is_none() {
            self.warnings.push(missing_annotation_warning(&self.mapping.resource.plural, &self.item.name));
        }
        self.details.live = Some(current.clone());
        self.patch(&modified, current).await
    }

    fn visited(&self, object: &Value) -> Visited {
        Visited {
            api_resource: self.mapping.resource.clone(),
            namespaced: self.mapping.namespaced,
            namespace: self.item.namespace.clone(),
            name: self.item.name.clone(),
            uid: meta_str(object, "uid").unwrap_or("").to_owned(),
        }
    }

    fn namespace(&self) -> Option<&str> {
        self.item.namespace.as_deref()
    }

    /// The last-applied annotation copies the whole object: the error that refuses, before
    /// anything is sent, an object whose annotations would exceed the apiserver's limit.
    fn annotations_too_large(&self, modified: &Value) -> Option<ObjectError> {
        let size = object::annotations_size(modified);
        if size <= object::ANNOTATIONS_SIZE_LIMIT {
            return None;
        }
        let message = format!(
            "{} from {} cannot be applied client-side: its annotations would total {size} bytes, over the apiserver's limit of {} bytes (metadata.annotations: Too long: may not be more than {} bytes), because the {LAST_APPLIED_ANNOTATION} annotation holds a copy of the whole object; nothing was sent",
            self.item.display(),
            go_quote(&self.source),
            object::ANNOTATIONS_SIZE_LIMIT,
            object::ANNOTATIONS_SIZE_LIMIT
        );
        Some(ObjectError::plain(ErrorCategory::Manifest, message))
    }

    /// The live object: as listed, else a GET (`None`: it does not exist).
    async fn read_live(&self, live: Live) -> Result<Option<Value>, ObjectError> {
        // Text that does not parse (it always does: the apiserver wrote it) is read again.
        let known = match live {
            Live::Listed(found) => return Ok(found),
            Live::Text(text) => text.parse(),
            Live::Unknown => None,
        };
        if let Some(object) = known {
            return Ok(Some(object));
        }
        match self.cluster.get(self.mapping, self.namespace(), &self.item.name).await {
            Ok(found) => Ok(Some(found)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(ObjectError::wrap(
                &format!("retrieving current configuration of:\n{}\nfrom server for:", self.info_text()),
                &self.source,
                e,
            )),
        }
    }

    /// Creates the missing object (only computed under `--dry-run=client`).
    async fn create(&self, modified: &Value) -> Result<Created, ObjectError> {
        let body = object::create_body(modified);
        let created = match self.options.dry_run {
            DryRun::Client => Ok(body),
            _ => self.cluster.create(self.mapping, self.namespace(), &body, &self.params).await,
        };
        match created {
            Ok(created) => Ok(Created::Created(created)),
            Err(e) if e.is_already_exists() => {
                // Patch it like kubectl would have, had it been there.
                match self.cluster.get(self.mapping, self.namespace(), &self.item.name).await {
                    Ok(found) => Ok(Created::Exists(found)),
                    Err(_) => Err(ObjectError::wrap("creating", &self.source, e)),
                }
            }
            Err(e) => Err(ObjectError::wrap("creating", &self.source, e)),
        }
    }

    /// Computes and sends the three-way patch; on a conflict re-reads the object and tries
    /// again (kubectl's retries), with `--force` replaces an object the patch cannot change.
    async fn patch(&mut self, modified: &Value, mut current: Value) -> Outcome {
        let visit = self.visited(&current);
        let mut retries = 0;
        loop {
            let computed = match self.compute(modified, &current).await {
                Ok(computed) => computed,
                Err(error) => return (Err(error), Some(visit)),
            };
            if computed.patch.as_object().is_some_and(|p| p.is_empty()) {
                // kubectl warns of a live object being deleted whether or not it patched it.
                self.resulted(current);
                return (Ok(Verb::Unchanged), Some(visit));
            }
            let error = match self.send_patch(&computed, &current).await {
                Ok(result) => {
                    self.resulted(result);
                    return (Ok(Verb::Configured), Some(visit));
                }
                Err(error) => error,
            };
            if error.is_conflict() && retries < MAX_PATCH_RETRIES {
                retries += 1;
                if retries > 1 {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                match self.cluster.get(self.mapping, self.namespace(), &self.item.name).await {
                    Ok(fresh) => current = fresh,
                    Err(get_error) => {
                        let error = ObjectError::wrap(&self.applying(&computed), &self.source, get_error);
                        return (Err(error.quoting([computed.patch.to_json_string()])), Some(visit));
                    }
                }
                continue;
            }
            if self.options.force && (error.is_conflict() || error.is_invalid()) {
                return self.force_replace(modified, &current, &computed, visit).await;
            }
            let error =
                ObjectError::wrap("patching", &self.source, error).rewrap(&self.applying(&computed), &self.source);
            return (Err(error.quoting([computed.patch.to_json_string()])), Some(visit));
        }
    }

    /// The patch for the current state, with the caller's filter applied (kept in the details).
    async fn compute(&mut self, modified: &Value, current: &Value) -> Result<ComputedPatch, ObjectError> {
        let (mut computed, mut original, discarded) =
            compute(self.cluster, self.item, &self.object, modified, current, self.options, &mut self.warnings)
                .await
                .map_err(|error| {
                error.rewrap(&format!("applying patch:\n\nto:\n{}\nfor:", self.info_text()), &self.source)
            })?;
        if discarded && !self.details.last_applied_discarded {
            self.details.last_applied_discarded = true;
            self.warnings.push(format!(
                "Warning: the {LAST_APPLIED_ANNOTATION} annotation of {} is not a JSON object; it was treated as absent and is written anew",
                self.item.display()
            ));
        }
        let patch_error = |error: PatchError| ObjectError::plain(ErrorCategory::Patch, with_causes(&error));
        if let Some(owned) = self.returning_to_client_side(current, &computed).map_err(patch_error)? {
            computed.patch = self
                .recompute(&computed, &owned, modified, current, "fields it applied server-side")
                .map_err(patch_error)?;
            original = owned;
        }
        if let Some(policy) = &self.options.field_policy {
            let verdict = policy.0.inspect(&self.object, &original, modified, current, &computed.engine);
            self.warnings.extend(verdict.warnings);
            if let Some(original) = verdict.original {
                computed.patch = self
                    .recompute(&computed, &original, modified, current, "left-behind fields")
                    .map_err(patch_error)?;
            }
            self.details.fields = verdict.findings;
        }
        if let Some(filter) = &self.options.patch_filter {
            (filter.0)(&self.object, current, &mut computed.patch);
        }
        self.details.patch = Some(computed.patch.clone());
        self.details.patch_type = Some(computed.engine.patch_type());
        Ok(computed)
    }

    /// The patch from another original than the annotation, that also deletes `what`.
    fn recompute(
        &self,
        computed: &ComputedPatch,
        original: &Value,
        modified: &Value,
        current: &Value,
        what: &'static str,
    ) -> Result<Value, PatchError> {
        computed.engine.three_way(original, modified, current).map_err(|cause| PatchError::Recompute {
            what,
            origin: self.source.clone(),
            cause,
        })
    }

    /// An object that was applied server-side (too large for the annotation) and fits again
    /// has no annotation: its original is what the server-side manager owned, so the patch
    /// deletes the fields git dropped meanwhile instead of leaving them behind.
    fn returning_to_client_side(&self, current: &Value, computed: &ComputedPatch) -> Result<Option<Value>, PatchError> {
        let Some(manager) = &self.options.server_side_fallback else { return Ok(None) };
        if last_applied(current).is_some() {
            return Ok(None);
        }
        crate::fields::server_side::owned_document(current, manager, &computed.engine).map_err(|cause| {
            PatchError::ServerSideFields { manager: manager.clone(), origin: self.source.clone(), cause }
        })
    }

    /// PATCH (or, under `--dry-run=client`, the patch applied locally as the server would).
    async fn send_patch(&self, computed: &ComputedPatch, current: &Value) -> Result<Value, Error> {
        match self.options.dry_run {
            DryRun::Client => {
                computed.engine.apply(current, &computed.patch).map_err(|e| Error::Other(with_causes(&e)))
            }
            _ => {
                let patch_type = computed.engine.patch_type();
                let (mapping, name) = (self.mapping, &self.item.name);
                self.cluster.patch(mapping, self.namespace(), name, patch_type, &computed.patch, &self.params).await
            }
        }
    }

    /// The object as the apply left it (patched, or unchanged); kubectl's warning when it is
    /// being deleted.
    fn resulted(&mut self, result: Value) {
        if object::meta_str(&result, "deletionTimestamp").is_some() {
            self.warnings.push(format!(
                "Warning: Detected changes to resource {} which is currently being deleted.",
                self.item.name
            ));
        }
        self.details.result = Some(result);
    }

    /// `--force` after a Conflict or Invalid patch: the object deleted and created anew.
    async fn force_replace(
        &mut self,
        modified: &Value,
        current: &Value,
        computed: &ComputedPatch,
        visit: Visited,
    ) -> Outcome {
        match self.delete_and_create(modified, current).await {
            Ok(created) => {
                let visited = self.visited(&created);
                self.details.result = Some(created);
                (Ok(Verb::Configured), Some(visited))
            }
            Err(error) => {
                let error = error.rewrap(&self.applying(computed), &self.source);
                (Err(error.quoting([computed.patch.to_json_string()])), Some(visit))
            }
        }
    }

    /// Delete (background propagation), wait until gone, create `modified` (nulls kept); if
    /// that fails, try to put the old object back.
    async fn delete_and_create(&self, modified: &Value, current: &Value) -> Result<Value, ObjectError> {
        let (cluster, mapping, namespace, params) = (self.cluster, self.mapping, self.namespace(), &self.params);
        cluster
            .delete(mapping, namespace, &self.item.name, "Background", params.server_dry_run)
            .await
            .map_err(|e| ObjectError::from_error(&e))?;
        self.wait_until_deleted().await?;
        let e = match cluster.create(mapping, namespace, &object::recreate_body(modified), params).await {
            Ok(created) => return Ok(created),
            Err(e) => e,
        };
        match cluster.create(mapping, namespace, &restore_body(current), params).await {
            Ok(_) => Err(ObjectError::from_error(&e)),
            Err(restore) => Err(ObjectError::plain(
                e.category().into(),
                format!(
                    "An error occurred force-replacing the existing object with the newly provided one:\n\n{e}.\n\nAdditionally, an error occurred attempting to restore the original object:\n\n{restore}"
                ),
            )),
        }
    }

    /// Polls until the deleted object is gone, for at most `--timeout`.
    async fn wait_until_deleted(&self) -> Result<(), ObjectError> {
        let deadline = tokio::time::Instant::now() + self.options.force_timeout;
        loop {
            match self.cluster.get(self.mapping, self.namespace(), &self.item.name).await {
                Err(e) if e.is_not_found() => return Ok(()),
                Err(e) => return Err(ObjectError::from_error(&e)),
                Ok(_) if tokio::time::Instant::now() >= deadline => {
                    return Err(ObjectError::plain(
                        ErrorCategory::Timeout,
                        format!(
                            "timed out after {:?} waiting for {} to be deleted",
                            self.options.force_timeout,
                            self.item.display()
                        ),
                    ));
                }
                Ok(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }

    /// kubectl's "applying patch" context of a failed patch, quoting the patch.
    fn applying(&self, computed: &ComputedPatch) -> String {
        format!("applying patch:\n{}\nto:\n{}\nfor:", computed.patch.to_json_string(), self.info_text())
    }

    /// kubectl's `Info` description of the object, as its patch errors quote it.
    fn info_text(&self) -> String {
        let (r, item) = (&self.mapping.resource, self.item);
        format!(
            "Resource: \"{}/{}, Resource={}\", GroupVersionKind: \"{}/{}, Kind={}\"\nName: {}, Namespace: {}",
            r.group,
            r.version,
            r.plural,
            item.gvk.group,
            item.gvk.version,
            item.gvk.kind,
            go_quote(&item.name),
            go_quote(item.namespace.as_deref().unwrap_or(""))
        )
    }
}

fn missing_annotation_warning(plural: &str, name: &str) -> String {
    format!(
        "Warning: resource {plural}/{name} is missing the {LAST_APPLIED_ANNOTATION} annotation which is required by kubectl apply. kubectl apply should only be used on resources created declaratively by either kubectl create --save-config or kubectl apply. The missing annotation will be patched automatically."
    )
}

/// [`Ownership::RefuseOtherSets`]: the error for a live object another ApplySet claims.
fn ownership_conflict(options: &ApplyOptions, item: &Prepared, object: &Value, current: &Value) -> Option<ObjectError> {
    let own = options.applyset_label.as_deref().filter(|_| options.ownership == Ownership::RefuseOtherSets)?;
    let labels = current.as_object()?.get("metadata")?.as_object()?.get("labels")?.as_object()?;
    let other = labels.get(PART_OF_LABEL)?.as_str().filter(|other| !other.is_empty() && *other != own)?;
    let allowed = object::annotation(object, TAKE_OWNERSHIP_ANNOTATION) == Some("true");
    if allowed {
        return None;
    }
    Some(ObjectError {
        message: format!(
            "{} belongs to another ApplySet ({PART_OF_LABEL}={other}); it was not changed. Remove it from one of the two sets, or set the annotation {TAKE_OWNERSHIP_ANNOTATION}: \"true\" on it in git to move it to this one",
            item.display()
        ),
        conflict_with: Some(other.to_owned()),
        category: ErrorCategory::OwnedByOtherSet,
        ..ObjectError::default()
    })
}

/// kubectl's three-way patch of the object: original (its last-applied annotation), modified
/// (the manifest with the new annotation), current (the live object). Returns the original too,
/// and whether an unusable annotation was treated as absent.
async fn compute(
    cluster: &Cluster,
    item: &Prepared,
    object: &Value,
    modified: &Value,
    current: &Value,
    options: &ApplyOptions,
    warnings: &mut Vec<String>,
) -> Result<(ComputedPatch, Value, bool), ObjectError> {
    let source = source_text(&item.source);
    let treat_as_absent = options.unusable_last_applied == UnusableLastApplied::TreatAsAbsent;
    let mut discarded = false;
    let original = match last_applied(current) {
        None | Some("") => Value::Object(Default::default()),
        Some(text) => match Value::from_json_str(text) {
            Ok(value) if value.as_object().is_some() => value,
            _ if treat_as_absent => {
                discarded = true;
                Value::Object(Default::default())
            }
            Ok(value) => value,
            Err(_) => {
                let (modified, current) = (modified.to_json_string(), current.to_json_string());
                let error = ObjectError::plain(ErrorCategory::Patch, format!(
                    "error when creating patch with:\noriginal:\n{text}\nmodified:\n{modified}\ncurrent:\n{current}\nfor: {}: invalid JSON document",
                    go_quote(&source)
                ))
                .quoting([text.to_owned(), modified, current]);
                return Err(ObjectError { unusable_last_applied: true, ..error });
            }
        },
    };
    let unusable_last_applied = original.as_object().is_none();
    let original = match &options.last_applied {
        Some(codec) if !unusable_last_applied => codec.0.decode(original, object),
        _ => original,
    };
    let computed =
        metadata::compute_patch(cluster, &item.gvk, &original, modified, current, options.overwrite, warnings)
            .await
            .map_err(|e| {
                let message = format!("error when {} {}: {}", e.context, go_quote(&source), e.error);
                let error = ObjectError::plain(ErrorCategory::Patch, message).quoting(e.bodies);
                ObjectError { unusable_last_applied, ..error }
            })?;
    Ok((computed, original, discarded))
}

/// The old live object as a create body: no resourceVersion, uid or timestamps.
fn restore_body(current: &Value) -> Value {
    let mut body = object::recreate_body(current);
    if let Some(metadata) = body.as_object_mut().and_then(|o| o.get_mut("metadata")).and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
        ] {
            metadata.remove(field);
        }
    }
    body
}
