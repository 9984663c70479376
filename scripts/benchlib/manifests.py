"""The manifests the scripts generate, as YAML text, and the builders they are made with."""

import random
from collections import Counter

API_VERSIONS = {"Namespace": "v1", "ConfigMap": "v1", "Service": "v1", "ServiceAccount": "v1",
                "Deployment": "apps/v1", "Ingress": "networking.k8s.io/v1"}


# ------------------------------------------------------------------------------ builders

def manifest(kind, name, namespace=None, meta="", body=""):
    """One document: apiVersion (the kind's), kind, metadata (name, namespace when given, then
    meta: more metadata lines, e.g. labels()) and body (the lines after metadata, as they are)."""
    namespace_line = f"  namespace: {namespace}\n" if namespace else ""
    return f"apiVersion: {API_VERSIONS[kind]}\nkind: {kind}\nmetadata:\n  name: {name}\n{namespace_line}{meta}{body}"


def labels(pairs, indent="  "):
    """A `labels:` block at indent, a line per (key, value)."""
    return f"{indent}labels:\n" + "".join(f"{indent}  {key}: {value}\n" for key, value in pairs.items())


def config_map(name, namespace=None, data=None, meta=""):
    """A ConfigMap; data maps each key to its value as YAML text (quoted, or a block scalar)."""
    return manifest("ConfigMap", name, namespace, meta,
                    "data:\n" + "".join(f"  {key}: {value}\n" for key, value in (data or {}).items()))


def deployment(name, namespace, replicas, image, container=""):
    """A Deployment of one container, `app`, its Pods labelled app: <name>; container: more lines
    of the container (ports, env, …)."""
    return manifest("Deployment", name, namespace, body=(
        f"spec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: {name}\n"
        f"  template:\n    metadata:\n      labels:\n        app: {name}\n    spec:\n      containers:\n"
        f"      - name: app\n        image: {image}\n{container}"))


# ------------------------------------------------------------------------------ generators

# The resources generate_applysets() writes objects of (as apiserver_request_total and the audit
# log name them): what a first apply and a flood of its apps create.
GENERATED_RESOURCES = frozenset({"configmaps", "services", "deployments", "namespaces"})


def generate_applysets(work, applysets, objects, prefix="bench", revision=1, replicas=1):
    """bench-controller's apps: a directory app-NNN per ApplySet, its all.yaml holding its
    Namespace, 5 Deployments, 20% headless Services, the rest ConfigMaps.

    Revision 2 drops the Deployments' MODE env var and the ConfigMaps' RETRIES key (fields that
    earlier revisions set: the history holds the earlier versions of those objects)."""
    deployments = min(5, objects - 1)
    services = (objects - 1 - deployments) // 5
    configmaps = objects - 1 - deployments - services
    for index in range(applysets):
        ns = f"{prefix}-{index:03d}"
        docs = [manifest("Namespace", ns)]
        for c in range(configmaps):
            data = {"LOG_LEVEL": "info", "UPSTREAM": f"http://svc-{c % 7}.{ns}.svc:8080"}
            if revision == 1:
                data["RETRIES"] = f"\"{c % 5}\""
            docs.append(config_map(f"config-{c:03d}", ns, data, labels({"app.kubernetes.io/part-of": f"shop-{index}"})))
        for s in range(services):
            docs.append(manifest("Service", f"svc-{s:03d}", ns, body=(
                f"spec:\n  clusterIP: None\n  selector:\n    app: svc-{s:03d}\n  ports:\n  - name: http\n    port: 80\n")))
        for d in range(deployments):
            docs.append(deployment(
                f"web-{d}", ns, replicas, f"registry.example.com/shop/web:1.{d}.0",
                "        ports:\n        - containerPort: 8080\n        env:\n"
                + ("        - name: MODE\n          value: bench\n" if revision == 1 else "        - name: TIER\n          value: web\n")))
        app = work / f"app-{index:03d}"
        app.mkdir(parents=True)
        (app / "all.yaml").write_text("---\n".join(docs))


def small_app(work, name, namespace, value="v1", configmaps=4):
    """A small app (bench_monorepo.py's and bench_fairness.py's): directory <name> of the work tree
    with configmaps ConfigMaps <name>-cm-<i> in namespace; the first one's `value` is value, the
    others' v1. Written again with another value, it is a change of one object."""
    app = work / name
    app.mkdir(parents=True, exist_ok=True)
    docs = [config_map(f"{name}-cm-{i}", namespace, {"app": name, "value": f"\"{value if i == 0 else 'v1'}\""},
                       labels({"app.kubernetes.io/part-of": name}))
            for i in range(configmaps)]
    (app / "configmaps.yaml").write_text("---\n".join(docs))


