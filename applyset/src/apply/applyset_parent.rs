//! ApplySet parents (KEP-3659) exactly as `kubectl apply --prune --applyset=…` (kubectl 1.33,
//! `KUBECTL_APPLYSET=true`) manages them, plus the discovery helper both prune modes use.
//!
//! # Flow the apply command follows (kubectl's order)
//!
//! 1. [`Parent::prepare`] — while validating flags: parses `--applyset=[RESOURCE][.GROUP]/NAME`
//!    (no `/` → Secret `NAME`), resolves the resource through discovery (plural, singular or
//!    short name; empty group matches any group, core first), takes the namespace **only** from an
//!    explicit `-n`, and validates: Secret/ConfigMap (v1) or a custom resource whose CRD carries
//!    the label `applyset.kubernetes.io/is-parent-type`. Errors carry kubectl's texts
//!    (`invalid parent reference "x": …`, `namespace is required to use namespace-scoped
//!    ApplySet`, `resource "apps/v1, Resource=deployments" is not permitted as an ApplySet parent`).
//! 2. [`Parent::add_labels`] — on every input object: `applyset.kubernetes.io/part-of=<ID>`
//!    (before the last-applied annotation is computed, so it is part of it).
//!    [`Parent::part_of_label`] gives the pair for callers that label objects themselves.
//! 3. [`Parent::update_superset`] (kubectl's `BeforeApply`) — GET the parent (NotFound is fine
//!    for Secret/ConfigMap, fatal for custom resources), check tooling/id/group-kinds with
//!    kubectl's messages, then server-side apply the parent with the union of the recorded and
//!    the to-be-applied kinds and namespaces (skipped for client dry-run).
//! 4. The caller applies every object and records each UID as [`super::Visited`].
//! 5. **Only if every object applied successfully** (the caller guarantees it; kubectl skips
//!    pruning on any apply error): [`Parent::prune`] LISTs every kind recorded on the parent
//!    *before* this run × every recorded namespace with
//!    `labelSelector=applyset.kubernetes.io/part-of=<ID>` and deletes what was not visited.
//! 6. Only if the prune reported no error: [`Parent::update_latest`] — the parent now records the
//!    kinds and namespaces of this run only. Its error text is already wrapped as
//!    `apply and prune succeeded, but ApplySet update failed: …`.
//!
//! # Deliberate choices
//!
//! * Tooling annotation: `applyset/v<crate version>`; a parent whose tool name (the text before
//!   the last `/`) is not `applyset` is refused with kubectl's message form (so kubectl in turn
//!   refuses our parents: `… is managed by tooling "applyset" instead of "kubectl"`).
//! * Field manager of the parent's server-side apply: `kubectl-applyset`, kubectl's own, so that
//!   kubectl can take a set over (after its tooling annotation is changed) without conflicts.
//! * The parent body is kubectl's PartialObjectMetadata: only name, namespace, the id label and
//!   the three annotations (SSA therefore drops the legacy `contains-group-resources`).
//! * Validation errors that kubectl aggregates are joined with a newline (kubectl prints one per
//!   line); kubectl's LIST order over kinds is a Go map order, ours is sorted.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;

use futures::StreamExt;
use kube::Client;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PropagationPolicy, ValidationDirective,
};
use kube::core::{ApiResource, GroupVersionKind};
use sha2::{Digest, Sha256};

use super::{DryRun, Visited};

/// Parent label carrying the set's ID.
pub const PARENT_ID_LABEL: &str = "applyset.kubernetes.io/id";
/// Member label carrying the set's ID.
pub const PART_OF_LABEL: &str = "applyset.kubernetes.io/part-of";
/// Parent annotation naming the managing tool (`<tool>/<version>`).
pub const TOOLING_ANNOTATION: &str = "applyset.kubernetes.io/tooling";
/// Parent annotation listing the members' group-kinds.
pub const GROUP_KINDS_ANNOTATION: &str = "applyset.kubernetes.io/contains-group-kinds";
/// Legacy parent annotation listing group-resources (read only when group-kinds is absent).
pub const DEPRECATED_GROUP_RESOURCES_ANNOTATION: &str = "applyset.kubernetes.io/contains-group-resources";
/// Parent annotation listing member namespaces other than the parent's.
pub const ADDITIONAL_NAMESPACES_ANNOTATION: &str = "applyset.kubernetes.io/additional-namespaces";
/// CRD label making the CRD's custom resources valid ApplySet parents.
pub const PARENT_CRD_LABEL: &str = "applyset.kubernetes.io/is-parent-type";
/// Field manager of the parent's server-side apply (kubectl's, see the module docs).
pub const FIELD_MANAGER: &str = "kubectl-applyset";
/// Our tool name in the tooling annotation.
pub const TOOL_NAME: &str = "applyset";
/// The last-applied annotation (legacy prune keys on it).
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// How many LIST requests run at once.
pub(crate) const LIST_CONCURRENCY: usize = 4;
/// Page size of LIST requests.
pub(crate) const LIST_PAGE_SIZE: u32 = 500;

/// The tooling annotation value we write: `applyset/v<version>`.
pub fn tooling() -> String {
    format!("{TOOL_NAME}/v{}", env!("CARGO_PKG_VERSION"))
}

/// kubectl's tool base name of a tooling annotation: everything before the last `/`
/// (the whole value when it has no `/`).
pub fn tooling_base_name(tooling: &str) -> &str {
    match tooling.rfind('/') {
        Some(index) => &tooling[..index],
        None => tooling,
    }
}

/// The ApplySet ID: `applyset-` + base64url-nopad(sha256(`name.namespace.Kind.group`)) + `-v1`.
pub fn applyset_id(name: &str, namespace: &str, kind: &str, group: &str) -> String {
    use base64::Engine as _;
    let unencoded = [name, namespace, kind, group].join(".");
    let hashed = Sha256::digest(unencoded.as_bytes());
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hashed);
    format!("applyset-{encoded}-v1")
}

// ------------------------------------------------------------------------------------------
// Group/kind/resource values with Go's string forms
// ------------------------------------------------------------------------------------------

/// A group and kind; displays as Go's `GroupKind.String()` (`Kind` or `Kind.group`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupKind {
    pub group: String,
    pub kind: String,
}

impl GroupKind {
    pub fn new(group: &str, kind: &str) -> Self {
        Self { group: group.to_owned(), kind: kind.to_owned() }
    }

    /// Go's `schema.ParseGroupKind`: kind before the first `.`, group after it.
    pub fn parse(text: &str) -> Self {
        match text.split_once('.') {
            Some((kind, group)) => Self::new(group, kind),
            None => Self::new("", text),
        }
    }

    pub fn of(api_resource: &ApiResource) -> Self {
        Self::new(&api_resource.group, &api_resource.kind)
    }
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() { write!(f, "{}", self.kind) } else { write!(f, "{}.{}", self.kind, self.group) }
    }
}

/// Go's `GroupVersionResource.String()`: `group/version, Resource=resource`.
pub fn gvr_string(group: &str, version: &str, resource: &str) -> String {
    format!("{group}/{version}, Resource={resource}")
}

/// Go's `GroupVersionKind.String()`: `group/version, Kind=kind`.
pub fn gvk_string(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}, Kind={kind}")
}

/// Go's `GroupVersion.String()`: `version` for the core group, else `group/version`.
fn group_version_string(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") }
}

/// kubectl's name printer form: `<kind-lower>[.<group>]/<name>`.
pub fn printed_name(api_resource: &ApiResource, name: &str) -> String {
    let kind = api_resource.kind.to_lowercase();
    if api_resource.group.is_empty() {
        format!("{kind}/{name}")
    } else {
        format!("{kind}.{}/{name}", api_resource.group)
    }
}

/// The suffix kubectl appends to printed operations.
pub fn dry_run_suffix(dry_run: DryRun) -> &'static str {
    match dry_run {
        DryRun::None => "",
        DryRun::Client => " (dry run)",
        DryRun::Server => " (server dry run)",
    }
}

