//! The apiserver's own create throughput, for `scripts/bench-controller`: creates every object
//! of the manifests under the given directories (Namespaces first, then the rest, each with
//! `--concurrency` plain POSTs in flight, no client-side rate limit) and prints one JSON
//! line: `{"objects": N, "seconds": S, "per_second": R, "failed": F, "cpu_seconds": C}`
//! (Namespaces counted and timed like the rest: a first apply creates them too; `cpu_seconds`:
//! this client's own CPU time, user and system, over the creates).
//!
//! With `--as-applied ID` every object is sent as `applyset apply` (and `kubectl apply
//! --applyset`) creates it: labelled `applyset.kubernetes.io/part-of: ID`, with its
//! last-applied annotation (a copy of the object, which about doubles a small one), by the
//! controller's field manager. Without it, the manifests are sent as they are.
//!
//! ```text
//! cargo run --release -p applyset --example create_flood -- --kubeconfig FILE [--concurrency 32] [--as-applied ID] DIR...
//! ```

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use applyset::apply::object::{add_label, create_body, modified_configuration};
use applyset::cluster::{Cluster, ConnectOptions, WriteParams};
use applyset::keys::PART_OF_LABEL;
use applyset_merge::Value;
use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use kube::core::GroupVersionKind;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Creates in flight.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Send each object as the apply creates it, in the ApplySet with this id.
    #[arg(long, value_name = "ID")]
    as_applied: Option<String>,
    /// Directories of manifests (read recursively).
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
}

fn text<'a>(object: &'a Value, field: &str) -> &'a str {
    object.as_object().and_then(|o| o.get(field)).and_then(Value::as_str).unwrap_or("")
}

fn namespace_of(object: &Value) -> Option<String> {
    let metadata = object.as_object()?.get("metadata")?.as_object()?;
    metadata.get("namespace").and_then(Value::as_str).map(str::to_owned)
}

/// The body `applyset apply` POSTs for `object`, a member of the ApplySet `id`.
fn as_applied(object: &Value, id: &str) -> Result<Value> {
    let mut object = object.clone();
    add_label(&mut object, PART_OF_LABEL, id)?;
    let (_, modified) = modified_configuration(&object);
    Ok(create_body(&modified))
}

async fn create(cluster: &Cluster, object: &Value, field_manager: &str) -> Result<()> {
    let (group, version) = text(object, "apiVersion").split_once('/').unwrap_or(("", text(object, "apiVersion")));
    let gvk = GroupVersionKind::gvk(group, version, text(object, "kind"));
    let mapping = cluster.mapping(&gvk).await?;
    let namespace = namespace_of(object).filter(|_| mapping.namespaced);
    let params = WriteParams {
        field_manager: field_manager.into(),
        field_validation: "Strict".into(),
        server_dry_run: false,
        force: false,
    };
    cluster.create(&mapping, namespace.as_deref(), object, &params).await?;
    Ok(())
}

/// This process's CPU time so far (user and system, all threads), in seconds.
#[allow(unsafe_code)]
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole `rusage` through the pointer, which points to one we
    // own; RUSAGE_SELF is always valid, so it cannot fail (and a zeroed rusage is valid anyway).
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let loaded = applyset::manifest::load(&args.dirs, true, std::io::empty()).context("reading the manifests")?;
    let (namespaces, objects): (Vec<_>, Vec<_>) =
        loaded.into_iter().map(|l| l.object).partition(|o| text(o, "kind") == "Namespace");
    let options = ConnectOptions { kubeconfig: args.kubeconfig, qps: 0.0, burst: 1, ..ConnectOptions::default() };
    let cluster = Cluster::connect(&options).await?;
    let (objects, field_manager) = match &args.as_applied {
        Some(id) => {
            let applied = objects.iter().map(|object| as_applied(object, id)).collect::<Result<Vec<_>>>()?;
            (applied, applyset::operator::controller::FIELD_MANAGER)
        }
        None => (objects, "create-flood"),
    };
    // Discovery before the clock, as the controller has it before its first run.
    cluster.mapping(&GroupVersionKind::gvk("", "v1", "Namespace")).await?;
    let concurrency = args.concurrency.max(1);
    let (started, cpu_before) = (Instant::now(), cpu_seconds());
    // The Namespaces before what goes in them, all of them before the rest.
    futures::stream::iter(&namespaces)
        .map(|namespace| create(&cluster, namespace, "create-flood"))
        .buffer_unordered(concurrency)
        .try_collect::<Vec<()>>()
        .await
        .context("creating a Namespace")?;
    let failed = futures::stream::iter(&objects)
        .map(|object| create(&cluster, object, field_manager))
        .buffer_unordered(concurrency)
        .filter(|result| std::future::ready(result.is_err()))
        .count()
        .await;
    let (seconds, cpu) = (started.elapsed().as_secs_f64(), cpu_seconds() - cpu_before);
    let count = namespaces.len() + objects.len();
    println!(
        "{}",
        serde_json::json!({ "objects": count, "seconds": seconds, "per_second": count as f64 / seconds, "failed": failed,
                            "cpu_seconds": cpu })
    );
    Ok(())
}
