//! `applyset controller`: wires the reconciler to kube-runtime's `Controller`, the HTTP
//! endpoints, leader election and signals.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::Api;
use kube::api::ListParams;
use kube::runtime::controller::{Config as ControllerConfig, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;

use super::api::ApplySet;
use super::cache::{self, ManagedCache};
use super::context::{ClusterSource, Context, Settings};
use super::http::{self, Health};
use super::leader::{LeaderElector, LeaseConfig};
use super::metrics::Metrics;
use super::{reconcile, webhook};
use crate::causes::Chain;
use crate::cli::{ControllerArgs, DEFAULT_LEADER_ELECTION_ID, LeaderArgs, LogFormat};
use crate::cluster::{Cluster, ConnectOptions, RateLimiter};
use crate::duration;
use crate::source::GitSource;

pub fn run(args: ControllerArgs) -> ExitCode {
    init_logging(args.logging.log_format);
    crate::cluster::warnings_to_log();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(crate::DOCUMENT_THREAD_STACK)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}", error = Chain(&error));
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            eprintln!("error: {}", crate::redact::redact(&format!("{error:#}")));
            ExitCode::from(1)
        }
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour only on a terminal: pod logs and files get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(crate::redact::RedactingWriter).with_ansi(ansi);
    let _ = match format {
        LogFormat::Plain => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// Resolves when SIGINT or SIGTERM arrives.
async fn termination() {
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// The kustomize of `--kustomize-binary` must be the pinned one: another version stops the
/// controller before it applies anything; a missing one is only logged (sources without a
/// kustomization do not need it; those with one fail their build, naming it).
async fn check_kustomize(binary: &std::path::Path) -> anyhow::Result<()> {
    use crate::manifest::kustomize::{BuildError, check_version};
    match check_version(binary).await {
        Ok(()) => Ok(()),
        Err(missing @ BuildError::NoProgram { .. }) => {
            tracing::warn!("{missing}; sources holding a kustomization will fail to build");
            Ok(())
        }
        Err(other) => Err(other.into()),
    }
}

/// A shutdown signal shared by the HTTP servers and the controller.
#[derive(Clone)]
struct Stop(watch::Sender<bool>);

impl Stop {
    fn new() -> Stop {
        Stop(watch::channel(false).0)
    }

    fn send(&self) {
        let _ = self.0.send(true);
    }

    /// Resolves once [`Stop::send`] was called.
    fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut stopped = self.0.subscribe();
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        }
    }
}