/// The text kubectl shows for a client error: an API status's message, else the error.
pub fn error_text(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

fn is_status(error: &kube::Error, code: u16) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == code)
}

// ------------------------------------------------------------------------------------------
// Discovery (a small REST mapper with kubectl's matching rules)
// ------------------------------------------------------------------------------------------

/// One served resource.
#[derive(Clone, Debug)]
pub struct ApiEntry {
    pub api_resource: ApiResource,
    pub namespaced: bool,
    pub singular: String,
    pub short_names: Vec<String>,
    /// The first version the server lists for this group (its preferred version).
    pub preferred: bool,
    /// `list`, `delete`, … as discovery says.
    pub verbs: Vec<String>,
}

/// Served resources in kubectl's priority order: the core group first, then the groups in
/// discovery order; within a group the preferred version first. Subresources are left out.
#[derive(Clone, Debug, Default)]
pub struct ApiIndex {
    entries: Vec<ApiEntry>,
}

impl ApiIndex {
    /// Aggregated discovery of `/api` and `/apis` (two requests).
    pub async fn load(client: &Client) -> Result<Self, String> {
        let (core, groups) =
            futures::try_join!(client.list_core_api_versions_aggregated(), client.list_api_groups_aggregated())
                .map_err(|error| format!("discovery failed: {}", error_text(&error)))?;
        let as_json = |list| serde_json::to_value(list).map_err(|e| format!("discovery failed: {e}"));
        Ok(Self::from_aggregated(&[&as_json(core)?, &as_json(groups)?]))
    }

    /// The namespaced resources that can be listed, in their preferred version.
    pub fn namespaced_listable(&self) -> impl Iterator<Item = &ApiEntry> {
        self.entries.iter().filter(|e| e.preferred && e.namespaced && e.verbs.iter().any(|v| v == "list"))
    }

    /// The index of already fetched aggregated discovery lists (`/api`, `/apis`), as JSON.
    pub fn from_aggregated(lists: &[&serde_json::Value]) -> Self {
        let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).unwrap_or("").to_owned();
        let strings = |v: Option<&serde_json::Value>| -> Vec<String> {
            v.and_then(|v| v.as_array()).into_iter().flatten().filter_map(|s| s.as_str().map(str::to_owned)).collect()
        };
        let mut entries = Vec::new();
        for group in lists.iter().filter_map(|l| l.get("items")?.as_array()).flatten() {
            let group_name = text(group.get("metadata").and_then(|m| m.get("name")));
            for (index, version) in group.get("versions").and_then(|v| v.as_array()).into_iter().flatten().enumerate() {
                let version_name = text(version.get("version"));
                if version_name.is_empty() {
                    continue;
                }
                for resource in version.get("resources").and_then(|r| r.as_array()).into_iter().flatten() {
                    let plural = text(resource.get("resource"));
                    if plural.is_empty() || plural.contains('/') {
                        continue;
                    }
                    let kind = text(resource.get("responseKind").and_then(|k| k.get("kind")));
                    let singular = text(resource.get("singularResource"));
                    entries.push(ApiEntry {
                        api_resource: ApiResource {
                            group: group_name.clone(),
                            version: version_name.clone(),
                            api_version: group_version_string(&group_name, &version_name),
                            kind: kind.clone(),
                            plural,
                        },
                        namespaced: text(resource.get("scope")) == "Namespaced",
                        singular: if singular.is_empty() { kind.to_lowercase() } else { singular },
                        short_names: strings(resource.get("shortNames")),
                        preferred: index == 0,
                        verbs: strings(resource.get("verbs")),
                    });
                }
            }
        }
        Self { entries }
    }

    /// An index from plain entries (tests).
    pub fn from_entries(entries: Vec<ApiEntry>) -> Self {
        Self { entries }
    }

    /// `RESTMapping(GroupKind{group, kind}, version)`: error text as Go's `NoKindMatchError`.
    pub fn for_gvk(&self, group: &str, version: &str, kind: &str) -> Result<&ApiEntry, String> {
        self.entries
            .iter()
            .find(|e| e.api_resource.group == group && e.api_resource.version == version && e.api_resource.kind == kind)
            .ok_or_else(|| {
                format!("no matches for kind {kind:?} in version {:?}", group_version_string(group, version))
            })
    }

    /// `RESTMapping(GroupKind)` (preferred version first).
    pub fn for_group_kind(&self, gk: &GroupKind) -> Result<&ApiEntry, String> {
        let mut matches =
            self.entries.iter().filter(|e| e.api_resource.group == gk.group && e.api_resource.kind == gk.kind);
        let first = matches.next();
        self.entries
            .iter()
            .find(|e| e.preferred && e.api_resource.group == gk.group && e.api_resource.kind == gk.kind)
            .or(first)
            .ok_or_else(|| format!("no matches for kind {:?} in group {:?}", gk.kind, gk.group))
    }

    /// `KindFor(GroupVersionResource)` with kubectl's short-name expansion: the resource matches
    /// a plural, singular or short name (lower-cased); an empty group or version matches any.
    pub fn for_resource(&self, group: &str, version: &str, resource: &str) -> Result<&ApiEntry, String> {
        if resource.is_empty() {
            return Err(format!("a resource must be present, got: {}", gvr_string(group, version, resource)));
        }
        let wanted = resource.to_lowercase();
        let group_ok = |e: &ApiEntry| group.is_empty() || e.api_resource.group == group;
        let version_ok = |e: &ApiEntry| {
            if version.is_empty() { e.preferred } else { e.api_resource.version == version }
        };
        let by_name =
            |e: &&ApiEntry| group_ok(e) && version_ok(e) && (e.api_resource.plural == wanted || e.singular == wanted);
        let by_short = |e: &&ApiEntry| group_ok(e) && version_ok(e) && e.short_names.contains(&wanted);
        self.entries
            .iter()
            .find(by_short)
            .or_else(|| self.entries.iter().find(by_name))
            .ok_or_else(|| format!("no matches for {}", gvr_string(group, version, resource)))
    }
}

// ------------------------------------------------------------------------------------------
// Parent reference parsing and validation (pure parts)
// ------------------------------------------------------------------------------------------

/// `--applyset` as typed: `[RESOURCE][.GROUP]/NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentRefSpec {
    pub resource: String,
    pub group: String,
    /// `v1` for the default Secret, else empty (any version).
    pub version: String,
    pub name: String,
}

/// Parses `--applyset` like kubectl's `ParseApplySetParentRef` (before the REST mapping); the
/// error is already wrapped as `invalid parent reference "<text>": …`.
pub fn parse_parent_ref(text: &str) -> Result<ParentRefSpec, String> {
    let spec = match text.split_once('/') {
        Some((group_resource, name)) => {
            let (resource, group) = group_resource.split_once('.').unwrap_or((group_resource, ""));
            ParentRefSpec {
                resource: resource.to_owned(),
                group: group.to_owned(),
                version: String::new(),
                name: name.to_owned(),
            }
        }
        None => ParentRefSpec {
            resource: "secrets".into(),
            group: String::new(),
            version: "v1".into(),
            name: text.to_owned(),
        },
    };
    if spec.name.is_empty() {
        return Err(format!("invalid parent reference {text:?}: name cannot be blank"));
    }
    Ok(spec)
}

fn is_builtin_parent(api_resource: &ApiResource) -> bool {
    api_resource.group.is_empty()
        && api_resource.version == "v1"
        && (api_resource.plural == "secrets" || api_resource.plural == "configmaps")
}

