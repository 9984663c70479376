//! `applyset plan`: the checkout built as a run builds it, applied with the controller's
//! options under a client dry run (GETs and LISTs only: the patch is computed and applied
//! locally), and the controller's prune decision on what the new build no longer has.
//!
//! A plan is of the checkout as a new revision: the run it previews applies for real (a
//! `spec.drift.mode: Report` ApplySet too, whose steady runs only report), so it prunes when
//! `spec.prune` is on. Stale fields (which need earlier revisions' manifests from git) are not
//! looked for. It is the controller's run itself, in its plan mode: the same steps, sequenced
//! in one place (`Reconciliation::run`), with nothing written.

use std::sync::Arc;
use std::time::Duration;

use super::report::{self, Outcome, Printed};
use super::{PreviewError, target};
use crate::cli::PlanArgs;
use crate::cluster::Cluster;
use crate::commands::apply::connect;
use crate::operator::context::{Context, Settings};
use crate::operator::controller;
use crate::operator::reconcile::{self, LocalCheckout};

pub(super) async fn run(args: PlanArgs) -> Result<Outcome, PreviewError> {
    let cluster = Arc::new(connect(&args.cluster).await?);
    let printed = plan(&cluster, &args).await?;
    eprint!("{}", crate::redact::redact(&printed.stderr));
    print!("{}", crate::redact::redact(&printed.stdout));
    Ok(printed.outcome)
}

/// The plan of `args` against `cluster` (notes on the checkout go to stderr at once): the
/// controller's run in [`RunMode::Plan`](crate::operator::reconcile::RunMode), as the
/// caller's identity, rendered.
pub(super) async fn plan(cluster: &Arc<Cluster>, args: &PlanArgs) -> Result<Printed, PreviewError> {
    let namespace = args.namespace.namespace.clone().unwrap_or_else(|| cluster.default_namespace().to_owned());
    let applyset = target::applyset_from_cluster(cluster, &namespace, &args.name).await?;
    if applyset.spec.suspend {
        eprintln!("note: ApplySet {} is suspended: no run applies this until it is resumed", applyset.key());
    }
    let checkout = target::locate(&args.checkout.path, applyset.spec.source.path.as_deref())?;
    for note in &checkout.notes {
        eprintln!("{note}");
    }
    let mut previous = applyset.status.clone().unwrap_or_default();
    let recorded = target::recorded_members(cluster, &applyset).await?;
    if let Some(inventory) = &mut previous.inventory {
        inventory.members = recorded;
    }
    let decryption = crate::commands::decryption::from_key_files(&args.checkout.decryption_keys)?;
    let local = LocalCheckout { artifact: checkout.artifact(), decryption };
    let ctx = Context::for_plan(cluster.clone(), settings(args));
    let done = reconcile::plan(&applyset, &ctx, &previous, local).await?;
    let planned = done.planned.unwrap_or_default();
    Ok(report::render(&planned, applyset.spec.prune))
}

/// The controller's settings as far as a plan can know them: its field manager, and the
/// flags a plan takes for the others (limits, kustomize, `--default-secrets`).
fn settings(args: &PlanArgs) -> Settings {
    let limits = &args.checkout.limits;
    Settings {
        apply_concurrency: args.cluster.concurrency as usize,
        default_service_account: None,
        allow_local_sources: true,
        no_cross_namespace_refs: false,
        field_manager: controller::FIELD_MANAGER.into(),
        min_interval: Duration::ZERO,
        manifest_limits: crate::manifest::Limits {
            file: Some(limits.max_manifest_file_size),
            document: Some(limits.max_manifest_document_size),
            total: Some(limits.max_manifest_revision_size),
        },
        default_secrets: args.default_secrets,
        secret_hash_key: Default::default(),
        kustomize_binary: args.checkout.kustomize_binary.clone(),
        concurrent_reconciles: 1,
        record_limit: crate::operator::members::codec::RECORD_LIMIT,
        allow_remote_exec: false,
        remote_rate: (0.0, 1),
        progress_report_after: Duration::ZERO,
    }
}
