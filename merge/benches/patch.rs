//! Speed of the patch computations on realistic inputs, with the real v1.33 metadata:
//! a typical Deployment (unchanged, and with an image change), a ~500 KB ConfigMap, and a
//! container with 16,000 `env` entries (the keyed-list worst case; upstream Go is quadratic);
//! and what freeing such documents costs.
//!
//! Run: `cargo bench -p applyset-merge --bench patch`

use std::hint::black_box;

use applyset_merge::{Value, apply_strategic_merge_patch, create_three_way_merge_patch, strategic_merge_patch};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

mod cases;
use cases::{deployment, env_deployment, large_config_map, schema};

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

    // The same work from JSON text to JSON text, as Go's API does it (its figures in
    // scripts/bench-engine include decoding and encoding).
    let text = |value: &Value| value.to_json_string();
    let (manifest_text, live_text, new_image_text) = (text(&manifest), text(&live), text(&new_image));
    let (big_text, big_changed_text) = (text(&big), text(&big_changed));
    let (env_old_text, env_new_text) = (text(&env_old), text(&env_new));
    let parse = |text: &str| Value::from_json_str(text).unwrap();
    let mut group = c.benchmark_group("from JSON text");
    group.sample_size(20);
    group.bench_function("deployment three-way, unchanged", |b| {
        b.iter(|| {
            let (original, current) = (parse(black_box(&manifest_text)), parse(&live_text));
            create_three_way_merge_patch(&original, &original, &current, deploy.as_ref(), true)
                .unwrap()
                .to_json_string()
        })
    });
    group.bench_function("deployment three-way + apply, image change", |b| {
        b.iter(|| {
            let (original, modified, current) =
                (parse(black_box(&manifest_text)), parse(&new_image_text), parse(&live_text));
            let patch = create_three_way_merge_patch(&original, &modified, &current, deploy.as_ref(), true).unwrap();
            apply_strategic_merge_patch(current, patch, deploy.as_ref()).unwrap().to_json_string()
        })
    });
    group.bench_function("configmap ~500KB three-way + apply, one key changed", |b| {
        b.iter(|| {
            let (original, modified) = (parse(black_box(&big_text)), parse(&big_changed_text));
            let current = parse(&big_text);
            let patch =
                create_three_way_merge_patch(&original, &modified, &current, config_map.as_ref(), true).unwrap();
            apply_strategic_merge_patch(current, patch, config_map.as_ref()).unwrap().to_json_string()
        })
    });
    group.bench_function("16k env entries/diff + apply end to end", |b| {
        b.iter(|| {
            let (original, modified, current) =
                (parse(black_box(&env_old_text)), parse(&env_new_text), parse(&env_old_text));
            let patch = create_three_way_merge_patch(&original, &modified, &current, deploy.as_ref(), true).unwrap();
            apply_strategic_merge_patch(current, patch, deploy.as_ref()).unwrap().to_json_string()
        })
    });
    group.finish();

    // Freeing a document: a watched object's tree is built and dropped for every event.
    let mut group = c.benchmark_group("drop");
    group.bench_function("deployment as the apiserver returns it", |b| {
        b.iter_batched(|| live.clone(), drop, BatchSize::SmallInput)
    });
    group.bench_function("configmap ~500KB", |b| b.iter_batched(|| big.clone(), drop, BatchSize::LargeInput));
    group.sample_size(20);
    group.bench_function("16k env entries", |b| b.iter_batched(|| env_old.clone(), drop, BatchSize::LargeInput));
    group.finish();
}

criterion_group!(patch, benches);
criterion_main!(patch);
