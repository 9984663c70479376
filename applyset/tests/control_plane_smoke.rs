//! Proves the test control plane is a real cluster: real kubectl v1.33
//! applies to it, its controllers act (ReplicaSets, Pods, garbage collection,
//! namespace deletion), ServiceAccount tokens, RBAC and impersonation behave
//! as in a normal cluster, and workloads start: kube-scheduler places Pods on
//! kwok's simulated nodes, which run them (Deployments become Available, Jobs
//! complete, StatefulSets roll) or fail them as a test asks (an `:unpullable`
//! image, the `applyset.dev/test-pod` annotation; see
//! tests/control-plane/kwok/stages.yaml).

mod support;

use std::time::Duration;

use anyhow::{Result, ensure};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt};
use support::{CrdCleanup, TestNamespace, client_for, eventually, kubectl, run};

/// Controllers react within seconds; generous for a loaded 2-core machine.
const CONTROLLER_TIMEOUT: Duration = Duration::from_secs(90);

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1
"#;

fn owned_by(object: &impl ResourceExt, kind: &str, name: &str) -> bool {
    object.owner_references().iter().any(|owner| owner.kind == kind && owner.name == name)
}

#[tokio::test]
async fn deployment_gets_replicaset_and_pods_which_are_garbage_collected() -> Result<()> {
    let namespace = TestNamespace::create("deployment").await?;
    namespace.kubectl_ok(&["apply", "-f", "-"], Some(DEPLOYMENT))?;
    let listed = namespace.kubectl_ok(&["get", "deployments", "-o", "name"], None)?;
    ensure!(listed.trim() == "deployment.apps/web", "kubectl get deployments said {listed:?}");

    let replica_sets = Api::<ReplicaSet>::namespaced(namespace.client.clone(), &namespace.name);
    let pods = Api::<Pod>::namespaced(namespace.client.clone(), &namespace.name);
    let replica_set = eventually("the deployment controller to create a ReplicaSet", CONTROLLER_TIMEOUT, || async {
        let list = replica_sets.list(&ListParams::default()).await?;
        Ok(list.items.into_iter().find(|rs| owned_by(rs, "Deployment", "web")).map(|rs| rs.name_any()))
    })
    .await?;
    // That the replicaset controller creates them (admitted with the
    // namespace's default ServiceAccount) is what matters here; that they
    // run, below.
    eventually("the replicaset controller to create 2 Pods", CONTROLLER_TIMEOUT, || async {
        let list = pods.list(&ListParams::default()).await?;
        let owned = list.items.iter().filter(|pod| owned_by(*pod, "ReplicaSet", &replica_set)).count();
        Ok((owned == 2).then_some(()))
    })
    .await?;

    // kubectl deletes with background propagation: the garbage collector
    // must remove the ReplicaSet and, through it, the Pods (which kwok, as
    // their nodes' kubelet, lets go of once deleted).
    namespace.kubectl_ok(&["delete", "deployment", "web", "--wait=false"], None)?;
    eventually("garbage collection of the ReplicaSet and its Pods", CONTROLLER_TIMEOUT, || async {
        let replica_sets_left = replica_sets.list(&ListParams::default()).await?.items.len();
        let pods_left = pods.list(&ListParams::default()).await?.items.len();
        Ok((replica_sets_left == 0 && pods_left == 0).then_some(()))
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn crd_and_custom_resource_apply_and_list() -> Result<()> {
    let namespace = TestNamespace::create("crd").await?;
    // CRDs are cluster-wide: a group named after the namespace keeps
    // concurrent runs apart.
    let group = format!("{}.applyset.test", namespace.name);
    let crd_name = format!("widgets.{group}");
    let crd = format!(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {crd_name}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: widgets, singular: widget, kind: Widget}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {{type: integer}}
"#
    );
    let _crd_cleanup = CrdCleanup::new(&namespace.kubeconfig, [crd_name.clone()]);
    namespace.kubectl_ok(&["apply", "-f", "-"], Some(&crd))?;
    namespace
        .kubectl_ok(&["wait", "--for=condition=Established", &format!("crd/{crd_name}"), "--timeout=60s"], None)?;

    let widget = format!("apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: small\nspec:\n  size: 3\n");
    namespace.kubectl_ok(&["apply", "-f", "-"], Some(&widget))?;
    let sizes = namespace.kubectl_ok(
        &["get", &format!("widgets.{group}"), "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.size}{end}"],
        None,
    )?;
    ensure!(sizes == "small=3", "kubectl get widgets said {sizes:?}");
    Ok(())
}

#[tokio::test]
async fn namespace_deletion_completes() -> Result<()> {
    let namespace = TestNamespace::create("doomed").await?;
    namespace.kubectl_ok(&["create", "configmap", "settings", "--from-literal=colour=blue"], None)?;
    namespace.kubectl_ok(&["apply", "-f", "-"], Some(DEPLOYMENT))?;

    // Completes only when the namespace controller has deleted the contents
    // and removed the kubernetes finalizer.
    namespace.kubectl_ok(&["delete", "namespace", &namespace.name, "--wait=true", "--timeout=120s"], None)?;
    let remaining = Api::<Namespace>::all(namespace.client.clone()).get_opt(&namespace.name).await?;
    ensure!(remaining.is_none(), "namespace still exists: {:?}", remaining.map(|ns| ns.status));
    Ok(())
}

#[tokio::test]
async fn service_account_token_is_authenticated_and_authorized_by_rbac() -> Result<()> {
    let namespace = TestNamespace::create("rbac").await?;
    let service_accounts = Api::<ServiceAccount>::namespaced(namespace.client.clone(), &namespace.name);
    let reader = ServiceAccount {
        metadata: ObjectMeta { name: Some("reader".into()), ..ObjectMeta::default() },
        ..ServiceAccount::default()
    };
    service_accounts.create(&PostParams::default(), &reader).await?;
    let request = TokenRequest {
        spec: TokenRequestSpec { expiration_seconds: Some(600), ..TokenRequestSpec::default() },
        ..TokenRequest::default()
    };
    let token = service_accounts
        .create_token_request("reader", &PostParams::default(), &request)
        .await?
        .status
        .map(|status| status.token)
        .unwrap_or_default();
    ensure!(!token.is_empty(), "the TokenRequest returned no token");
    let reader_user = format!("system:serviceaccount:{}:reader", namespace.name);

    // The apiserver authenticates the token.
    let reader_kubeconfig = namespace.token_kubeconfig(&token, "reader")?;
    let reader_kubectl = || kubectl(&reader_kubeconfig.path, &namespace.name);
    let whoami = run(reader_kubectl()?.args(["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]), None)?
        .success_stdout()?;
    ensure!(whoami == reader_user, "auth whoami with the token said {whoami:?}");

    // RBAC denies what was not granted...
    let config_maps_as_reader =
        Api::<ConfigMap>::namespaced(client_for(&reader_kubeconfig.path).await?, &namespace.name);
    match config_maps_as_reader.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) if status.code == 403 => {}
        other => {
            anyhow::bail!("listing ConfigMaps before any grant should be forbidden, got {other:?}")
        }
    }
    let denied = run(reader_kubectl()?.args(["get", "configmaps"]), None)?;
    ensure!(!denied.success && denied.stderr.contains("Forbidden"), "kubectl get as reader: {denied:?}");

    // ...and allows it once a Role grants it.
    namespace.kubectl_ok(&["create", "role", "configmap-reader", "--verb=get,list", "--resource=configmaps"], None)?;
    namespace.kubectl_ok(
        &[
            "create",
            "rolebinding",
            "reader-reads-configmaps",
            "--role=configmap-reader",
            &format!("--serviceaccount={}:reader", namespace.name),
        ],
        None,
    )?;
    eventually("RBAC to allow the reader to list ConfigMaps", CONTROLLER_TIMEOUT, || async {
        Ok(config_maps_as_reader.list(&ListParams::default()).await.ok().map(|_| ()))
    })
    .await?;
    run(reader_kubectl()?.args(["get", "configmaps"]), None)?.success_stdout()?;

    // Impersonation by the admin sees the same permissions.
    let impersonating = format!("--as={reader_user}");
    let can_i = |verb: &str, resource: &str| -> Result<String> {
        let output = run(namespace.kubectl()?.args([impersonating.as_str(), "auth", "can-i", verb, resource]), None)?;
        Ok(output.stdout.trim().to_owned())
    };
    ensure!(can_i("list", "configmaps")? == "yes", "impersonated reader should list configmaps");
    ensure!(can_i("delete", "configmaps")? == "no", "impersonated reader should not delete configmaps");
    ensure!(can_i("list", "secrets")? == "no", "impersonated reader should not list secrets");
    let impersonated_get = run(namespace.kubectl()?.args([impersonating.as_str(), "get", "secrets"]), None)?;
    ensure!(
        !impersonated_get.success && impersonated_get.stderr.contains(&reader_user),
        "kubectl get secrets impersonating the reader: {impersonated_get:?}"
    );
    Ok(())
}

/// How long a failure path is watched for the success it must not reach.
const NEVER_WITHIN: &str = "--timeout=5s";

/// Waits for `condition` of `resource` with kubectl (returns as soon as it holds).
fn wait_for(namespace: &TestNamespace, condition: &str, resource: &str) -> Result<()> {
    let timeout = format!("--timeout={}s", CONTROLLER_TIMEOUT.as_secs());
    namespace.kubectl_ok(&["wait", &format!("--for={condition}"), resource, &timeout], None)?;
    Ok(())
}

/// `kubectl wait` for `condition` gives up after a short while: the failure
/// path holds (for that long at least).
fn never_reaches(namespace: &TestNamespace, condition: &str, resource: &str) -> Result<()> {
    let output = run(namespace.kubectl()?.args(["wait", &format!("--for={condition}"), resource, NEVER_WITHIN]), None)?;
    ensure!(!output.success && output.stderr.contains("timed out"), "{resource} reached {condition}: {output:?}");
    Ok(())
}

fn job(name: &str, pod_annotations: &str) -> String {
    format!(
        r#"
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {{{pod_annotations}}}
    spec:
      restartPolicy: Never
      containers:
      - name: run
        image: registry.invalid/task:1
"#
    )
}

#[tokio::test]
async fn deployment_becomes_available_with_pods_running_and_ready_on_the_fake_nodes() -> Result<()> {
    let namespace = TestNamespace::create("available").await?;
    namespace.kubectl_ok(&["apply", "-f", "-"], Some(DEPLOYMENT))?;
    wait_for(&namespace, "condition=Available", "deployment/web")?;
    namespace.kubectl_ok(&["rollout", "status", "deployment/web", "--timeout=60s"], None)?;
    let replicas = namespace.jsonpath("deployment/web", "{.status.readyReplicas}/{.status.availableReplicas}")?;
    ensure!(replicas == "2/2", "ready/available replicas: {replicas:?}");
    let pods = namespace.jsonpath(
        "pods",
        r#"{range .items[*]}{.spec.nodeName} {.status.phase} {.status.conditions[?(@.type=="Ready")].status} {.status.podIP}{"\n"}{end}"#,
    )?;
    let pods: Vec<&str> = pods.lines().collect();
    ensure!(pods.len() == 2, "pods: {pods:?}");
    for pod in &pods {
        let fields: Vec<&str> = pod.split(' ').collect();
        ensure!(
            matches!(fields.as_slice(), [node, "Running", "True", ip] if node.starts_with("kwok-node-") && !ip.is_empty()),
            "a pod is not running and ready on a kwok node: {pod:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn job_completes() -> Result<()> {
    let namespace = TestNamespace::create("job").await?;
    namespace.kubectl_ok(&["apply", "-f", "-"], Some(&job("task", "")))?;
    wait_for(&namespace, "condition=Complete", "job/task")?;
    let succeeded = namespace.jsonpath("job/task", "{.status.succeeded}")?;
    ensure!(succeeded == "1", "succeeded: {succeeded:?}");
    let phases = namespace.jsonpath("pods", "{.items[*].status.phase}")?;
    ensure!(phases == "Succeeded", "pod phases: {phases:?}");
    Ok(())
}

#[tokio::test]
async fn job_whose_pod_fails_fails() -> Result<()> {
    let namespace = TestNamespace::create("job-fails").await?;
    namespace.kubectl_ok(&["apply", "-f", "-"], Some(&job("task", "applyset.dev/test-pod: fail")))?;
    wait_for(&namespace, "condition=Failed", "job/task")?;
    let reason = namespace.jsonpath("job/task", r#"{.status.conditions[?(@.type=="Failed")].reason}"#)?;
    ensure!(reason == "BackoffLimitExceeded", "the Job failed for {reason:?}");
    let pod = namespace.jsonpath(
        "pods",
        "{.items[0].status.phase} {.items[0].status.containerStatuses[0].state.terminated.exitCode}",
    )?;
    ensure!(pod == "Failed 1", "pod phase and exit code: {pod:?}");
    Ok(())
}

#[tokio::test]
async fn deployment_with_unpullable_image_backs_off_and_never_becomes_available() -> Result<()> {
    let namespace = TestNamespace::create("unpullable").await?;
    let image = "registry.invalid/web:unpullable";
    namespace.kubectl_ok(&["apply", "-f", "-"], Some(&DEPLOYMENT.replace("registry.invalid/web:1", image)))?;
    let pods = Api::<Pod>::namespaced(namespace.client.clone(), &namespace.name);
    let waiting = eventually("a Pod in ImagePullBackOff", CONTROLLER_TIMEOUT, || async {
        let list = pods.list(&ListParams::default()).await?;
        Ok(list.items.into_iter().find_map(|pod| {
            let status = pod.status?;
            let waiting = status.container_statuses?.into_iter().next()?.state?.waiting?;
            (status.phase.as_deref() == Some("Pending")).then_some(waiting)
        }))
    })
    .await?;
    ensure!(waiting.reason.as_deref() == Some("ImagePullBackOff"), "waiting: {waiting:?}");
    let message = waiting.message.unwrap_or_default();
    ensure!(message.starts_with(&format!("Back-off pulling image \"{image}\"")), "message: {message:?}");

    never_reaches(&namespace, "condition=Available", "deployment/web")?;
    let available = namespace.jsonpath(
        "deployment/web",
        r#"{.status.conditions[?(@.type=="Available")].status} {.status.availableReplicas}"#,
    )?;
    ensure!(available.trim() == "False", "Available condition and replicas: {available:?}");
    let rollout = run(namespace.kubectl()?.args(["rollout", "status", "deployment/web", NEVER_WITHIN]), None)?;
    ensure!(!rollout.success, "the rollout finished: {rollout:?}");
    Ok(())
}

#[tokio::test]
async fn never_ready_pod_runs_but_stays_unready() -> Result<()> {
    let namespace = TestNamespace::create("never-ready").await?;
    let pod = r#"
apiVersion: v1
kind: Pod
metadata:
  name: lazy
  annotations: {applyset.dev/test-pod: never-ready}
spec:
  containers:
  - name: lazy
    image: registry.invalid/lazy:1
"#;
    namespace.kubectl_ok(&["apply", "-f", "-"], Some(pod))?;
    wait_for(&namespace, "jsonpath={.status.phase}=Running", "pod/lazy")?;
    never_reaches(&namespace, "condition=Ready", "pod/lazy")?;
    let status = namespace.jsonpath(
        "pod/lazy",
        r#"{.status.phase} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].reason} {.status.containerStatuses[0].started}"#,
    )?;
    ensure!(status == "Running False ContainersNotReady true", "pod status: {status:?}");
    Ok(())
}

#[tokio::test]
async fn statefulset_rolls_out_and_rolls_an_update() -> Result<()> {
    let namespace = TestNamespace::create("statefulset").await?;
    let statefulset = r#"
apiVersion: v1
kind: Service
metadata:
  name: db
spec:
  clusterIP: None
  selector: {app: db}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 2
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: registry.invalid/db:1
"#;
    namespace.kubectl_ok(&["apply", "-f", "-"], Some(statefulset))?;
    let status = format!("--timeout={}s", CONTROLLER_TIMEOUT.as_secs());
    namespace.kubectl_ok(&["rollout", "status", "statefulset/db", &status], None)?;
    let first = namespace.jsonpath("statefulset/db", "{.status.readyReplicas} {.status.currentRevision}")?;
    ensure!(first.starts_with("2 "), "ready replicas and revision: {first:?}");

    namespace.kubectl_ok(
        &["apply", "-f", "-"],
        Some(&statefulset.replace("registry.invalid/db:1", "registry.invalid/db:2")),
    )?;
    namespace.kubectl_ok(&["rollout", "status", "statefulset/db", &status], None)?;
    let rolled = namespace.jsonpath(
        "statefulset/db",
        "{.status.readyReplicas} {.status.updatedReplicas} {.status.currentRevision} {.status.updateRevision}",
    )?;
    let fields: Vec<&str> = rolled.split(' ').collect();
    ensure!(
        matches!(fields.as_slice(), ["2", "2", current, update] if current == update && !first.ends_with(current)),
        "after the update: {rolled:?} (before: {first:?})"
    );
    let images = namespace.jsonpath("pods", "{.items[*].spec.containers[0].image}")?;
    ensure!(images == "registry.invalid/db:2 registry.invalid/db:2", "pod images: {images:?}");
    Ok(())
}