def generate_apply_bench(directory, total):
    """bench-apply's objects: 40% ConfigMaps, 30% Services, 30% Deployments, realistic content,
    one file per application (svc-NNNN.yaml); returns how many of each.

    The Services are headless: the test control plane's service CIDR is a /24, too small for
    two namespaces of 300 ClusterIPs each."""
    rng = random.Random(20250612)
    deployments = total * 3 // 10
    services = total * 3 // 10
    configmaps = total - deployments - services
    teams = ["payments", "search", "identity", "catalog", "checkout", "billing", "ads", "infra"]
    for app in range(max(deployments, services, configmaps)):
        name = f"svc-{app:04d}"
        team = teams[app % len(teams)]
        app_labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": team,
                      "app.kubernetes.io/managed-by": "bench", "tier": "frontend" if app % 3 == 0 else "backend"}
        meta = labels(app_labels)
        docs = []
        if app < configmaps:
            settings = "".join(
                f"    {key}.{index} = {rng.randrange(10**6)}\n"
                for index, key in enumerate(rng.sample(["timeout", "retries", "pool", "cache", "batch", "ttl", "limit"], 5))
            )
            docs.append(config_map(f"{name}-config", meta=meta, data={
                "LOG_LEVEL": "info",
                "FEATURE_FLAGS": f"\"a,b,{'c' if app % 2 else 'd'}\"",
                "UPSTREAM_URL": f"http://{teams[(app + 1) % len(teams)]}.internal:8080/api/v{app % 3 + 1}",
                "application.properties": "|\n" + settings.rstrip("\n"),
            }))
        if app < services:
            docs.append(manifest("Service", name, meta=meta, body=(
                f"  annotations:\n    prometheus.io/scrape: \"true\"\n    prometheus.io/port: \"9090\"\n"
                f"spec:\n  type: ClusterIP\n  clusterIP: None\n  selector:\n    app.kubernetes.io/name: {name}\n"
                f"  ports:\n  - name: http\n    port: 80\n    targetPort: http\n"
                f"  - name: metrics\n    port: 9090\n    targetPort: 9090\n"
            )))
        if app < deployments:
            docs.append(manifest("Deployment", name, meta=meta, body=(
                f"  annotations:\n    team.example.com/owner: {team}@example.com\n"
                f"spec:\n  replicas: {1 + app % 2}\n  revisionHistoryLimit: 5\n"
                f"  selector:\n    matchLabels:\n      app.kubernetes.io/name: {name}\n"
                f"  strategy:\n    type: RollingUpdate\n    rollingUpdate:\n      maxSurge: 1\n      maxUnavailable: 0\n"
                f"  template:\n    metadata:\n{labels(app_labels, indent='      ')}"
                f"      annotations:\n        prometheus.io/scrape: \"true\"\n"
                f"    spec:\n      serviceAccountName: default\n      terminationGracePeriodSeconds: 30\n"
                f"      securityContext:\n        runAsNonRoot: true\n        runAsUser: 10001\n"
                f"      containers:\n      - name: app\n        image: registry.example.com/{team}/{name}:1.{app % 17}.{app % 5}\n"
                f"        args: [\"--config=/etc/app/application.properties\", \"--port=8080\"]\n"
                f"        ports:\n        - name: http\n          containerPort: 8080\n        - name: metrics\n          containerPort: 9090\n"
                f"        envFrom:\n        - configMapRef:\n            name: {name}-config\n"
                f"        env:\n        - name: POD_NAME\n          valueFrom:\n            fieldRef:\n              fieldPath: metadata.name\n"
                f"        - name: GOMAXPROCS\n          value: \"2\"\n"
                f"        resources:\n          requests:\n            cpu: 100m\n            memory: 128Mi\n"
                f"          limits:\n            cpu: \"1\"\n            memory: 512Mi\n"
                f"        readinessProbe:\n          httpGet:\n            path: /healthz\n            port: http\n"
                f"          periodSeconds: 10\n"
                f"        volumeMounts:\n        - name: config\n          mountPath: /etc/app\n          readOnly: true\n"
                f"      - name: log-shipper\n        image: registry.example.com/infra/log-shipper:3.2.1\n"
                f"        resources:\n          requests:\n            cpu: 10m\n            memory: 32Mi\n"
                f"      volumes:\n      - name: config\n        configMap:\n          name: {name}-config\n"
            )))
        (directory / f"{name}.yaml").write_text("---\n".join(docs))
    return +Counter(configmaps=configmaps, services=services, deployments=deployments)


