//! Names with Go's string forms (`GroupKind`, GVR/GVK strings) and a small REST mapper over
//! aggregated discovery with kubectl's matching rules ([`ApiIndex`]).

use std::fmt;

use kube::Client;
use kube::core::ApiResource;

use super::list::error_text;

use crate::causes::with_causes;

/// Why [`ApiIndex`] could not load or map: each displays as kubectl (Go's REST mapper) words it.
#[derive(Debug, thiserror::Error)]
pub enum MapperError {
    /// The aggregated discovery requests failed (the apiserver's answer in kubectl's words is
    /// part of the message, so the client error is data, not a source).
    #[error("discovery failed: {}", error_text(.0))]
    Discovery(kube::Error),
    /// The aggregated discovery lists could not be read back as JSON.
    #[error("discovery failed")]
    DiscoveryDecode(#[source] serde_json::Error),
    /// `RESTMapping(GroupKind, version)` found nothing (Go's `NoKindMatchError`).
    #[error("no matches for kind {kind:?} in version {group_version:?}")]
    NoKindMatch { kind: String, group_version: String },
    /// `RESTMapping(GroupKind)` found nothing in any version.
    #[error("no matches for kind {kind:?} in group {group:?}")]
    NoGroupKindMatch { kind: String, group: String },
    /// `KindFor` was given no resource (`gvr` is Go's GVR string).
    #[error("a resource must be present, got: {gvr}")]
    ResourceRequired { gvr: String },
    /// `KindFor` found nothing (`gvr` is Go's GVR string).
    #[error("no matches for {gvr}")]
    NoResourceMatch { gvr: String },
}

impl From<MapperError> for super::Error {
    /// A discovery failure of [`ApiIndex::load`] as the cluster's catch-all failure, as before.
    fn from(error: MapperError) -> Self {
        super::Error::Other(with_causes(&error))
    }
}

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
    printed_kind_name(&api_resource.group, &api_resource.kind, name)
}

/// [`printed_name`] of a group and kind as written (`GroupKind::parse` reads `Kind[.group]`).
pub fn printed_kind_name(group: &str, kind: &str, name: &str) -> String {
    let kind = kind.to_lowercase();
    if group.is_empty() { format!("{kind}/{name}") } else { format!("{kind}.{group}/{name}") }
}

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
    /// Discovery's categories (`all`, …): each category with the index in `entries` of a
    /// resource in it, in discovery order (see [`ApiIndex::category`]).
    categories: Vec<(String, usize)>,
}

impl ApiIndex {
    /// Aggregated discovery of `/api` and `/apis` (two requests).
    pub async fn load(client: &Client) -> Result<Self, MapperError> {
        let (core, groups) =
            futures::try_join!(client.list_core_api_versions_aggregated(), client.list_api_groups_aggregated())
                .map_err(MapperError::Discovery)?;
        let as_json = |list| serde_json::to_value(list).map_err(MapperError::DiscoveryDecode);
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
        let mut categories = Vec::new();
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
                    for category in strings(resource.get("categories")) {
                        categories.push((category, entries.len()));
                    }
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
        Self { entries, categories }
    }

    /// Every resource, in discovery's order.
    pub fn entries(&self) -> &[ApiEntry] {
        &self.entries
    }

    /// An index from plain entries (tests).
    pub fn from_entries(entries: Vec<ApiEntry>) -> Self {
        Self { entries, categories: Vec::new() }
    }

    /// The resources of a discovery category (`all`), in discovery order (every version of
    /// each), as client-go's category expander lists them; `None` for an unknown category.
    pub fn category(&self, name: &str) -> Option<Vec<&ApiEntry>> {
        let members: Vec<&ApiEntry> = self
            .categories
            .iter()
            .filter(|(category, _)| category == name)
            .map(|&(_, index)| &self.entries[index])
            .collect();
        (!members.is_empty()).then_some(members)
    }

    /// `RESTMapping(GroupKind{group, kind}, version)`: error text as Go's `NoKindMatchError`.
    pub fn for_gvk(&self, group: &str, version: &str, kind: &str) -> Result<&ApiEntry, MapperError> {
        self.entries
            .iter()
            .find(|e| e.api_resource.group == group && e.api_resource.version == version && e.api_resource.kind == kind)
            .ok_or_else(|| MapperError::NoKindMatch {
                kind: kind.to_owned(),
                group_version: group_version_string(group, version),
            })
    }

    /// `RESTMapping(GroupKind)` (preferred version first).
    pub fn for_group_kind(&self, gk: &GroupKind) -> Result<&ApiEntry, MapperError> {
        let mut matches =
            self.entries.iter().filter(|e| e.api_resource.group == gk.group && e.api_resource.kind == gk.kind);
        let first = matches.next();
        self.entries
            .iter()
            .find(|e| e.preferred && e.api_resource.group == gk.group && e.api_resource.kind == gk.kind)
            .or(first)
            .ok_or_else(|| MapperError::NoGroupKindMatch { kind: gk.kind.clone(), group: gk.group.clone() })
    }

    /// `KindFor(GroupVersionResource)` with kubectl's short-name expansion: the resource matches
    /// a plural, singular or short name (lower-cased); an empty group or version matches any.
    pub fn for_resource(&self, group: &str, version: &str, resource: &str) -> Result<&ApiEntry, MapperError> {
        if resource.is_empty() {
            return Err(MapperError::ResourceRequired { gvr: gvr_string(group, version, resource) });
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
            .ok_or_else(|| MapperError::NoResourceMatch { gvr: gvr_string(group, version, resource) })
    }
}
