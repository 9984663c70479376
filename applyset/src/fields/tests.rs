//! The finders against a Deployment-shaped schema (strategic merge, lists merged by key) and
//! JSON merge (custom resources).

use applyset_merge::openapi::OpenApi;
use applyset_merge::{SchemaRef, Value, json_merge};

use super::*;

fn json(text: &str) -> Value {
    Value::from_json_str(text).unwrap()
}

/// A Deployment's patch metadata where it matters here: containers and env merged by name.
fn deployment_schema() -> SchemaRef {
    let doc = json(
        r##"{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{},"components":{"schemas":{
        "Deployment":{"type":"object","properties":{
            "metadata":{"$ref":"#/components/schemas/Meta"},
            "spec":{"type":"object","properties":{"replicas":{"type":"integer"},"template":{"type":"object","properties":{
                "metadata":{"$ref":"#/components/schemas/Meta"},
                "spec":{"type":"object","properties":{"containers":{"type":"array","x-kubernetes-patch-strategy":"merge","x-kubernetes-patch-merge-key":"name","items":{"$ref":"#/components/schemas/Container"}}}}}}}}}},
        "Meta":{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string"}},"annotations":{"type":"object","additionalProperties":{"type":"string"}}}},
        "Container":{"type":"object","properties":{"name":{"type":"string"},"image":{"type":"string"},
            "env":{"type":"array","x-kubernetes-patch-strategy":"merge","x-kubernetes-patch-merge-key":"name","items":{"$ref":"#/components/schemas/Env"}}}},
        "Env":{"type":"object","properties":{"name":{"type":"string"},"value":{"type":"string"}}}}}}"##,
    );
    OpenApi::from_document(doc).unwrap().schema("Deployment").unwrap()
}

struct Strategic(SchemaRef);

impl Merger for Strategic {
    fn merge(&self, doc: &Value, patch: &Value) -> applyset_merge::Result<Value> {
        applyset_merge::strategic_merge_patch(doc, patch, self.0.as_ref())
    }
    fn deletions(&self, original: &Value, modified: &Value) -> applyset_merge::Result<Value> {
        applyset_merge::create_three_way_merge_patch(original, modified, modified, self.0.as_ref(), true)
    }
    fn merges_lists(&self) -> bool {
        true
    }
}

struct JsonMerge;

impl Merger for JsonMerge {
    fn merge(&self, doc: &Value, patch: &Value) -> applyset_merge::Result<Value> {
        json_merge::merge_patch(doc, patch)
    }
    fn deletions(&self, original: &Value, modified: &Value) -> applyset_merge::Result<Value> {
        json_merge::create_three_way(original, modified, modified)
    }
    fn merges_lists(&self) -> bool {
        false
    }
}

fn deployment(env: &str, extra_template_annotations: &str) -> Value {
    json(&format!(
        r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"web"}},"spec":{{"template":{{"metadata":{{"labels":{{"app":"web"}}{extra_template_annotations}}},"spec":{{"containers":[{{"name":"app","image":"nginx","env":[{env}]}}]}}}}}}}}"#
    ))
}

const ANOTHER: &str = r#"{"name":"ANOTHER_ENV","value":"1"}"#;
const TO_BE_DELETED: &str = r#"{"name":"TO_BE_DELETED","value":"x"}"#;

fn with_managers(mut live: Value, entries: &str) -> Value {
    let metadata = live.as_object_mut().unwrap().get_mut("metadata").unwrap().as_object_mut().unwrap();
    metadata.insert("managedFields".into(), json(entries));
    live
}

/// The post-mortem: v1 set TO_BE_DELETED, v2 dropped it (so did the annotation), a rollback to
/// v1's template brought it back live, v3 is applied.
#[test]
fn the_rolled_back_env_var_is_stale_and_named_with_its_revision_and_manager() {
    let v1 = deployment(&format!("{TO_BE_DELETED},{ANOTHER}"), "");
    let v2 = deployment(ANOTHER, "");
    let v3 = deployment(ANOTHER, r#","annotations":{"v":"3"}"#);
    let live = with_managers(
        v1.clone(),
        r#"[{"manager":"kubectl-rollout","operation":"Update","fieldsV1":{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:env":{"k:{\"name\":\"TO_BE_DELETED\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}}]"#,
    );
    let history = [
        Version { revision: "v1".into(), manifest: v1.clone() },
        Version { revision: "v2".into(), manifest: v2.clone() },
    ];
    let merger = Strategic(deployment_schema());
    let found = stale_fields(&history, &v2, &v3, &live, &merger, &Guard::default()).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].path.to_string(), "spec.template.spec.containers[name=app].env[name=TO_BE_DELETED]");
    assert_eq!(found[0].applied_in.as_deref(), Some("v1"));
    assert_eq!(found[0].manager.as_deref(), Some("kubectl-rollout"));

    // Removal: kubectl's patch from an original that still holds it deletes exactly that.
    let fields: Vec<(&FieldPath, &Value)> = vec![(&found[0].path, &v1)];
    let original = original_with(&v2, &fields, &merger).unwrap();
    let patch = applyset_merge::create_three_way_merge_patch(&original, &v3, &live, merger.0.as_ref(), true).unwrap();
    let after = merger.merge(&live, &patch).unwrap();
    let env = json(&format!("[{ANOTHER}]"));
    let containers = &after.as_object().unwrap()["spec"].as_object().unwrap()["template"].as_object().unwrap()["spec"];
    assert_eq!(containers.as_object().unwrap()["containers"].as_array().unwrap()[0].as_object().unwrap()["env"], env);
}

