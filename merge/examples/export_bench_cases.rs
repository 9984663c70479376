//! Writes the documents of `benches/patch.rs` as JSON files into a directory, for the Go side
//! of `scripts/bench-engine` (apimachinery on the same inputs).
//!
//! Run: `cargo run -p applyset-merge --example export_bench_cases -- DIR`

#[path = "../benches/cases.rs"]
mod cases;

use applyset_merge::{Value, create_three_way_merge_patch};
use cases::{deployment, env_deployment, large_config_map, schema};

fn write(dir: &std::path::Path, name: &str, value: &Value) {
    std::fs::write(dir.join(format!("{name}.json")), value.to_json_string()).expect("writing a case");
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("usage: export_bench_cases DIR"));
    std::fs::create_dir_all(&dir).expect("creating the directory");
    write(&dir, "deployment-manifest", &deployment("web:1.0", false));
    write(&dir, "deployment-live", &deployment("web:1.0", true));
    write(&dir, "deployment-new-image", &deployment("web:1.1", false));
    write(&dir, "configmap-big", &large_config_map(1000, ""));
    write(&dir, "configmap-big-changed", &large_config_map(1000, "!"));
    let (old, new) = (env_deployment(16_000, 0, ""), env_deployment(16_000, 7, "-new"));
    let deploy = schema("apps-v1.json", "io.k8s.api.apps.v1.Deployment");
    let patch = create_three_way_merge_patch(&old, &new, &old, deploy.as_ref(), true).expect("the env patch");
    write(&dir, "env-old", &old);
    write(&dir, "env-new", &new);
    write(&dir, "env-patch", &patch);
}
