//! The apply path: `kubectl apply` (client-side, kubectl 1.33) against a live cluster. This
//! module is the only place on that path that talks to the apiserver.
//!
//! A run:
//! 1. **Prepare** (no writes): map each object's kind to its resource through discovery (one
//!    aggregated request pair per run; kinds defined by CRDs in the same input are predicted
//!    from those CRDs), default or check namespaces exactly as kubectl does, add the ApplySet
//!    label, and refuse the run when an object appears twice.
//! 2. **Stages**: Namespaces, then CustomResourceDefinitions (then wait until each is
//!    `Established` and refresh discovery), then everything else, each stage in parallel.
//! 3. **Per stage**: one paginated LIST per (resource, namespace) instead of one GET per
//!    object; an object missing from its list is created, a present one is three-way patched
//!    (nothing is sent when the patch is `{}`). Up to `concurrency` objects are in flight and
//!    every request passes the cluster's rate limiter.
//! 4. Results come back in input order; the caller prints them and, if nothing failed, prunes.

pub mod cluster;
pub mod metadata;
pub mod object;
pub mod prune;
pub mod selector;

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use applyset_merge::Value;
use applyset_merge::value::go_quote;
use futures::StreamExt;
use kube::core::{ApiResource, GroupVersionKind};

pub use cluster::{ApiStatus, Cluster, ConnectOptions, Error, Mapping, PatchType, Result, WriteParams};
use metadata::ComputedPatch;
use object::{LAST_APPLIED, PART_OF_LABEL, display_name, last_applied, meta_str};

use crate::manifest::{self, LoadedObject, Source};

/// An object this run created, patched or left unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct Visited {
    pub api_resource: ApiResource,
    pub namespaced: bool,
    pub namespace: Option<String>,
    pub name: String,
    /// Empty for an object only created by `--dry-run=client`.
    pub uid: String,
}

/// `--dry-run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DryRun {
    #[default]
    None,
    Client,
    Server,
}

impl DryRun {
    /// The suffix kubectl appends to each output line.
    pub fn suffix(self) -> &'static str {
        match self {
            DryRun::None => "",
            DryRun::Client => " (dry run)",
            DryRun::Server => " (server dry run)",
        }
    }
}

/// How a run applies.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    pub dry_run: DryRun,
    /// Delete and re-create an object whose patch fails with Conflict or Invalid.
    pub force: bool,
    pub field_manager: String,
    /// `Strict` (kubectl's default), `Warn` or `Ignore`.
    pub field_validation: String,
    /// `-n` when given explicitly.
    pub namespace: Option<String>,
    /// The namespace for objects without one when `namespace` is not given (instead of the
    /// kubeconfig context's); unlike `namespace`, objects may name another.
    pub default_namespace: Option<String>,
    /// Objects in flight at once.
    pub concurrency: usize,
    /// Value of the `applyset.kubernetes.io/part-of` label to add to every object.
    pub applyset_label: Option<String>,
    /// How long to wait for an applied CRD to become `Established`.
    pub crd_timeout: Duration,
    /// How long `--force` waits for a deleted object to disappear.
    pub force_timeout: Duration,
    /// Keep the patch, live object and result of each object (for `diff`).
    pub keep_results: bool,
    /// Removes parts of each computed patch before it is sent (fields other controllers own).
    pub patch_filter: Option<PatchFilter>,
    /// Whether an object that another ApplySet's `part-of` label claims is taken over.
    pub ownership: Ownership,
}

/// What to do with an object whose live `applyset.kubernetes.io/part-of` label names another
/// ApplySet than [`ApplyOptions::applyset_label`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ownership {
    /// kubectl's behaviour: the apply relabels it.
    #[default]
    Adopt,
    /// The controller's: the object fails with [`ObjectError::conflict_with`] set, unless its
    /// manifest carries [`TAKE_OWNERSHIP_ANNOTATION`]` = "true"`. Two ApplySets that list the
    /// same object would otherwise take it from each other at every interval, and the one
    /// that stops listing it would delete it while the other still declares it.
    RefuseOtherSets,
}

/// In a manifest: this object may be taken from another ApplySet (a deliberate move).
pub const TAKE_OWNERSHIP_ANNOTATION: &str = "applyset.dev/take-ownership";

/// Called with (manifest, live object, computed patch) for every object that exists; may
/// remove parts of the patch. An emptied patch sends nothing.
#[derive(Clone)]
pub struct PatchFilter(pub std::sync::Arc<PatchFilterFn>);

/// (manifest, live object, computed patch) → the patch with parts removed.
pub type PatchFilterFn = dyn Fn(&Value, &Value, &mut Value) + Send + Sync;

impl std::fmt::Debug for PatchFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PatchFilter")
    }
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            dry_run: DryRun::None,
            force: false,
            field_manager: "kubectl-client-side-apply".into(),
            field_validation: "Strict".into(),
            namespace: None,
            default_namespace: None,
            concurrency: 16,
            applyset_label: None,
            crd_timeout: Duration::from_secs(60),
            force_timeout: Duration::from_secs(60),
            keep_results: false,
            patch_filter: None,
            ownership: Ownership::Adopt,
        }
    }
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Created,
    Configured,
    Unchanged,
}

