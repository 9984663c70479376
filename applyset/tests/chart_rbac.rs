//! The Helm chart's RBAC, proven by running the controller with it: the chart is rendered with
//! the multi-tenant lockdown values (`deploy/helm/applyset/ci/lockdown-values.yaml`:
//! `rbac.clusterAdmin=false`, `defaultServiceAccount`), only its ServiceAccount and RBAC objects
//! (and its CRD) are applied, and the controller binary runs out of cluster with nothing but a
//! TokenRequest token of the chart's ServiceAccount, with the flags and environment of the
//! chart's Deployment.
//!
//! Then, as a user would with kubectl:
//! - a tenant ServiceAccount (the chart's `defaultServiceAccount`) that may manage ConfigMaps
//!   but not Secrets; a `file://` git repository with two ConfigMaps; the ApplySet becomes Ready
//!   (its source Secret read by the controller, its objects applied as the tenant); a commit
//!   removing one ConfigMap and a reconcile request prune it; deleting the ApplySet deletes its
//!   objects;
//! - an ApplySet whose repository holds a Secret fails with ApplyFailed and the Secret does not
//!   exist (no escalation through the controller);
//! - the Lease is held by the controller; Events are recorded; the controller's own identity
//!   was never denied anything.
//!
//! Sensitivity, for every rule of the chart's Roles (applysets, applysets/status, secrets,
//! impersonate serviceaccounts, events.k8s.io events, the Lease): with the rule removed, a short
//! smoke (a new ApplySet Ready=True with an Event on it) fails and the controller's identity is
//! denied the right the rule grants; with the rule back, the same ApplySet becomes Ready.
//!
//! Only the lockdown values with a `watchNamespace` are run: a cluster-wide controller would
//! reconcile (and write the status of) every ApplySet of the cluster, others' too. The defaults
//! bind cluster-admin, which proves nothing. Helm comes from `scripts/install-tools --helm-only`
//! (or `$APPLYSET_TEST_HELM`).

mod git;
mod operator;
mod support;

#[path = "chart_rbac/checks.rs"]
mod checks;
#[path = "chart_rbac/rendered_chart.rs"]
mod rendered_chart;

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use checks::{can_i, denial, event_reasons, plain, ready_of, step, wait_can, wait_deleted, wait_handled};
use operator::{
    ControllerFixture, ControllerOptions, condition, config_map, config_map_value, create_applyset, failed_with,
    get_applyset, is_ready, ready_at, request_reconcile, revision, wait_for_applyset,
};
use rendered_chart::{manifest, name_of, render};
use serde_json::{Value, json};
use support::{TestNamespace, kubectl_cluster, lease_holder, random_suffix, read_lease, run};

/// How long each expected state is waited for.
const T: Duration = Duration::from_secs(60);
const CHART: &str = "deploy/helm/applyset";

