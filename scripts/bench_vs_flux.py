"""`scripts/bench-controller --vs-flux`: applyset's controller beside Flux on the same shapes.

Shapes (--shape):
  * flux     Flux's own benchmark apps (fluxcd/flux-benchmark, manifests/podinfo): 1,000 apps of
             4 objects each (a Deployment scaled to zero, a ServiceAccount, a Service and an
             Ingress), all in one namespace made beforehand;
  * 100x100  bench-controller's shape: 100 apps of 100 objects (its Namespace, ConfigMaps,
             headless Services, 5 Deployments), the Deployments scaled to zero here.

One git repository per shape, a directory per app, served by a git smart-HTTP server on
127.0.0.1 (`git http-backend`); both sides read it from there. For each shape, one after the
other on the same control plane (scripts/control-plane; APPLYSET_CP_STATE and
APPLYSET_CP_APISERVER_PORT select which):

  * applyset: the release `applyset controller`, one ApplySet per app;
  * Flux: source-controller and kustomize-controller (scripts/build-flux), run as processes
    outside the cluster, with one GitRepository for the repository and one Kustomization per
    app (prune: true, wait: false), the same interval, concurrency and client QPS/burst.

Between the two, the custom resources and the apps' namespaces are deleted (and waited for) and
the controllers stopped. Per side it measures: the time until all are Ready at the commit (from
the `kubectl create` of the custom resources, the git fetch included), the controllers' peak
RSS (VmHWM; for Flux each process and their sum), and the apiserver's requests during one no-op
interval (interval × 1.1 from when all are Ready), by verb on the applied resources and in
total, from apiserver_request_total. It prints the ratios applyset/Flux and the targets:
all Ready ≥ 10× faster than Flux, ≤ ¼ of its peak memory, no request on managed objects in
the no-op interval (watches, which informers, kube-controller-manager's included, re-open at
random, and the Deployment controller's status writes apart).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

from benchlib.audit import AuditWindow
from benchlib.cluster import Kubectl, control_plane_down, control_plane_up, counts_delta, kubectl_binary
from benchlib.common import REPO, build_release, free_port, load, proc_memory, release_binary, say, stop_processes, wait_for
from benchlib.git import GitHttpServer, git_commit, git_init
from benchlib.manifests import generate_applysets, podinfo

FLUX_RELEASE = "v2.9.5"
FLUX_CONTROLLERS = {"source-controller": "v1.9.5", "kustomize-controller": "v1.9.5"}
WRITES = {"POST", "PUT", "PATCH", "DELETE"}
POLL = 2.0


class Shape:
    def __init__(self, name, apps, objects, applied, namespaces, premade, description):
        self.name, self.apps, self.objects = name, apps, objects
        self.applied = applied          # resources (plural) the apps consist of
        self.namespaces = namespaces    # the apps' namespaces (to delete between runs)
        self.premade = premade          # namespaces made beforehand (not in git)
        self.description = description

    def generate(self, work):
        if self.name == "flux":
            for i in range(self.apps):
                app = work / f"app-{i:04d}"
                app.mkdir(parents=True)
                (app / "podinfo.yaml").write_text(podinfo(i, self.premade[0]))
        else:
            generate_applysets(work, self.apps, self.objects, prefix="vsflux", replicas=0)

    def paths(self):
        return [f"app-{i:04d}" if self.name == "flux" else f"app-{i:03d}" for i in range(self.apps)]


def shapes(args):
    chosen = ["100x100", "flux"] if args.shape == "both" else [args.shape]
    out = []
    for name in chosen:
        if name == "flux":
            n = args.applysets or 1000
            out.append(Shape("flux", n, 4, {"deployments", "serviceaccounts", "services", "ingresses"},
                             ["vsflux-podinfo"], ["vsflux-podinfo"],
                             f"Flux's benchmark apps: {n} × 4 objects (Deployment at 0 replicas, ServiceAccount, "
                             f"Service, Ingress) in one namespace"))
        else:
            n, m = args.applysets or 100, args.objects or 100
            out.append(Shape("100x100", n, m, {"configmaps", "services", "deployments", "namespaces"},
                             [f"vsflux-{i:03d}" for i in range(n)], [],
                             f"{n} apps × {m} objects (a Namespace, ConfigMaps, headless Services, "
                             f"5 Deployments at 0 replicas)"))
    return out


class Side:
    """One controller (or pair) on one shape: start, create, wait, measure, clean up."""

    def __init__(self, bench, shape, url, sha):
        self.bench, self.shape, self.url, self.sha = bench, shape, url, sha
        self.processes = {}   # name → (Popen, log path)
        self.ever_ready = set()
        self.figures = {}
        self.scratch = bench.scratch / f"{shape.name}-{self.key}"
        self.scratch.mkdir()

    def k(self, *args, stdin=None, check=True):
        return self.bench.k(*args, stdin=stdin, check=check)

    def start(self, name, argv, env=None):
        log_path = self.scratch / f"{name}.log"
        process = subprocess.Popen(argv, stdout=open(log_path, "w"), stderr=subprocess.STDOUT,
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

    def ready_states(self):
        out = self.k("get", self.kind, "-n", self.namespace, "-o",
                     "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status}"
                     "={.status.lastAppliedRevision}{\"\\n\"}{end}", check=False)
        return [line.split("=", 2) for line in out.splitlines() if line.count("=") >= 2]

    def ready_count(self):
        """How many have been Ready at the commit (at least once: a saturated kustomize-controller
        always has --concurrent Kustomizations at Ready=Unknown, mid-reconcile, again)."""
        for name, status, revision in self.ready_states():
            if status == "True" and self.sha in revision:
                self.ever_ready.add(name)
        return len(self.ever_ready)

    def memory(self):
        return {name: proc_memory(process.pid) for name, (process, _) in self.processes.items()}

    def run(self):
        shape = self.shape
        say(f"\n--- {shape.name}: {self.title} ({load()}) ---")
        for ns in [self.namespace, *shape.premade]:
            self.k("create", "namespace", ns, check=False)
        self.start_controllers()
        manifests = self.custom_resources()
        started = time.monotonic()
        self.k("create", "-f", "-", stdin=manifests)
        created = time.monotonic() - started
        self.figures["ready"] = created + wait_for(
            f"all {shape.apps} {self.kind} Ready (each once)", lambda: self.ready_count() == shape.apps, self.processes,
            limit=self.bench.args.limit, period=POLL)
        self.figures["rss_ready"] = self.memory()
        say(f"all {shape.apps} {self.kind} Ready at the commit, each at least once ({shape.apps * shape.objects} objects), in "
            f"{self.figures['ready']:.1f} s (kubectl create of them: {created:.1f} s); "
            f"peak RSS {self.peak(self.figures['rss_ready']):.0f} MiB ({load()})")
        window = self.bench.args.interval * 1.1
        say(f"watching one no-op interval ({window:.0f} s) …")
        git_before = Counter(self.bench.git_server.requests)
        audit = AuditWindow(self.bench.kubeconfig)
        if audit.available():
            audit.start()
        before = self.bench.request_counts()
        time.sleep(window)
        after = self.bench.request_counts()
        own = audit.finish() if audit.available() else None
        self.figures["git"] = sum((Counter(self.bench.git_server.requests) - git_before).values())
        states = Counter(status or "-" for _, status, _ in self.ready_states())
        say("Ready at the end of the no-op interval: " + ", ".join(f"{v} {k}" for k, v in sorted(states.items())))
        for name, (process, log_path) in self.processes.items():
            if process.poll() is not None:
                sys.exit(f"bench-controller: {name} exited during the no-op interval:\n{log_path.read_text()[-4000:]}")
        self.figures["rss_end"] = self.memory()
        delta = counts_delta(before, after)
        self.figures["delta"] = delta
        applied, managed = Counter(), 0
        for (verb, resource, scope, subresource, dry_run), value in delta.items():
            if resource in shape.applied:
                label = f"{verb}{' (dry run)' if dry_run else ''} {resource}{'/' + subresource if subresource else ''}"
                applied[label] += value
                # The Deployment controller writes deployments' status; watches are long-running
                # (counted when they end, re-opened at random by every informer).
                if verb != "WATCH" and not (resource == "deployments" and subresource == "status"):
                    managed += value
        self.figures["applied"] = applied
        if own is not None:
            # The controllers' own requests (the audit log tells them apart by user agent).
            self.figures["own_total"] = sum(own.values())
            self.figures["own_applied"] = Counter()
            for (product, verb, resource, subresource), value in own.items():
                if resource in shape.applied:
                    self.figures["own_applied"][f"{verb} {resource}{'/' + subresource if subresource else ''}"] += value
            self.figures["own_managed"] = sum(self.figures["own_applied"].values())
            self.figures["own"] = own
            for (product, verb, resource, subresource), value in sorted(own.items()):
                say(f"  {product} (audit log): {verb} {resource}{'/' + subresource if subresource else ''}: {value}")
        self.figures["applied_total"] = sum(applied.values())
        self.figures["managed"] = managed
        self.figures["total"] = sum(delta.values())
        for label, value in sorted(applied.items()):
            say(f"  {label}: {value:.0f}")
        say(f"no-op interval: {managed:.0f} requests on managed objects (watches and deployments/status apart), "
            f"{self.figures['applied_total']:.0f} on the applied resources, {self.figures['total']:.0f} in all; "
            f"{self.figures['git']} git HTTP requests; peak RSS {self.peak(self.figures['rss_end']):.0f} MiB "
            + self.rss_detail(self.figures["rss_end"]) + f" ({load()})")

    @staticmethod
    def peak(memory):
        return sum(m["VmHWM"] for m in memory.values())

    @staticmethod
    def rss_detail(memory):
        if len(memory) < 2:
            return ""
        return "(" + ", ".join(f"{name} {m['VmHWM']:.0f}" for name, m in memory.items()) + ")"

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
        for kind in self.kinds_to_delete:
            self.k("delete", kind, "--all", "-n", self.namespace, "--wait=false", check=False)
        for ns in self.shape.premade:
            self.k("delete", "namespace", ns, "--wait=false", check=False)
        if all(process.poll() is None for process, _ in self.processes.values()):
            for kind in self.kinds_to_delete:
                self.wait_gone(kind, ["get", kind, "-n", self.namespace])
        else:
            for kind in self.kinds_to_delete:  # nobody left to remove the finalizers
                names = self.k("get", kind, "-n", self.namespace, "-o", "name", check=False).split()
                for name in names:
                    self.k("patch", name, "-n", self.namespace, "--type=merge", "-p",
                           '{"metadata":{"finalizers":null}}', check=False)
        self.stop()
        for ns in [*self.shape.namespaces, self.namespace]:
            self.k("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        wanted = set(self.shape.namespaces) | {self.namespace}
        while time.monotonic() - started < 1800:
            names = {n.removeprefix("namespace/") for n in self.k("get", "namespaces", "-o", "name", check=False).split()}
            if not names & wanted:
                break
            time.sleep(3)
        say(f"cleaned up in {time.monotonic() - started:.0f} s")


class Applyset(Side):
    key, title, kind = "applyset", "applyset", "applysets"
    namespace = "vsflux-applysets"
    kinds_to_delete = ["applysets"]

    def start_controllers(self):
        args = self.bench.args
        health = free_port()
        self.start("applyset", [
            str(self.bench.binary), "controller", "--kubeconfig", self.bench.kubeconfig,
            "--watch-namespace", self.namespace, "--cache-dir", str(self.scratch / "cache"),
            "--concurrent-reconciles", str(args.concurrent_reconciles),
            "--metrics-bind-address", f"127.0.0.1:{free_port()}",
            "--health-probe-bind-address", f"127.0.0.1:{health}"])
        self.wait_healthy("applyset", f"http://127.0.0.1:{health}/readyz")

    def custom_resources(self):
        interval = self.bench.args.interval
        return "".join(
            f"---\napiVersion: applyset.dev/v1alpha1\nkind: ApplySet\nmetadata:\n  name: app-{i:04d}\n"
            f"  namespace: {self.namespace}\nspec:\n  source:\n    url: {self.url}\n    ref:\n      branch: main\n"
            f"    path: {path}\n  interval: {interval}s\n  timeout: 10m\n  prune: true\n"
            for i, path in enumerate(self.shape.paths()))


class Flux(Side):
    key, title, kind = "flux", f"Flux {FLUX_RELEASE}", "kustomizations"
    namespace = "vsflux-flux-system"
    kinds_to_delete = ["kustomizations", "gitrepositories"]

    def start_controllers(self):
        args, bench = self.bench.args, self.bench
        env = {"KUBECONFIG": bench.kubeconfig, "RUNTIME_NAMESPACE": self.namespace}
        common = ["--log-level=info", "--log-encoding=json", "--enable-leader-election=false",
                  f"--concurrent={args.concurrent_reconciles}",
                  f"--kube-api-qps={args.qps}", f"--kube-api-burst={args.burst}"]
        storage = free_port()
        (self.scratch / "storage").mkdir()
        health = {name: free_port() for name in FLUX_CONTROLLERS}
        self.start("source-controller", [
            str(bench.flux["source-controller"]), *common,
            f"--metrics-addr=127.0.0.1:{free_port()}", f"--health-addr=127.0.0.1:{health['source-controller']}",
            f"--storage-path={self.scratch / 'storage'}", f"--storage-addr=127.0.0.1:{storage}",
            f"--storage-adv-addr=127.0.0.1:{storage}"], env)
        self.start("kustomize-controller", [
            str(bench.flux["kustomize-controller"]), *common,
            f"--metrics-addr=127.0.0.1:{free_port()}", f"--health-addr=127.0.0.1:{health['kustomize-controller']}",
            "--no-remote-bases=true"], dict(env, TMPDIR=str(self.scratch)))
        for name, port in health.items():
            self.wait_healthy(name, f"http://127.0.0.1:{port}/readyz")

    def custom_resources(self):
        interval = self.bench.args.interval
        docs = [f"apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: bench\n"
                f"  namespace: {self.namespace}\nspec:\n  interval: {interval}s\n  url: {self.url}\n"
                f"  ref:\n    branch: main\n"]
        docs += [f"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: app-{i:04d}\n"
                 f"  namespace: {self.namespace}\nspec:\n  interval: {interval}s\n  timeout: 10m\n"
                 f"  sourceRef:\n    kind: GitRepository\n    name: bench\n  path: ./{path}\n  prune: true\n"
                 f"  wait: false\n"
                 for i, path in enumerate(self.shape.paths())]
        return "---\n" + "---\n".join(docs)


class Bench:
    def __init__(self, args):
        self.args = args
        self.kubectl = kubectl_binary("bench-controller")
        self.kubeconfig = None
        self.kube = None
        self.scratch = Path(tempfile.mkdtemp(prefix="applyset-bench-vs-flux-"))
        self.git_server = GitHttpServer(self.scratch / "git")

    def k(self, *args, stdin=None, check=True):
        out = self.kube.run(*args, stdin=stdin, check=False)
        if check and out.returncode:
            sys.exit(f"bench-controller: kubectl {' '.join(args[:3])} … failed:\n{out.stderr[-3000:]}")
        return out.stdout

    def request_counts(self):
        """apiserver_request_total by verb, resource, scope, subresource and dry_run."""
        return self.kube.request_counts(key=("verb", "resource", "scope", "subresource", "dry_run"))

    def build(self):
        args = self.args
        if not args.no_build and args.only != "flux":
            build_release()
        self.binary = release_binary()
        if args.only != "flux" and not self.binary.is_file():
            sys.exit(f"bench-controller: no {self.binary} (build it, or drop --no-build)")
        self.flux = {}
        if args.only != "applyset":
            out = subprocess.run([str(REPO / "scripts/build-flux")], check=True, capture_output=True, text=True)
            paths = out.stdout.strip().splitlines()[-2:]
            self.flux = dict(zip(FLUX_CONTROLLERS, paths))

    def install_crds(self):
        gomodcache = subprocess.run(["go", "env", "GOMODCACHE"], check=True, capture_output=True, text=True).stdout.strip()
        files = [REPO / "crds"]
        if self.args.only != "applyset":
            for name, version in FLUX_CONTROLLERS.items():
                bases = Path(gomodcache) / "github.com/fluxcd" / f"{name}@{version}" / "config/crd/bases"
                if not bases.is_dir():  # the build downloaded the module; make sure it is there
                    subprocess.run(["go", "mod", "download", f"github.com/fluxcd/{name}@{version}"],
                                   cwd=REPO / "tools/flux" / name, check=True, capture_output=True)
                files.append(bases)
        for path in files:
            self.k("apply", "--server-side", "--force-conflicts", "-f", str(path))
        self.k("wait", "--for=condition=Established", "--timeout=120s", "crd", "--all")
        # The control plane's service range is a /24; Flux's shape has 1,000 ClusterIP Services.
        self.k("apply", "-f", "-", stdin="apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata:\n"
               "  name: vsflux\nspec:\n  cidrs:\n  - 10.1.0.0/20\n")

    def repository(self, shape):
        work = self.scratch / f"work-{shape.name}"
        work.mkdir()
        shape.generate(work)
        bare = self.scratch / "git" / f"{shape.name}.git"
        git_init(bare, bare=True)
        git_init(work)
        sha = git_commit(work, f"bench {shape.name}", push_to=bare)
        return self.git_server.url(f"{shape.name}.git"), sha

    def run(self):
        args = self.args
        self.kubeconfig = control_plane_up("bench-controller")
        self.kube = Kubectl(self.kubectl, self.kubeconfig)
        cores = os.cpu_count()
        say(f"bench-controller --vs-flux: control plane KUBECONFIG={self.kubeconfig}; {cores} cores; "
            f"{load()} (at start)")
        self.build()
        self.install_crds()
        say(f"applyset: {self.binary} (--concurrent-reconciles {args.concurrent_reconciles}, client QPS "
            f"{args.qps}/burst {args.burst}, its defaults)")
        if self.flux:
            say(f"Flux {FLUX_RELEASE}: source-controller {FLUX_CONTROLLERS['source-controller']} and "
                f"kustomize-controller {FLUX_CONTROLLERS['kustomize-controller']} (tools/flux), out of cluster, "
                f"--concurrent={args.concurrent_reconciles} each, --kube-api-qps={args.qps} "
                f"--kube-api-burst={args.burst} (as applyset's), no leader election")
        say(f"interval {args.interval}s on both sides; Kustomizations have wait: false and prune: true "
            f"(applyset does not wait for health yet, so neither side does)")
        results = []
        for shape in shapes(args):
            say(f"\n=== shape {shape.name}: {shape.description} ===")
            url, sha = self.repository(shape)
            say(f"repository {url} at {sha[:12]} ({shape.apps} directories)")
            row = {"shape": shape}
            for side_class in (Applyset, Flux):
                if args.only and side_class.key != args.only:
                    continue
                side = side_class(self, shape, url, sha)
                try:
                    side.run()
                finally:
                    side.clean_up()
                row[side.key] = side.figures
            results.append(row)
        say(f"\n{load()} (at the end); {cores} cores")
        return self.summary(results)

    def summary(self, results):
        args = self.args
        ok = True
        for row in results:
            shape, ours, flux = row["shape"], row.get("applyset"), row.get("flux")
            say(f"\n=== {shape.name}: {shape.apps} × {shape.objects} — applyset vs Flux {FLUX_RELEASE} ===")
            say(f"{'':44}{'applyset':>12}{'Flux':>12}{'applyset/Flux':>15}")

            def line(name, a, b, unit, fmt="{:.1f}"):
                cell = lambda v: (fmt.format(v) + unit) if v is not None else "-"  # noqa: E731
                ratio = f"{a / b:.3f}" if a is not None and b else "-"
                say(f"{name:44}{cell(a):>12}{cell(b):>12}{ratio:>15}")

            get = lambda side, f: side[f] if side else None  # noqa: E731
            line("time until all Ready (each once)", get(ours, "ready"), get(flux, "ready"), " s")
            peak = lambda side: Side.peak(side["rss_end"]) if side else None  # noqa: E731
            line("peak RSS (all controller processes)", peak(ours), peak(flux), " MiB", "{:.0f}")
            if flux:
                for name in FLUX_CONTROLLERS:
                    line(f"  Flux {name}", None, flux["rss_end"][name]["VmHWM"], " MiB", "{:.0f}")
            line("no-op interval: requests, all", get(ours, "total"), get(flux, "total"), "", "{:.0f}")
            line("  on the applied resources", get(ours, "applied_total"), get(flux, "applied_total"), "", "{:.0f}")
            line("  on managed objects (no watches)", get(ours, "managed"), get(flux, "managed"), "", "{:.0f}")
            labels = sorted(set((ours or {}).get("applied", {})) | set((flux or {}).get("applied", {})))
            for label in labels:
                line(f"    {label}", (ours or {}).get("applied", {}).get(label, 0) if ours else None,
                     (flux or {}).get("applied", {}).get(label, 0) if flux else None, "", "{:.0f}")
            if (ours or flux or {}).get("own") is not None:
                line("the controllers' own requests (audit log)", get(ours, "own_total"), get(flux, "own_total"), "", "{:.0f}")
                line("  on the applied resources", get(ours, "own_managed"), get(flux, "own_managed"), "", "{:.0f}")
                labels = sorted(set((ours or {}).get("own_applied", {})) | set((flux or {}).get("own_applied", {})))
                for label in labels:
                    line(f"    {label}", (ours or {}).get("own_applied", {}).get(label, 0) if ours else None,
                         (flux or {}).get("own_applied", {}).get(label, 0) if flux else None, "", "{:.0f}")
            line("git HTTP requests", get(ours, "git"), get(flux, "git"), "", "{:.0f}")
            if ours and flux:
                speedup = flux["ready"] / ours["ready"]
                memory = peak(ours) / peak(flux)
                targets = [
                    (f"all Ready ≥ 10× faster than Flux: {speedup:.2f}×", speedup >= 10),
                    (f"peak memory ≤ ¼ of Flux's: {memory:.3f}", memory <= 0.25),
                    (f"0 requests on managed objects in a no-op interval: {ours.get('own_managed', ours['managed']):.0f}"
                     + (" (applyset's own, audit log)" if "own_managed" in ours else " (apiserver_request_total)"),
                     ours.get("own_managed", ours["managed"]) == 0),
                ]
                for text, passed in targets:
                    say(f"  target {text} → {'PASS' if passed else 'FAIL'}")
                    ok = ok and passed
        return 0 if ok else 1

    def close(self):
        self.git_server.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        if not self.args.keep:
            control_plane_down()


def main(args):
    # A TERM (or a HUP from a closed terminal) cleans up like ^C: controllers stopped, control plane down
    # (if this run brought it up).
    import signal
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda signum, frame: sys.exit(128 + signum))
    args.qps, args.burst = 300, 600   # applyset's defaults (crate::cluster::DEFAULT_QPS/BURST); Flux gets the same
    args.limit = 3600   # per side and shape: Flux took ~21 min for its own shape here under load
    bench = Bench(args)
    try:
        return bench.run()
    finally:
        bench.close()
