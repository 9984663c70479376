//! Proves the test control plane is a real cluster: real kubectl v1.33
//! applies to it, its controllers act (ReplicaSets, Pods, garbage collection,
//! namespace deletion), and ServiceAccount tokens, RBAC and impersonation
//! behave as in a normal cluster.

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
    // No scheduler or kubelet runs, so the Pods stay Pending; that the
    // replicaset controller creates them (admitted with the namespace's
    // default ServiceAccount) is what matters.
    eventually("the replicaset controller to create 2 Pods", CONTROLLER_TIMEOUT, || async {
        let list = pods.list(&ListParams::default()).await?;
        let owned = list.items.iter().filter(|pod| owned_by(*pod, "ReplicaSet", &replica_set)).count();
        Ok((owned == 2).then_some(()))
    })
    .await?;

    // kubectl deletes with background propagation: the garbage collector
    // must remove the ReplicaSet and, through it, the Pods.
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
