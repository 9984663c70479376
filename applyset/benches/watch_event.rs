//! What reading one watch event costs the controller's cache: each object its watches deliver
//! is read into a cache entry (`Watched`), side by side with parsing the same event into a
//! tree (what the cache did before, less its digest). The events are a ConfigMap and a Deployment as the apiserver
//! sent them after a `kubectl apply` (last-applied annotation, managedFields, status).
//!
//! Run: `cargo bench -p applyset --bench watch_event`

use std::hint::black_box;

use applyset::operator::cache::store::Watched;
use applyset_merge::Value;
use criterion::{Criterion, criterion_group, criterion_main};
use kube::core::WatchEvent;

fn benches(c: &mut Criterion) {
    let events = [
        ("configmap", include_str!("fixtures/configmap-event.json")),
        ("deployment", include_str!("fixtures/deployment-event.json")),
    ];
    for (kind, text) in events {
        let mut group = c.benchmark_group(format!("{kind} watch event ({} bytes)", text.len()));
        group.bench_function("read into a cache entry", |b| {
            b.iter(|| serde_json::from_str::<WatchEvent<Watched>>(black_box(text)).unwrap())
        });
        group.bench_function("parsed into a tree", |b| {
            b.iter(|| serde_json::from_str::<WatchEvent<Value>>(black_box(text)).unwrap())
        });
        group.finish();
    }
}

criterion_group!(watch_event, benches);
criterion_main!(watch_event);
