//! The seed scenarios: what `kubectl apply` does in the situations users actually meet, with
//! the real patch metadata of Kubernetes v1.33 (OpenAPI v3 fixtures). Each expected patch is
//! the exact byte string kubectl sends, as recorded in the spec (§13, examples tagged [H] were
//! produced by running the upstream Go code).

use std::sync::OnceLock;

use applyset_merge::openapi::OpenApi;
use applyset_merge::{Error, SchemaRef, Value, create_three_way_merge_patch, json_merge, strategic_merge_patch};

fn fixture(name: &str) -> OpenApi {
    let path = format!("{}/tests/fixtures/openapi/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    OpenApi::from_document(Value::from_json_str(&text).unwrap()).unwrap()
}

fn deployment() -> SchemaRef {
    static APPS: OnceLock<OpenApi> = OnceLock::new();
    let apps = APPS.get_or_init(|| fixture("apps-v1.json"));
    apps.schema("io.k8s.api.apps.v1.Deployment").unwrap()
}

fn service() -> SchemaRef {
    static CORE: OnceLock<OpenApi> = OnceLock::new();
    let core = CORE.get_or_init(|| fixture("core-v1.json"));
    core.schema("io.k8s.api.core.v1.Service").unwrap()
}

fn json(text: &str) -> Value {
    Value::from_json_str(text).unwrap_or_else(|e| panic!("bad test JSON {text}: {e}"))
}

/// A Deployment whose pod template spec is `pod_spec`.
fn with_pod_spec(pod_spec: &str) -> String {
    format!(
        r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"web"}},"spec":{{"template":{{"spec":{pod_spec}}}}}}}"#
    )
}

/// Computes kubectl's three-way patch and applies it to `current`, as the apiserver would.
fn three_way(schema: &SchemaRef, original: &str, modified: &str, current: &str) -> (String, Value) {
    let (o, m, c) = (json(original), json(modified), json(current));
    let patch = create_three_way_merge_patch(&o, &m, &c, schema.as_ref(), true).unwrap();
    let result = strategic_merge_patch(&c, &patch, schema.as_ref()).unwrap();
    (patch.to_json_string(), result)
}

fn pod_spec_of(result: &Value) -> &Value {
    let spec = &result.as_object().unwrap()["spec"].as_object().unwrap()["template"];
    &spec.as_object().unwrap()["spec"]
}

#[test]
fn replicas_set_by_kubectl_scale_survive_an_apply() {
    let manifest = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"app:1"}]}}}}"#;
    let live = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"app","image":"app:1","imagePullPolicy":"IfNotPresent","terminationMessagePath":"/dev/termination-log"}]}}}}"#;
    let (patch, result) = three_way(&deployment(), manifest, manifest, live);
    assert_eq!(patch, "{}", "unchanged");
    assert_eq!(result, json(live));

    // A new image is applied; the scaled replica count is still left alone.
    let v2 = manifest.replace("app:1", "app:2");
    let (patch, result) = three_way(&deployment(), manifest, &v2, live);
    assert_eq!(
        patch,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"image":"app:2","name":"app"}]}}}}"#
    );
    assert_eq!(result.as_object().unwrap()["spec"].as_object().unwrap()["replicas"], Value::Int(5));
}