async fn serve(args: ControllerArgs) -> anyhow::Result<()> {
    check_kustomize(&args.scope.kustomize.kustomize_binary).await?;
    let connect = ConnectOptions {
        kubeconfig: args.cluster.kubeconfig.clone(),
        context: args.cluster.context.clone(),
        qps: args.cluster.qps,
        burst: args.cluster.burst,
        ..ConnectOptions::default()
    };
    let config = Cluster::load_config(&connect).await?;
    // One rate budget for the process (--qps, --burst): the controller's own requests
    // (watches, status, Events, parents) and every apply identity's take their turns at it.
    // It adapts to the apiserver under the --qps ceiling, unless --fixed-qps.
    let limiter = Arc::new(if args.cluster.fixed_qps {
        RateLimiter::new(args.cluster.qps, args.cluster.burst)
    } else {
        RateLimiter::adaptive(args.cluster.qps, args.cluster.burst)
    });
    let client = crate::cluster::rate_limited_client(config.clone(), limiter.clone())?;
    let metrics = Arc::new(Metrics::new());
    tokio::spawn(publish_request_budget(limiter.clone(), metrics.clone()));
    let health = Health::new();
    let stop = Stop::new();
    let server_tasks = start_servers(&args, &metrics, &health, &stop).await?;

    let applysets: Api<ApplySet> = match &args.scope.watch_namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    };
    let shard = args.scope.shard_selector.as_deref().filter(|s| !s.is_empty());
    check_crd_installed(&applysets, shard).await?;
    if let Some(selector) = shard {
        tracing::info!(selector, "reconciling the ApplySets of one shard");
    }

    let watch = match shard {
        Some(selector) => watcher::Config::default().any_semantic().labels(selector),
        None => watcher::Config::default().any_semantic(),
    };
    // Every replica serves the webhook receiver, standbys included: an accepted push only
    // writes the ApplySet's run-request annotation, which the leader acts on, so the webhook
    // Service may send a push to any ready replica.
    let mut server_tasks = server_tasks;
    if let Some(address) = args.serving.webhook_bind_address {
        let receiver =
            webhook::Receiver::new(client.clone(), receiver_view(&applysets, &watch, &stop), metrics.clone());
        let server = http::bind_router(address, webhook::router(receiver)).await?;
        server_tasks.push(tokio::spawn(server.run(stop.stopped())));
    }

    let mut elector = match args.leader.leader_elect {
        true => Some(LeaderElector::new(client.clone(), lease_config(&args.leader, shard)?)),
        false => None,
    };
    if !lead(elector.as_mut(), &health, &stop).await {
        return Ok(());
    }
    metrics.set_leader(true);

    let identity = elector.as_ref().map_or_else(instance_name, |e| e.identity().to_owned());
    let git = GitSource::new(&args.scope.cache_dir);
    let (cache, changes) = ManagedCache::new(client.clone(), args.scope.watch_namespace.clone(), metrics.clone());
    let settings = settings(&args)?;
    let clusters = ClusterSource::from_config(config, limiter);
    let context =
        Arc::new(Context::new(client.clone(), clusters, git, metrics.clone(), settings, identity, cache.clone()));
    // The ApplySets as the controller keeps them: without managedFields, which no run reads
    // and which are most of a small ApplySet's size (a thousand ApplySets: 15 MB).
    let (store, writer) = reflector::store();
    // (Backoff on watch errors: the controller's own, as with Controller::new.)
    let trigger = watcher(applysets, watch)
        .modify(|applyset: &mut ApplySet| applyset.metadata.managed_fields = None)
        .reflect(writer)
        .applied_objects();
    let controller = Controller::for_stream(trigger, store).with_config(
        // Every due ApplySet is handed to a reconcile at once (0: no limit here); the schedule's
        // fair gate lets --concurrent-reconciles of them run, fairly between namespaces. No
        // debounce: a new ApplySet, a push or a `reconcile` request runs at once; the events
        // of the controller's own writes find nothing due (`Schedule::is_due`), and a copy
        // older than those writes waits for the store (`WrittenVersions`).
        ControllerConfig::default().concurrency(0),
    );
    tokio::spawn(ready_once_synced(controller.store(), health.clone()));
    let requested =
        anyhow::Context::context(context.connect(controller.store()), "the controller's context was connected twice")?;
    // Changes to managed objects ask for runs through the schedule, like every other "run now".
    tokio::spawn(cache::triggers::drift_checks(cache, changes, controller.store(), context.clone()));
    let requested = futures::stream::unfold(requested, |mut r| async { r.recv().await.map(|o| (o, r)) });
    let controller = controller.reconcile_on(requested);
    let running =
        controller.graceful_shutdown_on(stop.stopped()).run(reconcile::reconcile, reconcile::error_policy, context);
    let outcome = run_until_stopped(running, elector.as_mut(), &metrics, &stop).await;

    stop.send();
    if outcome.is_ok()
        && let Some(elector) = elector.as_mut()
    {
        elector.release().await;
    }
    for task in server_tasks {
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
    outcome
}

/// The metrics server answers the probes too; a second server only for a different address.
async fn start_servers(
    args: &ControllerArgs,
    metrics: &Arc<Metrics>,
    health: &Arc<Health>,
    stop: &Stop,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    let mut servers = vec![http::bind(args.serving.metrics_bind_address, Some(metrics.clone()), health.clone()).await?];
    if args.serving.health_probe_bind_address != args.serving.metrics_bind_address {
        servers.push(http::bind(args.serving.health_probe_bind_address, None, health.clone()).await?);
    }
    Ok(servers.into_iter().map(|server| tokio::spawn(server.run(stop.stopped()))).collect())
}

