"""`scripts/bench-controller --monorepo N`: N apps in ONE git repository, each its own directory.

The repository (app-000 … app-<N-1>, each 4 ConfigMaps in one namespace made beforehand,
bench-mono-apps) is served by a git smart-HTTP server on 127.0.0.1 (`git http-backend`), one
bare repository per side, the same content. One side after the other on the same control plane
(scripts/control-plane; APPLYSET_CP_STATE and APPLYSET_CP_APISERVER_PORT select which):

  * applyset: the release `applyset controller` (its webhook receiver on), N ApplySets, one per
    directory (spec.source.path), each with spec.webhook naming a Secret with the token;
  * Flux: source-controller and kustomize-controller (scripts/build-flux) as processes, one
    GitRepository and N Kustomizations, each with its own path (as bench_vs_flux.py does).

Per side it measures:

  * the time until all N are Ready at the first commit (from the `kubectl create`);
  * the git HTTP requests the server receives in one steady-state interval (interval × 1.1 from
    when all are Ready), per kind: info/refs (what a fetch asks first; alone when nothing
    changed) and git-upload-pack (a fetch that downloads), and the fetches they make (requests
    less than 2 s apart are one fetch), listed with their times;
  * a commit changing one app (a ConfigMap's value in app-007) pushed to the server, then what a
    git host's webhook does: applyset: a GitHub push event, HMAC-signed, POSTed to the
    controller's receiver path of app-007 (its status.webhookPath; the receiver sets the ApplySet's
    applyset.dev/reconcile-requested-at); Flux: the GitRepository's
    reconcile.fluxcd.io/requestedAt annotation (what `flux reconcile source git` does). The
    time from the push to that ConfigMap's new value in the cluster and to app-007's
    status.lastAppliedRevision being the new commit (read every 50 ms through `kubectl proxy`),
    and on the way: to the webhook's request written (applyset) or the GitRepository's artifact
    at the commit (Flux), and the git requests until the object changed;
  * once the commit has settled (all N at the new commit, or after 2 intervals): the time that
    took, the controllers' CPU seconds from the push (/proc/<pid>/stat), how many runs applied
    and how many were skipped (applyset: applyset_reconcile_total{result="success"} against
    {result="inputs_unchanged"}, from its metrics endpoint; Flux: the Kustomizations whose
    lastAppliedRevision moved, all of them re-apply), git requests and apiserver writes;
  * the controllers' peak RSS (VmHWM).

It prints a side-by-side table with ratios applyset/Flux, the targets for applyset (about one
fetch per interval whatever N, at most 2 in the window; a fetch that finds nothing new is one
info/refs; push → object ≤ 2 s) and the machine's load at start and end. With --keep the
controllers' logs are kept (RUST_LOG passes through to applyset's).
"""

import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchlib.cluster import (ApiProxy, Kubectl, control_plane_up, release_scratch, counts_delta, kubectl_binary,
                              quiet_before)
from benchlib.common import seconds_text, build_release, exit_on_signals, load, release_binary, say
from benchlib.git import GitHttpServer, git_commit, git_init
from benchlib.manifests import small_app
from benchlib.sides import FLUX_RELEASE, ApplysetSide, FluxSide, flux_binaries, install_crds, peak, rss_detail, time_changes

APPS_NAMESPACE = "bench-mono-apps"
TOKEN = "bench-monorepo-webhook-token"
SECRET = "bench-webhook"
REQUESTED_AT = "applyset.dev/reconcile-requested-at"
CONFIGMAPS = 4
POLL = 2.0
MILESTONES = {"requested": "the webhook's request written (the ApplySet's annotation)",
              "fetched": "the GitRepository's artifact at the commit"}
OBJECT_GOAL = 2.0
FETCH_GAP = 2.0
WRITES = {"POST", "PUT", "PATCH", "APPLY", "DELETE"}   # APPLY: server-side apply (Flux)


def app_names(n):
    width = max(3, len(str(n - 1)))
    return [f"app-{i:0{width}d}" for i in range(n)]