/// kubectl's `ApplySet.Validate`: every problem, in kubectl's order. `permitted_custom` is the
/// result of listing the CRDs labelled as parent types (`group/resource` pairs), or its error.
pub fn validate_parent(
    api_resource: &ApiResource,
    namespaced: bool,
    namespace: &str,
    permitted_custom: Option<&Result<BTreeSet<(String, String)>, String>>,
) -> Vec<String> {
    let mut errors = Vec::new();
    if namespaced && namespace.is_empty() {
        errors.push("namespace is required to use namespace-scoped ApplySet".to_owned());
    }
    if !is_builtin_parent(api_resource) {
        let key = (api_resource.group.clone(), api_resource.plural.clone());
        let permitted = match permitted_custom {
            Some(Ok(set)) => set.contains(&key),
            Some(Err(error)) => {
                errors.push(format!("identifying allowed custom resource parent types: {error}"));
                false
            }
            None => false,
        };
        if !permitted {
            errors.push(format!(
                "resource {:?} is not permitted as an ApplySet parent",
                gvr_string(&api_resource.group, &api_resource.version, &api_resource.plural)
            ));
        }
    }
    errors
}

/// kubectl prints an aggregate of several errors one per line.
fn aggregate(errors: Vec<String>) -> Result<(), String> {
    if errors.is_empty() { Ok(()) } else { Err(errors.join("\n")) }
}

/// The `contains-group-kinds` value: sorted (byte order), comma-joined `Kind[.group]`.
pub fn group_kinds_annotation<'a>(kinds: impl IntoIterator<Item = &'a GroupKind>) -> String {
    let mut texts: Vec<String> = kinds.into_iter().map(ToString::to_string).collect();
    texts.sort();
    texts.dedup();
    texts.join(",")
}

/// The `additional-namespaces` value: sorted, comma-joined, without `parent_namespace`.
pub fn namespaces_annotation<'a>(namespaces: impl IntoIterator<Item = &'a String>, parent_namespace: &str) -> String {
    let set: BTreeSet<&str> = namespaces.into_iter().map(String::as_str).filter(|ns| *ns != parent_namespace).collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

/// kubectl's `parseNamespacesAnnotation`: absent or empty → none.
pub fn parse_namespaces_annotation(value: Option<&str>) -> BTreeSet<String> {
    match value {
        None | Some("") => BTreeSet::new(),
        Some(text) => text.split(',').map(str::to_owned).collect(),
    }
}

/// The group-kinds recorded on a parent, parsed but not yet mapped: the group-kinds annotation,
/// or (only when it is absent and non-empty) the legacy group-resources annotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordedKinds {
    GroupKinds(Vec<GroupKind>),
    /// `(resource, group)` pairs from `contains-group-resources`.
    GroupResources(Vec<(String, String)>),
}

/// kubectl's `parseKindAnnotation` before the REST mapping.
pub fn parse_recorded_kinds(annotations: &BTreeMap<String, String>) -> Result<RecordedKinds, String> {
    match annotations.get(GROUP_KINDS_ANNOTATION) {
        Some(value) if value.is_empty() => Ok(RecordedKinds::GroupKinds(Vec::new())),
        Some(value) => Ok(RecordedKinds::GroupKinds(value.split(',').map(GroupKind::parse).collect())),
        None => match annotations.get(DEPRECATED_GROUP_RESOURCES_ANNOTATION) {
            Some(value) if !value.is_empty() => Ok(RecordedKinds::GroupResources(
                value
                    .split(',')
                    .map(|gr| {
                        let (resource, group) = gr.split_once('.').unwrap_or((gr, ""));
                        (resource.to_owned(), group.to_owned())
                    })
                    .collect(),
            )),
            _ => Err(format!(
                "kubectl requires the {GROUP_KINDS_ANNOTATION:?} annotation to be set on all ApplySet parent objects"
            )),
        },
    }
}

/// kubectl's checks of an existing parent's metadata (`fetchParent`), in kubectl's order;
/// `reference` is `<resource>.<group>/<name>`.
pub fn check_existing_parent(
    reference: &str,
    id: &str,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Result<(), String> {
    let Some(tooling) = annotations.get(TOOLING_ANNOTATION) else {
        return Err(format!(
            "ApplySet parent object {reference:?} already exists and is missing required annotation {TOOLING_ANNOTATION:?}"
        ));
    };
    let managed_by = tooling_base_name(tooling);
    if managed_by != TOOL_NAME {
        return Err(format!(
            "ApplySet parent object {reference:?} already exists and is managed by tooling {managed_by:?} instead of {TOOL_NAME:?}"
        ));
    }
    match labels.get(PARENT_ID_LABEL) {
        None => Err(format!(
            "ApplySet parent object {reference:?} exists and does not have required label {PARENT_ID_LABEL}"
        )),
        Some(found) if found != id => Err(format!(
            "ApplySet parent object {reference:?} exists and has incorrect value for label {PARENT_ID_LABEL:?} (got: {found}, want: {id})"
        )),
        Some(_) => Ok(()),
    }
}

/// A member as the parent records it: its kind, scope and (namespaced only) namespace.
#[derive(Clone, Debug)]
pub struct Member<'a> {
    pub api_resource: &'a ApiResource,
    pub namespaced: bool,
    pub namespace: Option<&'a str>,
}

impl<'a> From<&'a Visited> for Member<'a> {
    fn from(visited: &'a Visited) -> Self {
        Member {
            api_resource: &visited.api_resource,
            namespaced: visited.namespaced,
            namespace: visited.namespace.as_deref(),
        }
    }
}

/// A kind recorded on the parent, with its mapping.
#[derive(Clone, Debug)]
pub struct RecordedKind {
    pub api_resource: ApiResource,
    pub namespaced: bool,
}

/// The result of a prune: the lines to print (stdout, in order) and the errors (the run fails
/// with exit code 1 if there is any). `warnings` go to stderr.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PruneSummary {
    pub pruned: Vec<String>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

/// Whether a LIST that the apiserver forbids fails the prune (kubectl) or is skipped with a
/// warning (the controller: an identity that may not list a kind there cannot have created
/// anything of it there, and a parent that records it must not fail every run for good).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForbiddenLists {
    Fail,
    Skip,
}

/// A labelled member that this run did not visit.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub kind: RecordedKind,
    pub listed: Listed,
}

impl Candidate {
    /// `deployment.apps/web`.
    pub fn printed_name(&self) -> String {
        printed_name(&self.kind.api_resource, &self.listed.name)
    }
}

/// What [`Parent::prune_candidates`] found.
#[derive(Clone, Debug, Default)]
pub struct Candidates {
    pub objects: Vec<Candidate>,
    /// Lists skipped ([`ForbiddenLists::Skip`]): the kind and namespace (`None`: cluster-scoped).
    pub forbidden: Vec<(GroupKind, Option<String>)>,
}

impl Candidates {
    /// One warning per skipped list.
    pub fn warnings(&self) -> Vec<String> {
        self.forbidden
            .iter()
            .map(|(gk, ns)| {
                let place = ns.as_ref().map_or_else(|| "the cluster".to_owned(), |ns| format!("namespace {ns}"));
                format!(
                    "not allowed to list {gk} in {place}: objects of that kind there were not considered for pruning"
                )
            })
            .collect()
    }
}

/// What [`delete_candidates`] did.
#[derive(Clone, Debug, Default)]
pub struct Deleted {
    /// Gone (or, for a dry run, would be).
    pub deleted: Vec<Candidate>,
    /// Still there after the DELETE, held by finalizers.
    pub terminating: Vec<Candidate>,
    /// The first failure; nothing after it was attempted.
    pub error: Option<String>,
}

impl Deleted {
    /// kubectl's printed lines: every object the DELETE was sent for is "pruned".
    fn into_summary(self, dry_run: DryRun) -> PruneSummary {
        let pruned = self
            .deleted
            .iter()
            .chain(&self.terminating)
            .map(|c| format!("{} pruned{}", c.printed_name(), dry_run_suffix(dry_run)))
            .collect();
        PruneSummary { pruned, errors: self.error.into_iter().collect(), warnings: Vec::new() }
    }
}