/// One rule of the chart's Roles: the rule on `resource` of Role `role` (in `role_ns`) grants
/// `can` (`kubectl auth can-i` arguments) with `verb`.
struct Rule<'a> {
    variant: &'a str,
    role: String,
    role_ns: &'a TestNamespace,
    resource: &'a str,
    verb: &'a str,
    can: &'a [&'a str],
    /// The controller is stopped before the removal and started again after (for the Lease,
    /// which a running leader already holds).
    restart: bool,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chart_rbac_is_all_the_controller_needs() -> Result<()> {
    let started = Instant::now();
    let release_ns = TestNamespace::create("rbac").await?;
    let ControllerFixture { ns: tenant, repo } = ControllerFixture::new("rbac-tenant").await?;
    let suffix = random_suffix();
    let release = format!("rbac-{suffix}");
    let pod_name = format!("chart-rbac-{suffix}");
    let admin = release_ns.kubeconfig.clone();
    let admin_kubectl = |args: &[&str], stdin: Option<&str>| -> Result<String> {
        run(kubectl_cluster(&admin)?.args(args), stdin)?.success_stdout()
    };

    // ------------------------------------------------------------ the chart's RBAC, applied
    let chart = step(
        &format!(
            "helm template (lockdown values, release {release} in {}, watchNamespace {}): ServiceAccount and RBAC only",
            release_ns.name, tenant.name
        ),
        async { render(&release, &release_ns.name, &tenant.name, &pod_name) },
    )
    .await?;
    let controller_user = format!("system:serviceaccount:{}:{}", release_ns.name, chart.service_account);
    let lease_id =
        chart.args.iter().find_map(|arg| arg.strip_prefix("--leader-election-id=")).unwrap_or_default().to_owned();
    let tenant_sa = chart.env("APPLYSET_DEFAULT_SERVICE_ACCOUNT").unwrap_or_default().to_owned();
    let tenant_user = format!("system:serviceaccount:{}:{tenant_sa}", tenant.name);
    let controller_role = format!("{release}-applyset-controller");
    let leader_role = format!("{release}-applyset-leader-election");

    step(
        &format!("the Deployment's settings: watch {}, impersonate {tenant_sa} by default, leader election (Lease {lease_id})", tenant.name),
        async {
            eprintln!("args: {}", chart.args.join(" "));
            for (name, value) in &chart.env {
                eprintln!("env:  {name}={value}");
            }
            ensure!(chart.env("APPLYSET_WATCH_NAMESPACE") == Some(tenant.name.as_str()), "APPLYSET_WATCH_NAMESPACE is not {}", tenant.name);
            ensure!(!tenant_sa.is_empty(), "no APPLYSET_DEFAULT_SERVICE_ACCOUNT");
            ensure!(chart.env("APPLYSET_LEADER_ELECT") == Some("true"), "APPLYSET_LEADER_ELECT is not true");
            ensure!(!lease_id.is_empty(), "no --leader-election-id");
            ensure!(chart.rbac.iter().any(|o| o["kind"] == "Role"), "no Role rendered");
            let cluster_scoped: Vec<String> =
                chart.rbac.iter().filter(|o| o["kind"].as_str().is_some_and(|k| k.starts_with("ClusterRole"))).map(name_of).collect();
            ensure!(cluster_scoped.is_empty(), "cluster-scoped RBAC rendered in lockdown: {cluster_scoped:?}");
            Ok(())
        },
    )
    .await?;

    step(&format!("kubectl apply -f {CHART}/crds (CRD applysets.applyset.dev)"), async {
        let crds = support::repo_root().join(CHART).join("crds");
        admin_kubectl(&["apply", "--server-side", "--force-conflicts", "-f", crds.to_str().context("UTF-8")?], None)?;
        admin_kubectl(&["wait", "--for=condition=Established", "crd/applysets.applyset.dev", "--timeout=60s"], None)
    })
    .await?;
    step("kubectl apply the ServiceAccount and RBAC objects (not the Deployment)", async {
        admin_kubectl(&["apply", "-f", "-"], Some(&manifest(&chart.rbac.iter().collect::<Vec<_>>())))
    })
    .await?;

    // ------------------------------------------------------------ the controller, as the ServiceAccount
    let sa_kubeconfig = step(
        &format!("TokenRequest token of {} (1h), kubeconfig with only that token", chart.service_account),
        async {
            let token = release_ns.kubectl_ok(&["create", "token", &chart.service_account, "--duration=1h"], None)?;
            let kubeconfig = release_ns.token_kubeconfig(token.trim(), "controller")?;
            let mut whoami = support::kubectl(&kubeconfig.path, &tenant.name)?;
            whoami.args(["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]);
            let whoami = run(&mut whoami, None)?.success_stdout()?;
            eprintln!("the kubeconfig authenticates as {whoami}");
            ensure!(whoami == controller_user, "authenticated as {whoami}, not {controller_user}");
            Ok(kubeconfig)
        },
    )
    .await?;
    let mut options = ControllerOptions::new(&sa_kubeconfig.path, &tenant.name);
    options.pod_env = Some(chart.env.clone());
    options.extra_args = chart.args.clone();
    let options = options
        .arg("--leader-election-namespace")
        .arg(release_ns.name.clone())
        .local_sources()
        .arg("--min-interval")
        .arg("1s");
    let mut controller = step(
        &format!("controller out of cluster with the chart's flags and environment, as {controller_user}: /readyz"),
        async { options.clone().start() },
    )
    .await?;

    // ------------------------------------------------------------ smoke, as a user would
    step(
        &format!(
            "tenant ServiceAccount {}/{tenant_sa}: ConfigMaps yes, Secrets no; source Secret git-auth",
            tenant.name
        ),
        async {
            tenant.kubectl_ok(&["create", "serviceaccount", &tenant_sa], None)?;
            tenant.kubectl_ok(
                &[
                    "create",
                    "role",
                    "tenant-configmaps",
                    "--verb=get,list,watch,create,update,patch,delete",
                    "--resource=configmaps",
                ],
                None,
            )?;
            let subject = format!("--serviceaccount={}:{tenant_sa}", tenant.name);
            tenant.kubectl_ok(
                &["create", "rolebinding", "tenant-configmaps", "--role=tenant-configmaps", &subject],
                None,
            )?;
            tenant.kubectl_ok(
                &[
                    "create",
                    "secret",
                    "generic",
                    "git-auth",
                    "--from-literal=username=chart-rbac",
                    "--from-literal=password=unused-by-file-urls",
                ],
                None,
            )?;
            for (expect, verb, resource) in [
                ("yes", "create", "configmaps"),
                ("yes", "delete", "configmaps"),
                ("no", "create", "secrets"),
                ("no", "get", "secrets"),
            ] {
                let answer = can_i(&tenant, &tenant_user, &[verb, resource])?;
                eprintln!("tenant can-i {verb} {resource} → {answer}");
                ensure!(answer == expect, "tenant can-i {verb} {resource}: {answer}, expected {expect}");
            }
            Ok(())
        },
    )
    .await?;

    let variants = ["applysets", "status", "secrets", "impersonate", "events", "lease"];
    let first =
        step(&format!("git repository {}: app/ (ConfigMaps a, b), secret/ (Secret creds)", repo.url()), async {
            repo.write("app/a.yaml", config_map("a", &tenant.name, "1"));
            repo.write("app/b.yaml", config_map("b", &tenant.name, "1"));
            repo.write(
                "secret/creds.yaml",
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: hunter2\n",
            );
            for variant in variants {
                let probe = format!("probe-{variant}");
                repo.write(&format!("{probe}/cm.yaml"), config_map(&probe, &tenant.name, "1"));
            }
            Ok(revision(&repo.commit("first")))
        })
        .await?;
    let spec = |path: &str| {
        json!({
            "source": { "url": repo.url(), "path": path, "secretRef": { "name": "git-auth" } },
            "interval": "1h",
            "retryInterval": "2s",
        })
    };

    step(&format!("ApplySet app Ready=True at {first}, ConfigMaps a and b applied (as {tenant_sa})"), async {
        create_applyset(&tenant, "app", spec("app")).await?;
        let ready = wait_for_applyset(&tenant, "app", &controller, "app Ready", T, ready_at(first.clone())).await?;
        let id = ready
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("applyset.kubernetes.io/id"))
            .cloned()
            .unwrap_or_default();
        let part_of = "{.metadata.labels.applyset\\.kubernetes\\.io/part-of}";
        let (a_part, b_part) = (tenant.jsonpath("configmap/a", part_of)?, tenant.jsonpath("configmap/b", part_of)?);
        eprintln!("ApplySet id {id}; configmap/a part-of {a_part}; configmap/b part-of {b_part}");
        ensure!(!id.is_empty() && a_part == id && b_part == id, "the ConfigMaps are not the ApplySet's members");
        Ok(())
    })
    .await?;

    step("commit without b + applyset.dev/reconcile-requested-at: b pruned, a kept, Ready=True", async {
        repo.remove("app/b.yaml");
        let second = revision(&repo.commit("remove b"));
        let requested = request_reconcile(&tenant, "app").await?;
        eprintln!("revision {second}, reconcile requested at {requested}");
        wait_for_applyset(&tenant, "app", &controller, "the second commit applied", T, operator::applied(second))
            .await?;
        wait_handled(&tenant, "app", &controller, &requested).await?;
        wait_for_applyset(&tenant, "app", &controller, "app Ready", T, is_ready).await?;
        wait_deleted(&tenant, "b").await?;
        ensure!(config_map_value(&tenant, "a")?.is_some(), "configmap/a was pruned too");
        Ok(())
    })
    .await?;

    step(
        "ApplySet secret (a Secret in git): Ready=False ApplyFailed, forbidden for the tenant, no Secret created",
        async {
            let mut secret_spec = spec("secret");
            secret_spec["deletionPolicy"] = json!("Orphan");
            create_applyset(&tenant, "secret", secret_spec).await?;
            let failed =
                wait_for_applyset(&tenant, "secret", &controller, "ApplyFailed", T, failed_with("ApplyFailed")).await?;
            let (_, _, message) = condition(&failed, "Ready").unwrap_or_default();
            eprintln!("Ready: {}\nmessage: {message}", ready_of(&failed));
            ensure!(ready_of(&failed) == "False/ApplyFailed", "Ready is {}", ready_of(&failed));
            ensure!(
                message.contains("forbidden") && message.contains(&tenant_user),
                "the message does not say the tenant was forbidden: {message}"
            );
            let secret = tenant.kubectl_ok(&["get", "secret", "creds", "--ignore-not-found", "-o", "name"], None)?;
            ensure!(secret.trim().is_empty(), "the Secret exists: the controller escalated the tenant's rights");
            Ok(())
        },
    )
    .await?;

    step(&format!("Lease {}/{lease_id} exists and is held by the controller", release_ns.name), async {
        let lease = read_lease(&release_ns.client, &release_ns.name, &lease_id).await?.context("no Lease")?;
        let holder = lease_holder(&lease).unwrap_or_default();
        eprintln!("lease held by {holder}");
        ensure!(holder.starts_with(&format!("{pod_name}_")), "held by {holder:?}, not by {pod_name}");
        Ok(())
    })
    .await?;

    step("Events recorded by the controller (Applied, Pruned)", async {
        let reasons = support::eventually("Applied and Pruned Events on app", T, || async {
            let reasons = event_reasons(&tenant, "app").await?;
            let both = reasons.iter().any(|r| r == "Applied") && reasons.iter().any(|r| r == "Pruned");
            Ok(both.then_some(reasons))
        })
        .await?;
        eprintln!("events of app: {reasons:?}");
        ensure!(!controller.log().contains("cannot record an event"), "{}", operator::tail(&controller.log(), 40));
        Ok(())
    })
    .await?;

    step("the controller's own identity was never denied", async {
        let log = plain(&controller.log());
        let denied: Vec<&str> = log
            .lines()
            .filter(|line| {
                line.match_indices(&controller_user).any(|(at, _)| {
                    !line[at + controller_user.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                })
            })
            .filter(|line| {
                let line = line.to_lowercase();
                line.contains("forbidden") || line.contains("cannot")
            })
            .collect();
        ensure!(denied.is_empty(), "the controller's own identity was denied:\n{}", denied.join("\n"));
        eprintln!("no request of {controller_user} was denied ({} log lines)", log.lines().count());
        Ok(())
    })
    .await?;

    step("delete ApplySet app: its finalizer prunes configmap/a (as the tenant) and is removed", async {
        tenant.kubectl_ok(&["delete", "applyset.applyset.dev/app", "--timeout=60s"], None)?;
        wait_deleted(&tenant, "a").await
    })
    .await?;

    // ------------------------------------------------------------ sensitivity
    // Each rule of the chart's Roles, removed in turn: the short smoke (a new ApplySet becomes
    // Ready=True and the controller records an Event on it) must fail, with a denial of the
    // controller's own identity naming the missing right (in its log or the ApplySet's
    // status); with the rule back, the same ApplySet becomes Ready on a reconcile request, and
    // is deleted with its ConfigMap.
    let rules = [
        Rule {
            variant: "applysets",
            role: controller_role.clone(),
            role_ns: &tenant,
            resource: "applysets",
            verb: "patch",
            can: &["patch", "applysets.applyset.dev"],
            restart: false,
        },
        Rule {
            variant: "status",
            role: controller_role.clone(),
            role_ns: &tenant,
            resource: "applysets/status",
            verb: "patch",
            can: &["patch", "applysets.applyset.dev", "--subresource=status"],
            restart: false,
        },
        Rule {
            variant: "secrets",
            role: controller_role.clone(),
            role_ns: &tenant,
            resource: "secrets",
            verb: "get",
            can: &["get", "secrets"],
            restart: false,
        },
        Rule {
            variant: "impersonate",
            role: controller_role.clone(),
            role_ns: &tenant,
            resource: "serviceaccounts",
            verb: "impersonate",
            can: &["impersonate", "serviceaccounts"],
            restart: false,
        },
        Rule {
            variant: "events",
            role: controller_role.clone(),
            role_ns: &tenant,
            resource: "events",
            verb: "create",
            can: &["create", "events.events.k8s.io"],
            restart: false,
        },
        Rule {
            variant: "lease",
            role: leader_role.clone(),
            role_ns: &release_ns,
            resource: "leases",
            verb: "get",
            can: &["get", "leases.coordination.k8s.io"],
            restart: true,
        },
    ];
    for rule in &rules {
        let probe = format!("probe-{}", rule.variant);
        let full = chart.role(&rule.role)?.clone();
        step(
            &format!(
                "sensitivity ({}): Role {} without its rule on {}: the short smoke fails, {} denied",
                rule.variant, rule.role, rule.resource, rule.verb
            ),
            async {
                let mut minus = full.clone();
                let rules = minus["rules"].as_array_mut().context("a Role without rules")?;
                let holds =
                    |r: &Value| r["resources"].as_array().is_some_and(|rs| rs.iter().any(|x| x == rule.resource));
                let removed: Vec<Value> = rules.iter().filter(|r| holds(r)).cloned().collect();
                ensure!(!removed.is_empty(), "no rule on {} in Role {}", rule.resource, rule.role);
                rules.retain(|r| !holds(r));
                for r in &removed {
                    eprintln!("removed from Role {}: {r}", rule.role);
                }
                if rule.restart {
                    controller.stop();
                }
                admin_kubectl(&["replace", "-f", "-"], Some(&minus.to_string()))?;
                wait_can("no", rule.role_ns, &controller_user, rule.can).await?;
                let offset = if rule.restart {
                    controller = options.clone().start()?;
                    0
                } else {
                    controller.log().len()
                };
                create_applyset(&tenant, &probe, spec(&probe)).await?;
                // The denial, for the controller's identity, naming the right.
                let seen = support::eventually(
                    &format!("\"cannot {} resource {}\" for {controller_user}", rule.verb, rule.resource),
                    T,
                    || async {
                        let log = controller.log();
                        let status = serde_json::to_string(&get_applyset(&tenant, &probe).await?)?;
                        let text = format!("{}\n{status}", plain(log.get(offset..).unwrap_or_default()));
                        Ok(denial(&text, &controller_user, rule.verb, rule.resource))
                    },
                )
                .await
                .with_context(|| operator::tail(&plain(&controller.log()), 30))?;
                eprintln!("denied: {seen}");
                // Give a wrongly passing smoke the time to pass.
                tokio::time::sleep(Duration::from_secs(3)).await;
                let ready = ready_of(&get_applyset(&tenant, &probe).await?);
                let events = event_reasons(&tenant, &probe).await?.len();
                eprintln!("short smoke without the rule: Ready={ready}, Events on {probe}: {events}");
                ensure!(!(ready.starts_with("True/") && events > 0), "the smoke passed without the rule");
                Ok(())
            },
        )
        .await?;
        step(
            &format!("sensitivity ({}): rule restored: {probe} Ready, then deleted with its ConfigMap", rule.variant),
            async {
                admin_kubectl(&["replace", "-f", "-"], Some(&full.to_string()))?;
                wait_can("yes", rule.role_ns, &controller_user, rule.can).await?;
                let requested = request_reconcile(&tenant, &probe).await?;
                wait_handled(&tenant, &probe, &controller, &requested).await?;
                wait_for_applyset(&tenant, &probe, &controller, "Ready", T, is_ready).await?;
                ensure!(config_map_value(&tenant, &probe)?.is_some(), "configmap/{probe} was not applied");
                tenant.kubectl_ok(&["delete", &format!("applyset.applyset.dev/{probe}"), "--timeout=60s"], None)?;
                wait_deleted(&tenant, &probe).await
            },
        )
        .await?;
    }

    // ------------------------------------------------------------ shutdown
    step("delete the ApplySets, stop the controller (SIGTERM): the Lease is released", async {
        tenant.kubectl_ok(&["delete", "applysets.applyset.dev", "--all", "--timeout=60s"], None)?;
        let status = controller.stop();
        eprintln!("the controller exited: {status:?}");
        let lease = read_lease(&release_ns.client, &release_ns.name, &lease_id).await?.context("no Lease")?;
        let holder = lease_holder(&lease);
        eprintln!("lease holder after shutdown: {holder:?}");
        ensure!(holder.is_none(), "the Lease is still held by {holder:?}");
        Ok(())
    })
    .await?;
    eprintln!("chart_rbac: {:.0}s", started.elapsed().as_secs_f64());
    Ok(())
}

#[test]
fn denials_are_found_as_grep_finds_them() {
    let user = "system:serviceaccount:rel:sa";
    let log = format!(
        "applysets.applyset.dev is forbidden: User \"{user}\" cannot patch resource \"applysets/status\" in API group"
    );
    assert_eq!(
        denial(&log, user, "patch", "applysets/status").as_deref(),
        Some(format!("{user}\" cannot patch resource \"applysets/status\"").as_str())
    );
    assert_eq!(denial(&log, user, "patch", "applysets"), None, "applysets/status is not applysets");
    assert_eq!(denial(&log, user, "get", "applysets/status"), None);
    assert_eq!(denial(&log, "system:serviceaccount:rel:other", "patch", "applysets/status"), None);
    let escaped = format!("{{\"message\":\"User \\\"{user}\\\" cannot get resource \\\"secrets\\\" in API group\"}}");
    assert!(denial(&escaped, user, "get", "secrets").is_some(), "in the status's JSON too");
    assert_eq!(plain("\u{1b}[2mcannot\u{1b}[0m get"), "cannot get");
}