#[test]
fn manifest_that_pins_replicas_reverts_a_scale_and_dropping_it_deletes() {
    let o = r#"{"spec":{"replicas":3}}"#;
    let (patch, _) = three_way(&deployment(), o, o, r#"{"spec":{"replicas":5}}"#);
    assert_eq!(patch, r#"{"spec":{"replicas":3}}"#);
    let (patch, result) = three_way(&deployment(), o, r#"{"spec":{}}"#, r#"{"spec":{"replicas":5}}"#);
    assert_eq!(patch, r#"{"spec":{"replicas":null}}"#);
    assert_eq!(result, json(r#"{"spec":{}}"#));
}

#[test]
fn rollout_restart_annotation_on_the_template_survives() {
    let manifest = r#"{"metadata":{"name":"web"},"spec":{"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"app:1"}]}}}}"#;
    let live = r#"{"metadata":{"name":"web"},"spec":{"template":{"metadata":{"labels":{"app":"web"},"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-11-22T10:00:00Z"}},"spec":{"containers":[{"name":"app","image":"app:1"}]}}}}"#;
    let (patch, _) = three_way(&deployment(), manifest, manifest, live);
    assert_eq!(patch, "{}");
    let v2 = manifest.replace("app:1", "app:2");
    let (_, result) = three_way(&deployment(), manifest, &v2, live);
    let template = &result.as_object().unwrap()["spec"].as_object().unwrap()["template"];
    assert_eq!(
        template.as_object().unwrap()["metadata"],
        json(r#"{"labels":{"app":"web"},"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-11-22T10:00:00Z"}}"#)
    );
}

/// The post-mortem: v1 had env A and B; v2 removed B (apply deleted it); `kubectl rollout undo`
/// restored v1's template (B is back, the last-applied annotation still says v2); applying v3,
/// which never mentions B, keeps B because last-applied lost it. kubectl behaves exactly so.
#[test]
fn rollback_leaves_a_stale_env_var_exactly_as_kubectl_does() {
    let v1 = with_pod_spec(
        r#"{"containers":[{"name":"app","image":"app:v1","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}]}"#,
    );
    let v2 = with_pod_spec(r#"{"containers":[{"name":"app","image":"app:v2","env":[{"name":"A","value":"1"}]}]}"#);
    // Applying v2 over v1 deletes B.
    let (patch, after_v2) = three_way(&deployment(), &v1, &v2, &v1);
    assert_eq!(
        patch,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"$setElementOrder/env":[{"name":"A"}],"env":[{"$patch":"delete","name":"B"}],"image":"app:v2","name":"app"}]}}}}"#
    );
    assert_eq!(pod_spec_of(&after_v2), pod_spec_of(&json(&v2)));
    // rollout undo: the live template is v1's again, with 3 replicas set meanwhile.
    let undone = json(&v1.replace(r#""spec":{"template""#, r#""spec":{"replicas":3,"template""#));
    // v3 = v2's content; the annotation (original) is v2.
    let (patch, after_v3) = three_way(&deployment(), &v2, &v2, &undone.to_json_string());
    assert_eq!(
        patch,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"$setElementOrder/env":[{"name":"A"}],"image":"app:v2","name":"app"}]}}}}"#
    );
    assert_eq!(
        pod_spec_of(&after_v3),
        &json(
            r#"{"containers":[{"name":"app","image":"app:v2","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}]}"#
        )
    );
    assert_eq!(after_v3.as_object().unwrap()["spec"].as_object().unwrap()["replicas"], Value::Int(3));
}

