"""The controllers a benchmark runs as processes, one side at a time on the same control plane:
applyset's release controller, or Flux's source-controller and kustomize-controller
(scripts/build-flux, run out of cluster), with the custom resources each side is given, what
can be read of them (Ready, applied revisions, memory, CPU, metrics) and the clean-up. Used by
bench_vs_flux.py, bench_monorepo.py and bench_fairness.py."""

import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from .common import REPO, cpu_seconds, free_port, proc_memory, say, scrape, stop_processes, wait_for

FLUX_RELEASE = "v2.9.5"
FLUX_CONTROLLERS = {"source-controller": "v1.9.5", "kustomize-controller": "v1.9.5"}
APPLYSET_API = "/apis/applyset.dev/v1alpha1"
KUSTOMIZATION_API = "/apis/kustomize.toolkit.fluxcd.io/v1"
REVISION = "{.status.lastAppliedRevision}"


def flux_binaries():
    """scripts/build-flux's binaries, by controller (it builds them first when they are not up to
    date: about 20 minutes at the lowest priority)."""
    out = subprocess.run([str(REPO / "scripts/build-flux")], check=True, capture_output=True, text=True)
    return dict(zip(FLUX_CONTROLLERS, out.stdout.strip().splitlines()[-2:]))


def install_crds(kube, flux):
    """applyset's CRDs (crds/: applysets and applysetrecords) and, with flux, Flux's source and
    kustomize CRDs (from the Go module cache, downloaded when missing); waits until all are
    Established. Also widens the control plane's service range (a /24) by a ServiceCIDR."""
    files = [REPO / "crds"]
    if flux:
        gomodcache = subprocess.run(["go", "env", "GOMODCACHE"], check=True, capture_output=True, text=True).stdout.strip()
        for name, version in FLUX_CONTROLLERS.items():
            bases = Path(gomodcache) / "github.com/fluxcd" / f"{name}@{version}" / "config/crd/bases"
            if not bases.is_dir():  # the build downloaded the module; make sure it is there
                subprocess.run(["go", "mod", "download", f"github.com/fluxcd/{name}@{version}"],
                               cwd=REPO / "tools/flux" / name, check=True, capture_output=True)
            files.append(bases)
    for path in files:
        kube.out("apply", "--server-side", "--force-conflicts", "-f", str(path))
    kube.out("wait", "--for=condition=Established", "--timeout=120s", "crd", "--all")
    kube.out("apply", "-f", "-", stdin="apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata:\n"
             "  name: vsflux\nspec:\n  cidrs:\n  - 10.1.0.0/20\n")


def peak(memory):
    """The summed peak RSS (MiB) of Side.memory()'s processes."""
    return sum(m["VmHWM"] for m in memory.values())


def rss_detail(memory):
    """"(a 120, b 80) " for several processes (their peak RSS), "" for one."""
    if len(memory) < 2:
        return ""
    return "(" + ", ".join(f"{name} {m['VmHWM']:.0f}" for name, m in memory.items()) + ") "


def time_changes(proxy, started, checks, limit, period=0.05):
    """Reads each of checks (label → (API path, test of the object or None)) through proxy (an
    ApiProxy) every period seconds until its test passes; returns label → seconds from started
    (a time.monotonic()), None for those still failing after limit seconds."""
    found = {}
    while len(found) < len(checks) and time.monotonic() - started < limit:
        tick = time.monotonic()
        for label, (path, test) in checks.items():
            if label not in found and test(proxy.get(path)):
                found[label] = time.monotonic() - started
        time.sleep(max(0.0, period - (time.monotonic() - tick)))
    return {label: found.get(label) for label in checks}