#[test]
fn nothing_is_stale_when_the_annotation_or_git_still_has_it_or_it_is_gone() {
    let v1 = deployment(&format!("{TO_BE_DELETED},{ANOTHER}"), "");
    let v2 = deployment(ANOTHER, "");
    let merger = Strategic(deployment_schema());
    let history = [Version { revision: "v1".into(), manifest: v1.clone() }];
    // Still in git.
    assert!(stale_fields(&history, &v1, &v1, &v1, &merger, &Guard::default()).unwrap().is_empty());
    // The annotation has it: kubectl's own patch deletes it.
    assert!(stale_fields(&history, &v1, &v2, &v1, &merger, &Guard::default()).unwrap().is_empty());
    // Not live any more.
    assert!(stale_fields(&history, &v2, &v2, &v2, &merger, &Guard::default()).unwrap().is_empty());
    // An ignored manager put it back: kept, not reported.
    let live = with_managers(
        v1.clone(),
        r#"[{"manager":"autoscaler","operation":"Update","fieldsV1":{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:env":{"k:{\"name\":\"TO_BE_DELETED\"}":{".":{}}}}}}}}}}]"#,
    );
    let guard = Guard { ignored_managers: vec!["autoscaler"], ..Guard::default() };
    assert!(stale_fields(&history, &v2, &v2, &live, &merger, &guard).unwrap().is_empty());
    // An ignore rule on the path: kept.
    let pointer: Vec<String> = ["spec", "template"].iter().map(|s| s.to_string()).collect();
    let guard = Guard { pointers: vec![&pointer], ..Guard::default() };
    assert!(stale_fields(&history, &v2, &v2, &v1, &merger, &guard).unwrap().is_empty());
}

#[test]
fn a_custom_resource_field_is_stale_through_json_merge() {
    let v1 =
        json(r#"{"apiVersion":"x.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1,"color":"red"}}"#);
    let v2 = json(r#"{"apiVersion":"x.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":2}}"#);
    let history = [Version { revision: "v1".into(), manifest: v1.clone() }];
    let found = stale_fields(&history, &v2, &v2, &v1, &JsonMerge, &Guard::default()).unwrap();
    let paths: Vec<String> = found.iter().map(|f| f.path.to_string()).collect();
    assert_eq!(paths, ["spec.color"]);
    let fields: Vec<(&FieldPath, &Value)> = vec![(&found[0].path, &v1)];
    let original = original_with(&v2, &fields, &JsonMerge).unwrap();
    let patch = json_merge::create_three_way(&original, &v2, &v1).unwrap();
    assert_eq!(patch.to_json_string(), r#"{"spec":{"color":null,"size":2}}"#);
}

#[test]
fn foreign_fields_are_named_with_their_manager_and_protected_ones_are_not() {
    let manifest = deployment(ANOTHER, "");
    let live = with_managers(
        deployment(
            &format!("{ANOTHER},{{\"name\":\"DEBUG\",\"value\":\"1\"}}"),
            r#","annotations":{"kubectl.kubernetes.io/restartedAt":"now"}"#,
        ),
        r#"[
          {"manager":"applyset-controller","operation":"Update","fieldsV1":{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:env":{"k:{\"name\":\"ANOTHER_ENV\"}":{".":{}}}}}}}}}},
          {"manager":"kubectl-edit","operation":"Update","fieldsV1":{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:env":{"k:{\"name\":\"DEBUG\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}},
          {"manager":"kubectl-rollout","operation":"Update","fieldsV1":{"f:spec":{"f:template":{"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/restartedAt":{}}}}}}},
          {"manager":"kube-controller-manager","operation":"Update","fieldsV1":{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}},
          {"manager":"kube-controller-manager","operation":"Update","subresource":"status","fieldsV1":{"f:status":{"f:replicas":{}}}}
        ]"#,
    );
    let merger = Strategic(deployment_schema());
    let guard = Guard { ignored_managers: SYSTEM_MANAGERS.to_vec(), ..Guard::default() };
    let found = foreign_fields(&manifest, &manifest, &live, "applyset-controller", &merger, &guard);
    let named: Vec<(String, Option<String>)> = found.iter().map(|f| (f.path.to_string(), f.manager.clone())).collect();
    assert_eq!(
        named,
        [
            ("spec.template.spec.containers[name=app].env[name=DEBUG]".to_owned(), Some("kubectl-edit".to_owned())),
            (
                "spec.template.metadata.annotations.kubectl.kubernetes.io/restartedAt".to_owned(),
                Some("kubectl-rollout".to_owned())
            ),
        ]
    );
}

