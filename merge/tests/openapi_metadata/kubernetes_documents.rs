//! Kubernetes documents: a hand-written apps/v1 fragment and the real apps/v1 document of v1.33.

use std::path::PathBuf;

use applyset_merge::openapi::{OpenApi, OpenApiVersion};
use applyset_merge::{PatchMeta, SchemaRef};

use super::{json, lookup_error, lookup_slice, meta, openapi, read, walk};

// ---------------------------------------------------------------------------------------------
// A hand-written core/v1 + apps/v1 v3 fragment, shaped like what the API server serves.

const APPS_FRAGMENT: &str = r##"{
  "openapi": "3.0.0",
  "paths": {
    "/apis/apps/v1/namespaces/{namespace}/deployments/{name}": {
      "patch": {
        "x-kubernetes-group-version-kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
        "requestBody": {"content": {
          "application/apply-patch+yaml": {}, "application/json-patch+json": {},
          "application/merge-patch+json": {}, "application/strategic-merge-patch+json": {}
        }}
      }
    },
    "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}": {
      "patch": {
        "x-kubernetes-group-version-kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
        "requestBody": {"content": {"application/json-patch+json": {}, "application/merge-patch+json": {}}}
      }
    },
    "/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}": {
      "patch": {"x-kubernetes-group-version-kind": {"group": "example.com", "version": "v1", "kind": "Gadget"}}
    }
  },
  "components": {"schemas": {
    "io.k8s.api.apps.v1.Deployment": {
      "type": "object",
      "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "default": {}},
        "spec": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}], "default": {}}
      },
      "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    },
    "io.k8s.api.apps.v1.DeploymentSpec": {
      "type": "object",
      "properties": {
        "replicas": {"type": "integer", "format": "int32"},
        "selector": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"},
        "strategy": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}], "default": {},
                     "x-kubernetes-patch-strategy": "retainKeys"},
        "template": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec"}], "default": {}}
      }
    },
    "io.k8s.api.apps.v1.DeploymentStrategy": {
      "type": "object",
      "properties": {"type": {"type": "string"}, "rollingUpdate": {"type": "object"}}
    },
    "io.k8s.api.core.v1.PodTemplateSpec": {
      "type": "object",
      "properties": {
        "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "default": {}},
        "spec": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}], "default": {}}
      }
    },
    "io.k8s.api.core.v1.PodSpec": {
      "type": "object",
      "properties": {
        "containers": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}], "default": {}},
                       "x-kubernetes-list-map-keys": ["name"], "x-kubernetes-list-type": "map",
                       "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"},
        "tolerations": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Toleration"}], "default": {}},
                        "x-kubernetes-list-type": "atomic"},
        "volumes": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Volume"}], "default": {}},
                    "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge,retainKeys"},
        "nodeSelector": {"type": "object", "additionalProperties": {"type": "string", "default": ""}}
      }
    },
    "io.k8s.api.core.v1.Container": {
      "type": "object",
      "properties": {
        "name": {"type": "string", "default": ""},
        "image": {"type": "string"},
        "args": {"type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "atomic"},
        "env": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.EnvVar"}], "default": {}},
                "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"},
        "ports": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.ContainerPort"}], "default": {}},
                  "x-kubernetes-list-map-keys": ["containerPort", "protocol"], "x-kubernetes-list-type": "map",
                  "x-kubernetes-patch-merge-key": "containerPort", "x-kubernetes-patch-strategy": "merge"},
        "resources": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.ResourceRequirements"}], "default": {}}
      }
    },
    "io.k8s.api.core.v1.EnvVar": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"}}},
    "io.k8s.api.core.v1.ContainerPort": {"type": "object", "properties": {"containerPort": {"type": "integer"}, "protocol": {"type": "string"}}},
    "io.k8s.api.core.v1.ResourceRequirements": {
      "type": "object",
      "properties": {"limits": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}}}
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
    "io.k8s.api.core.v1.Toleration": {"type": "object", "properties": {"key": {"type": "string"}}},
    "io.k8s.api.core.v1.Volume": {"type": "object", "properties": {"name": {"type": "string"}}},
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector": {"type": "object", "properties": {"matchLabels": {"type": "object"}}},
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
      "type": "object",
      "properties": {
        "name": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
        "finalizers": {"type": "array", "items": {"type": "string", "default": ""},
                       "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge"}
      }
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions": {
      "type": "object", "properties": {"dryRun": {"type": "array", "items": {"type": "string"}}},
      "x-kubernetes-group-version-kind": [{"group": "", "kind": "DeleteOptions", "version": "v1"},
                                          {"group": "apps", "kind": "DeleteOptions", "version": "v1"}]
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions_v2": {
      "type": "object", "properties": {"propagationPolicy": {"type": "string"}},
      "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "DeleteOptions", "version": "v1"}]
    }
  }}
}"##;

fn pod_spec(deployment: &SchemaRef) -> SchemaRef {
    walk(deployment, &["spec", "template", "spec"]).0
}