/// DELETEs each candidate in order, stopping at the first failure (kubectl's behaviour).
pub async fn delete_candidates(client: &Client, candidates: &[Candidate], options: &DeleteOptions) -> Deleted {
    let mut done = Deleted::default();
    for candidate in candidates {
        let (api_resource, ns, name) =
            (&candidate.kind.api_resource, candidate.listed.namespace.as_deref(), &candidate.listed.name);
        match delete_one(client, api_resource, ns, name, options).await {
            Ok(Some(remaining)) => {
                let mut candidate = candidate.clone();
                candidate.listed.deleting = true;
                candidate.listed.finalizers = remaining;
                done.terminating.push(candidate);
            }
            Ok(None) => done.deleted.push(candidate.clone()),
            Err(error) => {
                let gk = GroupKind::of(api_resource);
                let object = match ns {
                    Some(ns) => format!("{gk} {ns}/{name}"),
                    None => format!("{gk} {name}"),
                };
                done.error = Some(format!("pruning {object}: {}", error_text(&error)));
                return done;
            }
        }
    }
    done
}

/// An object a LIST returned, reduced to what pruning needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listed {
    pub name: String,
    pub namespace: Option<String>,
    pub uid: String,
    pub has_last_applied: bool,
    /// `metadata.deletionTimestamp` is set: it is being deleted (held by `finalizers`).
    pub deleting: bool,
    pub finalizers: Vec<String>,
}

/// How pruned objects are deleted (kubectl's `--cascade`, `--grace-period`, `--dry-run`).
#[derive(Clone, Copy, Debug)]
pub struct DeleteOptions {
    pub dry_run: DryRun,
    pub propagation: Propagation,
    /// Sent only when set (kubectl: `--grace-period >= 0`).
    pub grace_period_seconds: Option<u32>,
}

/// `--cascade`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

impl DeleteOptions {
    /// kubectl's defaults: Background, no grace period.
    pub fn new(dry_run: DryRun) -> Self {
        Self { dry_run, propagation: Propagation::Background, grace_period_seconds: None }
    }

    fn dry_run_server(&self) -> bool {
        matches!(self.dry_run, DryRun::Server)
    }

    fn params(&self) -> DeleteParams {
        DeleteParams {
            dry_run: matches!(self.dry_run, DryRun::Server),
            grace_period_seconds: self.grace_period_seconds,
            propagation_policy: Some(match self.propagation {
                Propagation::Background => PropagationPolicy::Background,
                Propagation::Foreground => PropagationPolicy::Foreground,
                Propagation::Orphan => PropagationPolicy::Orphan,
            }),
            preconditions: None,
        }
    }
}

/// LISTs `api_resource` in `namespace` (all namespaces' worth of nothing: `None` is a
/// cluster-scoped LIST) with `selector`, following `continue` tokens.
pub(crate) async fn list_all(
    client: &Client,
    api_resource: &ApiResource,
    namespace: Option<&str>,
    selector: &str,
) -> Result<Vec<Listed>, kube::Error> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, api_resource),
        None => Api::all_with(client.clone(), api_resource),
    };
    let mut params = ListParams::default().limit(LIST_PAGE_SIZE);
    if !selector.is_empty() {
        params = params.labels(selector);
    }
    let mut listed = Vec::new();
    loop {
        let page = api.list_metadata(&params).await?;
        for item in page.items {
            let meta = item.metadata;
            listed.push(Listed {
                name: meta.name.unwrap_or_default(),
                namespace: meta.namespace,
                uid: meta.uid.unwrap_or_default(),
                has_last_applied: meta.annotations.as_ref().is_some_and(|a| a.contains_key(LAST_APPLIED_ANNOTATION)),
                deleting: meta.deletion_timestamp.is_some(),
                finalizers: meta.finalizers.unwrap_or_default(),
            });
        }
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(listed),
        }
    }
}

/// DELETEs one object (nothing is sent for client dry-run). `Some(finalizers)` when the object
/// is still there afterwards, being deleted (the apiserver answers with the object instead of
/// a Status): finalizers hold it.
pub(crate) async fn delete_one(
    client: &Client,
    api_resource: &ApiResource,
    namespace: Option<&str>,
    name: &str,
    options: &DeleteOptions,
) -> Result<Option<Vec<String>>, kube::Error> {
    if matches!(options.dry_run, DryRun::Client) {
        return Ok(None);
    }
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, api_resource),
        None => Api::all_with(client.clone(), api_resource),
    };
    let answer = api.delete(name, &options.params()).await?;
    Ok(answer.left().and_then(|object| {
        let finalizers = object.metadata.finalizers.unwrap_or_default();
        let held = object.metadata.deletion_timestamp.is_some() && !finalizers.is_empty() && !options.dry_run_server();
        held.then_some(finalizers)
    }))
}

// ------------------------------------------------------------------------------------------
// The parent
// ------------------------------------------------------------------------------------------

/// An ApplySet parent for one run (see the module docs for the call order).
#[derive(Clone, Debug)]
pub struct Parent {
    api_resource: ApiResource,
    namespaced: bool,
    name: String,
    /// Empty for a cluster-scoped parent.
    namespace: String,
    id: String,
    index: ApiIndex,
    /// Recorded on the parent before this run (set by `update_superset`).
    current_kinds: BTreeMap<GroupKind, RecordedKind>,
    current_namespaces: BTreeSet<String>,
    /// Of this run's objects.
    updated_kinds: BTreeSet<GroupKind>,
    updated_namespaces: BTreeSet<String>,
    /// Server-side field validation for the parent's apply (`--validate`), if any.
    pub field_validation: Option<FieldValidation>,
    /// Warnings for stderr (e.g. a forced parent update after a conflict); drained by the caller.
    pub warnings: Vec<String>,
    /// The controller's parents: recorded kinds the cluster no longer serves (a CRD deleted)
    /// are skipped, not errors (see [`Parent::from_existing`]).
    skip_unknown_kinds: bool,
}

/// `fieldValidation` for the parent's server-side apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    Strict,
    Warn,
    Ignore,
}

impl Parent {
    /// Parses, resolves and validates `--applyset` (kubectl's `ParseApplySetParentRef` and
    /// `ApplySet.Validate`). `explicit_namespace` is `-n` only when given on the command line.
    /// Makes discovery requests (and a CRD LIST for custom resource parents), no parent GET.
    pub async fn prepare(client: &Client, parent_ref: &str, explicit_namespace: Option<&str>) -> Result<Self, String> {
        let spec = parse_parent_ref(parent_ref)?;
        let index = ApiIndex::load(client).await?;
        let entry = index
            .for_resource(&spec.group, &spec.version, &spec.resource)
            .map_err(|error| format!("invalid parent reference {parent_ref:?}: {error}"))?
            .clone();
        let namespace = match explicit_namespace {
            Some(ns) if entry.namespaced => ns.to_owned(),
            _ => String::new(),
        };
        let permitted =
            if is_builtin_parent(&entry.api_resource) { None } else { Some(permitted_custom_parents(client).await) };
        aggregate(validate_parent(&entry.api_resource, entry.namespaced, &namespace, permitted.as_ref()))?;
        Ok(Self::new(entry.api_resource, entry.namespaced, &spec.name, &namespace, index, false))
    }

    /// A parent before anything is recorded; its ID follows from its name, namespace and kind.
    fn new(
        api_resource: ApiResource,
        namespaced: bool,
        name: &str,
        namespace: &str,
        index: ApiIndex,
        skip_unknown_kinds: bool,
    ) -> Self {
        let id = applyset_id(name, namespace, &api_resource.kind, &api_resource.group);
        Self {
            api_resource,
            namespaced,
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            id,
            index,
            current_kinds: BTreeMap::new(),
            current_namespaces: BTreeSet::new(),
            updated_kinds: BTreeSet::new(),
            updated_namespaces: BTreeSet::new(),
            field_validation: None,
            warnings: Vec::new(),
            skip_unknown_kinds,
        }
    }