class Applyset(ApplysetSide):
    def __init__(self, bench):
        super().__init__(bench.kube, bench.scratch / "applyset", "bench-mono", [APPS_NAMESPACE], [APPS_NAMESPACE])

    def start_controllers(self, bench):
        self.launch(bench.binary, bench.args.concurrent_reconciles, "--watch-namespace", self.namespace, webhook=True)
        self.webhook_secret(SECRET, TOKEN)

    def custom_resources(self, url, paths, interval):
        return self.resources(url, paths, interval, names=paths, webhook_secret=SECRET)

    def milestones(self, proxy, app, sha):
        """What to time besides the object: the request the webhook's receiver writes."""
        def annotation(o):
            return ((o or {}).get("metadata", {}).get("annotations") or {}).get(REQUESTED_AT)
        before = annotation(proxy.get(self.api_path(app)))
        return {"requested": (self.api_path(app), lambda o: annotation(o) not in (None, before))}

    def trigger(self, app):
        answer = self.hook(app, TOKEN)
        return f"webhook POST for {self.namespace}/{app} (GitHub push event, signed): {answer}"

    def runs(self):
        """applyset_reconcile_total by result."""
        return Counter({dict(labels).get("result", ""): value for (name, labels), value in self.metrics().items()
                        if name == "applyset_reconcile_total"})


class Flux(FluxSide):
    def __init__(self, bench):
        super().__init__(bench.kube, bench.scratch / "flux", "bench-mono-flux", [APPS_NAMESPACE], [APPS_NAMESPACE])

    def start_controllers(self, bench):
        args = bench.args
        self.launch(bench.flux, args.concurrent_reconciles, args.qps, args.burst)

    def custom_resources(self, url, paths, interval):
        return self.resources(url, paths, interval, names=paths)

    def milestones(self, proxy, app, sha):
        """What to time besides the object: the GitRepository's artifact at the commit."""
        path = f"/apis/source.toolkit.fluxcd.io/v1/namespaces/{self.namespace}/gitrepositories/bench"
        return {"fetched": (path, lambda o: bool(o) and sha in (((o.get("status") or {}).get("artifact") or {})
                                                                .get("revision", "")))}

    def trigger(self, app):
        self.request_fetch(f"bench-{time.time_ns()}")
        return "GitRepository bench annotated reconcile.fluxcd.io/requestedAt (flux reconcile source git)"

    def runs(self):
        return None


