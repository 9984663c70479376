//! The documents of the engine benchmarks, shared by `benches/patch.rs` (criterion) and
//! `examples/export_bench_cases.rs`, which writes them out for the Go side of
//! `scripts/bench-engine` (the same documents through apimachinery).

#![allow(dead_code)]

use applyset_merge::openapi::OpenApi;
use applyset_merge::{SchemaRef, Value};

pub fn schema(file: &str, definition: &str) -> SchemaRef {
    let path = format!("{}/tests/fixtures/openapi/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    let openapi = OpenApi::from_document(Value::from_json_str(&text).unwrap()).unwrap();
    openapi.schema(definition).unwrap()
}

pub fn json(text: &str) -> Value {
    Value::from_json_str(text).unwrap()
}

/// A Deployment as people write it, and as the apiserver returns it (defaults, status).
pub fn deployment(image: &str, live: bool) -> Value {
    let defaults = if live {
        r#","imagePullPolicy":"IfNotPresent","terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File""#
    } else {
        ""
    };
    let status = if live {
        r#","status":{"replicas":3,"readyReplicas":3,"conditions":[{"type":"Available","status":"True"}]}"#
    } else {
        ""
    };
    json(&format!(
        r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"web","namespace":"shop","labels":{{"app":"web","tier":"frontend"}},"annotations":{{"team":"shop"}}}},
        "spec":{{"replicas":3,"selector":{{"matchLabels":{{"app":"web"}}}},"strategy":{{"type":"RollingUpdate"}},
        "template":{{"metadata":{{"labels":{{"app":"web"}}}},"spec":{{
          "containers":[{{"name":"web","image":"{image}","args":["--port=8080","--log=json"],
            "ports":[{{"containerPort":8080,"name":"http"}},{{"containerPort":9090,"name":"metrics"}}],
            "env":[{{"name":"MODE","value":"prod"}},{{"name":"REGION","value":"eu"}},{{"name":"POD","valueFrom":{{"fieldRef":{{"fieldPath":"metadata.name"}}}}}}],
            "resources":{{"limits":{{"cpu":"500m","memory":"256Mi"}},"requests":{{"cpu":"100m","memory":"128Mi"}}}},
            "volumeMounts":[{{"name":"config","mountPath":"/etc/web"}}],
            "readinessProbe":{{"httpGet":{{"path":"/healthz","port":8080}}}}{defaults}}},
            {{"name":"sidecar","image":"proxy:1.2","ports":[{{"containerPort":15001}}]{defaults}}}],
          "volumes":[{{"name":"config","configMap":{{"name":"web-config"}}}}],
          "tolerations":[{{"key":"dedicated","operator":"Equal","value":"web","effect":"NoSchedule"}}]}}}}}}{status}}}"#
    ))
}

pub fn env_deployment(entries: usize, changed_every: usize, suffix: &str) -> Value {
    let env: Vec<String> = (0..entries)
        .map(|i| {
            let value =
                if changed_every > 0 && i % changed_every == 0 { format!("v{i}{suffix}") } else { format!("v{i}") };
            format!(r#"{{"name":"VAR_{i:05}","value":"{value}"}}"#)
        })
        .collect();
    json(&format!(
        r#"{{"spec":{{"template":{{"spec":{{"containers":[{{"name":"app","image":"app:1","env":[{}]}}]}}}}}}}}"#,
        env.join(",")
    ))
}

pub fn large_config_map(keys: usize, changed: &str) -> Value {
    let data: Vec<String> = (0..keys)
        .map(|i| format!(r#""key-{i:05}":"{}{}""#, "x".repeat(480), if i == keys / 2 { changed } else { "" }))
        .collect();
    json(&format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{{}}}}}"#,
        data.join(",")
    ))
}