    /// A parent the caller already holds (the controller's own ApplySet object): no discovery
    /// of the parent type and no GET. A parent without any ApplySet metadata yet starts empty;
    /// one with metadata must pass kubectl's checks.
    pub fn from_existing(
        index: ApiIndex,
        api_resource: ApiResource,
        name: &str,
        namespace: &str,
        labels: &BTreeMap<String, String>,
        annotations: &BTreeMap<String, String>,
    ) -> Result<Self, String> {
        let namespaced = !namespace.is_empty();
        let mut parent = Self::new(api_resource, namespaced, name, namespace, index, true);
        let fresh = !annotations.contains_key(TOOLING_ANNOTATION) && !labels.contains_key(PARENT_ID_LABEL);
        if fresh {
            if parent.namespaced {
                parent.current_namespaces.insert(parent.namespace.clone());
            }
            return Ok(parent);
        }
        check_existing_parent(&parent.reference(), &parent.id, labels, annotations)?;
        parent.record_existing(annotations)?;
        Ok(parent)
    }

    /// Records this run's members (the first half of [`Parent::update_superset`], no write).
    pub fn record_members<'a>(&mut self, members: impl IntoIterator<Item = Member<'a>>) {
        for member in members {
            self.updated_kinds.insert(GroupKind::of(member.api_resource));
            if let Some(ns) = member.namespace.filter(|ns| member.namespaced && !ns.is_empty()) {
                self.updated_namespaces.insert(ns.to_owned());
            }
        }
    }

    /// Server-side applies `body` unless the parent's current labels and annotations already
    /// hold every value in it; returns whether it wrote.
    pub async fn apply_if_changed(
        &mut self,
        client: &Client,
        body: serde_json::Value,
        labels: &BTreeMap<String, String>,
        annotations: &BTreeMap<String, String>,
    ) -> Result<bool, String> {
        let holds = |field: &str, current: &BTreeMap<String, String>| {
            body["metadata"][field]
                .as_object()
                .is_none_or(|wanted| wanted.iter().all(|(k, v)| v.as_str() == current.get(k).map(String::as_str)))
        };
        if holds("labels", labels) && holds("annotations", annotations) {
            return Ok(false);
        }
        self.server_side_apply(client, body, DryRun::None).await?;
        Ok(true)
    }

    /// The set's ID (`applyset-…-v1`).
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn api_resource(&self) -> &ApiResource {
        &self.api_resource
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Empty for a cluster-scoped parent.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// kubectl's `ApplySetParentRef.String()`: `<resource>.<group>/<name>` (`secrets./x`).
    pub fn reference(&self) -> String {
        format!("{}.{}/{}", self.api_resource.plural, self.api_resource.group, self.name)
    }

    /// The member label: (`applyset.kubernetes.io/part-of`, ID).
    pub fn part_of_label(&self) -> (&'static str, String) {
        (PART_OF_LABEL, self.id.clone())
    }

    /// The member label selector (`applyset.kubernetes.io/part-of=<ID>`).
    pub fn member_selector(&self) -> String {
        format!("{PART_OF_LABEL}={}", self.id)
    }

    /// Adds the member label to an input object (kubectl's `AddLabels`).
    pub fn add_labels(&self, object: &mut serde_json::Value) -> Result<(), String> {
        let metadata = object
            .as_object_mut()
            .ok_or("getting accessor: object is not a map")?
            .entry("metadata")
            .or_insert_with(|| serde_json::json!({}));
        let metadata = metadata.as_object_mut().ok_or("getting accessor: metadata is not a map")?;
        let labels = metadata.entry("labels").or_insert_with(|| serde_json::json!({}));
        if labels.is_null() {
            *labels = serde_json::json!({});
        }
        let labels = labels.as_object_mut().ok_or("getting accessor: labels is not a map")?;
        if labels.contains_key(PART_OF_LABEL) {
            return Err(format!("ApplySet label {PART_OF_LABEL:?} already set in input data"));
        }
        labels.insert(PART_OF_LABEL.to_owned(), serde_json::Value::String(self.id.clone()));
        Ok(())
    }

    /// Kinds recorded on the parent before this run (after `update_superset`).
    pub fn current_kinds(&self) -> impl Iterator<Item = &GroupKind> {
        self.current_kinds.keys()
    }

    /// Namespaces recorded on the parent before this run, with its own (after `update_superset`).
    pub fn current_namespaces(&self) -> &BTreeSet<String> {
        &self.current_namespaces
    }

    /// GETs the parent and checks it (kubectl's `fetchParent`), records this run's members and
    /// server-side applies the superset (kubectl's `BeforeApply`).
    pub async fn update_superset<'a>(
        &mut self,
        client: &Client,
        members: impl IntoIterator<Item = Member<'a>>,
        dry_run: DryRun,
    ) -> Result<(), String> {
        self.fetch(client).await?;
        self.record_members(members);
        let body = self.superset_body();
        self.server_side_apply(client, body, dry_run).await
    }

    /// Deletes every member recorded before this run that this run did not visit. Call only when
    /// every object applied successfully; call [`Parent::update_latest`] only when the returned
    /// summary has no error.
    pub async fn prune(&self, client: &Client, visited: &[Visited], options: &DeleteOptions) -> PruneSummary {
        match self.prune_candidates(client, visited, ForbiddenLists::Fail).await {
            Ok(candidates) => {
                delete_candidates(client, &candidates.objects, options).await.into_summary(options.dry_run)
            }
            Err(error) => PruneSummary { errors: vec![error], ..PruneSummary::default() },
        }
    }

    /// The members recorded before this run (by kind and namespace, labelled with this set's ID)
    /// that this run did not visit, sorted by group, kind, namespace and name (kubectl's order).
    pub async fn prune_candidates(
        &self,
        client: &Client,
        visited: &[Visited],
        forbidden: ForbiddenLists,
    ) -> Result<Candidates, String> {
        let visited: HashSet<&str> = visited.iter().map(|v| v.uid.as_str()).collect();
        let mut tasks: Vec<(&RecordedKind, Option<&str>)> = Vec::new();
        for (gk, kind) in &self.current_kinds {
            if kind.namespaced {
                for ns in &self.current_namespaces {
                    if ns.is_empty() {
                        return Err(format!(
                            "unexpectedly encountered empty namespace during prune of namespace-scoped resource {gk}"
                        ));
                    }
                    tasks.push((kind, Some(ns)));
                }
            } else {
                tasks.push((kind, None));
            }
        }
        let selector = self.member_selector();
        // Owned values (no borrowed closure arguments): a closure over borrowed items is not
        // provably `Send` for every lifetime, which the controller's spawned reconciles need.
        let lists: Vec<(ApiResource, Option<String>)> =
            tasks.iter().map(|(kind, ns)| (kind.api_resource.clone(), ns.map(str::to_owned))).collect();
        let skip_unknown_kinds = self.skip_unknown_kinds;
        let results: Vec<_> = futures::stream::iter(lists.into_iter().map(|(api_resource, ns)| {
            let selector = selector.clone();
            let client = client.clone();
            async move {
                match list_all(&client, &api_resource, ns.as_deref(), &selector).await {
                    // The kind went away since discovery was read (its CRD deleted): nothing
                    // of it is left to prune.
                    Err(error) if skip_unknown_kinds && is_status(&error, 404) => Ok(Some(Vec::new())),
                    Err(error) if forbidden == ForbiddenLists::Skip && is_status(&error, 403) => Ok(None),
                    other => other.map(Some),
                }
                .map_err(|error| {
                    format!(
                        "listing {} objects for pruning: {}",
                        gvk_string(&api_resource.group, &api_resource.version, &api_resource.kind),
                        error_text(&error)
                    )
                })
            }
        }))
        .buffered(LIST_CONCURRENCY)
        .collect()
        .await;
        let mut candidates = Candidates::default();
        for ((kind, ns), result) in tasks.iter().zip(results) {
            match result? {
                Some(items) => {
                    for item in select_applyset_candidates(&items, &visited) {
                        candidates.objects.push(Candidate { kind: (*kind).clone(), listed: item.clone() });
                    }
                }
                None => candidates.forbidden.push((GroupKind::of(&kind.api_resource), ns.map(str::to_owned))),
            }
        }
        candidates.objects.sort_by(|a, b| {
            (&a.kind.api_resource.group, &a.kind.api_resource.kind, &a.listed.namespace, &a.listed.name).cmp(&(
                &b.kind.api_resource.group,
                &b.kind.api_resource.kind,
                &b.listed.namespace,
                &b.listed.name,
            ))
        });
        Ok(candidates)
    }

    /// Server-side applies the latest set (this run's kinds and namespaces only).
    pub async fn update_latest(&mut self, client: &Client, dry_run: DryRun) -> Result<(), String> {
        let body = self.latest_body();
        self.server_side_apply(client, body, dry_run)
            .await
            .map_err(|error| format!("apply and prune succeeded, but ApplySet update failed: {error}"))
    }

    /// The parent body for the superset update (pure).
    pub fn superset_body(&self) -> serde_json::Value {
        let kinds: BTreeSet<&GroupKind> = self.current_kinds.keys().chain(&self.updated_kinds).collect();
        let namespaces: BTreeSet<&String> = self.current_namespaces.iter().chain(&self.updated_namespaces).collect();
        self.body(group_kinds_annotation(kinds), namespaces_annotation(namespaces, &self.namespace))
    }

    /// The parent body for the latest update (pure).
    pub fn latest_body(&self) -> serde_json::Value {
        self.body(
            group_kinds_annotation(&self.updated_kinds),
            namespaces_annotation(&self.updated_namespaces, &self.namespace),
        )
    }

    fn body(&self, group_kinds: String, namespaces: String) -> serde_json::Value {
        let mut metadata = serde_json::json!({
            "name": self.name,
            "annotations": {
                TOOLING_ANNOTATION: tooling(),
                GROUP_KINDS_ANNOTATION: group_kinds,
                ADDITIONAL_NAMESPACES_ANNOTATION: namespaces,
            },
            "labels": { PARENT_ID_LABEL: self.id },
        });
        if !self.namespace.is_empty() {
            metadata["namespace"] = self.namespace.clone().into();
        }
        serde_json::json!({
            "kind": self.api_resource.kind,
            "apiVersion": self.api_resource.api_version,
            "metadata": metadata,
        })
    }

    fn api(&self, client: &Client) -> Api<DynamicObject> {
        if self.namespaced {
            Api::namespaced_with(client.clone(), &self.namespace, &self.api_resource)
        } else {
            Api::all_with(client.clone(), &self.api_resource)
        }
    }

    async fn fetch(&mut self, client: &Client) -> Result<(), String> {
        let reference = self.reference();
        let parent = match self.api(client).get_metadata_opt(&self.name).await {
            Ok(parent) => parent,
            Err(error) => {
                return Err(format!("failed to fetch ApplySet parent object {reference:?}: {}", error_text(&error)));
            }
        };
        let Some(parent) = parent else {
            if !is_builtin_parent(&self.api_resource) {
                return Err("custom resource ApplySet parents cannot be created automatically".to_owned());
            }
            return Ok(());
        };
        let labels: BTreeMap<String, String> = parent.metadata.labels.unwrap_or_default();
        let annotations: BTreeMap<String, String> = parent.metadata.annotations.unwrap_or_default();
        check_existing_parent(&reference, &self.id, &labels, &annotations)?;
        self.record_existing(&annotations)
    }

    /// Reads the kinds and namespaces an existing parent records (kubectl's `fetchParent`
    /// after its checks).
    ///
    /// For the controller's parents, a recorded kind the cluster no longer serves (its CRD
    /// deleted) is left out with a warning instead of failing: no object of it can exist to
    /// prune, and kubectl's error would otherwise repeat at every interval.
    fn record_existing(&mut self, annotations: &BTreeMap<String, String>) -> Result<(), String> {
        let reference = self.reference();
        let wrap = |error: String| format!("parsing ApplySet annotation on {reference:?}: {error}");
        let mut kinds = BTreeMap::new();
        match parse_recorded_kinds(annotations).map_err(wrap)? {
            RecordedKinds::GroupKinds(gks) => {
                for gk in gks {
                    let entry = match self.index.for_group_kind(&gk) {
                        Ok(entry) => entry,
                        Err(error) if self.skip_unknown_kinds => {
                            self.warnings.push(format!(
                                "{reference}: recorded kind {gk} is no longer served ({error}); nothing of it to prune"
                            ));
                            continue;
                        }
                        Err(error) => {
                            return Err(wrap(format!(
                                "could not find mapping for kind in {GROUP_KINDS_ANNOTATION:?} annotation: {error}"
                            )));
                        }
                    };
                    kinds.insert(
                        gk,
                        RecordedKind { api_resource: entry.api_resource.clone(), namespaced: entry.namespaced },
                    );
                }
            }
            RecordedKinds::GroupResources(grs) => {
                for (resource, group) in grs {
                    let entry = self.index.for_resource(&group, "", &resource).map_err(|error| {
                        wrap(format!(
                            "invalid group resource in {DEPRECATED_GROUP_RESOURCES_ANNOTATION:?} annotation: {error}"
                        ))
                    })?;
                    kinds.insert(
                        GroupKind::of(&entry.api_resource),
                        RecordedKind { api_resource: entry.api_resource.clone(), namespaced: entry.namespaced },
                    );
                }
            }
        }
        self.current_kinds = kinds;
        self.current_namespaces =
            parse_namespaces_annotation(annotations.get(ADDITIONAL_NAMESPACES_ANNOTATION).map(String::as_str));
        if self.namespaced {
            self.current_namespaces.insert(self.namespace.clone());
        }
        Ok(())
    }

    async fn server_side_apply(
        &mut self,
        client: &Client,
        body: serde_json::Value,
        dry_run: DryRun,
    ) -> Result<(), String> {
        if matches!(dry_run, DryRun::Client) {
            return Ok(());
        }
        let mut params = PatchParams::apply(FIELD_MANAGER);
        params.dry_run = matches!(dry_run, DryRun::Server);
        params.field_validation = self.field_validation.map(|v| match v {
            FieldValidation::Strict => ValidationDirective::Strict,
            FieldValidation::Warn => ValidationDirective::Warn,
            FieldValidation::Ignore => ValidationDirective::Ignore,
        });
        let api = self.api(client);
        let mut result = api.patch(&self.name, &params, &Patch::Apply(&body)).await;
        if let Err(error) = &result
            && is_status(error, 409)
        {
            self.warnings.push(format!(
                "WARNING: failed to update ApplySet: {}\nApplySet field manager {FIELD_MANAGER} should own these fields. Retrying with conflicts forced.",
                error_text(error)
            ));
            params.force = true;
            result = api.patch(&self.name, &params, &Patch::Apply(&body)).await;
        }
        result.map(|_| ()).map_err(|error| format!("failed to update ApplySet: {}", error_text(&error)))
    }
}

