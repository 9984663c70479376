//! Leader election against the real kube-apiserver: replicas take turns on a Lease the way
//! client-go's elector does.
//!
//! The timings are short (lease 3 s, renew deadline 2 s, retry 500 ms) so the tests finish
//! quickly; the bounds asserted on leave room for a loaded machine.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use applyset::operator::leader::{LeaderElector, LeadershipLost, LeaseConfig};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use support::TestNamespace;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio::time::Instant;

const LEASE_NAME: &str = "applyset-controller";
const LEASE_DURATION: Duration = Duration::from_secs(3);
const RENEW_DEADLINE: Duration = Duration::from_secs(2);
const RETRY_PERIOD: Duration = Duration::from_millis(500);

/// Generous bound for things that should happen at once (one request, or a retry period).
const PROMPTLY: Duration = Duration::from_secs(10);

fn lease_config(namespace: &str, identity: &str) -> LeaseConfig {
    let config = LeaseConfig {
        namespace: namespace.to_owned(),
        name: LEASE_NAME.to_owned(),
        identity: identity.to_owned(),
        lease_duration: LEASE_DURATION,
        renew_deadline: RENEW_DEADLINE,
        retry_period: RETRY_PERIOD,
    };
    config.validate().expect("the test timings are valid");
    config
}

fn elector(namespace: &TestNamespace, identity: &str) -> LeaderElector {
    LeaderElector::new(namespace.client.clone(), lease_config(&namespace.name, identity))
}

async fn read_lease(namespace: &TestNamespace) -> Result<LeaseSpec> {
    let lease = Api::<Lease>::namespaced(namespace.client.clone(), &namespace.name)
        .get(LEASE_NAME)
        .await
        .context("reading the lease")?;
    lease.spec.context("the lease has no spec")
}

fn holder(spec: &LeaseSpec) -> Option<&str> {
    spec.holder_identity.as_deref().filter(|holder| !holder.is_empty())
}

async fn acquire_promptly(elector: &mut LeaderElector) -> Result<()> {
    tokio::time::timeout(PROMPTLY, elector.acquire())
        .await
        .with_context(|| format!("{} did not acquire a free lease", elector.identity()))
}

/// The elector back, and why and when it lost leadership if it did.
type RenewalTask = tokio::task::JoinHandle<(LeaderElector, Option<(LeadershipLost, Instant)>)>;

/// Runs `elector.renew_until_lost()` in the background until told to stop (returning `None`
/// and the elector, still leading) or until leadership is lost (returning the reason and when).
fn renew_in_background(mut elector: LeaderElector) -> (oneshot::Sender<()>, RenewalTask) {
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let lost = tokio::select! {
            lost = elector.renew_until_lost() => Some((lost, Instant::now())),
            _ = stopped => None,
        };
        (elector, lost)
    });
    (stop, task)
}

/// Runs `elector.acquire()` in the background; the task returns when it acquired.
fn acquire_in_background(mut elector: LeaderElector) -> tokio::task::JoinHandle<(LeaderElector, Instant)> {
    tokio::spawn(async move {
        elector.acquire().await;
        (elector, Instant::now())
    })
}

#[tokio::test]
async fn standby_waits_while_the_leader_renews_and_takes_over_when_it_releases() -> Result<()> {
    let namespace = TestNamespace::create("leader-release").await?;
    let mut first = elector(&namespace, "first");
    let mut second = elector(&namespace, "second");

    acquire_promptly(&mut first).await?;
    assert!(first.is_leader());
    let lease = read_lease(&namespace).await?;
    assert_eq!(holder(&lease), Some("first"));
    assert_eq!(lease.lease_duration_seconds, Some(3));
    assert_eq!(lease.lease_transitions, Some(0));
    assert!(lease.acquire_time.is_some() && lease.renew_time.is_some());

    let (stop_renewing, renewing) = renew_in_background(first);

    // Twice the lease duration: the standby would have taken an unrenewed lease by then.
    let blocked = tokio::time::timeout(LEASE_DURATION * 2, second.acquire()).await;
    assert!(blocked.is_err(), "the standby acquired a lease that is being renewed");
    assert!(!second.is_leader());
    let renewed = read_lease(&namespace).await?;
    assert_eq!(holder(&renewed), Some("first"));
    assert!(
        renewed.renew_time > lease.renew_time,
        "the leader renews: {:?} then {:?}",
        lease.renew_time,
        renewed.renew_time
    );
    assert_eq!(renewed.acquire_time, lease.acquire_time);
    assert_eq!(renewed.lease_transitions, Some(0));

    let standby = acquire_in_background(second);
    // Let the standby observe the lease held.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _ = stop_renewing.send(());
    let (mut first, lost) = renewing.await?;
    assert_eq!(lost, None, "the leader lost while renewing undisturbed");
    first.release().await;
    let released_at = Instant::now();
    assert!(!first.is_leader());

    let (mut second, acquired_at) =
        tokio::time::timeout(PROMPTLY, standby).await.context("the standby did not take over a released lease")??;
    let takeover = acquired_at.duration_since(released_at);
    assert!(takeover < Duration::from_millis(2500), "the standby took {takeover:?} to take over a released lease");
    let lease = read_lease(&namespace).await?;
    assert_eq!(holder(&lease), Some("second"));
    assert_eq!(lease.lease_transitions, Some(1));
    assert_eq!(lease.lease_duration_seconds, Some(3));

    second.release().await;
    Ok(())
}

