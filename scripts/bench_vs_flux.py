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
    app (prune: true, wait: false), the same interval and concurrency; Flux's clients at
    --kube-api-qps=300 --kube-api-burst=600 (a fixed token bucket, above Flux's own defaults of
    50/300), applyset with its own defaults (a budget that adapts to the apiserver's latency
    under a ceiling of 2000/s, burst 600).

Between the two, the custom resources and the apps' namespaces are deleted (and waited for) and
the controllers stopped, and each side starts on a quiet control plane (a cleanup's deletions
outlive its namespaces: otherwise the second side pays for the first's). Per side it measures:
the time until all are Ready at the commit (from the `kubectl create` of the custom resources,
the git fetch included), the controllers' peak RSS (VmHWM; for Flux each process and their
sum), and the apiserver's requests during one no-op interval (interval × 1.1 from when all are
Ready), by verb on the applied resources and in total, from apiserver_request_total. It prints the ratios applyset/Flux and the targets:
all Ready ≥ 10× faster than Flux, ≤ ¼ of its peak memory, no request on managed objects in
the no-op interval (watches, which informers, kube-controller-manager's included, re-open at
random, and the Deployment controller's status writes apart).

The results go to target/bench/vs-flux.json and the charts (bars side by side, and Ready over
time per shape) to --plots DIR, by default the book's docs/src/benchmarks/ (benchlib/plots.py).
"""

import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchlib.audit import AuditWindow
from benchlib.cluster import (Kubectl, control_plane_down, control_plane_up, counts_delta, kubectl_binary,
                              quiet_before)
from benchlib import plots
from benchlib.common import build_release, exit_on_signals, load, load_figures, release_binary, say
from benchlib.git import GitHttpServer, git_commit, git_init
from benchlib.manifests import GENERATED_RESOURCES, generate_applysets, podinfo
from benchlib.sides import (FLUX_CONTROLLERS, FLUX_RELEASE, ApplysetSide, FluxSide, flux_binaries, install_crds,
                            peak, rss_detail)

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


# The controller's default --qps (crate::cluster::DEFAULT_CONTROLLER_QPS): a ceiling its
# adaptive budget stays under.
APPLYSET_QPS_CEILING = 2000


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
            out.append(Shape("100x100", n, m, GENERATED_RESOURCES,
                             [f"vsflux-{i:03d}" for i in range(n)], [],
                             f"{n} apps × {m} objects (a Namespace, ConfigMaps, headless Services, "
                             f"5 Deployments at 0 replicas)"))
    return out


def measure(side):
    """One side on its shape: the controllers started, the custom resources created, the time
    until all are Ready, then one no-op interval's requests (apiserver and audit log) and git
    requests."""
    shape, bench = side.shape, side.bench
    say(f"\n--- {shape.name}: {side.title} ({load()}) ---")
    side.create_namespaces()
    side.start_controllers()
    manifests = side.custom_resources()
    started = time.monotonic()
    side.k("create", "-f", "-", stdin=manifests)
    created = time.monotonic() - started
    timeline = plots.ReadyTimeline(started)
    side.figures["ready"] = created + side.wait_for(
        f"all {shape.apps} {side.kind} Ready (each once)",
        lambda: timeline.count(side.ready_count(side.sha)) == shape.apps, limit=bench.args.limit, period=POLL)
    side.figures["timeline"] = timeline.finish()
    side.figures["rss_ready"] = side.memory()
    say(f"all {shape.apps} {side.kind} Ready at the commit, each at least once ({shape.apps * shape.objects} objects), in "
        f"{side.figures['ready']:.1f} s (kubectl create of them: {created:.1f} s); "
        f"peak RSS {peak(side.figures['rss_ready']):.0f} MiB ({load()})")
    window = bench.args.interval * 1.1
    say(f"watching one no-op interval ({window:.0f} s) …")
    git_before = Counter(bench.git_server.requests)
    audit = AuditWindow(bench.kubeconfig)
    if audit.available():
        audit.start()
    before = bench.request_counts()
    time.sleep(window)
    after = bench.request_counts()
    own = audit.finish() if audit.available() else None
    side.figures["git"] = sum((Counter(bench.git_server.requests) - git_before).values())
    states = Counter(status or "-" for _, status, _ in side.ready_states())
    say("Ready at the end of the no-op interval: " + ", ".join(f"{v} {k}" for k, v in sorted(states.items())))
    side.check_running("the no-op interval")
    side.figures["rss_end"] = side.memory()
    delta = counts_delta(before, after)
    side.figures["delta"] = delta
    applied, managed = Counter(), 0
    for (verb, resource, scope, subresource, dry_run), value in delta.items():
        if resource in shape.applied:
            label = f"{verb}{' (dry run)' if dry_run else ''} {resource}{'/' + subresource if subresource else ''}"
            applied[label] += value
            # The Deployment controller writes deployments' status; watches are long-running
            # (counted when they end, re-opened at random by every informer).
            if verb != "WATCH" and not (resource == "deployments" and subresource == "status"):
                managed += value
    side.figures["applied"] = applied
    if own is not None:
        # The controllers' own requests (the audit log tells them apart by user agent).
        side.figures["own_total"] = sum(own.values())
        side.figures["own_applied"] = Counter()
        for (product, verb, resource, subresource), value in own.items():
            if resource in shape.applied:
                side.figures["own_applied"][f"{verb} {resource}{'/' + subresource if subresource else ''}"] += value
        side.figures["own_managed"] = sum(side.figures["own_applied"].values())
        side.figures["own"] = own
        for (product, verb, resource, subresource), value in sorted(own.items()):
            say(f"  {product} (audit log): {verb} {resource}{'/' + subresource if subresource else ''}: {value}")
    side.figures["applied_total"] = sum(applied.values())
    side.figures["managed"] = managed
    side.figures["total"] = sum(delta.values())
    for label, value in sorted(applied.items()):
        say(f"  {label}: {value:.0f}")
    say(f"no-op interval: {managed:.0f} requests on managed objects (watches and deployments/status apart), "
        f"{side.figures['applied_total']:.0f} on the applied resources, {side.figures['total']:.0f} in all; "
        f"{side.figures['git']} git HTTP requests; peak RSS {peak(side.figures['rss_end']):.0f} MiB "
        + rss_detail(side.figures["rss_end"]) + f"({load()})")


class Applyset(ApplysetSide):
    def __init__(self, bench, shape, url, sha):
        super().__init__(bench.kube, bench.scratch / f"{shape.name}-applyset", "vsflux-applysets",
                         shape.namespaces, shape.premade)
        self.bench, self.shape, self.url, self.sha = bench, shape, url, sha

    def start_controllers(self):
        self.launch(self.bench.binary, self.bench.args.concurrent_reconciles, "--watch-namespace", self.namespace)

    def custom_resources(self):
        return self.resources(self.url, self.shape.paths(), self.bench.args.interval)


class Flux(FluxSide):
    def __init__(self, bench, shape, url, sha):
        super().__init__(bench.kube, bench.scratch / f"{shape.name}-flux", "vsflux-flux-system",
                         shape.namespaces, shape.premade)
        self.bench, self.shape, self.url, self.sha = bench, shape, url, sha

    def start_controllers(self):
        args = self.bench.args
        self.launch(self.bench.flux, args.concurrent_reconciles, args.qps, args.burst)

    def custom_resources(self):
        return self.resources(self.url, self.shape.paths(), self.bench.args.interval)


class Bench:
    def __init__(self, args):
        self.args = args
        self.kubectl = kubectl_binary("bench-controller")
        self.kubeconfig = None
        self.kube = None
        self.scratch = Path(tempfile.mkdtemp(prefix="applyset-bench-vs-flux-"))
        self.git_server = GitHttpServer(self.scratch / "git")

    def k(self, *args, stdin=None, check=True):
        return self.kube.out(*args, stdin=stdin, check=check)

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
            self.flux = flux_binaries()

    def install_crds(self):
        # The ServiceCIDR it adds: the control plane's service range is a /24; Flux's shape has
        # 1,000 ClusterIP Services.
        install_crds(self.kube, flux=self.args.only != "applyset")

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
        self.load_at_start = load_figures()
        say(f"bench-controller --vs-flux: control plane KUBECONFIG={self.kubeconfig}; {cores} cores; "
            f"{load()} (at start)")
        self.build()
        self.install_crds()
        say(f"applyset: {self.binary} (--concurrent-reconciles {args.concurrent_reconciles}, its default request "
            f"budget: adaptive under {APPLYSET_QPS_CEILING}/s, burst {args.burst})")
        if self.flux:
            say(f"Flux {FLUX_RELEASE}: source-controller {FLUX_CONTROLLERS['source-controller']} and "
                f"kustomize-controller {FLUX_CONTROLLERS['kustomize-controller']} (tools/flux), out of cluster, "
                f"--concurrent={args.concurrent_reconciles} each, --kube-api-qps={args.qps} "
                f"--kube-api-burst={args.burst} (a fixed rate; Flux's own default is 50/300), no leader election")
        say(f"interval {args.interval}s on both sides; Kustomizations have wait: false and prune: true "
            f"(the ApplySets do not set spec.wait either: neither side waits for health)")
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
                # The side before it cleaned up: a quiet control plane first, or this side pays for that.
                quiet_before(side_class.title)
                try:
                    measure(side)
                finally:
                    side.clean_up()
                row[side.key] = side.figures
            results.append(row)
        say(f"\n{load()} (at the end); {cores} cores")
        self.save(results)
        return self.summary(results)

    def save(self, results):
        """The figures the charts show, with the run's conditions (benchlib/plots.py)."""
        saved = dict(plots.conditions("scripts/bench-controller " + " ".join(sys.argv[1:]), self.load_at_start),
                     benchmark="vs-flux", flux_release=FLUX_RELEASE, shapes=[])
        for row in results:
            shape = row["shape"]
            sides = {}
            for key in ("applyset", "flux"):
                if key in row:
                    figures = row[key]
                    sides[key] = {"ready": round(figures["ready"], 1), "peak_rss": round(peak(figures["rss_end"])),
                                  "managed": figures.get("own_managed", figures["managed"]),
                                  "timeline": figures["timeline"]}
            title = "Flux's benchmark shape" if shape.name == "flux" else f"{shape.apps} × {shape.objects}"
            saved["shapes"].append({"name": shape.name, "title": title, "description": shape.description,
                                    "apps": shape.apps, "objects": shape.objects, "sides": sides})
        plots.save("vs-flux", saved, self.args.plots)

    def summary(self, results):
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
            peak_of = lambda side: peak(side["rss_end"]) if side else None  # noqa: E731
            line("peak RSS (all controller processes)", peak_of(ours), peak_of(flux), " MiB", "{:.0f}")
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
                memory = peak_of(ours) / peak_of(flux)
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
    exit_on_signals()
    # Flux's clients: a fixed 300/s, burst 600 (the burst as applyset's, crate::cluster::DEFAULT_BURST).
    args.qps, args.burst = 300, 600
    args.limit = 3600   # per side and shape: Flux took ~21 min for its own shape here under load
    bench = Bench(args)
    try:
        return bench.run()
    finally:
        bench.close()