def generate_kustomize_base(base, count):
    """bench-kustomize's base: count objects (ConfigMaps, headless Services, Deployments in turn),
    a file each, and the kustomization.yaml that lists them."""
    files = []
    for i in range(count):
        kind = i % 3
        if kind == 0:
            text = config_map(f"config-{i:03d}", meta="  labels: {app: shop}\n",
                              data={"LOG_LEVEL": "info", "RETRIES": f"\"{i % 5}\""})
        elif kind == 1:
            text = manifest("Service", f"svc-{i:03d}", body=(
                f"spec:\n  clusterIP: None\n  selector: {{app: svc-{i:03d}}}\n  ports:\n  - {{name: http, port: 80}}\n"))
        else:
            text = manifest("Deployment", f"web-{i:03d}", body=(
                f"spec:\n  replicas: 1\n"
                f"  selector:\n    matchLabels: {{app: web-{i:03d}}}\n  template:\n    metadata:\n      labels: {{app: web-{i:03d}}}\n"
                f"    spec:\n      containers:\n      - name: app\n        image: registry.example.com/web:1.{i}\n"))
        name = f"obj-{i:03d}.yaml"
        (base / name).write_text(text)
        files.append(name)
    (base / "kustomization.yaml").write_text("resources:\n" + "".join(f"- {f}\n" for f in files))


def podinfo(index, namespace):
    """flux-benchmark's manifests/podinfo/podinfo.yaml with its postBuild variables substituted
    (INDEX=<i>app, PODS=0, MCPU=1m) and the namespace its Kustomizations target written in."""
    name = f"podinfo-{index}app"
    meta = labels({"app.kubernetes.io/name": f"\"{name}\"", "app.kubernetes.io/version": "\"6.5.3\"",
                   "app.kubernetes.io/managed-by": "Flux"})
    probe = lambda path: (  # noqa: E731
        f"            exec:\n              command:\n                - podcli\n                - check\n"
        f"                - http\n                - localhost:9898/{path}\n            initialDelaySeconds: 1\n"
        f"            timeoutSeconds: 5\n            failureThreshold: 3\n            successThreshold: 1\n"
        f"            periodSeconds: 10\n")
    return "---\n".join([
        manifest("ServiceAccount", f"\"{name}\"", namespace, meta),
        manifest("Service", f"\"{name}\"", namespace, meta, (
            f"spec:\n  type: ClusterIP\n  ports:\n"
            f"    - port: 9898\n      targetPort: http\n      protocol: TCP\n      name: http\n"
            f"    - port: 9999\n      targetPort: grpc\n      protocol: TCP\n      name: grpc\n"
            f"  selector:\n    app.kubernetes.io/name: \"{name}\"\n")),
        manifest("Deployment", f"\"{name}\"", namespace, meta, (
            f"spec:\n  replicas: 0\n  strategy:\n    type: RollingUpdate\n"
            f"    rollingUpdate:\n      maxUnavailable: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: \"{name}\"\n"
            f"  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: \"{name}\"\n      annotations:\n"
            f"        prometheus.io/scrape: \"true\"\n        prometheus.io/port: \"9898\"\n    spec:\n"
            f"      terminationGracePeriodSeconds: 30\n      serviceAccountName: \"{name}\"\n      containers:\n"
            f"        - name: podinfo\n          image: \"ghcr.io/stefanprodan/podinfo:6.5.3\"\n"
            f"          imagePullPolicy: IfNotPresent\n          command:\n            - ./podinfo\n"
            f"            - --port=9898\n            - --cert-path=/data/cert\n            - --port-metrics=9797\n"
            f"            - --grpc-port=9999\n            - --grpc-service-name=podinfo\n            - --level=info\n"
            f"            - --random-delay=false\n            - --random-error=false\n          env:\n"
            f"            - name: PODINFO_UI_COLOR\n              value: \"#34577c\"\n          ports:\n"
            f"            - name: http\n              containerPort: 9898\n              protocol: TCP\n"
            f"            - name: http-metrics\n              containerPort: 9797\n              protocol: TCP\n"
            f"            - name: grpc\n              containerPort: 9999\n              protocol: TCP\n"
            f"          livenessProbe:\n{probe('healthz')}          readinessProbe:\n{probe('readyz')}"
            f"          volumeMounts:\n            - name: data\n              mountPath: /data\n"
            f"          resources:\n            requests:\n              cpu: \"1m\"\n              memory: 16Mi\n"
            f"      volumes:\n        - name: data\n          emptyDir: {{}}\n")),
        manifest("Ingress", f"\"{name}\"", namespace, meta, (
            f"spec:\n  ingressClassName: \"nginx\"\n  rules:\n"
            f"    - host: \"{name}.local\"\n      http:\n        paths:\n          - path: /\n"
            f"            pathType: ImplementationSpecific\n            backend:\n              service:\n"
            f"                name: \"{name}\"\n                port:\n                  number: 9898\n")),
    ])