impl Verb {
    pub fn word(self) -> &'static str {
        match self {
            Verb::Created => "created",
            Verb::Configured => "configured",
            Verb::Unchanged => "unchanged",
        }
    }
}

/// A failure of one object, worded as kubectl words it (before its error printer).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectError {
    pub message: String,
    /// The apiserver's status, when the failure is one.
    pub status: Option<ApiStatus>,
    /// Object bodies the message quotes, as kubectl's messages do (the patch; the original,
    /// modified and current documents). They may hold Secret values: the controller renders
    /// the error without them ([`ObjectError::render_without_bodies`]).
    pub bodies: Vec<String>,
    /// Set when the object belongs to another ApplySet ([`Ownership::RefuseOtherSets`]): that
    /// set's ID.
    pub conflict_with: Option<String>,
    /// The live object's last-applied annotation is not a JSON object, so no patch can be
    /// computed (kubectl fails the same way, for good, until the annotation is fixed).
    pub unusable_last_applied: bool,
}

/// What replaces a quoted object body in [`ObjectError::render_without_bodies`].
pub const BODY_OMITTED: &str = "<object content not shown>";

impl ObjectError {
    fn plain(message: impl Into<String>) -> ObjectError {
        ObjectError { message: message.into(), ..ObjectError::default() }
    }

    fn from_error(error: &Error) -> ObjectError {
        ObjectError { message: error.to_string(), status: error.status().cloned(), ..ObjectError::default() }
    }

    /// Records bodies that the message (or a wrapping added later) quotes.
    fn quoting(mut self, bodies: impl IntoIterator<Item = String>) -> ObjectError {
        self.bodies.extend(
            bodies.into_iter().map(|body| body.trim_end_matches('\n').to_owned()).filter(|body| !body.is_empty()),
        );
        self
    }

    /// [`ObjectError::render`] with every quoted object body replaced by [`BODY_OMITTED`]: what
    /// the controller writes to status, Events and logs, which more people read than the
    /// terminal of whoever ran `kubectl apply`.
    pub fn render_without_bodies(&self) -> String {
        let mut text = self.render();
        // Longest first, so that a body quoted inside another is not cut in half.
        let mut bodies: Vec<&String> = self.bodies.iter().collect();
        bodies.sort_by_key(|body| std::cmp::Reverse(body.len()));
        for body in bodies {
            text = text.replace(body.as_str(), BODY_OMITTED);
        }
        text
    }

    /// kubectl's `AddSourceToErr`-style wrapping: `error when <verb> "<source>": <err>`,
    /// keeping the status (whose message is rewritten, as kubectl rewrites it).
    fn wrap(verb: &str, source: &str, error: Error) -> ObjectError {
        let message = format!("error when {verb} {}: {error}", go_quote(source));
        match error {
            Error::Api(mut status) => {
                status.message = message.clone();
                ObjectError { message, status: Some(*status), ..ObjectError::default() }
            }
            _ => ObjectError::plain(message),
        }
    }

    fn rewrap(self, verb: &str, source: &str) -> ObjectError {
        let message = format!("error when {verb} {}: {}", go_quote(source), self.message);
        let status = self.status.map(|mut s| {
            s.message = message.clone();
            s
        });
        ObjectError { message, status, ..self }
    }

    /// kubectl's error printer (`cmdutil.CheckErr`) for a run that failed with this error
    /// alone: Invalid errors as `The <Kind> "<name>" is invalid: <causes>` (or `The request is
    /// invalid: …`), other API errors as `Error from server (<Reason>): <message>`, anything else
    /// as `error: <message>`.
    pub fn render(&self) -> String {
        let Some(status) = &self.status else {
            return if self.message.starts_with("error: ") {
                self.message.clone()
            } else {
                format!("error: {}", self.message)
            };
        };
        if status.is_invalid() {
            let has_details =
                !status.details_kind.is_empty() || !status.details_name.is_empty() || !status.causes.is_empty();
            if !has_details {
                return "The request is invalid".to_owned();
            }
            let head = if !status.details_kind.is_empty() || !status.details_name.is_empty() {
                format!("The {} {} is invalid", status.details_kind, go_quote(&status.details_name))
            } else {
                "The request is invalid".to_owned()
            };
            let causes: Vec<String> = status
                .causes
                .iter()
                .map(|(field, message)| if field.is_empty() { message.clone() } else { format!("{field}: {message}") })
                .collect();
            return match causes.len() {
                0 => head,
                1 => format!("{head}: {}", causes[0]),
                _ => format!("{head}: \n* {}", causes.join("\n* ")),
            };
        }
        self.render_in_list()
    }

    /// kubectl's rendering of one error among several (`MultipleErrors`): API errors as
    /// `Error from server (<Reason>): <message>`, anything else as its message.
    pub fn render_in_list(&self) -> String {
        match &self.status {
            None => self.message.clone(),
            Some(status) if status.code == 401 || status.reason == "Unauthorized" => {
                format!("error: You must be logged in to the server ({})", self.message)
            }
            Some(status) if status.reason.is_empty() => format!("Error from server: {}", self.message),
            Some(status) => format!("Error from server ({}): {}", status.reason, self.message),
        }
    }
}