/// The webhook receiver's own view of the ApplySets (the controller's exists on the leader
/// only): the same selection, specs and `status.webhookPath` only (statuses can be large and
/// the receiver reads nothing else of them), kept until the controller stops.
fn receiver_view(applysets: &Api<ApplySet>, watch: &watcher::Config, stop: &Stop) -> Store<ApplySet> {
    let (store, writer) = reflector::store();
    let view = watcher(applysets.clone(), watch.clone())
        .default_backoff()
        .modify(|applyset: &mut ApplySet| {
            let webhook_path = applyset.status.take().and_then(|status| status.webhook_path);
            applyset.status =
                webhook_path.map(|path| super::api::ApplySetStatus { webhook_path: Some(path), ..Default::default() });
            applyset.metadata.managed_fields = None;
        })
        .reflect(writer)
        .for_each(|_| async {});
    let stopped = stop.stopped();
    tokio::spawn(async move {
        tokio::select! {
            _ = view => {}
            _ = stopped => {}
        }
    });
    store
}

/// The CRD must be installed (and a shard selector valid, which the apiserver judges); say so
/// plainly instead of retrying a failing watch forever.
async fn check_crd_installed(applysets: &Api<ApplySet>, shard: Option<&str>) -> anyhow::Result<()> {
    let mut params = ListParams::default().limit(1);
    if let Some(selector) = shard {
        params = params.labels(selector);
    }
    if let Err(error) = applysets.list_metadata(&params).await {
        if let (Some(selector), kube::Error::Api(response)) = (shard, &error)
            && response.code == 400
        {
            anyhow::bail!("--shard-selector {selector:?}: {}", response.message);
        }
        anyhow::bail!(
            "cannot list ApplySets ({error}); are the CRDs installed (`applyset crd | kubectl apply -f -`) and may this identity list applysets.applyset.dev?"
        );
    }
    Ok(())
}

/// Waits for the lease when leader election is on; false when asked to stop while waiting.
async fn lead(elector: Option<&mut LeaderElector>, health: &Health, stop: &Stop) -> bool {
    // A standby is healthy and ready: it serves probes, and webhooks, while it waits for the
    // lease.
    health.set_ready(elector.is_some());
    let Some(elector) = elector else { return true };
    tracing::info!(identity = elector.identity(), "waiting to lead");
    tokio::select! {
        _ = elector.acquire() => {}
        _ = termination() => {
            stop.send();
            return false;
        }
    }
    tracing::info!(identity = elector.identity(), "leading");
    true
}

/// The field manager of the controller's client-side applies (their writes to managed objects).
pub const FIELD_MANAGER: &str = "applyset-controller";

fn settings(args: &ControllerArgs) -> anyhow::Result<Settings> {
    Ok(Settings {
        apply_concurrency: args.scope.apply_concurrency as usize,
        default_service_account: args.scope.default_service_account.clone(),
        allow_local_sources: args.scope.allow_local_sources,
        no_cross_namespace_refs: args.scope.no_cross_namespace_refs,
        field_manager: FIELD_MANAGER.into(),
        min_interval: crate::duration::parse(&args.scope.min_interval)
            .map_err(|e| anyhow::anyhow!("--min-interval {:?}: {e}", args.scope.min_interval, e = Chain(&e)))?,
        default_secrets: args.scope.default_secrets,
        kustomize_binary: args.scope.kustomize.kustomize_binary.clone(),
        concurrent_reconciles: usize::from(args.scope.concurrent_reconciles),
        record_limit: super::members::codec::RECORD_LIMIT,
        allow_remote_exec: args.scope.allow_remote_exec,
        remote_rate: (args.cluster.qps, args.cluster.burst),
        progress_report_after: super::context::PROGRESS_REPORT_AFTER,
        secret_hash_key: (
            args.leader.leader_election_namespace.clone().unwrap_or_else(|| "default".into()),
            args.scope.secret_hash_key.clone(),
        ),
        manifest_limits: crate::manifest::Limits {
            file: Some(args.manifests.max_manifest_file_size),
            document: Some(args.manifests.max_manifest_document_size),
            total: Some(args.manifests.max_manifest_revision_size),
        },
    })
}

/// Ready once the ApplySet cache has listed. Asked again every second: a wait begun before the
/// first list completes has been seen to miss its wake-up.
async fn ready_once_synced(store: kube::runtime::reflector::Store<ApplySet>, health: Arc<Health>) {
    loop {
        match tokio::time::timeout(Duration::from_secs(1), store.wait_until_ready()).await {
            Ok(Ok(())) => break,
            Ok(Err(_)) => return,
            Err(_) => continue,
        }
    }
    health.set_ready(true);
    tracing::info!("ApplySet cache synced");
}

