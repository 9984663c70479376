//! Speed of the patch computations on realistic inputs, with the real v1.33 metadata:
//! a typical Deployment (unchanged, and with an image change), a ~500 KB ConfigMap, and a
//! container with 16,000 `env` entries (the keyed-list worst case; upstream Go is quadratic).
//!
//! Run: `cargo bench -p applyset-merge --bench patch`

use std::hint::black_box;

use applyset_merge::openapi::OpenApi;
use applyset_merge::{
    SchemaRef, Value, apply_strategic_merge_patch, create_three_way_merge_patch, strategic_merge_patch,
};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

fn schema(file: &str, definition: &str) -> SchemaRef {
    let path = format!("{}/tests/fixtures/openapi/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    let openapi = OpenApi::from_document(Value::from_json_str(&text).unwrap()).unwrap();
    openapi.schema(definition).unwrap()
}

fn json(text: &str) -> Value {
    Value::from_json_str(text).unwrap()
}

/// A Deployment as people write it, and as the apiserver returns it (defaults, status).
fn deployment(image: &str, live: bool) -> Value {
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

fn env_deployment(entries: usize, changed_every: usize, suffix: &str) -> Value {
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

fn large_config_map(keys: usize, changed: &str) -> Value {
    let data: Vec<String> = (0..keys)
        .map(|i| format!(r#""key-{i:05}":"{}{}""#, "x".repeat(480), if i == keys / 2 { changed } else { "" }))
        .collect();
    json(&format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{{}}}}}"#,
        data.join(",")
    ))
}

fn benches(c: &mut Criterion) {
    let deploy = schema("apps-v1.json", "io.k8s.api.apps.v1.Deployment");
    let config_map = schema("core-v1.json", "io.k8s.api.core.v1.ConfigMap");

    let manifest = deployment("web:1.0", false);
    let live = deployment("web:1.0", true);
    let new_image = deployment("web:1.1", false);
    c.bench_function("deployment three-way, unchanged", |b| {
        b.iter(|| create_three_way_merge_patch(black_box(&manifest), &manifest, &live, deploy.as_ref(), true).unwrap())
    });
    c.bench_function("deployment three-way + apply, image change", |b| {
        b.iter(|| {
            let patch =
                create_three_way_merge_patch(black_box(&manifest), &new_image, &live, deploy.as_ref(), true).unwrap();
            strategic_merge_patch(&live, &patch, deploy.as_ref()).unwrap()
        })
    });

    let big = large_config_map(1000, "");
    let big_changed = large_config_map(1000, "!");
    assert!(big.to_json_string().len() > 480_000);
    c.bench_function("configmap ~500KB three-way + apply, one key changed", |b| {
        b.iter(|| {
            let patch =
                create_three_way_merge_patch(black_box(&big), &big_changed, &big, config_map.as_ref(), true).unwrap();
            strategic_merge_patch(&big, &patch, config_map.as_ref()).unwrap()
        })
    });

    let env_old = env_deployment(16_000, 0, "");
    let env_new = env_deployment(16_000, 7, "-new");
    let env_patch = create_three_way_merge_patch(&env_old, &env_new, &env_old, deploy.as_ref(), true).unwrap();
    let mut group = c.benchmark_group("16k env entries");
    group.sample_size(20);
    group.bench_function("three-way diff", |b| {
        b.iter(|| create_three_way_merge_patch(black_box(&env_old), &env_new, &env_old, deploy.as_ref(), true).unwrap())
    });
    // The live object is owned by the caller (just read from the server), as on the apply path.
    group.bench_function("apply", |b| {
        b.iter_batched(
            || (env_old.clone(), env_patch.clone()),
            |(live, patch)| apply_strategic_merge_patch(live, patch, deploy.as_ref()).unwrap(),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("diff + apply end to end", |b| {
        b.iter_batched(
            || env_old.clone(),
            |live| {
                let patch =
                    create_three_way_merge_patch(black_box(&env_old), &env_new, &live, deploy.as_ref(), true).unwrap();
                apply_strategic_merge_patch(live, patch, deploy.as_ref()).unwrap()
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(patch, benches);
criterion_main!(patch);