/// The failures of a run as kubectl prints them: a lone error with [`ObjectError::render`],
/// several with [`ObjectError::render_in_list`], one after the other.
pub fn render_errors<'a>(errors: impl IntoIterator<Item = &'a ObjectError>) -> Vec<String> {
    let errors: Vec<&ObjectError> = errors.into_iter().collect();
    match errors.as_slice() {
        [] => Vec::new(),
        [only] => vec![only.render()],
        many => many.iter().map(|e| e.render_in_list()).collect(),
    }
}

/// The outcome of one input object.
#[derive(Debug, Clone)]
pub struct ObjectReport {
    pub source: Source,
    /// `deployment.apps/web` (empty when the object has no usable kind or name).
    pub name: String,
    pub result: std::result::Result<Verb, ObjectError>,
    /// Lines for stderr, in kubectl's words (missing annotation, fallback warnings…).
    pub warnings: Vec<String>,
    /// With [`ApplyOptions::keep_results`]: what was computed.
    pub details: Option<Box<Details>>,
}

/// The computation behind a report, kept for `diff`.
#[derive(Debug, Clone, Default)]
pub struct Details {
    pub live: Option<Value>,
    pub patch: Option<Value>,
    pub patch_type: Option<PatchType>,
    pub result: Option<Value>,
}

/// A whole run.
#[derive(Debug, Clone, Default)]
pub struct ApplyReport {
    /// One per input object, in input order.
    pub objects: Vec<ObjectReport>,
    /// Objects created, patched or unchanged (for prune).
    pub visited: Vec<Visited>,
    /// Namespaces of all namespaced input objects, plus an explicit `-n` (for legacy prune).
    pub namespaces_visited: BTreeSet<String>,
}

impl ApplyReport {
    pub fn failed(&self) -> bool {
        self.objects.iter().any(|o| o.result.is_err())
    }
}

/// A failure of the run as a whole: nothing (more) was applied.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Fatal {
    #[error(transparent)]
    Cluster(#[from] Error),
    /// The same object given more than once.
    #[error("{}", .0.join("\n"))]
    Duplicates(Vec<String>),
    #[error("no objects passed to apply")]
    NoObjects,
}

/// An object ready to be applied.
#[derive(Debug, Clone)]
struct Prepared {
    index: usize,
    source: Source,
    object: Value,
    gvk: GroupVersionKind,
    /// `None` while only predicted from a CRD of the same input.
    mapping: Option<Mapping>,
    /// The mapping as known before applying (discovery, or the input's CRD).
    known: Mapping,
    namespace: Option<String>,
    name: String,
}

impl Prepared {
    fn stage(&self) -> usize {
        match (self.gvk.group.as_str(), self.gvk.kind.as_str()) {
            ("", "Namespace") => 0,
            ("apiextensions.k8s.io", "CustomResourceDefinition") => 1,
            _ => 2,
        }
    }

    fn display(&self) -> String {
        display_name(&self.gvk.kind, &self.gvk.group, &self.name)
    }

    fn report(&self, result: std::result::Result<Verb, ObjectError>, warnings: Vec<String>) -> ObjectReport {
        ObjectReport { source: self.source.clone(), name: self.display(), result, warnings, details: None }
    }
}

fn source_text(source: &Source) -> String {
    source.path.display().to_string()
}

/// `apps/v1` → (`apps`, `v1`); `v1` → (``, `v1`).
fn split_api_version(api_version: &str) -> (String, String) {
    match api_version.split_once('/') {
        Some((group, version)) => (group.to_owned(), version.to_owned()),
        None => (String::new(), api_version.to_owned()),
    }
}

/// Mappings of the kinds defined by CRDs in the input, as discovery will show them once the
/// CRDs exist.
fn predicted_mappings(objects: &[LoadedObject]) -> HashMap<(String, String, String), Mapping> {
    let mut out = HashMap::new();
    for loaded in objects {
        let object = &loaded.object;
        let Some(root) = object.as_object() else { continue };
        if root.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition")
            || !root.get("apiVersion").and_then(Value::as_str).is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
        {
            continue;
        }
        let Some(spec) = root.get("spec").and_then(Value::as_object) else { continue };
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
        let group = text(spec.get("group"));
        let names = spec.get("names").and_then(Value::as_object);
        let kind = text(names.and_then(|n| n.get("kind")));
        let plural = text(names.and_then(|n| n.get("plural")));
        let namespaced = text(spec.get("scope")) != "Cluster";
        if group.is_empty() || kind.is_empty() || plural.is_empty() {
            continue;
        }
        let versions: Vec<String> = match spec.get("versions").and_then(Value::as_array) {
            Some(versions) => versions.iter().filter_map(|v| v.as_object()).map(|v| text(v.get("name"))).collect(),
            None => vec![text(spec.get("version"))],
        };
        for version in versions.into_iter().filter(|v| !v.is_empty()) {
            let gvk = GroupVersionKind::gvk(&group, &version, &kind);
            let resource = ApiResource::from_gvk_with_plural(&gvk, &plural);
            out.insert((group.clone(), version, kind.clone()), Mapping { resource, namespaced });
        }
    }
    out
}