class Side:
    """One side of a benchmark: its controller processes (name → (Popen, log path)), the
    namespace of its custom resources (and resource_namespaces: all those clean_up() deletes
    them in), and the apps' namespaces (premade ones made by create_namespaces(); all deleted
    and waited for by clean_up())."""

    key = title = kind = None
    kinds_to_delete = ()

    def __init__(self, kube, scratch, namespace, app_namespaces=(), premade=()):
        self.kube, self.kubeconfig, self.namespace = kube, kube.kubeconfig, namespace
        self.scratch = Path(scratch)
        self.scratch.mkdir(parents=True)
        self.app_namespaces, self.premade = list(app_namespaces), list(premade)
        self.resource_namespaces = [namespace]
        self.processes = {}
        self.ever_ready = set()
        self.figures = {}

    def k(self, *args, stdin=None, check=True):
        return self.kube.out(*args, stdin=stdin, check=check)

    def create_namespaces(self):
        for ns in [self.namespace, *self.premade]:
            self.k("create", "namespace", ns, check=False)

    def start(self, name, argv, env=None):
        log_path = self.scratch / f"{name}.log"
        process = subprocess.Popen([str(a) for a in argv], stdout=open(log_path, "w"), stderr=subprocess.STDOUT,
                                   env=dict(os.environ, **(env or {})))
        self.processes[name] = (process, log_path)

    def wait_healthy(self, name, url):
        def healthy():
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    return response.status == 200
            except OSError:
                return False
        wait_for(f"{name} healthy", healthy, self.processes, limit=120, period=0.3)

    def wait_for(self, what, condition, limit, period=2.0):
        """wait_for() with this side's processes watched (one that exits ends the benchmark)."""
        return wait_for(what, condition, self.processes, limit=limit, period=period)

    def check_running(self, during):
        for name, (process, log_path) in self.processes.items():
            if process.poll() is not None:
                sys.exit(f"bench-controller: {name} exited during {during}:\n{log_path.read_text()[-4000:]}")

    def ready_states(self, namespace=None):
        """(name, Ready status, last applied revision) of each custom resource of self.kind."""
        out = self.k("get", self.kind, "-n", namespace or self.namespace, "-o",
                     "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status}"
                     "=" + REVISION + "{\"\\n\"}{end}", check=False)
        return [line.split("=", 2) for line in out.splitlines() if line.count("=") >= 2]

    def ready_count(self, sha, namespace=None):
        """How many have been Ready at the commit (at least once: a saturated kustomize-controller
        always has --concurrent Kustomizations at Ready=Unknown, mid-reconcile, again)."""
        namespace = namespace or self.namespace
        for name, status, revision in self.ready_states(namespace):
            if status == "True" and sha in revision:
                self.ever_ready.add((namespace, name))
        return sum(1 for ns, _ in self.ever_ready if ns == namespace)

    def revisions(self):
        """name → last applied revision of each custom resource of self.kind."""
        return {name: revision for name, _, revision in self.ready_states()}

    def memory(self):
        return {name: proc_memory(process.pid) for name, (process, _) in self.processes.items()}

    def cpu(self):
        """The CPU seconds the side's processes have used, summed."""
        return sum(cpu_seconds(process.pid) for process, _ in self.processes.values())

    def stop(self):
        stop_processes([process for process, _ in self.processes.values()], timeout=40)

    def wait_gone(self, what, args, limit=1200):
        started = time.monotonic()
        while time.monotonic() - started < limit:
            if not self.k(*args, "-o", "name", check=False).strip():
                return
            time.sleep(3)
        say(f"warning: {what} still there after {limit} s")

    def clean_up(self):
        """Deletes the custom resources (their controllers running: finalizers, pruning) and the
        apps' namespaces, waits until all are gone, stops the controllers."""
        say(f"cleaning up ({self.title}) …")
        started = time.monotonic()
        places = [(kind, ns) for ns in self.resource_namespaces for kind in self.kinds_to_delete]
        for kind, ns in places:
            self.k("delete", kind, "--all", "-n", ns, "--wait=false", check=False)
        for ns in self.premade:
            self.k("delete", "namespace", ns, "--wait=false", check=False)
        if self.processes and all(process.poll() is None for process, _ in self.processes.values()):
            for kind, ns in places:
                self.wait_gone(kind, ["get", kind, "-n", ns])
        else:
            for kind, ns in places:  # nobody left to remove the finalizers
                names = self.k("get", kind, "-n", ns, "-o", "name", check=False).split()
                for name in names:
                    self.k("patch", name, "-n", ns, "--type=merge", "-p",
                           '{"metadata":{"finalizers":null}}', check=False)
        self.stop()
        for ns in [*self.app_namespaces, *self.resource_namespaces]:
            self.k("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        wanted = set(self.app_namespaces) | set(self.resource_namespaces)
        while time.monotonic() - started < 1800:
            names = {n.removeprefix("namespace/") for n in self.k("get", "namespaces", "-o", "name", check=False).split()}
            if not names & wanted:
                break
            time.sleep(3)
        say(f"cleaned up in {time.monotonic() - started:.0f} s")


def hook_digest(token, namespace, name):
    """The digest of an ApplySet's receiver path, /hook/<digest> (its status.webhookPath):
    Flux's scheme, the hex SHA-256 of the token, the name and the namespace."""
    return hashlib.sha256((token + name + namespace).encode()).hexdigest()


class ApplysetSide(Side):
    """The release `applyset controller`: launch() starts it (metrics, health probes and, with
    webhook, the receiver on free ports of 127.0.0.1), resources() are its ApplySets."""

    key, title, kind = "applyset", "applyset", "applysets"
    kinds_to_delete = ("applysets",)

    def launch(self, binary, concurrent, *extra, webhook=False):
        """Starts the controller (extra: more flags, e.g. --watch-namespace) and waits until it is ready."""
        health, metrics = free_port(), f"127.0.0.1:{free_port()}"
        self.metrics_url = f"http://{metrics}/metrics"
        argv = [binary, "controller", "--kubeconfig", self.kubeconfig, "--cache-dir", self.scratch / "cache",
                "--concurrent-reconciles", concurrent, "--metrics-bind-address", metrics,
                "--health-probe-bind-address", f"127.0.0.1:{health}", *extra]
        if webhook:
            port = free_port()
            self.webhook_url = f"http://127.0.0.1:{port}/hook"
            argv += ["--webhook-bind-address", f"127.0.0.1:{port}"]
        self.start("applyset", argv)
        self.wait_healthy("applyset", f"http://127.0.0.1:{health}/readyz")

    def resources(self, url, paths, interval, names=None, namespace=None, webhook_secret=None, labels=None):
        """An ApplySet per path (named names[i], else app-NNNN) of the repository at url, branch
        main, prune on; with webhook_secret, spec.webhook names that Secret."""
        names = names or [f"app-{i:04d}" for i in range(len(paths))]
        meta = "".join(f"    {k}: \"{v}\"\n" for k, v in (labels or {}).items())
        return "".join(
            f"---\napiVersion: applyset.dev/v1alpha1\nkind: ApplySet\nmetadata:\n  name: {name}\n"
            f"  namespace: {namespace or self.namespace}\n" + (f"  labels:\n{meta}" if meta else "")
            + f"spec:\n  source:\n    url: {url}\n    ref:\n      branch: main\n"
            f"    path: {path}\n  interval: {interval}s\n  timeout: 10m\n  prune: true\n"
            + (f"  webhook:\n    secretRef:\n      name: {webhook_secret}\n" if webhook_secret else "")
            for name, path in zip(names, paths))

    def api_path(self, name, namespace=None):
        return f"{APPLYSET_API}/namespaces/{namespace or self.namespace}/applysets/{name}"

    def webhook_secret(self, name, token, namespace=None):
        self.k("create", "secret", "generic", name, "-n", namespace or self.namespace, f"--from-literal=token={token}")

    def hook(self, name, token, namespace=None):
        """What a git host sends on a push to main: a GitHub push event signed with token
        (X-Hub-Signature-256), POSTed to the receiver's path for the ApplySet (the one its
        status.webhookPath publishes: see hook_path); the answer."""
        body = json.dumps({"ref": "refs/heads/main"}).encode()
        signature = "sha256=" + hmac.new(token.encode(), body, hashlib.sha256).hexdigest()
        request = urllib.request.Request(
            f"{self.webhook_url}/{hook_digest(token, namespace or self.namespace, name)}", data=body, method="POST",
            headers={"Content-Type": "application/json", "X-GitHub-Event": "push", "X-Hub-Signature-256": signature})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.read().decode().strip()
        except urllib.error.HTTPError as error:
            sys.exit(f"bench-controller: the webhook answered {error.code} for {namespace or self.namespace}/{name}")

    def metrics(self):
        return scrape(self.metrics_url)


class FluxSide(Side):
    """Flux's source-controller and kustomize-controller: launch() starts them, resources() are
    one GitRepository `bench` and a Kustomization per path."""

    key, title, kind = "flux", f"Flux {FLUX_RELEASE}", "kustomizations"
    kinds_to_delete = ("kustomizations", "gitrepositories")

    def launch(self, binaries, concurrent, qps, burst):
        env = {"KUBECONFIG": self.kubeconfig, "RUNTIME_NAMESPACE": self.namespace}
        common = ["--log-level=info", "--log-encoding=json", "--enable-leader-election=false",
                  f"--concurrent={concurrent}", f"--kube-api-qps={qps}", f"--kube-api-burst={burst}"]
        storage = free_port()
        (self.scratch / "storage").mkdir()
        health = {name: free_port() for name in FLUX_CONTROLLERS}
        self.start("source-controller", [
            binaries["source-controller"], *common,
            f"--metrics-addr=127.0.0.1:{free_port()}", f"--health-addr=127.0.0.1:{health['source-controller']}",
            f"--storage-path={self.scratch / 'storage'}", f"--storage-addr=127.0.0.1:{storage}",
            f"--storage-adv-addr=127.0.0.1:{storage}"], env)
        self.start("kustomize-controller", [
            binaries["kustomize-controller"], *common,
            f"--metrics-addr=127.0.0.1:{free_port()}", f"--health-addr=127.0.0.1:{health['kustomize-controller']}",
            "--no-remote-bases=true"], dict(env, TMPDIR=str(self.scratch)))
        for name, port in health.items():
            self.wait_healthy(name, f"http://127.0.0.1:{port}/readyz")

    def resources(self, url, paths, interval, names=None):
        names = names or [f"app-{i:04d}" for i in range(len(paths))]
        docs = [f"apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: bench\n"
                f"  namespace: {self.namespace}\nspec:\n  interval: {interval}s\n  url: {url}\n"
                f"  ref:\n    branch: main\n"]
        docs += [f"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n"
                 f"  namespace: {self.namespace}\nspec:\n  interval: {interval}s\n  timeout: 10m\n"
                 f"  sourceRef:\n    kind: GitRepository\n    name: bench\n  path: ./{path}\n  prune: true\n"
                 f"  wait: false\n"
                 for name, path in zip(names, paths)]
        return "---\n" + "---\n".join(docs)

    def api_path(self, name):
        return f"{KUSTOMIZATION_API}/namespaces/{self.namespace}/kustomizations/{name}"

    def request_fetch(self, value):
        """What `flux reconcile source git bench` does: the GitRepository's
        reconcile.fluxcd.io/requestedAt annotation set to value."""
        self.k("annotate", "gitrepository", "bench", "-n", self.namespace, "--overwrite",
               f"reconcile.fluxcd.io/requestedAt={value}")
