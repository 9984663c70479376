//! Step 1 of a run, without writes: map each object's kind to its resource through discovery
//! (kinds defined by CRDs of the same input are predicted from those CRDs), default or check
//! its namespace exactly as kubectl does, add the ApplySet label, and refuse the run when an
//! object appears twice.

use std::collections::{BTreeSet, HashMap};

use std::sync::Arc;

use applyset_merge::value::go_quote;
use applyset_merge::{Packed, Value};
use kube::core::{ApiResource, GroupVersionKind};

use super::error::{ErrorCategory, Fatal, ManifestError, ObjectError};
use super::object::{self, display_name, meta_str};
use super::options::{ApplyOptions, Verb};
use super::report::{ApplyReport, ObjectReport};
use crate::causes::with_causes;
use crate::cluster::{Cluster, Error, Mapping};
use crate::manifest::{DuplicateFinder, LoadedObject, Source};

/// An object ready to be applied.
#[derive(Debug, Clone)]
pub(super) struct Prepared {
    pub(super) index: usize,
    pub(super) source: Source,
    /// Packed from the plan to its apply: 20,000 objects as trees would take ten times the
    /// memory while they wait.
    pub(super) object: Packed,
    pub(super) gvk: GroupVersionKind,
    /// `None` while only predicted from a CRD of the same input. Shared by the objects of a
    /// kind (see [`Context::mappings`]).
    pub(super) mapping: Option<Arc<Mapping>>,
    /// The mapping as known before applying (discovery, or the input's CRD).
    pub(super) known: Arc<Mapping>,
    pub(super) namespace: Option<String>,
    pub(super) name: String,
}

impl Prepared {
    /// Namespaces first, then CRDs, then everything else: what a later stage needs exists.
    pub(super) fn stage(&self) -> usize {
        stage_of(&self.gvk.group, &self.gvk.kind)
    }

    pub(super) fn display(&self) -> String {
        display_name(&self.gvk.kind, &self.gvk.group, &self.name)
    }

    pub(super) fn report(&self, result: Result<Verb, ObjectError>, warnings: Vec<String>) -> ObjectReport {
        ObjectReport { source: self.source.clone(), name: self.display(), result, warnings, details: None }
    }

    /// kubectl's message for a kind no discovery knows, after the CRDs of the input were
    /// applied.
    pub(super) fn no_match(&self) -> ObjectError {
        let message = no_match_message(
            &self.name,
            self.namespace.as_deref().unwrap_or(""),
            &self.source,
            &self.gvk.kind,
            &self.gvk.api_version(),
        );
        ObjectError::plain(ErrorCategory::NoMatch, message)
    }
}

/// The stage an object of this kind is applied in: 0 for Namespaces, 1 for CRDs, 2 for the
/// rest (`applyset build` prints objects in this order, as a run applies them).
pub(crate) fn stage_of(group: &str, kind: &str) -> usize {
    match (group, kind) {
        ("", "Namespace") => 0,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => 1,
        _ => 2,
    }
}

/// The path kubectl names an object's source by.
pub(super) fn source_text(source: &Source) -> String {
    crate::manifest::kubectl_source(&source.path)
}

fn no_match_message(name: &str, namespace: &str, source: &Source, kind: &str, api_version: &str) -> String {
    format!(
        "resource mapping not found for name: {} namespace: {} from {}: no matches for kind {} in version {}\nensure CRDs are installed first",
        go_quote(name),
        go_quote(namespace),
        go_quote(&source_text(source)),
        go_quote(kind),
        go_quote(api_version)
    )
}

/// `apps/v1` → (`apps`, `v1`); `v1` → (``, `v1`).
fn split_api_version(api_version: &str) -> (String, String) {
    match api_version.split_once('/') {
        Some((group, version)) => (group.to_owned(), version.to_owned()),
        None => (String::new(), api_version.to_owned()),
    }
}

pub(crate) type Predicted = HashMap<(String, String, String), Mapping>;

/// Per object of a build, in its order: whether its kind is one a CRD of the same build
/// defines (so that, while the cluster does not serve it yet, none of its objects exists), and
/// then the namespace it goes to. A dry run cannot create the CRD: these objects are created.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CrdKinds(pub Vec<(bool, Option<String>)>);

impl CrdKinds {
    pub fn of(objects: &[LoadedObject], own_namespace: &str) -> CrdKinds {
        let predicted = predicted_mappings(objects);
        CrdKinds(objects.iter().map(|o| defined_by_build(&o.object, &predicted, own_namespace)).collect())
    }