/// Step 1: mapping, namespaces, labels, duplicates. Per-object failures become reports;
/// fatal problems (unreachable cluster, duplicates) end the run before anything is written.
async fn prepare(
    cluster: &Cluster,
    loaded: Vec<LoadedObject>,
    options: &ApplyOptions,
    report: &mut ApplyReport,
) -> std::result::Result<Vec<std::result::Result<Prepared, ObjectReport>>, Fatal> {
    let predicted = predicted_mappings(&loaded);
    let effective_namespace = options
        .namespace
        .clone()
        .or_else(|| options.default_namespace.clone())
        .unwrap_or_else(|| cluster.default_namespace().to_owned());
    if let Some(namespace) = &options.namespace {
        report.namespaces_visited.insert(namespace.clone());
    }
    let mut items = Vec::with_capacity(loaded.len());
    for (index, LoadedObject { source, mut object }) in loaded.into_iter().enumerate() {
        let text = |field: &str| {
            object.as_object().and_then(|o| o.get(field)).and_then(Value::as_str).unwrap_or("").to_owned()
        };
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        let (group, version) = split_api_version(&api_version);
        let gvk = GroupVersionKind::gvk(&group, &version, &kind);
        let raw_name = meta_str(&object, "name").unwrap_or("").to_owned();
        let raw_namespace = meta_str(&object, "namespace").unwrap_or("").to_owned();
        let fail = |message: String, name: String| ObjectReport {
            source: source.clone(),
            name: if name.is_empty() { String::new() } else { display_name(&kind, &group, &name) },
            result: Err(ObjectError::plain(message)),
            warnings: Vec::new(),
            details: None,
        };

        let (mapping, prediction) = match cluster.mapping(&gvk).await {
            Ok(mapping) => (Some(mapping.clone()), mapping),
            Err(Error::NoMatch { .. }) => match predicted.get(&(group.clone(), version.clone(), kind.clone())) {
                Some(mapping) => (None, mapping.clone()),
                None => {
                    let message = format!(
                        "resource mapping not found for name: {} namespace: {} from {}: no matches for kind {} in version {}\nensure CRDs are installed first",
                        go_quote(&raw_name),
                        go_quote(&raw_namespace),
                        go_quote(&source_text(&source)),
                        go_quote(&kind),
                        go_quote(&api_version)
                    );
                    items.push(Err(fail(message, raw_name)));
                    continue;
                }
            },
            Err(other) => return Err(Fatal::Cluster(other)),
        };

        let namespace = if prediction.namespaced {
            if raw_namespace.is_empty() {
                object::set_namespace(&mut object, &effective_namespace);
                Some(effective_namespace.clone())
            } else {
                if let Some(explicit) = &options.namespace
                    && *explicit != raw_namespace
                {
                    let message = format!(
                        "the namespace from the provided object {} does not match the namespace {}. You must pass '--namespace={}' to perform this operation.",
                        go_quote(&raw_namespace),
                        go_quote(explicit),
                        raw_namespace
                    );
                    items.push(Err(fail(message, raw_name)));
                    continue;
                }
                Some(raw_namespace.clone())
            }
        } else {
            object::remove_namespace(&mut object);
            None
        };
        if let Some(namespace) = &namespace {
            report.namespaces_visited.insert(namespace.clone());
        }

        if raw_name.is_empty() {
            let message = match meta_str(&object, "generateName") {
                Some(generate) if !generate.is_empty() => {
                    format!("from {generate}: cannot use generate name with apply")
                }
                _ => format!(
                    "error when retrieving current configuration of {}: resource name may not be empty",
                    go_quote(&source_text(&source))
                ),
            };
            items.push(Err(fail(message, String::new())));
            continue;
        }
        if let Some(label) = &options.applyset_label
            && let Err(message) = object::add_label(&mut object, object::PART_OF_LABEL, label)
        {
            items.push(Err(fail(message, raw_name)));
            continue;
        }
        items.push(Ok(Prepared { index, source, object, gvk, mapping, known: prediction, namespace, name: raw_name }));
    }

    let loaded_again: Vec<LoadedObject> = items
        .iter()
        .filter_map(|item| item.as_ref().ok())
        .map(|p| LoadedObject { source: p.source.clone(), object: p.object.clone() })
        .collect();
    let duplicates = manifest::find_duplicates(&loaded_again);
    if !duplicates.is_empty() {
        return Err(Fatal::Duplicates(duplicates.iter().map(ToString::to_string).collect()));
    }
    Ok(items)
}

/// What a run will apply, after mapping, namespace defaulting and labelling (no writes yet).
#[derive(Debug, Clone)]
pub struct Plan {
    items: Vec<std::result::Result<Prepared, ObjectReport>>,
    report: ApplyReport,
}

/// An object a plan will apply, as an ApplySet parent records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub api_resource: ApiResource,
    pub namespaced: bool,
    pub namespace: Option<String>,
}