#[tokio::test]
async fn release_clears_the_holder_and_shortens_the_lease() -> Result<()> {
    let namespace = TestNamespace::create("leader-clear").await?;
    let mut leader = elector(&namespace, "leader");
    // Releasing before ever acquiring does nothing (and creates no lease).
    leader.release().await;
    assert!(Api::<Lease>::namespaced(namespace.client.clone(), &namespace.name).get_opt(LEASE_NAME).await?.is_none());

    acquire_promptly(&mut leader).await?;
    leader.release().await;
    let lease = read_lease(&namespace).await?;
    assert_eq!(holder(&lease), None);
    assert_eq!(lease.lease_duration_seconds, Some(1));
    assert_eq!(lease.lease_transitions, Some(0));
    assert!(!leader.is_leader());
    assert_eq!(leader.renew_until_lost().await, LeadershipLost::NotHeld, "renewing a released lease");

    // Taking a released lease back counts as a transition.
    acquire_promptly(&mut leader).await?;
    let lease = read_lease(&namespace).await?;
    assert_eq!(holder(&lease), Some("leader"));
    assert_eq!(lease.lease_duration_seconds, Some(3));
    assert_eq!(lease.lease_transitions, Some(1));
    leader.release().await;
    Ok(())
}

#[tokio::test]
async fn standby_takes_over_after_the_lease_duration_when_the_leader_vanishes() -> Result<()> {
    let namespace = TestNamespace::create("leader-vanish").await?;
    let mut first = elector(&namespace, "first");
    acquire_promptly(&mut first).await?;
    // Gone without releasing, like a crashed or partitioned replica.
    drop(first);

    let mut second = elector(&namespace, "second");
    let started = Instant::now();
    tokio::time::timeout(LEASE_DURATION + PROMPTLY, second.acquire())
        .await
        .context("the standby did not take over an abandoned lease")?;
    let waited = started.elapsed();
    // Expiry is judged from when the standby first saw the record, so it waits at least the
    // whole duration however old the record is.
    assert!(waited >= LEASE_DURATION, "the standby took an abandoned lease after {waited:?}, before it expired");
    assert!(waited < LEASE_DURATION + Duration::from_secs(3), "the standby took {waited:?} to take an abandoned lease");
    let lease = read_lease(&namespace).await?;
    assert_eq!(holder(&lease), Some("second"));
    assert_eq!(lease.lease_transitions, Some(1));

    // And back again: every change of holder counts.
    let mut third = elector(&namespace, "third");
    second.release().await;
    acquire_promptly(&mut third).await?;
    let lease = read_lease(&namespace).await?;
    assert_eq!(holder(&lease), Some("third"));
    assert_eq!(lease.lease_transitions, Some(2));
    third.release().await;
    Ok(())
}

#[tokio::test]
async fn leader_notices_when_another_replica_took_the_lease() -> Result<()> {
    let namespace = TestNamespace::create("leader-taken").await?;
    let mut leader = elector(&namespace, "leader");
    acquire_promptly(&mut leader).await?;

    // Someone else writes itself in (as a replica that judged the lease expired would).
    let leases = Api::<Lease>::namespaced(namespace.client.clone(), &namespace.name);
    let mut lease = leases.get(LEASE_NAME).await?;
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.holder_identity = Some("intruder".to_owned());
    spec.lease_duration_seconds = Some(60);
    leases.replace(LEASE_NAME, &PostParams::default(), &lease).await?;

    let lost = tokio::time::timeout(PROMPTLY, leader.renew_until_lost())
        .await
        .context("the leader did not notice that it lost the lease")?;
    assert_eq!(lost, LeadershipLost::TakenOver { holder: "intruder".to_owned() });
    assert!(!leader.is_leader());

    // Releasing must not take the lease from its new holder.
    leader.release().await;
    assert_eq!(holder(&read_lease(&namespace).await?), Some("intruder"));
    Ok(())
}