    /// Whether the object at `index` is of a kind a CRD of the build defines, and its namespace.
    pub fn get(&self, index: usize) -> Option<&(bool, Option<String>)> {
        self.0.get(index)
    }
}

fn defined_by_build(object: &Value, predicted: &Predicted, own_namespace: &str) -> (bool, Option<String>) {
    let text = |field: &str| object.as_object().and_then(|o| o.get(field)).and_then(Value::as_str).unwrap_or("");
    let api_version = text("apiVersion");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let key = (group.to_owned(), version.to_owned(), text("kind").to_owned());
    match predicted.get(&key) {
        Some(mapping) if mapping.namespaced => {
            let namespace = super::object::meta_str(object, "namespace").filter(|ns| !ns.is_empty());
            (true, Some(namespace.unwrap_or(own_namespace).to_owned()))
        }
        Some(_) => (true, None),
        None => (false, None),
    }
}

/// Mappings of the kinds defined by CRDs in the input, as discovery will show them once the
/// CRDs exist.
pub(crate) fn predicted_mappings(objects: &[LoadedObject]) -> Predicted {
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

/// What [`prepare`] needs for every object of the run.
struct Context<'a> {
    cluster: &'a Cluster,
    options: &'a ApplyOptions,
    predicted: Predicted,
    /// `-n`, else the caller's default, else the kubeconfig context's.
    effective_namespace: String,
    /// The mappings found so far, by kind: one copy per kind, not one per object.
    mappings: HashMap<GroupVersionKind, (Option<Arc<Mapping>>, Arc<Mapping>)>,
}

/// Step 1: mapping, namespaces, labels, duplicates. Per-object failures become reports;
/// fatal problems (unreachable cluster, duplicates) end the run before anything is written.
async fn prepare(
    cluster: &Cluster,
    loaded: Vec<LoadedObject>,
    options: &ApplyOptions,
    report: &mut ApplyReport,
) -> Result<Vec<Result<Prepared, ObjectReport>>, Fatal> {
    let effective_namespace = options
        .namespace
        .clone()
        .or_else(|| options.default_namespace.clone())
        .unwrap_or_else(|| cluster.default_namespace().to_owned());
    let predicted = predicted_mappings(&loaded);
    let mut context = Context { cluster, options, predicted, effective_namespace, mappings: HashMap::new() };
    if let Some(namespace) = &options.namespace {
        report.namespaces_visited.insert(namespace.clone());
    }
    let mut items = Vec::with_capacity(loaded.len());
    let mut duplicates = DuplicateFinder::default();
    for (index, loaded) in loaded.into_iter().enumerate() {
        items.push(prepare_one(&mut context, index, loaded, &mut report.namespaces_visited, &mut duplicates).await?);
    }

    let duplicates = duplicates.finish();
    if !duplicates.is_empty() {
        return Err(Fatal::Duplicates(duplicates.iter().map(ToString::to_string).collect()));
    }
    Ok(items)
}

/// One object of step 1. Its namespace counts as visited (for legacy prune) as soon as it is
/// known, even when the object fails later.
async fn prepare_one(
    context: &mut Context<'_>,
    index: usize,
    loaded: LoadedObject,
    namespaces_visited: &mut BTreeSet<String>,
    duplicates: &mut DuplicateFinder,
) -> Result<Result<Prepared, ObjectReport>, Fatal> {
    let LoadedObject { source, mut object } = loaded;
    let text =
        |field: &str| object.as_object().and_then(|o| o.get(field)).and_then(Value::as_str).unwrap_or("").to_owned();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let (group, version) = split_api_version(&api_version);
    let gvk = GroupVersionKind::gvk(&group, &version, &kind);
    let raw_name = meta_str(&object, "name").unwrap_or("").to_owned();
    let raw_namespace = meta_str(&object, "namespace").unwrap_or("").to_owned();
    let fail = |category: ErrorCategory, message: String, name: &str| ObjectReport {
        source: source.clone(),
        name: if name.is_empty() { String::new() } else { display_name(&kind, &group, name) },
        result: Err(ObjectError::plain(category, message)),
        warnings: Vec::new(),
        details: None,
    };

    let Some((mapping, known)) = mapping_for(context, &gvk).await? else {
        let message = no_match_message(&raw_name, &raw_namespace, &source, &kind, &api_version);
        return Ok(Err(fail(ErrorCategory::NoMatch, message, &raw_name)));
    };
    let namespace = match namespace_for(context, &mut object, known.namespaced, &raw_namespace) {
        Ok(namespace) => namespace,
        Err(error) => return Ok(Err(fail(ErrorCategory::Manifest, with_causes(&error), &raw_name))),
    };
    if let Some(namespace) = &namespace {
        namespaces_visited.insert(namespace.clone());
    }

    if raw_name.is_empty() {
        let message = match meta_str(&object, "generateName") {
            Some(generate) if !generate.is_empty() => format!("from {generate}: cannot use generate name with apply"),
            _ => format!(
                "error when retrieving current configuration of {}: resource name may not be empty",
                go_quote(&source_text(&source))
            ),
        };
        return Ok(Err(fail(ErrorCategory::Manifest, message, "")));
    }
    if let Some(label) = &context.options.applyset_label
        && let Err(error) = object::add_label(&mut object, crate::keys::PART_OF_LABEL, label)
    {
        return Ok(Err(fail(ErrorCategory::Manifest, ManifestError::from(error).to_string(), &raw_name)));
    }
    duplicates.add(&source, &object);
    let object = Packed::new(&object);
    Ok(Ok(Prepared { index, source, object, gvk, mapping, known, namespace, name: raw_name }))
}