impl Plan {
    /// The objects that will be applied (those that failed preparation are left out).
    pub fn members(&self) -> Vec<Member> {
        self.items
            .iter()
            .filter_map(|item| item.as_ref().ok())
            .map(|p| Member {
                api_resource: p.known.resource.clone(),
                namespaced: p.known.namespaced,
                namespace: p.namespace.clone(),
            })
            .collect()
    }

    /// Whether some object already failed (mapping, namespace, label…).
    pub fn has_failures(&self) -> bool {
        self.items.iter().any(|item| item.is_err())
    }
}

/// Step 1 of [`apply`]: reads discovery and prepares every object. Fails as a whole only when
/// the cluster cannot be read or an object appears twice.
pub async fn plan(
    cluster: &Cluster,
    loaded: Vec<LoadedObject>,
    options: &ApplyOptions,
) -> std::result::Result<Plan, Fatal> {
    if loaded.is_empty() {
        return Err(Fatal::NoObjects);
    }
    let mut report = ApplyReport::default();
    let items = prepare(cluster, loaded, options, &mut report).await?;
    Ok(Plan { items, report })
}

/// Applies `loaded` as `kubectl apply -f` would; see the module documentation.
pub async fn apply(
    cluster: &Cluster,
    loaded: Vec<LoadedObject>,
    options: &ApplyOptions,
) -> std::result::Result<ApplyReport, Fatal> {
    let plan = plan(cluster, loaded, options).await?;
    Ok(execute(cluster, plan, options).await)
}

/// Steps 2–4 of [`apply`]: the staged, concurrent writes of a [`Plan`].
pub async fn execute(cluster: &Cluster, plan: Plan, options: &ApplyOptions) -> ApplyReport {
    let Plan { items, mut report } = plan;
    let count = items.len();
    let mut slots: Vec<Option<ObjectReport>> = vec![None; count];
    let mut stages: [Vec<Prepared>; 3] = Default::default();
    for (index, item) in items.into_iter().enumerate() {
        match item {
            Ok(prepared) => stages[prepared.stage()].push(prepared),
            Err(failure) => slots[index] = Some(failure),
        }
    }

    let [namespaces, crds, rest] = stages;
    run_stage(cluster, options, namespaces, &mut slots, &mut report).await;

    let crd_names: Vec<String> = crds.iter().map(|c| c.name.clone()).collect();
    let crd_indexes: Vec<usize> = crds.iter().map(|c| c.index).collect();
    run_stage(cluster, options, crds, &mut slots, &mut report).await;

    let mut rest = rest;
    if options.dry_run == DryRun::None && !crd_names.is_empty() {
        let applied: Vec<&String> = crd_names
            .iter()
            .zip(&crd_indexes)
            .filter(|(_, index)| slots[**index].as_ref().is_some_and(|r| r.result.is_ok()))
            .map(|(name, _)| name)
            .collect();
        let mut warnings = wait_for_crds(cluster, &applied, options.crd_timeout).await;
        let needs_refresh = rest.iter().any(|p| p.mapping.is_none());
        if needs_refresh {
            refresh_until_known(cluster, &rest, options.crd_timeout).await;
        }
        if let Some(first) = crd_indexes.first().and_then(|i| slots[*i].as_mut()) {
            first.warnings.append(&mut warnings);
        }
    }
    // Kinds known only from a CRD of this input must now resolve for real.
    let mut unresolved = Vec::new();
    for mut item in std::mem::take(&mut rest) {
        if item.mapping.is_none() {
            match cluster.mapping(&item.gvk).await {
                Ok(mapping) => item.mapping = Some(mapping),
                Err(_) => {
                    let message = format!(
                        "resource mapping not found for name: {} namespace: {} from {}: no matches for kind {} in version {}\nensure CRDs are installed first",
                        go_quote(&item.name),
                        go_quote(item.namespace.as_deref().unwrap_or("")),
                        go_quote(&source_text(&item.source)),
                        go_quote(&item.gvk.kind),
                        go_quote(&item.gvk.api_version())
                    );
                    unresolved.push((item.index, item.report(Err(ObjectError::plain(message)), Vec::new())));
                    continue;
                }
            }
        }
        rest.push(item);
    }
    for (index, failure) in unresolved {
        slots[index] = Some(failure);
    }
    run_stage(cluster, options, rest, &mut slots, &mut report).await;

    report.objects = slots.into_iter().map(|slot| slot.expect("every object has a report")).collect();
    report
}