#[test]
fn protected_metadata_and_status_are_never_findings() {
    let path = |segments: &[&str]| FieldPath(segments.iter().map(|s| Segment::Key(s.to_string())).collect());
    assert!(is_protected(&path(&["status", "replicas"])));
    assert!(is_protected(&path(&["metadata", "finalizers"])));
    assert!(is_protected(&path(&["metadata", "ownerReferences"])));
    assert!(is_protected(&path(&["metadata", "annotations", LAST_APPLIED_ANNOTATION])));
    assert!(!is_protected(&path(&["metadata", "labels", "team"])));
    assert!(!is_protected(&path(&["spec", "replicas"])));
}

/// The CLI's view of the post-mortem: without history the rolled-back env var is named as
/// left behind with its manager; the CLI's own and the system's fields are not; nothing is removed.
#[test]
fn the_cli_names_what_apply_leaves_behind_and_removes_nothing() {
    let v3 = deployment(ANOTHER, "");
    let live = with_managers(
        deployment(&format!("{TO_BE_DELETED},{ANOTHER}"), ""),
        r#"[
          {"manager":"kubectl-client-side-apply","operation":"Update","fieldsV1":{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{}}}}}}}},
          {"manager":"kubectl","operation":"Update","fieldsV1":{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:env":{"k:{\"name\":\"TO_BE_DELETED\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}},
          {"manager":"kube-controller-manager","operation":"Update","fieldsV1":{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}}
        ]"#,
    );
    let policy = LeftBehind { own_manager: "kubectl-client-side-apply".into() };
    let verdict = policy.inspect(&v3, &v3, &v3, &live, &Strategic(deployment_schema()));
    let named: Vec<(String, Reason, Option<String>, bool)> =
        verdict.findings.iter().map(|f| (f.path.to_string(), f.reason, f.manager.clone(), f.removed)).collect();
    assert_eq!(
        named,
        [(
            "spec.template.spec.containers[name=app].env[name=TO_BE_DELETED]".to_owned(),
            Reason::Foreign,
            Some("kubectl".to_owned()),
            false
        )]
    );
    assert!(verdict.original.is_none() && verdict.warnings.is_empty());
}

/// The history keeps only what the current manifest lacks; stale fields found from that are
/// the ones found from the whole manifests.
#[test]
fn the_reduced_history_finds_the_same_stale_fields() {
    let v1 = deployment(&format!("{TO_BE_DELETED},{ANOTHER}"), r#","annotations":{"old":"1"}"#);
    let v2 = deployment(ANOTHER, "");
    let v3 = deployment(ANOTHER, r#","annotations":{"v":"3"}"#);
    let live = deployment(&format!("{TO_BE_DELETED},{ANOTHER}"), r#","annotations":{"old":"1","v":"3"}"#);
    let merger = Strategic(deployment_schema());
    let whole = [Version { revision: "v1".into(), manifest: v1.clone() }];
    let reduced = absent_from(&v1, &v3).expect("v1 had fields v3 lacks");
    assert_eq!(
        reduced.to_json_string(),
        format!(
            r#"{{"spec":{{"template":{{"metadata":{{"annotations":{{"old":"1"}}}},"spec":{{"containers":[{{"env":[{TO_BE_DELETED},{ANOTHER}],"image":"nginx","name":"app"}}]}}}}}}}}"#
        )
    );
    let reduced = [Version { revision: "v1".into(), manifest: reduced }];
    let paths = |history: &[Version]| -> Vec<String> {
        let found = stale_fields(history, &v2, &v3, &live, &merger, &Guard::default()).unwrap();
        found.iter().map(|f| format!("{} {:?}", f.path, f.applied_in)).collect()
    };
    assert_eq!(paths(&whole), paths(&reduced));
    assert_eq!(paths(&reduced).len(), 2, "{:?}", paths(&reduced));
    assert_eq!(absent_from(&v2, &v2), None);
}
