//! What the fake apiserver serves: its resources, their aggregated discovery and the OpenAPI v3
//! documents the apply path reads patch metadata from (a minimal schema per built-in kind: the
//! v3 lookup is lenient where nothing differs, so only the fields a test changes need one).

use serde_json::{Value, json};

/// One served resource.
pub(super) struct Resource {
    pub(super) group: &'static str,
    pub(super) version: &'static str,
    pub(super) plural: &'static str,
    pub(super) kind: &'static str,
    pub(super) namespaced: bool,
    /// Has a `status` subresource: writes to the object keep its status, and bump its
    /// generation when anything else changes.
    pub(super) status: bool,
}

impl Resource {
    pub(super) fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.to_owned() } else { format!("{}/{}", self.group, self.version) }
    }

    /// The OpenAPI v3 group-version path (`api/v1`, `apis/apps/v1`).
    fn gv_path(&self) -> String {
        if self.group.is_empty() {
            format!("api/{}", self.version)
        } else {
            format!("apis/{}/{}", self.group, self.version)
        }
    }
}

const fn resource(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    status: bool,
) -> Resource {
    Resource { group, version, plural, kind, namespaced, status }
}

/// Core first, then the groups in discovery order.
pub(super) const RESOURCES: &[Resource] = &[
    resource("", "v1", "configmaps", "ConfigMap", true, false),
    resource("", "v1", "secrets", "Secret", true, false),
    resource("", "v1", "namespaces", "Namespace", false, true),
    resource("", "v1", "events", "Event", true, false),
    resource("", "v1", "pods", "Pod", true, true),
    resource("apps", "v1", "deployments", "Deployment", true, true),
    resource("applyset.dev", "v1alpha1", "applysets", "ApplySet", true, true),
    resource("applyset.dev", "v1alpha1", "applysetrecords", "ApplySetRecord", true, false),
    resource("events.k8s.io", "v1", "events", "Event", true, false),
    resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false, true),
    resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", false, false),
];

pub(super) fn find(group: &str, version: &str, plural: &str) -> Option<&'static Resource> {
    RESOURCES.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
}

pub(super) fn by_kind(api_version: &str, kind: &str) -> Option<&'static Resource> {
    RESOURCES.iter().find(|r| r.api_version() == api_version && r.kind == kind)
}