#[test]
fn null_in_the_manifest_deletes_even_if_last_applied_never_had_it() {
    let (patch, result) = three_way(
        &deployment(),
        r#"{"metadata":{"name":"x"}}"#,
        r#"{"metadata":{"name":"x"},"spec":{"paused":null}}"#,
        r#"{"metadata":{"name":"x"},"spec":{"paused":true,"replicas":2}}"#,
    );
    assert_eq!(patch, r#"{"spec":{"paused":null}}"#);
    assert_eq!(result, json(r#"{"metadata":{"name":"x"},"spec":{"replicas":2}}"#));
    // A null kept in both last-applied and manifest keeps deleting (unlike JSON merge).
    let both = r#"{"spec":{"paused":null}}"#;
    let (patch, _) = three_way(&deployment(), both, both, r#"{"spec":{"paused":true}}"#);
    assert_eq!(patch, r#"{"spec":{"paused":null}}"#);
    let jm = json_merge::create_three_way(&json(both), &json(both), &json(r#"{"spec":{"paused":true}}"#)).unwrap();
    assert_eq!(jm.to_json_string(), "{}");
}

#[test]
fn finalizers_behave_as_an_ordered_set() {
    let (patch, result) = three_way(
        &deployment(),
        r#"{"metadata":{"finalizers":["a.io/x","b.io/y"]}}"#,
        r#"{"metadata":{"finalizers":["c.io/z","a.io/x"]}}"#,
        r#"{"metadata":{"finalizers":["a.io/x","ctrl.io/q","b.io/y"]}}"#,
    );
    assert_eq!(
        patch,
        r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["b.io/y"],"$setElementOrder/finalizers":["c.io/z","a.io/x"],"finalizers":["c.io/z"]}}"#
    );
    assert_eq!(result, json(r#"{"metadata":{"finalizers":["c.io/z","a.io/x","ctrl.io/q"]}}"#));

    // An unchanged list that is not in sorted order is "configured" forever (in-place sort).
    let unsorted = r#"{"metadata":{"finalizers":["b.io/x","a.io/y"]}}"#;
    let (patch, _) = three_way(&deployment(), unsorted, unsorted, unsorted);
    assert_eq!(patch, r#"{"metadata":{"$setElementOrder/finalizers":["b.io/x","a.io/y"]}}"#);
    let sorted = r#"{"metadata":{"finalizers":["a.io/y","b.io/x"]}}"#;
    assert_eq!(three_way(&deployment(), sorted, sorted, sorted).0, "{}");

    // Deletions are listed in %v order after Go's order-perturbing dedup.
    let (patch, _) = three_way(
        &deployment(),
        r#"{"metadata":{"finalizers":["b","a","c","a"]}}"#,
        r#"{"metadata":{"finalizers":["z"]}}"#,
        r#"{"metadata":{"finalizers":["b","a","c","a"]}}"#,
    );
    assert_eq!(
        patch,
        r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a","c","b"],"$setElementOrder/finalizers":["z"],"finalizers":["z"]}}"#
    );
}

#[test]
fn containers_merge_by_name_keeping_foreign_args_and_sidecars() {
    let (patch, result) = three_way(
        &deployment(),
        &with_pod_spec(r#"{"containers":[{"name":"app","image":"app:1"}]}"#),
        &with_pod_spec(r#"{"containers":[{"name":"app","image":"app:2"}]}"#),
        &with_pod_spec(
            r#"{"containers":[{"name":"app","image":"app:1","args":["--from-webhook"],"imagePullPolicy":"IfNotPresent","resources":{}},{"name":"istio-proxy","image":"proxy:1"}]}"#,
        ),
    );
    assert_eq!(
        patch,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"image":"app:2","name":"app"}]}}}}"#
    );
    assert_eq!(
        pod_spec_of(&result),
        &json(
            r#"{"containers":[{"name":"app","image":"app:2","args":["--from-webhook"],"imagePullPolicy":"IfNotPresent","resources":{}},{"name":"istio-proxy","image":"proxy:1"}]}"#
        )
    );
}

#[test]
fn deleting_one_container_and_adding_another_orders_like_go_slice_aliasing() {
    let (patch, result) = three_way(
        &deployment(),
        &with_pod_spec(r#"{"containers":[{"name":"a","image":"a"},{"name":"b","image":"b"}]}"#),
        &with_pod_spec(r#"{"containers":[{"name":"a","image":"a"},{"name":"d","image":"d"}]}"#),
        &with_pod_spec(
            r#"{"containers":[{"name":"a","image":"a"},{"name":"b","image":"b"},{"name":"c","image":"c"}]}"#,
        ),
    );
    assert_eq!(
        patch,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"d"}],"containers":[{"image":"d","name":"d"},{"$patch":"delete","name":"b"}]}}}}"#
    );
    let names: Vec<_> = pod_spec_of(&result).as_object().unwrap()["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_object().unwrap()["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["a", "c", "d"]);
}