/// The kind's mapping from discovery, or (`None`, predicted) for a kind a CRD of the input
/// defines; `Ok(None)` when neither knows it. Only a cluster failure is fatal.
async fn mapping_for(
    context: &mut Context<'_>,
    gvk: &GroupVersionKind,
) -> Result<Option<(Option<Arc<Mapping>>, Arc<Mapping>)>, Fatal> {
    if let Some(found) = context.mappings.get(gvk) {
        return Ok(Some(found.clone()));
    }
    let found = match context.cluster.mapping(gvk).await {
        Ok(mapping) => {
            let mapping = Arc::new(mapping);
            (Some(mapping.clone()), mapping)
        }
        Err(Error::NoMatch { .. }) => {
            let key = (gvk.group.clone(), gvk.version.clone(), gvk.kind.clone());
            match context.predicted.get(&key) {
                Some(mapping) => (None, Arc::new(mapping.clone())),
                None => return Ok(None),
            }
        }
        Err(other) => return Err(Fatal::Cluster(other)),
    };
    context.mappings.insert(gvk.clone(), found.clone());
    Ok(Some(found))
}

/// kubectl's namespace rules: a namespaced object without one gets the effective namespace,
/// one that names another than an explicit `-n` fails; a cluster-scoped object loses any.
fn namespace_for(
    context: &Context<'_>,
    object: &mut Value,
    namespaced: bool,
    raw_namespace: &str,
) -> Result<Option<String>, ManifestError> {
    if namespaced
        && !raw_namespace.is_empty()
        && let Some(explicit) = &context.options.namespace
        && explicit != raw_namespace
    {
        return Err(ManifestError::NamespaceMismatch {
            namespace: raw_namespace.to_owned(),
            explicit: explicit.clone(),
        });
    }
    Ok(default_namespace(object, namespaced, raw_namespace, &context.effective_namespace))
}

/// kubectl's namespace rules without an explicit `-n` (the controller's case): a namespaced
/// object without a namespace gets `effective`, a cluster-scoped one loses any; returns the
/// object's namespace. `applyset build` places objects with it, as a run does.
pub(crate) fn default_namespace(
    object: &mut Value,
    namespaced: bool,
    raw_namespace: &str,
    effective: &str,
) -> Option<String> {
    if !namespaced {
        object::remove_namespace(object);
        return None;
    }
    if raw_namespace.is_empty() {
        object::set_namespace(object, effective);
        return Some(effective.to_owned());
    }
    Some(raw_namespace.to_owned())
}

/// What a run will apply, after mapping, namespace defaulting and labelling (no writes yet).
#[derive(Debug, Clone)]
pub struct Plan {
    pub(super) items: Vec<Result<Prepared, ObjectReport>>,
    pub(super) report: ApplyReport,
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

/// Step 1 of [`super::apply`]: reads discovery and prepares every object. Fails as a whole only
/// when the cluster cannot be read or an object appears twice.
pub async fn plan(cluster: &Cluster, loaded: Vec<LoadedObject>, options: &ApplyOptions) -> Result<Plan, Fatal> {
    if loaded.is_empty() {
        return Err(Fatal::NoObjects);
    }
    let mut report = ApplyReport::default();
    let items = prepare(cluster, loaded, options, &mut report).await?;
    Ok(Plan { items, report })
}