#[test]
fn deployment_metadata_from_a_v3_fragment() {
    let apps = openapi(APPS_FRAGMENT);
    let deployment = apps.schema_for_gvk("apps", "v1", "Deployment").expect("Deployment by GVK");
    let pod = pod_spec(&deployment);

    let (container, containers_meta) = lookup_slice(&pod, "containers");
    assert_eq!(containers_meta, meta("merge", "name"));
    assert_eq!(lookup_slice(&container, "env").1, meta("merge", "name"));
    // Only the single patch merge key counts; list-map-keys are ignored.
    assert_eq!(lookup_slice(&container, "ports").1, meta("merge", "containerPort"));
    assert_eq!(lookup_slice(&container, "args").1, PatchMeta::default());
    // list-type without a patch strategy: atomic.
    assert_eq!(lookup_slice(&pod, "tolerations").1, PatchMeta::default());
    assert_eq!(lookup_slice(&pod, "volumes").1, meta("merge,retainKeys", "name"));
    let (env_var, _) = lookup_slice(&container, "env");
    assert!(env_var.lookup_struct("value").is_ok());

    assert_eq!(walk(&deployment, &["spec", "strategy"]).1, meta("retainKeys", ""));
    assert_eq!(walk(&deployment, &["metadata", "finalizers[]"]).1, meta("merge", ""));
    assert_eq!(walk(&deployment, &["spec", "template", "metadata", "finalizers[]"]).1, meta("merge", ""));
    // Maps merge key by key, but cannot be looked into (values that are objects would fail).
    let (labels, _) = walk(&deployment, &["metadata", "labels"]);
    assert_eq!(lookup_error(labels.lookup_struct("app")), r#"unable to find api field "app""#);
    let (limits, _) = walk(&container, &["resources", "limits"]);
    assert_eq!(lookup_error(limits.lookup_struct("cpu")), r#"unable to find api field "cpu""#);
    assert_eq!(lookup_error(deployment.lookup_struct("status")), r#"unable to find api field "status""#);

    // The same node by name.
    let by_name = apps.schema("io.k8s.api.apps.v1.Deployment").unwrap();
    assert_eq!(lookup_slice(&pod_spec(&by_name), "containers").1, meta("merge", "name"));
}

#[test]
fn gvk_index_and_strategic_merge_support_from_a_v3_fragment() {
    let apps = openapi(APPS_FRAGMENT);
    assert!(apps.supports_strategic_merge("apps", "v1", "Deployment"));
    // A custom resource: merge patch only, so kubectl skips OpenAPI and uses JSON merge patch.
    assert!(!apps.supports_strategic_merge("example.com", "v1", "Widget"));
    // A PATCH operation without requestBody: malformed, not supported.
    assert!(!apps.supports_strategic_merge("example.com", "v1", "Gadget"));
    assert!(!apps.supports_strategic_merge("apps", "v1", "StatefulSet"));
    assert!(!apps.supports_strategic_merge("", "v1", "Deployment"));

    assert!(apps.schema_for_gvk("apps", "v1", "StatefulSet").is_none());
    assert!(apps.schema_for_gvk("apps", "v2", "Deployment").is_none());
    // Several schemas claim apps/v1 DeleteOptions: the greatest name wins, every time.
    let options = apps.schema_for_gvk("apps", "v1", "DeleteOptions").unwrap();
    assert!(options.lookup_struct("propagationPolicy").is_ok());
    let core_options = apps.schema_for_gvk("", "v1", "DeleteOptions").unwrap();
    assert!(core_options.lookup_struct("dryRun").is_ok());
}

// ---------------------------------------------------------------------------------------------
// The real apps/v1 document of Kubernetes v1.33 (fixture shared with the seed scenarios).

#[test]
fn kubernetes_apps_v1_document() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/openapi/apps-v1.json");
    let apps = OpenApi::from_document(json(&read(path))).unwrap();
    assert_eq!(apps.version(), OpenApiVersion::V3);
    for kind in ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"] {
        assert!(apps.supports_strategic_merge("apps", "v1", kind), "{kind}");
        assert!(apps.schema_for_gvk("apps", "v1", kind).is_some(), "{kind}");
    }
    let deployment = apps.schema_for_gvk("apps", "v1", "Deployment").unwrap();
    let pod = pod_spec(&deployment);
    let (container, containers_meta) = lookup_slice(&pod, "containers");
    assert_eq!(containers_meta, meta("merge", "name"));
    assert_eq!(lookup_slice(&container, "env").1, meta("merge", "name"));
    assert_eq!(lookup_slice(&container, "ports").1, meta("merge", "containerPort"));
    assert_eq!(lookup_slice(&container, "volumeMounts").1, meta("merge", "mountPath"));
    assert_eq!(lookup_slice(&pod, "volumes").1, meta("merge,retainKeys", "name"));
    assert_eq!(lookup_slice(&pod, "tolerations").1, PatchMeta::default());
    assert_eq!(walk(&deployment, &["spec", "strategy"]).1, meta("retainKeys", ""));
    assert_eq!(walk(&deployment, &["metadata", "finalizers[]"]).1, meta("merge", ""));
    assert_eq!(walk(&deployment, &["metadata", "ownerReferences[]"]).1, meta("merge", "uid"));
    assert_eq!(walk(&deployment, &["status", "conditions[]"]).1, meta("merge", "type"));
}