#[test]
fn ports_are_keyed_by_container_port() {
    let (patch, result) = three_way(
        &deployment(),
        &with_pod_spec(r#"{"containers":[{"name":"web","ports":[{"containerPort":80,"name":"http"}]}]}"#),
        &with_pod_spec(r#"{"containers":[{"name":"web","ports":[{"containerPort":8080,"name":"http"}]}]}"#),
        &with_pod_spec(
            r#"{"containers":[{"name":"web","ports":[{"containerPort":80,"name":"http","protocol":"TCP"}]}]}"#,
        ),
    );
    assert_eq!(
        patch,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"web"}],"containers":[{"$setElementOrder/ports":[{"containerPort":8080}],"name":"web","ports":[{"containerPort":8080,"name":"http"},{"$patch":"delete","containerPort":80}]}]}}}}"#
    );
    assert_eq!(
        pod_spec_of(&result),
        &json(r#"{"containers":[{"name":"web","ports":[{"containerPort":8080,"name":"http"}]}]}"#)
    );

    // TCP and UDP on the same port collapse: the merge key is containerPort alone.
    let (patch, result) = three_way(
        &deployment(),
        &with_pod_spec(r#"{"containers":[{"name":"dns","ports":[{"containerPort":53,"protocol":"TCP"}]}]}"#),
        &with_pod_spec(
            r#"{"containers":[{"name":"dns","ports":[{"containerPort":53,"protocol":"TCP"},{"containerPort":53,"protocol":"UDP"}]}]}"#,
        ),
        &with_pod_spec(r#"{"containers":[{"name":"dns","ports":[{"containerPort":53,"protocol":"TCP"}]}]}"#),
    );
    assert_eq!(
        patch,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"dns"}],"containers":[{"$setElementOrder/ports":[{"containerPort":53},{"containerPort":53}],"name":"dns","ports":[{"containerPort":53,"protocol":"UDP"},{"containerPort":53,"protocol":"TCP"}]}]}}}}"#
    );
    assert_eq!(
        pod_spec_of(&result),
        &json(r#"{"containers":[{"name":"dns","ports":[{"containerPort":53,"protocol":"TCP"}]}]}"#)
    );
}