class Monorepo:
    def __init__(self, args):
        self.args = args
        self.kube = None
        self.proxy = None
        self.scratch = Path(tempfile.mkdtemp(prefix="applyset-bench-monorepo-"))
        self.git = GitHttpServer(self.scratch / "git")
        self.paths = app_names(args.monorepo)
        self.changed = self.paths[min(7, len(self.paths) - 1)]

    def repository(self, key):
        """A work tree and its bare repository (served as monorepo-<key>.git), at the first commit."""
        work = self.scratch / f"work-{key}"
        for name in self.paths:
            small_app(work, name, APPS_NAMESPACE, configmaps=CONFIGMAPS)
        bare = self.scratch / "git" / f"monorepo-{key}.git"
        git_init(bare, bare=True)
        git_init(work)
        sha = git_commit(work, f"bench monorepo: {len(self.paths)} apps", push_to=bare)
        return work, bare, f"monorepo-{key}.git", sha

    def request_counts(self):
        """apiserver_request_total by verb, resource, scope, subresource and dry_run."""
        return self.kube.request_counts(key=("verb", "resource", "scope", "subresource", "dry_run"))

    def git_delta(self, repo, before):
        """The requests on repo since before (a copy of self.git.paths), by kind."""
        now = Counter(self.git.paths)
        return Counter({kind: now[(r, kind)] - before.get((r, kind), 0) for (r, kind) in now if r == repo})

    def measure(self, side):
        """One side: all Ready at a first commit, a steady interval, then a commit to one app."""
        work, bare, repo, first = self.repository(side.key)
        say(f"\n--- {side.title}: {len(self.paths)} apps × {CONFIGMAPS} ConfigMaps in one repository, "
            f"{self.git.url(repo)} at {first[:12]} ({load()}) ---")
        side.create_namespaces()
        side.start_controllers(self)
        self.until_ready(side, repo, first)
        self.steady(side, repo)
        self.change_one(side, work, bare, repo)

    def until_ready(self, side, repo, first):
        args, n, figures = self.args, len(self.paths), side.figures
        url = self.git.url(repo)
        started = time.monotonic()
        side.k("create", "-f", "-", stdin=side.custom_resources(url, self.paths, args.interval))
        side.wait_for(f"all {n} {side.kind} Ready", lambda: side.ready_count(first) == n, limit=args.limit, period=POLL)
        figures["ready"] = time.monotonic() - started
        say(f"all {n} {side.kind} Ready at the first commit ({n * CONFIGMAPS} objects) in {figures['ready']:.1f} s; "
            f"peak RSS {peak(side.memory()):.0f} MiB ({load()})")

    def steady(self, side, repo):
        """The git requests (and the apiserver's, all clients) in one interval × 1.1, all Ready."""
        figures, window = side.figures, self.args.interval * 1.1
        say(f"steady state: counting git requests for one interval ({window:.0f} s) …")
        git_before, api_before = Counter(self.git.paths), self.kube.request_counts()
        started = time.monotonic()
        time.sleep(window)
        times = [(at, kind) for at, _, r, kind in list(self.git.events) if r == repo and at >= started]
        requests = [f"+{at - started:.1f} s {kind}" for at, kind in times]
        steady = self.git_delta(repo, git_before)
        api = counts_delta(api_before, self.kube.request_counts())
        side.check_running("the steady-state interval")
        figures["steady_refs"], figures["steady_pack"] = steady["info/refs"], steady["git-upload-pack"]
        # A fetch: requests less than FETCH_GAP apart (a client's info/refs, then its upload-pack).
        figures["steady_fetches"] = sum(1 for i, (at, _) in enumerate(times) if i == 0 or at - times[i - 1][0] > FETCH_GAP)
        figures["steady_api"] = sum(api.values())
        say(f"steady state ({window:.0f} s): {figures['steady_refs']} info/refs, {figures['steady_pack']} "
            f"git-upload-pack; apiserver requests {figures['steady_api']:.0f} (all clients)")
        say(f"  git requests in it ({figures['steady_fetches']} fetches): " + (", ".join(requests) or "none"))

    def change_one(self, side, work, bare, repo):
        """A commit changing one app, pushed, then what the git host's webhook does; the times
        until it is applied and until all are at the commit, and what that cost."""
        args, n, figures = self.args, len(self.paths), side.figures
        revisions_before = side.revisions()
        runs_before = side.runs()
        cpu_before = side.cpu()
        git_before, api_before = Counter(self.git.paths), self.request_counts()
        value = f"v2-{time.time_ns()}"
        small_app(work, self.changed, APPS_NAMESPACE, value=value, configmaps=CONFIGMAPS)
        second = git_commit(work, f"change {self.changed}", push_to=bare)
        milestones = side.milestones(self.proxy, self.changed, second)
        pushed = time.monotonic()
        how = side.trigger(self.changed)
        say(f"pushed {second[:12]} (a ConfigMap of {self.changed} changed); {how}")
        cm = f"/api/v1/namespaces/{APPS_NAMESPACE}/configmaps/{self.changed}-cm-0"
        changed = time_changes(self.proxy, pushed, {
            **milestones,
            "object": (cm, lambda o: bool(o) and o.get("data", {}).get("value") == value),
            "revision": (side.api_path(self.changed),
                         lambda o: bool(o) and second in (o.get("status") or {}).get("lastAppliedRevision", "")),
        }, limit=2 * args.interval)
        figures.update(changed)
        say("push → " + "".join(f"{MILESTONES[m]}: {seconds_text(figures[m])} s; " for m in milestones)
            + f"{self.changed}'s ConfigMap changed: {seconds_text(figures['object'])} s; its lastAppliedRevision the new "
            f"commit: {seconds_text(figures['revision'])} s")
        first_requests = [f"+{at - pushed:.2f} s {kind} ({took:.2f} s)" for at, took, r, kind in list(self.git.events)
                          if r == repo and at >= pushed and (figures["object"] is None or at - pushed <= figures["object"])]
        say("git requests from the push until the object changed: " + (", ".join(first_requests) or "none"))

        moved = lambda: sum(1 for r in side.revisions().values() if second in r)  # noqa: E731
        while moved() < n and time.monotonic() - pushed < 2 * args.interval:
            side.check_running("the new commit")
            time.sleep(POLL)
        settled = time.monotonic() - pushed
        figures["cpu"] = side.cpu() - cpu_before
        revisions = side.revisions()
        figures["moved"] = sum(1 for name, r in revisions.items() if r != revisions_before.get(name))
        figures["at_new"] = sum(1 for r in revisions.values() if second in r)
        figures["settled"] = settled if figures["at_new"] == n else None
        git = self.git_delta(repo, git_before)
        api = counts_delta(api_before, self.request_counts())
        figures["change_refs"], figures["change_pack"] = git["info/refs"], git["git-upload-pack"]
        figures["change_writes"] = sum(v for (verb, resource, _, _, dry_run), v in api.items()
                                       if verb in WRITES and resource == "configmaps" and not dry_run)
        figures["change_dry_runs"] = sum(v for (verb, resource, _, _, dry_run), v in api.items()
                                         if verb in WRITES and resource == "configmaps" and dry_run)
        runs = side.runs()
        if runs is not None:
            delta = Counter({k: runs[k] - runs_before.get(k, 0) for k in runs if runs[k] > runs_before.get(k, 0)})
            figures["applied"], figures["skipped"] = delta["success"], delta["inputs_unchanged"]
            figures["runs"] = delta
            detail = ", ".join(f"{v:.0f} {k}" for k, v in sorted(delta.items()))
        else:
            figures["applied"], figures["skipped"] = figures["moved"], 0
            detail = f"{figures['moved']} Kustomizations' lastAppliedRevision moved (each re-applied)"
        figures["memory"] = side.memory()
        say(f"{figures['at_new']}/{n} at the new commit after {settled:.1f} s"
            + ("" if figures["settled"] is not None else " (not all within 2 intervals)")
            + f"; CPU {figures['cpu']:.2f} s since the push; runs: {detail}; git {figures['change_refs']} info/refs, "
            f"{figures['change_pack']} git-upload-pack; ConfigMap writes {figures['change_writes']:.0f} (dry runs "
            f"{figures['change_dry_runs']:.0f}); peak RSS {peak(figures['memory']):.0f} MiB "
            + rss_detail(figures["memory"]) + f"({load()})")

    def run(self):
        args = self.args
        self.kube = Kubectl(kubectl_binary("bench-controller"), control_plane_up("bench-controller"))
        say(f"bench-controller --monorepo {args.monorepo}: control plane KUBECONFIG={self.kube.kubeconfig}; "
            f"{os.cpu_count()} cores; {load()} (at start)")
        if not args.no_build and args.only != "flux":
            build_release()
        self.binary = release_binary()
        if args.only != "flux" and not self.binary.is_file():
            sys.exit(f"bench-controller: no {self.binary} (build it, or drop --no-build)")
        self.flux = flux_binaries() if args.only != "applyset" else {}
        install_crds(self.kube, flux=bool(self.flux))
        self.proxy = ApiProxy(self.kube)
        say(f"interval {args.interval}s, concurrency {args.concurrent_reconciles} on both sides; the app that "
            f"changes: {self.changed}" + (f"; Flux {FLUX_RELEASE} with client QPS {args.qps}/burst {args.burst}"
                                          if self.flux else ""))
        results = {}
        for side_class in (Applyset, Flux):
            if args.only and side_class.key != args.only:
                continue
            side = side_class(self)
            # The side before it cleaned up: a quiet control plane first, or this side pays for that.
            quiet_before(side_class.title)
            try:
                self.measure(side)
            finally:
                side.clean_up()
            results[side.key] = side.figures
        say(f"\n{load()} (at the end); {os.cpu_count()} cores")
        return self.summary(results)

    def summary(self, results):
        args, n = self.args, len(self.paths)
        ours, flux = results.get("applyset"), results.get("flux")
        say(f"\n=== one repository, {n} apps × {CONFIGMAPS} ConfigMaps, interval {args.interval}s — "
            f"applyset vs Flux {FLUX_RELEASE} ===")
        say(f"{'':52}{'applyset':>12}{'Flux':>12}{'applyset/Flux':>15}")

        def line(name, key, unit="", form="{:.1f}", of=None):
            get = of or (lambda side: side.get(key))
            a, b = (get(side) if side else None for side in (ours, flux))
            cell = lambda v: (form.format(v) + unit) if v is not None else "-"  # noqa: E731
            ratio = f"{a / b:.3f}" if a is not None and b else "-"
            say(f"{name:52}{cell(a):>12}{cell(b):>12}{ratio:>15}")

        line(f"time until all {n} Ready (first commit)", "ready", " s")
        line("steady interval × 1.1: fetches", "steady_fetches", "", "{:.0f}")
        line("  git info/refs", "steady_refs", "", "{:.0f}")
        line("  git-upload-pack", "steady_pack", "", "{:.0f}")
        line("  apiserver requests (all clients)", "steady_api", "", "{:.0f}")
        line("push → the webhook's request written (applyset)", "requested", " s", "{:.2f}")
        line("push → the source fetched (Flux's artifact)", "fetched", " s", "{:.2f}")
        line(f"push → {self.changed}'s object changed", "object", " s", "{:.2f}")
        line(f"push → {self.changed}'s lastAppliedRevision", "revision", " s", "{:.2f}")
        line(f"push → all {n} at the new commit", "settled", " s")
        line("CPU seconds from the push to settled", "cpu", " s", "{:.2f}")
        line("runs applied (applyset: result=success; Flux: all)", "applied", "", "{:.0f}")
        line("runs skipped (result=inputs_unchanged)", "skipped", "", "{:.0f}")
        line("lastAppliedRevision moved", "moved", "", "{:.0f}")
        line("push → settled: git info/refs", "change_refs", "", "{:.0f}")
        line("  git-upload-pack", "change_pack", "", "{:.0f}")
        line("push → settled: ConfigMap writes (apiserver)", "change_writes", "", "{:.0f}")
        line("  dry-run writes", "change_dry_runs", "", "{:.0f}")
        line("peak RSS (all controller processes)", None, " MiB", "{:.0f}", of=lambda side: peak(side["memory"]))
        ok = True
        if ours:
            targets = [
                (f"about 1 fetch per interval whatever N (at most 2 in the interval × 1.1): {ours['steady_fetches']}",
                 ours["steady_fetches"] <= 2),
                (f"a fetch that finds nothing new is 1 info/refs: {ours['steady_refs']} info/refs and "
                 f"{ours['steady_pack']} git-upload-pack in {ours['steady_fetches']} fetches",
                 ours["steady_pack"] == 0 and ours["steady_refs"] <= ours["steady_fetches"]),
                (f"push → object changed ≤ {OBJECT_GOAL:.0f} s: {seconds_text(ours['object'])} s",
                 ours["object"] is not None and ours["object"] <= OBJECT_GOAL),
            ]
            for text, passed in targets:
                say(f"  target {text} → {'PASS' if passed else 'FAIL'}")
                ok = ok and passed
        return 0 if ok else 1

    def close(self):
        if self.proxy:
            self.proxy.close()
        self.git.close()
        release_scratch(self.args.keep, self.scratch, "the controllers' logs, the repositories")


def main(args):
    exit_on_signals()
    args.qps, args.burst = 300, 600   # Flux's client rate, as bench_vs_flux.py gives it
    args.limit = 3600
    if args.monorepo < 1:
        sys.exit("bench-controller: --monorepo needs at least 1 app")
    bench = Monorepo(args)
    try:
        return bench.run()
    finally:
        bench.close()