/// Polls the CRDs until each has `Established=True`; returns warnings for those that did not
/// in time.
async fn wait_for_crds(cluster: &Cluster, names: &[&String], timeout: Duration) -> Vec<String> {
    let gvk = GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    let Ok(mapping) = cluster.mapping(&gvk).await else { return Vec::new() };
    let deadline = tokio::time::Instant::now() + timeout;
    let waits = names.iter().map(|name| {
        let mapping = mapping.clone();
        async move {
            loop {
                if let Ok(crd) = cluster.get(&mapping, None, name).await
                    && established(&crd)
                {
                    return None;
                }
                if tokio::time::Instant::now() >= deadline {
                    return Some(format!(
                        "Warning: customresourcedefinition.apiextensions.k8s.io/{name} is not Established after {timeout:?}; its custom resources may fail"
                    ));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    });
    futures::future::join_all(waits).await.into_iter().flatten().collect()
}

fn established(crd: &Value) -> bool {
    crd.as_object()
        .and_then(|o| o.get("status"))
        .and_then(Value::as_object)
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions.iter().filter_map(Value::as_object).any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Established")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// Refreshes discovery until every predicted kind of `items` is served (discovery can lag a
/// CRD's Established condition briefly), or the timeout passes.
async fn refresh_until_known(cluster: &Cluster, items: &[Prepared], timeout: Duration) {
    let deadline = tokio::time::Instant::now() + timeout.min(Duration::from_secs(30));
    loop {
        if cluster.refresh_discovery().await.is_err() {
            return;
        }
        let mut all_known = true;
        for item in items.iter().filter(|p| p.mapping.is_none()) {
            if !cluster.knows(&item.gvk).await.unwrap_or(false) {
                all_known = false;
                break;
            }
        }
        if all_known || tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// What the stage's LISTs said about an object.
enum Live {
    /// Listed: present (with its state) or absent.
    Listed(Option<Value>),
    /// The LIST failed (e.g. no list permission): GET the object.
    Unknown,
}

type ListKey = (String, String, String, Option<String>);

fn list_key(mapping: &Mapping, namespace: &Option<String>) -> ListKey {
    let r = &mapping.resource;
    (r.group.clone(), r.version.clone(), r.plural.clone(), if mapping.namespaced { namespace.clone() } else { None })
}

/// Applies one stage: LIST per (resource, namespace), then every object concurrently.
async fn run_stage(
    cluster: &Cluster,
    options: &ApplyOptions,
    items: Vec<Prepared>,
    slots: &mut [Option<ObjectReport>],
    report: &mut ApplyReport,
) {
    if items.is_empty() {
        return;
    }
    let concurrency = options.concurrency.max(1);
    let mut groups: HashMap<ListKey, (Mapping, Option<String>)> = HashMap::new();
    for item in &items {
        let mapping = item.mapping.as_ref().expect("resolved before its stage");
        groups.entry(list_key(mapping, &item.namespace)).or_insert_with(|| (mapping.clone(), item.namespace.clone()));
    }
    let lists: HashMap<ListKey, Option<HashMap<String, Value>>> = futures::stream::iter(groups)
        .map(|(key, (mapping, namespace))| async move {
            let namespace = if mapping.namespaced { namespace } else { None };
            let listed = cluster.list(&mapping, namespace.as_deref(), None).await.ok().map(|items| {
                items
                    .into_iter()
                    .filter_map(|item| meta_str(&item, "name").map(str::to_owned).map(|name| (name, item)))
                    .collect::<HashMap<_, _>>()
            });
            (key, listed)
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let mut lists = lists;

    let work: Vec<(Prepared, Live)> = items
        .into_iter()
        .map(|item| {
            let key = list_key(item.mapping.as_ref().expect("resolved"), &item.namespace);
            let live = match lists.get_mut(&key) {
                Some(Some(found)) => Live::Listed(found.remove(&item.name)),
                _ => Live::Unknown,
            };
            (item, live)
        })
        .collect();
    let outcomes: Vec<(usize, ObjectReport, Option<Visited>)> = futures::stream::iter(work)
        .map(|(item, live)| async move {
            let span = tracing::debug_span!("apply_object", object = %item.display(), source = %item.source);
            let applied = tracing::Instrument::instrument(apply_one(cluster, options, &item, live), span);
            let ((mut object_report, visited), server_warnings) = cluster::collecting_warnings(applied).await;
            // The missing-annotation warning comes before the patch's server warnings.
            object_report.warnings.extend(server_warnings);
            (item.index, object_report, visited)
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let mut outcomes = outcomes;
    outcomes.sort_by_key(|(index, _, _)| *index);
    for (index, object_report, visited) in outcomes {
        slots[index] = Some(object_report);
        report.visited.extend(visited);
    }
}

fn missing_annotation_warning(plural: &str, name: &str) -> String {
    format!(
        "Warning: resource {plural}/{name} is missing the {LAST_APPLIED} annotation which is required by kubectl apply. kubectl apply should only be used on resources created declaratively by either kubectl create --save-config or kubectl apply. The missing annotation will be patched automatically."
    )
}

fn info_text(item: &Prepared, mapping: &Mapping) -> String {
    let r = &mapping.resource;
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

fn uid_of(object: &Value) -> String {
    meta_str(object, "uid").unwrap_or("").to_owned()
}

/// The per-object algorithm (spec §10.3) given what the LIST said.
async fn apply_one(
    cluster: &Cluster,
    options: &ApplyOptions,
    item: &Prepared,
    live: Live,
) -> (ObjectReport, Option<Visited>) {
    let mapping = item.mapping.as_ref().expect("resolved before apply");
    let source = source_text(&item.source);
    let namespace = item.namespace.as_deref();
    let mut warnings = Vec::new();
    let mut details = Details::default();
    let params = WriteParams {
        field_manager: options.field_manager.clone(),
        field_validation: options.field_validation.clone(),
        server_dry_run: options.dry_run == DryRun::Server,
    };
    let visited = |object: &Value| Visited {
        api_resource: mapping.resource.clone(),
        namespaced: mapping.namespaced,
        namespace: item.namespace.clone(),
        name: item.name.clone(),
        uid: uid_of(object),
    };
    let finish = |result: std::result::Result<Verb, ObjectError>, warnings: Vec<String>, details: Details| {
        let mut report = item.report(result, warnings);
        if options.keep_results {
            report.details = Some(Box::new(details));
        }
        report
    };

    let (_, modified) = object::modified_configuration(&item.object);
    let size = object::annotations_size(&modified);
    if size > object::ANNOTATIONS_SIZE_LIMIT {
        let message = format!(
            "{} from {} cannot be applied client-side: its annotations would total {size} bytes, over the apiserver's limit of {} bytes (metadata.annotations: Too long: may not be more than {} bytes), because the {LAST_APPLIED} annotation holds a copy of the whole object; nothing was sent",
            item.display(),
            go_quote(&source),
            object::ANNOTATIONS_SIZE_LIMIT,
            object::ANNOTATIONS_SIZE_LIMIT
        );
        return (finish(Err(ObjectError::plain(message)), warnings, details), None);
    }

    let live = match live {
        Live::Listed(found) => found,
        Live::Unknown => match cluster.get(mapping, namespace, &item.name).await {
            Ok(found) => Some(found),
            Err(e) if e.is_not_found() => None,
            Err(e) => {
                let error = ObjectError::wrap(
                    &format!("retrieving current configuration of:\n{}\nfrom server for:", info_text(item, mapping)),
                    &source,
                    e,
                );
                return (finish(Err(error), warnings, details), None);
            }
        },
    };

    let mut current = match live {
        Some(current) => current,
        None => {
            let body = object::create_body(&modified);
            let created = match options.dry_run {
                DryRun::Client => Ok(body.clone()),
                _ => cluster.create(mapping, namespace, &body, &params).await,
            };
            match created {
                Ok(created) => {
                    details.result = Some(created.clone());
                    let v = visited(&created);
                    return (finish(Ok(Verb::Created), warnings, details), Some(v));
                }
                Err(e) if e.status().is_some_and(ApiStatus::is_already_exists) => {
                    // Created by someone else since the LIST: patch it like kubectl would have.
                    match cluster.get(mapping, namespace, &item.name).await {
                        Ok(found) => found,
                        Err(_) => {
                            return (finish(Err(ObjectError::wrap("creating", &source, e)), warnings, details), None);
                        }
                    }
                }
                Err(e) => return (finish(Err(ObjectError::wrap("creating", &source, e)), warnings, details), None),
            }
        }
    };

    if let Some(error) = ownership_conflict(options, item, &current) {
        // Not visited: the object is not this set's, so it is never recorded or pruned by it.
        return (finish(Err(error), warnings, details), None);
    }
    let visit = visited(&current);
    if last_applied(&current).is_none() {
        warnings.push(missing_annotation_warning(&mapping.resource.plural, &item.name));
    }
    details.live = Some(current.clone());

    let mut retries = 0;
    loop {
        let mut computed = match compute(cluster, item, &modified, &current, &mut warnings).await {
            Ok(computed) => computed,
            Err(error) => {
                let error =
                    error.rewrap(&format!("applying patch:\n\nto:\n{}\nfor:", info_text(item, mapping)), &source);
                return (finish(Err(error), warnings, details), Some(visit));
            }
        };
        if let Some(filter) = &options.patch_filter {
            (filter.0)(&item.object, &current, &mut computed.patch);
        }
        details.patch = Some(computed.patch.clone());
        details.patch_type = Some(computed.engine.patch_type());
        if computed.patch.as_object().is_some_and(|p| p.is_empty()) {
            details.result = Some(current.clone());
            return (finish(Ok(Verb::Unchanged), warnings, details), Some(visit));
        }
        let patched = match options.dry_run {
            DryRun::Client => computed.engine.apply(&current, &computed.patch).map_err(|e| Error::Other(e.to_string())),
            _ => {
                cluster
                    .patch(mapping, namespace, &item.name, computed.engine.patch_type(), &computed.patch, &params)
                    .await
            }
        };
        match patched {
            Ok(result) => {
                if object::meta_str(&result, "deletionTimestamp").is_some() {
                    warnings.push(format!(
                        "Warning: Detected changes to resource {} which is currently being deleted.",
                        item.name
                    ));
                }
                details.result = Some(result);
                return (finish(Ok(Verb::Configured), warnings, details), Some(visit));
            }
            Err(e) if e.is_conflict() && retries < MAX_PATCH_RETRIES => {
                retries += 1;
                if retries > 1 {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                match cluster.get(mapping, namespace, &item.name).await {
                    Ok(fresh) => current = fresh,
                    Err(get_error) => {
                        let patch = computed.patch.to_json_string();
                        let error = ObjectError::wrap(
                            &format!("applying patch:\n{patch}\nto:\n{}\nfor:", info_text(item, mapping)),
                            &source,
                            get_error,
                        )
                        .quoting([patch]);
                        return (finish(Err(error), warnings, details), Some(visit));
                    }
                }
            }
            Err(e) if options.force && (e.is_conflict() || e.is_invalid()) => {
                return match delete_and_create(cluster, options, item, mapping, &modified, &current, &params).await {
                    Ok(created) => {
                        details.result = Some(created.clone());
                        (finish(Ok(Verb::Configured), warnings, details), Some(visited(&created)))
                    }
                    Err(error) => {
                        let patch = computed.patch.to_json_string();
                        let error = error
                            .rewrap(
                                &format!("applying patch:\n{patch}\nto:\n{}\nfor:", info_text(item, mapping)),
                                &source,
                            )
                            .quoting([patch]);
                        (finish(Err(error), warnings, details), Some(visit))
                    }
                };
            }
            Err(e) => {
                let patch = computed.patch.to_json_string();
                let error = ObjectError::wrap("patching", &source, e)
                    .rewrap(&format!("applying patch:\n{patch}\nto:\n{}\nfor:", info_text(item, mapping)), &source)
                    .quoting([patch]);
                return (finish(Err(error), warnings, details), Some(visit));
            }
        }
    }
}

/// [`Ownership::RefuseOtherSets`]: the error for a live object another ApplySet claims.
fn ownership_conflict(options: &ApplyOptions, item: &Prepared, current: &Value) -> Option<ObjectError> {
    let own = options.applyset_label.as_deref().filter(|_| options.ownership == Ownership::RefuseOtherSets)?;
    let labels = current.as_object()?.get("metadata")?.as_object()?.get("labels")?.as_object()?;
    let other = labels.get(PART_OF_LABEL)?.as_str().filter(|other| !other.is_empty() && *other != own)?;
    let allowed = object::annotation(&item.object, TAKE_OWNERSHIP_ANNOTATION) == Some("true");
    if allowed {
        return None;
    }
    Some(ObjectError {
        message: format!(
            "{} belongs to another ApplySet ({PART_OF_LABEL}={other}); it was not changed. Remove it from one of the two sets, or set the annotation {TAKE_OWNERSHIP_ANNOTATION}: \"true\" on it in git to move it to this one",
            item.display()
        ),
        conflict_with: Some(other.to_owned()),
        ..ObjectError::default()
    })
}

/// kubectl retries a conflicting patch 5 more times.
const MAX_PATCH_RETRIES: usize = 5;

async fn compute(
    cluster: &Cluster,
    item: &Prepared,
    modified: &Value,
    current: &Value,
    warnings: &mut Vec<String>,
) -> std::result::Result<ComputedPatch, ObjectError> {
    let source = source_text(&item.source);
    let original = match last_applied(current) {
        None | Some("") => Value::Object(Default::default()),
        Some(text) => match Value::from_json_str(text) {
            Ok(value) => value,
            Err(_) => {
                let (modified, current) = (modified.to_json_string(), current.to_json_string());
                let error = ObjectError::plain(format!(
                    "error when creating patch with:\noriginal:\n{text}\nmodified:\n{modified}\ncurrent:\n{current}\nfor: {}: invalid JSON document",
                    go_quote(&source)
                ))
                .quoting([text.to_owned(), modified, current]);
                return Err(ObjectError { unusable_last_applied: true, ..error });
            }
        },
    };
    let unusable_last_applied = original.as_object().is_none();
    metadata::compute_patch(cluster, &item.gvk, &original, modified, current, warnings).await.map_err(|e| {
        let error = ObjectError::plain(format!("error when {} {}: {}", e.context, go_quote(&source), e.error))
            .quoting(e.bodies);
        ObjectError { unusable_last_applied, ..error }
    })
}

/// `--force`: delete (background propagation), wait until gone, create `modified` (nulls kept);
/// if that fails, try to put the old object back.
async fn delete_and_create(
    cluster: &Cluster,
    options: &ApplyOptions,
    item: &Prepared,
    mapping: &Mapping,
    modified: &Value,
    current: &Value,
    params: &WriteParams,
) -> std::result::Result<Value, ObjectError> {
    let namespace = item.namespace.as_deref();
    cluster
        .delete(mapping, namespace, &item.name, "Background", params.server_dry_run)
        .await
        .map_err(|e| ObjectError::from_error(&e))?;
    let deadline = tokio::time::Instant::now() + options.force_timeout;
    loop {
        match cluster.get(mapping, namespace, &item.name).await {
            Err(e) if e.is_not_found() => break,
            Err(e) => return Err(ObjectError::from_error(&e)),
            Ok(_) if tokio::time::Instant::now() >= deadline => {
                return Err(ObjectError::plain(format!(
                    "timed out after {:?} waiting for {} to be deleted",
                    options.force_timeout,
                    item.display()
                )));
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    match cluster.create(mapping, namespace, &object::recreate_body(modified), params).await {
        Ok(created) => Ok(created),
        Err(e) => match cluster.create(mapping, namespace, &restore_body(current), params).await {
            Ok(_) => Err(ObjectError::from_error(&e)),
            Err(restore) => Err(ObjectError::plain(format!(
                "An error occurred force-replacing the existing object with the newly provided one:\n\n{e}.\n\nAdditionally, an error occurred attempting to restore the original object:\n\n{restore}"
            ))),
        },
    }
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
