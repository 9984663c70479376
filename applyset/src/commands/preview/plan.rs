//! `applyset plan`: the checkout built as a run builds it, applied with the controller's
//! options under a client dry run (GETs and LISTs only: the patch is computed and applied
//! locally), and the controller's prune decision on what the new build no longer has.
//!
//! A plan is of the checkout as a new revision: the run it previews applies for real (a
//! `spec.drift.mode: Report` ApplySet too, whose steady runs only report), so it prunes when
//! `spec.prune` is on. Stale fields (which need earlier revisions' manifests from git) are not
//! looked for. Every rule is the run's own: its parent, apply options, Secrets rule and prune
//! scope come from the reconcile.

use std::sync::Arc;

use super::hashed::{UnkeyedHashes, keeping_hashed_annotations};
use super::render::{self, Variables};
use super::report::{self, Outcome, Planned, Printed};
use super::{PreviewError, scope, target};
use crate::apply::last_applied::{self, LastAppliedCodecRef};
use crate::apply::{self, DryRun, ErrorCategory, Keep, predicted_mappings};
use crate::applyset::{ParentWrites, Run};
use crate::cli::PlanArgs;
use crate::cluster::Cluster;
use crate::commands::apply::connect;
use crate::operator::api::SecretsMode;
use crate::operator::history::HistoryIndex;
use crate::operator::reconcile::{ApplyRules, controller_apply_options, ignore_rules, parent_for};
use crate::operator::schedule::Intervals;
use crate::operator::status::{Stage, StepError};
use crate::operator::{controller, inventory, prune};

pub(super) async fn run(args: PlanArgs) -> Result<Outcome, PreviewError> {
    let cluster = connect(&args.cluster).await?;
    let printed = plan(&cluster, &args).await?;
    eprint!("{}", crate::redact::redact(&printed.stderr));
    print!("{}", crate::redact::redact(&printed.stdout));
    Ok(printed.outcome)
}

/// The plan of `args` against `cluster` (notes on the checkout go to stderr at once).
pub(super) async fn plan(cluster: &Cluster, args: &PlanArgs) -> Result<Printed, PreviewError> {
    let namespace = args.namespace.namespace.clone().unwrap_or_else(|| cluster.default_namespace().to_owned());
    let applyset = target::applyset_from_cluster(cluster, &namespace, &args.name).await?;
    if applyset.spec.suspend {
        eprintln!("note: ApplySet {} is suspended: no run applies this until it is resumed", applyset.key());
    }
    let checkout = target::locate(&args.checkout.path, applyset.spec.source.path.as_deref())?;
    for note in &checkout.notes {
        eprintln!("{note}");
    }
    let substitute = render::variables(&applyset, Variables::Cluster(cluster)).await?;
    let decryption = render::decryption(&applyset, &args.checkout, Some(cluster)).await?;
    let mut loaded = render::build(&applyset, &checkout, &args.checkout, substitute, &decryption).await?;
    let recorded = target::recorded_members(cluster, &applyset).await?;
    let own_namespace = applyset.namespace_or_default();
    inventory::check_fits(recorded.as_deref(), &loaded, &own_namespace, inventory::RECORD_LIMIT)?;
    let ignore = ignore_rules(&applyset)?;
    let timeout =
        Intervals::of(&applyset, std::time::Duration::ZERO).map_err(|e| StepError::of(Stage::InvalidSpec, e))?.timeout;

    // The parent as the run makes it: the kinds and namespaces its annotations and status record.
    let index = cluster.api_index().await?;
    let labels = applyset.metadata.labels.clone().unwrap_or_default();
    let annotations = applyset.metadata.annotations.clone().unwrap_or_default();
    let (parent, _) = parent_for(&applyset, recorded.as_deref().unwrap_or_default(), &index, &labels, &annotations)?;
    let set_id = parent.id().to_owned();

    if applyset.secrets_mode(args.default_secrets) == SecretsMode::Hashed {
        for object in &mut loaded {
            last_applied::fold_string_data(&mut object.object);
        }
    }
    let rules = ApplyRules {
        field_manager: controller::FIELD_MANAGER,
        concurrency: args.cluster.concurrency as usize,
        set_id: &set_id,
        ignore: &ignore,
        history: Arc::new(HistoryIndex::default()),
        steady: false,
        report_only: false,
        last_applied: Some(LastAppliedCodecRef(Arc::new(UnkeyedHashes))),
        timeout,
        cache: None,
    };
    let mut options = controller_apply_options(&applyset, rules);
    options.dry_run = DryRun::Client;
    options.keep_results = Keep::Everything;
    options.patch_filter = Some(keeping_hashed_annotations(options.patch_filter.take()));

    // Kinds that only a CRD of this build defines cannot have objects yet: created.
    let predicted = predicted_mappings(&loaded);
    let by_crd: Vec<(bool, Option<String>)> =
        loaded.iter().map(|o| scope::defined_by_build(&o.object, &predicted, &own_namespace)).collect();
    let plan = apply::plan(cluster, loaded, &options).await?;
    let report = apply::execute(cluster, plan, &options).await;

    let run = Run::new(cluster, parent, ParentWrites::Kubectl, DryRun::Client);
    let applied_all = report.objects.iter().zip(&by_crd).all(|(object, (by_crd, _))| match &object.result {
        Ok(_) => true,
        Err(error) => *by_crd && error.category == ErrorCategory::NoMatch,
    });
    let decision = if applied_all && applyset.spec.prune {
        let members = inventory::with_applied(recorded.as_deref(), &report.visited);
        let revision = &checkout.revision;
        let scope = prune::Scope::of_run(&applyset, &own_namespace, &members, recorded.is_some(), revision, timeout);
        Some(prune::decide(&run, &index, &report.visited, &scope).await)
    } else {
        None
    };
    let planned =
        Planned { report: &report, created_with_crd: &by_crd, prune: applyset.spec.prune, decision: decision.as_ref() };
    Ok(report::render(&planned))
}