#[tokio::test]
async fn leader_gives_up_before_a_standby_can_take_over_when_renewals_fail() -> Result<()> {
    let namespace = TestNamespace::create("leader-cut").await?;
    let proxy = CuttableProxy::start(&namespace.kubeconfig).await?;
    let mut leader = LeaderElector::new(proxy.client.clone(), lease_config(&namespace.name, "leader"));
    acquire_promptly(&mut leader).await?;
    let (_keep_renewing, renewing) = renew_in_background(leader);
    let standby = acquire_in_background(elector(&namespace, "standby"));

    // Let the standby observe a few renewals, then cut the leader off from the apiserver:
    // requests hang, as when a network partition drops packets.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(holder(&read_lease(&namespace).await?), Some("leader"));
    proxy.cut();
    let cut_at = Instant::now();

    let (_leader, lost) =
        tokio::time::timeout(PROMPTLY, renewing).await.context("the leader kept leading with renewals failing")??;
    let Some((reason, lost_at)) = lost else {
        bail!("the renewal task stopped without losing");
    };
    assert!(matches!(reason, LeadershipLost::RenewDeadlineExceeded { .. }), "{reason:?}");
    assert!(
        lost_at.duration_since(cut_at) <= RENEW_DEADLINE + Duration::from_millis(500),
        "the leader gave up {:?} after it was cut off",
        lost_at.duration_since(cut_at)
    );

    let (mut standby, acquired_at) =
        tokio::time::timeout(PROMPTLY, standby).await.context("the standby did not take over")??;
    assert!(
        lost_at < acquired_at,
        "the standby led {:?} before the old leader stopped",
        lost_at.duration_since(acquired_at)
    );
    let lease = read_lease(&namespace).await?;
    assert_eq!(holder(&lease), Some("standby"));
    assert_eq!(lease.lease_transitions, Some(1));
    standby.release().await;
    Ok(())
}

/// A TCP proxy to the apiserver that can be cut: afterwards it swallows everything sent through
/// it without answering or closing, so requests hang rather than fail fast.
struct CuttableProxy {
    /// A client for the cluster that connects through the proxy.
    client: Client,
    cut: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl CuttableProxy {
    async fn start(kubeconfig: &std::path::Path) -> Result<CuttableProxy> {
        let mut config =
            Config::from_custom_kubeconfig(Kubeconfig::read_from(kubeconfig)?, &KubeConfigOptions::default()).await?;
        let host = config.cluster_url.host().context("no apiserver host")?;
        let port = config.cluster_url.port_u16().unwrap_or(443);
        let upstream: SocketAddr =
            tokio::net::lookup_host((host, port)).await?.next().context("the apiserver host does not resolve")?;

        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let cut = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn({
            let cut = Arc::clone(&cut);
            async move {
                // Dropped (so aborted) with this task.
                let mut connections = JoinSet::new();
                loop {
                    if let Ok((downstream, _)) = listener.accept().await {
                        connections.spawn(forward(downstream, upstream, Arc::clone(&cut)));
                    }
                }
            }
        });

        // The proxy listens on 127.0.0.1, which the test apiserver's certificate names; a host
        // name is kept for the certificate check.
        if host.parse::<std::net::IpAddr>().is_err() {
            config.tls_server_name = Some(host.to_owned());
        }
        config.cluster_url = format!("https://{address}").parse()?;
        let client = Client::try_from(config)?;
        Ok(CuttableProxy { client, cut, task })
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }
}

impl Drop for CuttableProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn forward(downstream: TcpStream, upstream: SocketAddr, cut: Arc<AtomicBool>) {
    let Ok(upstream) = TcpStream::connect(upstream).await else {
        return;
    };
    let (downstream_read, downstream_write) = downstream.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    tokio::join!(pump(downstream_read, upstream_write, &cut), pump(upstream_read, downstream_write, &cut),);
}

async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, cut: &AtomicBool) {
    let mut buffer = vec![0; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        if cut.load(Ordering::SeqCst) {
            // Keep both sockets open and answer nothing, ever.
            std::future::pending::<()>().await;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
