//! A resource argument of a kubectl command line (`cm`, `deploy`, `deployments.apps`,
//! `deploy.v1.apps`, `Deployment`, `storageclass.storage`) resolved against discovery as
//! kubectl resolves it: cli-runtime's `Builder.mappingFor` over client-go's shortcut expander
//! and priority REST mapper (core group first, then the groups in discovery order; preferred
//! versions before the others). Pure: it reads an [`ApiIndex`] only.

use super::mapper::{ApiEntry, ApiIndex, GroupKind};

/// Why a resource argument names no resource.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceArgError {
    /// Neither a resource nor a kind of that name: kubectl's message, naming the part of the
    /// argument before its first `.`.
    #[error("the server doesn't have a resource type {resource:?}")]
    NoResourceType { resource: String },
}

/// A group, version and resource as the command line gave them (any part may be empty).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct PartialResource {
    group: String,
    version: String,
    resource: String,
}

/// Go's `schema.ParseResourceArg`: `resource.version.group` is fully specified when the
/// argument has two dots or more; the group-resource form splits at the first dot.
fn parse_resource_arg(arg: &str) -> (Option<PartialResource>, PartialResource) {
    let fully = (arg.matches('.').count() >= 2).then(|| {
        let mut parts = arg.splitn(3, '.');
        let (resource, version, group) =
            (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        PartialResource { group: group.into(), version: version.into(), resource: resource.into() }
    });
    let group_resource = match arg.split_once('.') {
        Some((resource, group)) => {
            PartialResource { group: group.into(), resource: resource.into(), ..Default::default() }
        }
        None => PartialResource { resource: arg.into(), ..Default::default() },
    };
    (fully, group_resource)
}

/// Go's `schema.ParseKindArg`: `(kind, version, group)` when fully specified (two dots or
/// more), and the group-kind form.
fn parse_kind_arg(arg: &str) -> (Option<(String, String, String)>, GroupKind) {
    let fully = (arg.matches('.').count() >= 2).then(|| {
        let mut parts = arg.splitn(3, '.');
        let kind = parts.next().unwrap_or("").to_owned();
        let version = parts.next().unwrap_or("").to_owned();
        (kind, version, parts.next().unwrap_or("").to_owned())
    });
    (fully, GroupKind::parse(arg))
}

impl ApiIndex {
    /// The resource a command-line argument names (`Builder.mappingFor`): first as a resource
    /// (plural, singular or short name), then as a kind.
    pub fn mapping_for(&self, arg: &str) -> Result<&ApiEntry, ResourceArgError> {
        let (fully, group_resource) = parse_resource_arg(arg);
        let by_resource = fully.and_then(|gvr| self.kind_for(gvr)).or_else(|| self.kind_for(group_resource.clone()));
        if let Some(entry) = by_resource {
            return Ok(entry);
        }
        let (fully, group_kind) = parse_kind_arg(arg);
        let (kind, version, group) =
            fully.unwrap_or_else(|| (group_kind.kind.clone(), String::new(), group_kind.group.clone()));
        let by_kind = if kind.is_empty() && version.is_empty() && group.is_empty() {
            None
        } else if version.is_empty() {
            self.for_group_kind(&GroupKind::new(&group, &kind)).ok()
        } else {
            self.for_gvk(&group, &version, &kind).ok()
        };
        by_kind
            .or_else(|| self.for_group_kind(&group_kind).ok())
            .ok_or(ResourceArgError::NoResourceType { resource: group_resource.resource })
    }

    /// client-go's category expansion of one comma-separated part of a type argument
    /// (`Builder.ReplaceAliases`): `all` becomes `pods,services,…,deployments.apps,…`; any
    /// other word stays as it is.
    pub fn replace_alias(&self, word: &str) -> String {
        let Some(members) = self.category(word) else { return word.to_owned() };
        let names: Vec<String> = members
            .iter()
            .map(|entry| {
                let resource = &entry.api_resource;
                if resource.group.is_empty() {
                    resource.plural.clone()
                } else {
                    format!("{}.{}", resource.plural, resource.group)
                }
            })
            .collect();
        names.join(",")
    }

    /// `KindFor` through the shortcut expander: the resource after short-name expansion,
    /// picked by priority when several match.
    fn kind_for(&self, wanted: PartialResource) -> Option<&ApiEntry> {
        let wanted = self.expand_shortcut(wanted);
        let resource = wanted.resource.to_lowercase();
        if resource.is_empty() {
            return None;
        }
        let names = |e: &ApiEntry| e.api_resource.plural == resource || e.singular == resource;
        let candidates: Vec<&ApiEntry> = match (wanted.group.is_empty(), wanted.version.is_empty()) {
            (false, false) => self
                .entries()
                .iter()
                .filter(|e| {
                    e.api_resource.group == wanted.group && e.api_resource.version == wanted.version && names(e)
                })
                .collect(),
            (false, true) => {
                let exact: Vec<&ApiEntry> =
                    self.entries().iter().filter(|e| e.api_resource.group == wanted.group && names(e)).collect();
                if exact.is_empty() {
                    // `storageclass.storage` matches `storage.k8s.io`.
                    self.entries()
                        .iter()
                        .filter(|e| e.api_resource.group.starts_with(&wanted.group) && names(e))
                        .collect()
                } else {
                    exact
                }
            }
            (true, false) => {
                self.entries().iter().filter(|e| e.api_resource.version == wanted.version && names(e)).collect()
            }
            (true, true) => self.entries().iter().filter(|e| names(e)).collect(),
        };
        // The priority mapper: preferred versions in group order, then any version.
        candidates.iter().find(|e| e.preferred).or_else(|| candidates.first()).copied()
    }

    /// client-go's `expandResourceShortcut`: a full resource name (plural or singular) stays;
    /// else the first short name that matches becomes its resource (and group, the version
    /// dropped); else a short name of a group the given group prefixes.
    fn expand_shortcut(&self, wanted: PartialResource) -> PartialResource {
        let in_group = |e: &&ApiEntry| wanted.group.is_empty() || e.api_resource.group == wanted.group;
        if self
            .entries()
            .iter()
            .filter(in_group)
            .any(|e| e.api_resource.plural == wanted.resource || e.singular == wanted.resource)
        {
            return wanted;
        }
        if let Some(entry) = self.entries().iter().filter(in_group).find(|e| e.short_names.contains(&wanted.resource)) {
            let resource = &entry.api_resource;
            return PartialResource {
                group: resource.group.clone(),
                version: String::new(),
                resource: resource.plural.clone(),
            };
        }
        if wanted.group.is_empty() {
            return wanted;
        }
        match self
            .entries()
            .iter()
            .find(|e| e.api_resource.group.starts_with(&wanted.group) && e.short_names.contains(&wanted.resource))
        {
            Some(entry) => PartialResource {
                group: entry.api_resource.group.clone(),
                resource: entry.api_resource.plural.clone(),
                ..wanted
            },
            None => wanted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Discovery as a v1.33 apiserver answers it (aggregated), trimmed to what the rules need:
    /// `events` in two groups, `autoscaling` preferring v2, a CRD with a short name that is
    /// also another resource's short name, and the `all` category.
    fn index() -> ApiIndex {
        let resource = |plural: &str, singular: &str, kind: &str, short: &[&str], categories: &[&str]| {
            serde_json::json!({"resource": plural, "singularResource": singular, "responseKind": {"kind": kind},
                "scope": "Namespaced", "shortNames": short, "categories": categories, "verbs": ["get", "list"]})
        };
        let core = serde_json::json!({"kind": "APIGroupDiscoveryList", "items": [{"metadata": {"name": ""}, "versions": [
            {"version": "v1", "resources": [
                resource("configmaps", "configmap", "ConfigMap", &["cm"], &[]),
                resource("events", "event", "Event", &["ev"], &[]),
                resource("pods", "pod", "Pod", &["po"], &["all"]),
                resource("pods/status", "", "Pod", &[], &[]),
                resource("services", "service", "Service", &["svc"], &["all"]),
            ]}
        ]}]});
        let groups = serde_json::json!({"kind": "APIGroupDiscoveryList", "items": [
            {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "resources": [
                resource("deployments", "deployment", "Deployment", &["deploy"], &["all"]),
            ]}]},
            {"metadata": {"name": "events.k8s.io"}, "versions": [{"version": "v1", "resources": [
                resource("events", "event", "Event", &["ev"], &[]),
            ]}]},
            {"metadata": {"name": "autoscaling"}, "versions": [
                {"version": "v2", "resources": [resource("horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", &["hpa"], &["all"])]},
                {"version": "v1", "resources": [resource("horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", &["hpa"], &["all"])]},
            ]},
            {"metadata": {"name": "storage.k8s.io"}, "versions": [{"version": "v1", "resources": [
                resource("storageclasses", "storageclass", "StorageClass", &["sc"], &[]),
            ]}]},
            {"metadata": {"name": "example.com"}, "versions": [{"version": "v1beta1", "resources": [
                resource("widgets", "widget", "Widget", &["cm", "wd"], &[]),
            ]}]},
        ]});
        ApiIndex::from_aggregated(&[&core, &groups])
    }

    /// `group/version/plural` of what an argument resolves to.
    fn resolved(arg: &str) -> String {
        match index().mapping_for(arg) {
            Ok(entry) => {
                let resource = &entry.api_resource;
                format!("{}/{}/{}", resource.group, resource.version, resource.plural)
            }
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn plural_singular_short_name_and_kind() {
        assert_eq!(resolved("configmaps"), "/v1/configmaps");
        assert_eq!(resolved("configmap"), "/v1/configmaps");
        assert_eq!(resolved("ConfigMap"), "/v1/configmaps", "a kind is its singular, lower-cased");
        assert_eq!(resolved("deploy"), "apps/v1/deployments");
        assert_eq!(resolved("Deployment"), "apps/v1/deployments");
        assert_eq!(resolved("svc"), "/v1/services");
    }

    #[test]
    fn groups_and_versions() {
        assert_eq!(resolved("deployments.apps"), "apps/v1/deployments");
        assert_eq!(resolved("deploy.apps"), "apps/v1/deployments");
        assert_eq!(resolved("deploy.v1.apps"), "apps/v1/deployments");
        assert_eq!(resolved("deployment.v1.apps"), "apps/v1/deployments");
        assert_eq!(resolved("Deployment.v1.apps"), "apps/v1/deployments");
        assert_eq!(resolved("Deployment.apps"), "apps/v1/deployments");
        assert_eq!(resolved("events.events.k8s.io"), "events.k8s.io/v1/events");
        assert_eq!(
            resolved("hpa.v1.autoscaling"),
            "autoscaling/v2/horizontalpodautoscalers",
            "a short name drops the version"
        );
        assert_eq!(resolved("horizontalpodautoscalers.v1.autoscaling"), "autoscaling/v1/horizontalpodautoscalers");
        // A group prefix: `storageclass.storage` is `storage.k8s.io`'s.
        assert_eq!(resolved("storageclass.storage"), "storage.k8s.io/v1/storageclasses");
        assert_eq!(resolved("sc.storage"), "storage.k8s.io/v1/storageclasses");
    }

    #[test]
    fn priority_core_first_then_discovery_order() {
        assert_eq!(resolved("events"), "/v1/events");
        assert_eq!(resolved("ev"), "/v1/events");
        assert_eq!(resolved("hpa"), "autoscaling/v2/horizontalpodautoscalers", "the preferred version");
        // The first resource whose short name matches wins (kubectl warns about the others).
        assert_eq!(resolved("cm"), "/v1/configmaps");
        assert_eq!(resolved("cm.example.com"), "example.com/v1beta1/widgets");
        assert_eq!(resolved("wd"), "example.com/v1beta1/widgets");
    }

    #[test]
    fn unknown_types_say_what_kubectl_says() {
        assert_eq!(resolved("bogus"), r#"the server doesn't have a resource type "bogus""#);
        assert_eq!(resolved("bogus.apps"), r#"the server doesn't have a resource type "bogus""#);
        assert_eq!(resolved("deployments.v9.apps"), r#"the server doesn't have a resource type "deployments""#);
        assert_eq!(resolved("CM"), r#"the server doesn't have a resource type "CM""#, "short names are case-sensitive");
        assert_eq!(resolved("pods/status"), r#"the server doesn't have a resource type "pods/status""#);
        assert_eq!(resolved(""), r#"the server doesn't have a resource type """#);
    }

    #[test]
    fn categories_expand_in_discovery_order() {
        let index = index();
        assert_eq!(
            index.replace_alias("all"),
            "pods,services,deployments.apps,horizontalpodautoscalers.autoscaling,horizontalpodautoscalers.autoscaling"
        );
        assert_eq!(index.replace_alias("cm"), "cm");
    }

    #[test]
    fn argument_forms() {
        let (fully, group_resource) = parse_resource_arg("deploy.v1.apps");
        assert_eq!(
            fully,
            Some(PartialResource { group: "apps".into(), version: "v1".into(), resource: "deploy".into() })
        );
        assert_eq!(
            group_resource,
            PartialResource { group: "v1.apps".into(), resource: "deploy".into(), ..Default::default() }
        );
        let (fully, group_kind) = parse_kind_arg("Ingress.v1.networking.k8s.io");
        assert_eq!(fully, Some(("Ingress".into(), "v1".into(), "networking.k8s.io".into())));
        assert_eq!(group_kind, GroupKind::new("v1.networking.k8s.io", "Ingress"));
        assert_eq!(parse_resource_arg("cm").0, None);
    }
}