/// Drives the controller until it ends, a signal asks to stop (reconciles in flight get 30 s),
/// or the lease is lost.
async fn run_until_stopped<S, T, E>(
    running: S,
    elector: Option<&mut LeaderElector>,
    metrics: &Metrics,
    stop: &Stop,
) -> anyhow::Result<()>
where
    S: futures::Stream<Item = Result<T, E>>,
    E: std::error::Error,
{
    let running = running.for_each(|result| async move {
        if let Err(error) = result {
            tracing::debug!(error = %Chain(&error), "controller event");
        }
    });
    tokio::pin!(running);
    let lost = async {
        match elector {
            Some(elector) => elector.renew_until_lost().await.to_string(),
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = &mut running => Ok(()),
        _ = termination() => {
            tracing::info!("stopping: finishing reconciles in flight");
            stop.send();
            let _ = tokio::time::timeout(Duration::from_secs(30), &mut running).await;
            Ok(())
        }
        reason = lost => {
            // Another replica may be writing already: stop at once, as client-go's controllers do.
            metrics.set_leader(false);
            Err(anyhow::anyhow!("lost leadership: {reason}"))
        }
    }
}

/// The Lease's name: a shard's controllers elect their own leader, so with a shard selector
/// and the default name, the name gets a digest of the selector.
fn lease_name(args: &LeaderArgs, shard: Option<&str>) -> String {
    match shard {
        Some(selector) if args.leader_election_id == DEFAULT_LEADER_ELECTION_ID => {
            format!("{}-shard-{}", args.leader_election_id, crate::digest::short_sha256(selector))
        }
        _ => args.leader_election_id.clone(),
    }
}

fn lease_config(args: &LeaderArgs, shard: Option<&str>) -> anyhow::Result<LeaseConfig> {
    let parse =
        |name: &str, text: &str| duration::parse(text).map_err(|e| anyhow::anyhow!("--{name}: {e}", e = Chain(&e)));
    let config = LeaseConfig {
        namespace: args.leader_election_namespace.clone().unwrap_or_else(|| "default".into()),
        name: lease_name(args, shard),
        identity: format!(
            "{}_{:08x}",
            args.leader_election_identity.clone().unwrap_or_else(instance_name),
            fastrand::u32(..)
        ),
        lease_duration: parse("lease-duration", &args.lease_duration)?,
        renew_deadline: parse("renew-deadline", &args.renew_deadline)?,
        retry_period: parse("retry-period", &args.retry_period)?,
    };
    config.validate()?;
    Ok(config)
}

fn instance_name() -> String {
    std::env::var("POD_NAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|h| h.trim().to_owned()))
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "applyset".into())
}

/// The request budget in the metrics, once a second.
async fn publish_request_budget(limiter: Arc<RateLimiter>, metrics: Arc<Metrics>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        tick.tick().await;
        metrics.set_request_budget(limiter.rate(), limiter.throttled());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leader_args(id: &str) -> LeaderArgs {
        LeaderArgs {
            leader_elect: true,
            leader_election_namespace: None,
            leader_election_id: id.to_owned(),
            leader_election_identity: None,
            lease_duration: "15s".into(),
            renew_deadline: "10s".into(),
            retry_period: "2s".into(),
        }
    }

    #[test]
    fn each_shard_has_its_own_lease_unless_one_is_named() {
        let default = leader_args(DEFAULT_LEADER_ELECTION_ID);
        assert_eq!(lease_name(&default, None), "applyset-controller");
        let a = lease_name(&default, Some("sharding.applyset.dev/key=a"));
        let b = lease_name(&default, Some("sharding.applyset.dev/key=b"));
        assert!(a.starts_with("applyset-controller-shard-") && b.starts_with("applyset-controller-shard-"));
        assert_ne!(a, b);
        assert_eq!(a, lease_name(&default, Some("sharding.applyset.dev/key=a")), "stable across restarts");
        assert_eq!(lease_name(&leader_args("mine"), Some("sharding.applyset.dev/key=a")), "mine");
    }
}