/// ApplySet prune candidates: every listed object whose UID was not visited, sorted by
/// namespace and name.
pub fn select_applyset_candidates<'a>(items: &'a [Listed], visited: &HashSet<&str>) -> Vec<&'a Listed> {
    let mut selected: Vec<&Listed> = items.iter().filter(|item| !visited.contains(item.uid.as_str())).collect();
    selected.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    selected
}

/// `group/resource` of every CRD labelled `applyset.kubernetes.io/is-parent-type`.
async fn permitted_custom_parents(client: &Client) -> Result<BTreeSet<(String, String)>, String> {
    let crds = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    let listed = list_all(client, &crds, None, PARENT_CRD_LABEL).await.map_err(|error| error_text(&error))?;
    Ok(listed
        .into_iter()
        .map(|crd| {
            // CRDs are named `<plural>.<group>`.
            let (resource, group) = crd.name.split_once('.').unwrap_or((&crd.name, ""));
            (group.to_owned(), resource.to_owned())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
    }

    fn entry(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
        short: &[&str],
        preferred: bool,
    ) -> ApiEntry {
        ApiEntry {
            api_resource: ar(group, version, kind, plural),
            namespaced,
            singular: kind.to_lowercase(),
            short_names: short.iter().map(|s| s.to_string()).collect(),
            preferred,
            verbs: vec!["list".into()],
        }
    }

    fn index() -> ApiIndex {
        ApiIndex::from_entries(vec![
            entry("", "v1", "ConfigMap", "configmaps", true, &["cm"], true),
            entry("", "v1", "Secret", "secrets", true, &[], true),
            entry("", "v1", "Namespace", "namespaces", false, &["ns"], true),
            entry("apps", "v1", "Deployment", "deployments", true, &["deploy"], true),
            entry("company.com", "v1", "ApplySet", "applysets", false, &[], true),
            entry("company.com", "v1alpha1", "ApplySet", "applysets", false, &[], false),
        ])
    }

    #[test]
    fn id_test_vectors() {
        assert_eq!(
            applyset_id("my-set", "test", "Secret", ""),
            "applyset-0eFHV8ySqp7XoShsGvyWFQD3s96yqwHmzc4e0HR1dsY-v1"
        );
        assert_eq!(
            applyset_id("my-set", "", "ApplySet", "company.com"),
            "applyset-rhp1a-HVAVT_dFgyEygyA1BEB82HPp2o10UiFTpqtAs-v1"
        );
        // Seen on the real kubectl 1.33 parent `myset` in namespace `probe-a`.
        assert_eq!(
            applyset_id("myset", "probe-a", "Secret", ""),
            "applyset-CVmZ4ZXxOBAvEywHTyZE3saQEM3X5srFo2g7BB9dLmk-v1"
        );
    }

    #[test]
    fn tooling_values() {
        assert_eq!(tooling(), format!("applyset/v{}", env!("CARGO_PKG_VERSION")));
        assert_eq!(tooling_base_name("kubectl/v1.33.1"), "kubectl");
        assert_eq!(tooling_base_name("a/b/v1"), "a/b");
        assert_eq!(tooling_base_name("helm"), "helm");
    }

    #[test]
    fn parent_ref_parsing() {
        assert_eq!(
            parse_parent_ref("my-set").unwrap(),
            ParentRefSpec { resource: "secrets".into(), group: "".into(), version: "v1".into(), name: "my-set".into() }
        );
        assert_eq!(
            parse_parent_ref("applysets.company.com/x").unwrap(),
            ParentRefSpec {
                resource: "applysets".into(),
                group: "company.com".into(),
                version: "".into(),
                name: "x".into()
            }
        );
        assert_eq!(parse_parent_ref("cm/x").unwrap().resource, "cm");
        assert_eq!(
            parse_parent_ref("secret/").unwrap_err(),
            r#"invalid parent reference "secret/": name cannot be blank"#
        );
        assert_eq!(parse_parent_ref("").unwrap_err(), r#"invalid parent reference "": name cannot be blank"#);
    }

    #[test]
    fn resource_resolution_errors_match_kubectl() {
        let index = index();
        assert_eq!(index.for_resource("", "", "").unwrap_err(), "a resource must be present, got: /, Resource=");
        assert_eq!(index.for_resource("", "", "foo").unwrap_err(), "no matches for /, Resource=foo");
        assert_eq!(index.for_resource("v1", "", "configmap").unwrap_err(), "no matches for v1/, Resource=configmap");
        assert_eq!(index.for_resource("", "", "cm").unwrap().api_resource.kind, "ConfigMap");
        assert_eq!(index.for_resource("", "", "secret").unwrap().api_resource.kind, "Secret");
        assert_eq!(index.for_resource("", "v1", "secrets").unwrap().api_resource.kind, "Secret");
        // An empty group matches any group.
        assert_eq!(index.for_resource("", "", "deployments").unwrap().api_resource.group, "apps");
        assert_eq!(index.for_resource("company.com", "", "applysets").unwrap().api_resource.version, "v1");
        assert_eq!(
            index.for_gvk("apps", "v9", "Deployment").unwrap_err(),
            r#"no matches for kind "Deployment" in version "apps/v9""#
        );
        assert_eq!(index.for_gvk("", "v1", "Foo").unwrap_err(), r#"no matches for kind "Foo" in version "v1""#);
        assert_eq!(
            index.for_group_kind(&GroupKind::parse("Foo.bar")).unwrap_err(),
            r#"no matches for kind "Foo" in group "bar""#
        );
        assert_eq!(index.for_group_kind(&GroupKind::parse("ApplySet.company.com")).unwrap().api_resource.version, "v1");
    }

    #[test]
    fn validation_messages() {
        let deployments = ar("apps", "v1", "Deployment", "deployments");
        assert_eq!(
            validate_parent(&deployments, true, "", None),
            vec![
                "namespace is required to use namespace-scoped ApplySet".to_owned(),
                r#"resource "apps/v1, Resource=deployments" is not permitted as an ApplySet parent"#.to_owned(),
            ]
        );
        let namespaces = ar("", "v1", "Namespace", "namespaces");
        assert_eq!(
            validate_parent(&namespaces, false, "", Some(&Ok(BTreeSet::new()))),
            vec![r#"resource "/v1, Resource=namespaces" is not permitted as an ApplySet parent"#.to_owned()]
        );
        let secrets = ar("", "v1", "Secret", "secrets");
        assert!(validate_parent(&secrets, true, "ns", None).is_empty());
        assert_eq!(
            validate_parent(&secrets, true, "", None),
            vec!["namespace is required to use namespace-scoped ApplySet"]
        );
        let custom = ar("company.com", "v1", "ApplySet", "applysets");
        let permitted: BTreeSet<_> = [("company.com".to_owned(), "applysets".to_owned())].into();
        assert!(validate_parent(&custom, false, "", Some(&Ok(permitted))).is_empty());
        assert_eq!(
            validate_parent(&custom, false, "", Some(&Err("boom".into()))),
            vec![
                "identifying allowed custom resource parent types: boom".to_owned(),
                r#"resource "company.com/v1, Resource=applysets" is not permitted as an ApplySet parent"#.to_owned(),
            ]
        );
        assert_eq!(aggregate(vec!["a".into(), "b".into()]).unwrap_err(), "a\nb");
    }

    #[test]
    fn annotations_are_sorted_and_joined() {
        let kinds = [
            GroupKind::new("apps", "Deployment"),
            GroupKind::new("", "Service"),
            GroupKind::new("", "ReplicationController"),
        ];
        assert_eq!(group_kinds_annotation(&kinds), "Deployment.apps,ReplicationController,Service");
        assert_eq!(group_kinds_annotation(&[]), "");
        // Byte order, like Go's sort.Strings: upper case before lower case.
        let mixed = [GroupKind::new("", "b"), GroupKind::new("", "B"), GroupKind::new("x.io", "A")];
        assert_eq!(group_kinds_annotation(&mixed), "A.x.io,B,b");
        let namespaces: Vec<String> = vec!["zeta".into(), "alpha".into(), "parent".into()];
        assert_eq!(namespaces_annotation(&namespaces, "parent"), "alpha,zeta");
        assert_eq!(namespaces_annotation(&namespaces, ""), "alpha,parent,zeta");
        assert_eq!(namespaces_annotation(&Vec::<String>::new(), "x"), "");
        assert_eq!(GroupKind::parse("ConfigMap"), GroupKind::new("", "ConfigMap"));
        assert_eq!(GroupKind::parse("Certificate.cert-manager.io"), GroupKind::new("cert-manager.io", "Certificate"));
        assert_eq!(parse_namespaces_annotation(Some("")), BTreeSet::new());
        assert_eq!(parse_namespaces_annotation(None), BTreeSet::new());
        assert_eq!(parse_namespaces_annotation(Some("b,a")), ["a".to_owned(), "b".to_owned()].into());
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn recorded_kinds() {
        assert_eq!(
            parse_recorded_kinds(&map(&[(GROUP_KINDS_ANNOTATION, "ConfigMap,Deployment.apps")])).unwrap(),
            RecordedKinds::GroupKinds(vec![GroupKind::new("", "ConfigMap"), GroupKind::new("apps", "Deployment")])
        );
        assert_eq!(
            parse_recorded_kinds(&map(&[(GROUP_KINDS_ANNOTATION, "")])).unwrap(),
            RecordedKinds::GroupKinds(vec![])
        );
        assert_eq!(
            parse_recorded_kinds(&map(&[(DEPRECATED_GROUP_RESOURCES_ANNOTATION, "configmaps,deployments.apps")]))
                .unwrap(),
            RecordedKinds::GroupResources(vec![
                ("configmaps".into(), "".into()),
                ("deployments".into(), "apps".into())
            ])
        );
        assert_eq!(
            parse_recorded_kinds(&map(&[(DEPRECATED_GROUP_RESOURCES_ANNOTATION, "")])).unwrap_err(),
            r#"kubectl requires the "applyset.kubernetes.io/contains-group-kinds" annotation to be set on all ApplySet parent objects"#
        );
    }

    #[test]
    fn existing_parent_checks_in_kubectl_order() {
        let id = "applyset-x-v1";
        let r = "secrets./myset";
        let good_labels = map(&[(PARENT_ID_LABEL, id)]);
        assert_eq!(
            check_existing_parent(r, id, &good_labels, &map(&[])).unwrap_err(),
            r#"ApplySet parent object "secrets./myset" already exists and is missing required annotation "applyset.kubernetes.io/tooling""#
        );
        assert_eq!(
            check_existing_parent(r, id, &good_labels, &map(&[(TOOLING_ANNOTATION, "kubectl/v1.33.1")])).unwrap_err(),
            r#"ApplySet parent object "secrets./myset" already exists and is managed by tooling "kubectl" instead of "applyset""#
        );
        let ours = map(&[(TOOLING_ANNOTATION, "applyset/v0.0.1")]);
        assert_eq!(
            check_existing_parent(r, id, &map(&[]), &ours).unwrap_err(),
            r#"ApplySet parent object "secrets./myset" exists and does not have required label applyset.kubernetes.io/id"#
        );
        assert_eq!(
            check_existing_parent(r, id, &map(&[(PARENT_ID_LABEL, "wrong")]), &ours).unwrap_err(),
            r#"ApplySet parent object "secrets./myset" exists and has incorrect value for label "applyset.kubernetes.io/id" (got: wrong, want: applyset-x-v1)"#
        );
        assert!(check_existing_parent(r, id, &good_labels, &ours).is_ok());
    }

    fn parent(namespace: &str) -> Parent {
        Parent::new(ar("", "v1", "Secret", "secrets"), true, "set", namespace, index(), false)
    }

    #[test]
    fn superset_and_latest_bodies() {
        let mut p = parent("ns");
        p.current_kinds.insert(
            GroupKind::new("apps", "Deployment"),
            RecordedKind { api_resource: ar("apps", "v1", "Deployment", "deployments"), namespaced: true },
        );
        p.current_namespaces = ["ns".to_owned(), "old".to_owned()].into();
        p.updated_kinds.insert(GroupKind::new("", "ConfigMap"));
        p.updated_namespaces.insert("ns".into());
        let superset = p.superset_body();
        assert_eq!(
            superset,
            serde_json::json!({
                "kind": "Secret",
                "apiVersion": "v1",
                "metadata": {
                    "name": "set",
                    "namespace": "ns",
                    "labels": { PARENT_ID_LABEL: p.id() },
                    "annotations": {
                        TOOLING_ANNOTATION: tooling(),
                        GROUP_KINDS_ANNOTATION: "ConfigMap,Deployment.apps",
                        ADDITIONAL_NAMESPACES_ANNOTATION: "old",
                    },
                },
            })
        );
        let latest = p.latest_body();
        assert_eq!(latest["metadata"]["annotations"][GROUP_KINDS_ANNOTATION], "ConfigMap");
        assert_eq!(latest["metadata"]["annotations"][ADDITIONAL_NAMESPACES_ANNOTATION], "");
        assert_eq!(p.reference(), "secrets./set");
        assert_eq!(p.part_of_label(), (PART_OF_LABEL, p.id().to_owned()));
        assert_eq!(p.member_selector(), format!("applyset.kubernetes.io/part-of={}", p.id()));
    }

    #[test]
    fn member_labels() {
        let p = parent("ns");
        let mut object = serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "a"}});
        p.add_labels(&mut object).unwrap();
        assert_eq!(object["metadata"]["labels"][PART_OF_LABEL], p.id());
        assert_eq!(
            p.add_labels(&mut object).unwrap_err(),
            r#"ApplySet label "applyset.kubernetes.io/part-of" already set in input data"#
        );
        let mut bare = serde_json::json!({"kind": "ConfigMap", "metadata": {"labels": null}});
        p.add_labels(&mut bare).unwrap();
        assert_eq!(bare["metadata"]["labels"][PART_OF_LABEL], p.id());
    }

    #[test]
    fn an_index_from_aggregated_discovery() {
        let apis = serde_json::json!({"kind": "APIGroupDiscoveryList", "items": [{
            "metadata": {"name": "apps"},
            "versions": [
                {"version": "v1", "resources": [
                    {"resource": "deployments", "responseKind": {"kind": "Deployment"}, "scope": "Namespaced",
                     "singularResource": "deployment", "shortNames": ["deploy"], "verbs": ["get", "list"]},
                    {"resource": "deployments/status", "responseKind": {"kind": "Deployment"}, "scope": "Namespaced"}
                ]},
                {"version": "v1beta1", "resources": [
                    {"resource": "deployments", "responseKind": {"kind": "Deployment"}, "scope": "Namespaced"}
                ]}
            ]
        }]});
        let core = serde_json::json!({"kind": "APIGroupDiscoveryList", "items": [{
            "metadata": {"name": ""},
            "versions": [{"version": "v1", "resources": [
                {"resource": "namespaces", "responseKind": {"kind": "Namespace"}, "scope": "Cluster", "verbs": ["list"]}
            ]}]
        }]});
        let index = ApiIndex::from_aggregated(&[&core, &apis]);
        let deployment = index.for_group_kind(&GroupKind::new("apps", "Deployment")).unwrap();
        assert_eq!((deployment.api_resource.version.as_str(), deployment.singular.as_str()), ("v1", "deployment"));
        assert_eq!(deployment.short_names, ["deploy"]);
        assert!(deployment.namespaced && deployment.preferred);
        let namespace = index.for_group_kind(&GroupKind::new("", "Namespace")).unwrap();
        assert!(!namespace.namespaced);
        assert_eq!(namespace.singular, "namespace", "the kind in lower case when discovery has no singular");
        let listable: Vec<&str> = index.namespaced_listable().map(|e| e.api_resource.plural.as_str()).collect();
        assert_eq!(listable, ["deployments"], "preferred versions only, no subresources");
    }

    #[test]
    fn applyset_candidates() {
        let items = vec![
            Listed {
                name: "b".into(),
                namespace: Some("ns".into()),
                uid: "2".into(),
                has_last_applied: false,
                ..Listed::default()
            },
            Listed {
                name: "a".into(),
                namespace: Some("ns".into()),
                uid: "1".into(),
                has_last_applied: true,
                ..Listed::default()
            },
            Listed {
                name: "c".into(),
                namespace: Some("ns".into()),
                uid: "3".into(),
                has_last_applied: true,
                ..Listed::default()
            },
        ];
        let visited: HashSet<&str> = ["3"].into();
        let names: Vec<&str> = select_applyset_candidates(&items, &visited).iter().map(|l| l.name.as_str()).collect();
        // No last-applied requirement for ApplySet prune.
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn printed_names_and_suffixes() {
        assert_eq!(printed_name(&ar("", "v1", "ConfigMap", "configmaps"), "x"), "configmap/x");
        assert_eq!(printed_name(&ar("apps", "v1", "Deployment", "deployments"), "x"), "deployment.apps/x");
        assert_eq!(dry_run_suffix(DryRun::None), "");
        assert_eq!(dry_run_suffix(DryRun::Client), " (dry run)");
        assert_eq!(dry_run_suffix(DryRun::Server), " (server dry run)");
        assert_eq!(gvk_string("", "v1", "ConfigMap"), "/v1, Kind=ConfigMap");
    }
}