#[test]
fn args_are_replaced_wholesale() {
    let (patch, result) = three_way(
        &deployment(),
        &with_pod_spec(r#"{"containers":[{"name":"app","args":["--a","--b"]}]}"#),
        &with_pod_spec(r#"{"containers":[{"name":"app","args":["--a","--c"]}]}"#),
        &with_pod_spec(r#"{"containers":[{"name":"app","args":["--a","--b","--injected"]}]}"#),
    );
    assert_eq!(
        patch,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"args":["--a","--c"],"name":"app"}]}}}}"#
    );
    assert_eq!(pod_spec_of(&result), &json(r#"{"containers":[{"name":"app","args":["--a","--c"]}]}"#));
}

#[test]
fn recreate_strategy_clears_rolling_update_through_retain_keys() {
    let (patch, result) = three_way(
        &deployment(),
        r#"{"spec":{"strategy":{"type":"RollingUpdate"}}}"#,
        r#"{"spec":{"strategy":{"type":"Recreate"}}}"#,
        r#"{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"}}}}"#,
    );
    assert_eq!(patch, r#"{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}"#);
    assert_eq!(result, json(r#"{"spec":{"strategy":{"type":"Recreate"}}}"#));

    // Unchanged RollingUpdate with a defaulted rollingUpdate: perpetual $retainKeys.
    let o = r#"{"spec":{"strategy":{"type":"RollingUpdate"}}}"#;
    let (patch, _) = three_way(
        &deployment(),
        o,
        o,
        r#"{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%"}}}}"#,
    );
    assert_eq!(patch, r#"{"spec":{"strategy":{"$retainKeys":["type"]}}}"#);
}

#[test]
fn volume_source_switch_uses_retain_keys_on_the_element() {
    let (patch, _) = three_way(
        &deployment(),
        &with_pod_spec(r#"{"volumes":[{"name":"data","emptyDir":{}}]}"#),
        &with_pod_spec(r#"{"volumes":[{"name":"data","configMap":{"name":"cm"}}]}"#),
        &with_pod_spec(r#"{"volumes":[{"name":"data","emptyDir":{}}]}"#),
    );
    assert_eq!(
        patch,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/volumes":[{"name":"data"}],"volumes":[{"$retainKeys":["configMap","name"],"configMap":{"name":"cm"},"emptyDir":null,"name":"data"}]}}}}"#
    );
}

#[test]
fn service_ports_merge_by_port_and_keep_server_fields() {
    let (patch, result) = three_way(
        &service(),
        r#"{"spec":{"ports":[{"port":80,"targetPort":8080}]}}"#,
        r#"{"spec":{"ports":[{"port":80,"targetPort":9090},{"port":443,"targetPort":8443}]}}"#,
        r#"{"spec":{"clusterIP":"10.0.0.1","ports":[{"port":80,"targetPort":8080,"protocol":"TCP","nodePort":30080}]}}"#,
    );
    assert_eq!(
        patch,
        r#"{"spec":{"$setElementOrder/ports":[{"port":80},{"port":443}],"ports":[{"port":80,"targetPort":9090},{"port":443,"targetPort":8443}]}}"#
    );
    assert_eq!(
        result,
        json(
            r#"{"spec":{"clusterIP":"10.0.0.1","ports":[{"port":80,"targetPort":9090,"protocol":"TCP","nodePort":30080},{"port":443,"targetPort":8443}]}}"#
        )
    );
}

#[test]
fn labels_merge_per_key() {
    let (patch, result) = three_way(
        &deployment(),
        r#"{"metadata":{"labels":{"app":"web","tier":"fe"}}}"#,
        r#"{"metadata":{"labels":{"app":"web","version":"v2"}}}"#,
        r#"{"metadata":{"labels":{"app":"web","tier":"fe","pod-template-hash":"abc"}}}"#,
    );
    assert_eq!(patch, r#"{"metadata":{"labels":{"tier":null,"version":"v2"}}}"#);
    assert_eq!(result, json(r#"{"metadata":{"labels":{"app":"web","version":"v2","pod-template-hash":"abc"}}}"#));
}

#[test]
fn numbers_and_strings_serialise_like_go() {
    let (patch, _) = three_way(
        &deployment(),
        "{}",
        r#"{"metadata":{"annotations":{"a":"<&>"}},"spec":{"b":9223372036854775807,"c":1e21,"d":0.0000001,"e":100000000000000000000,"f":1.5e300,"h":12345678901234567890}}"#,
        "{}",
    );
    assert_eq!(
        patch,
        r#"{"metadata":{"annotations":{"a":"\u003c\u0026\u003e"}},"spec":{"b":9223372036854775807,"c":1e+21,"d":1e-7,"e":100000000000000000000,"f":1.5e+300,"h":12345678901234567000}}"#
    );
}

#[test]
fn overwrite_false_conflicts_when_the_live_object_changed_the_same_field() {
    let (o, m, c) = (
        json(r#"{"metadata":{"annotations":{}},"spec":{"replicas":2}}"#),
        json(r#"{"metadata":{"annotations":{"LA":"NEW"}},"spec":{"replicas":3}}"#),
        json(r#"{"metadata":{"annotations":{"LA":"OLD"}},"spec":{"replicas":2}}"#),
    );
    let err = create_three_way_merge_patch(&o, &m, &c, deployment().as_ref(), false).unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert!(err.to_string().contains("conflicts with changes made from original to current"));

    // Drift elsewhere does not conflict.
    let patch = create_three_way_merge_patch(
        &json(r#"{"spec":{"replicas":2}}"#),
        &json(r#"{"spec":{"replicas":3}}"#),
        &json(r#"{"spec":{"replicas":2,"paused":true}}"#),
        deployment().as_ref(),
        false,
    )
    .unwrap();
    assert_eq!(patch.to_json_string(), r#"{"spec":{"replicas":3}}"#);
}

#[test]
fn unknown_field_holding_a_changed_object_is_an_error_naming_the_field() {
    let err = create_three_way_merge_patch(
        &json(r#"{"spec":{"foo":{"a":1}}}"#),
        &json(r#"{"spec":{"foo":{"a":2}}}"#),
        &json(r#"{"spec":{}}"#),
        deployment().as_ref(),
        true,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "spec.foo", "the message is where; the cause is its source");
    let cause = std::error::Error::source(&err).expect("the cause").to_string();
    assert!(cause.contains(r#"unable to find api field "foo""#), "{cause}");
}