/// `/api` (`core`) or `/apis` as an `APIGroupDiscoveryList` (apidiscovery.k8s.io/v2).
pub(super) fn discovery(core: bool) -> Value {
    let mut groups: Vec<(&str, &str, Vec<Value>)> = Vec::new();
    for r in RESOURCES.iter().filter(|r| r.group.is_empty() == core) {
        let verbs = match r.plural {
            "selfsubjectaccessreviews" => json!(["create"]),
            _ => json!(["create", "delete", "get", "list", "patch", "update", "watch"]),
        };
        let entry = json!({
            "resource": r.plural,
            "responseKind": { "group": r.group, "version": r.version, "kind": r.kind },
            "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": r.kind.to_lowercase(),
            "verbs": verbs,
        });
        match groups.iter_mut().find(|(g, v, _)| *g == r.group && *v == r.version) {
            Some((_, _, resources)) => resources.push(entry),
            None => groups.push((r.group, r.version, vec![entry])),
        }
    }
    let items: Vec<Value> = groups
        .into_iter()
        .map(|(group, version, resources)| {
            json!({
                "metadata": { "name": group },
                "versions": [{ "version": version, "resources": resources, "freshness": "Current" }],
            })
        })
        .collect();
    json!({ "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items })
}

/// `/openapi/v3`: where each group-version's document is.
pub(super) fn openapi_index() -> Value {
    let mut paths = serde_json::Map::new();
    for r in RESOURCES.iter().filter(|r| schema(r.kind).is_some()) {
        let url = format!("/openapi/v3/{}?hash=fake", r.gv_path());
        paths.insert(r.gv_path(), json!({ "serverRelativeURL": url }));
    }
    json!({ "paths": paths })
}

/// The v3 document of a group-version (`api/v1`), if it serves kinds with a schema.
pub(super) fn openapi_document(gv_path: &str) -> Option<Value> {
    let kinds: Vec<&Resource> =
        RESOURCES.iter().filter(|r| r.gv_path() == gv_path && schema(r.kind).is_some()).collect();
    if kinds.is_empty() {
        return None;
    }
    let mut schemas = serde_json::Map::new();
    schemas.insert(OBJECT_META.into(), object_meta());
    let mut paths = serde_json::Map::new();
    for r in kinds {
        let gvk = json!({ "group": r.group, "version": r.version, "kind": r.kind });
        let mut kind_schema = schema(r.kind)?;
        kind_schema["x-kubernetes-group-version-kind"] = json!([gvk]);
        schemas.insert(format!("fake.{}.{}", r.gv_path(), r.kind), kind_schema);
        let scope = if r.namespaced { "/namespaces/{namespace}" } else { "" };
        let content = json!({
            "application/strategic-merge-patch+json": {},
            "application/merge-patch+json": {},
            "application/apply-patch+yaml": {},
        });
        paths.insert(
            format!("/{}{scope}/{}/{{name}}", r.gv_path(), r.plural),
            json!({ "patch": { "x-kubernetes-group-version-kind": gvk, "requestBody": { "content": content } } }),
        );
    }
    Some(json!({ "openapi": "3.0.0", "paths": paths, "components": { "schemas": schemas } }))
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

fn strings() -> Value {
    json!({ "type": "object", "additionalProperties": { "type": "string" } })
}

fn object_meta() -> Value {
    json!({ "type": "object", "properties": {
        "name": { "type": "string" },
        "generateName": { "type": "string" },
        "namespace": { "type": "string" },
        "uid": { "type": "string" },
        "resourceVersion": { "type": "string" },
        "generation": { "type": "integer" },
        "creationTimestamp": { "type": "string" },
        "deletionTimestamp": { "type": "string" },
        "labels": strings(),
        "annotations": strings(),
        "finalizers": { "type": "array", "items": { "type": "string" }, "x-kubernetes-patch-strategy": "merge" },
        "ownerReferences": {
            "type": "array",
            "items": { "type": "object", "properties": { "uid": { "type": "string" } } },
            "x-kubernetes-patch-merge-key": "uid",
            "x-kubernetes-patch-strategy": "merge",
        },
        "managedFields": { "type": "array", "items": { "type": "object" } },
    }})
}

/// The root schema of a kind with strategic merge patch, `None` for the others.
fn schema(kind: &str) -> Option<Value> {
    let metadata = json!({ "allOf": [{ "$ref": format!("#/components/schemas/{OBJECT_META}") }] });
    let mut properties = json!({
        "apiVersion": { "type": "string" },
        "kind": { "type": "string" },
        "metadata": metadata,
    });
    let extra = match kind {
        "ConfigMap" => json!({ "data": strings(), "binaryData": strings(), "immutable": { "type": "boolean" } }),
        "Secret" => json!({
            "data": strings(),
            "stringData": strings(),
            "type": { "type": "string" },
            "immutable": { "type": "boolean" },
        }),
        "Namespace" => json!({
            "spec": { "type": "object", "properties": { "finalizers": { "type": "array", "items": { "type": "string" } } } },
            "status": { "type": "object", "properties": { "phase": { "type": "string" } } },
        }),
        "Deployment" => json!({
            "spec": { "type": "object", "properties": {
                "replicas": { "type": "integer" },
                "selector": { "type": "object", "properties": { "matchLabels": strings() } },
                "template": { "type": "object", "properties": {
                    "metadata": metadata,
                    "spec": { "type": "object", "properties": { "containers": {
                        "type": "array",
                        "items": { "type": "object", "properties": {
                            "name": { "type": "string" },
                            "image": { "type": "string" },
                        }},
                        "x-kubernetes-patch-merge-key": "name",
                        "x-kubernetes-patch-strategy": "merge",
                    }}},
                }},
            }},
            "status": { "type": "object", "properties": { "replicas": { "type": "integer" } } },
        }),
        _ => return None,
    };
    for (key, value) in extra.as_object()? {
        properties[key] = value.clone();
    }
    Some(json!({ "type": "object", "properties": properties }))
}
