"""`scripts/bench-controller --fairness [--crowd 500]`: is a change in one namespace applied as
fast beside a crowd of ApplySets all due in another namespace as on an idle controller?

One release `applyset controller` (--concurrent-reconciles 4 unless given, --min-interval 1s, its
webhook receiver on; --shard-selector on a label of this run, so that it runs the benchmark's
ApplySets only), on the local control plane (scripts/control-plane; APPLYSET_CP_STATE and
APPLYSET_CP_APISERVER_PORT select which). Two repositories on a git smart-HTTP server on
127.0.0.1 (`git http-backend`):

  * crowd.git: --crowd small apps (4 ConfigMaps each), an ApplySet each in namespace
    bench-crowd, interval --crowd-interval (10 s), so that they keep falling due;
  * lone.git: one app, its ApplySet `lone` in namespace bench-lone (interval --interval, a
    webhook Secret).

A push is a commit changing the lone app's ConfigMap value, pushed to the server, then what the
git host's webhook does: a GitHub push event, HMAC-signed, POSTed to the controller's
the receiver path of bench-lone/lone. Measured: the time from the push to the ConfigMap's new value in the
cluster and to the lone ApplySet's status.lastAppliedRevision being the commit (both read every
50 ms through `kubectl proxy`). --rounds pushes per phase:

  1. idle: the lone ApplySet alone on the controller;
  2. crowded: the crowd created at once (the first push right after its `kubectl create`: all
     new, all due), then, once all of it is Ready, each further push right after every crowd
     ApplySet was requested at once (applyset.dev/reconcile-requested-at, merge-patched by 16
     clients in parallel through the proxy). Per round it says how many crowd runs finished
     while the lone one waited, and how long after the push the crowd had handled its requests.

It prints each round, the median and max per phase and the ratio crowded/idle, with the target:
the crowded median at most 1.5 × the idle one (the same time, give or take the noise of a
shared machine), and the machine's load at start and end.
"""

import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchlib.cluster import ApiProxy, Kubectl, control_plane_up, release_scratch, kubectl_binary
from benchlib.common import seconds_text, build_release, exit_on_signals, load, release_binary, say
from benchlib.git import GitHttpServer, git_commit, git_init
from benchlib.manifests import small_app
from benchlib.sides import ApplysetSide, install_crds, time_changes

CROWD, LONE = "bench-crowd", "bench-lone"
TOKEN = "bench-fairness-webhook-token"
SECRET = "bench-webhook"
REQUESTED_AT = "applyset.dev/reconcile-requested-at"
LABEL = "bench.applyset.dev/fairness"
TARGET = 1.5


class Fairness:
    def __init__(self, args):
        self.args = args
        self.kube = self.proxy = self.side = None
        self.scratch = Path(tempfile.mkdtemp(prefix="applyset-bench-fairness-"))
        self.git = GitHttpServer(self.scratch / "git")
        self.run_id = f"run-{os.getpid()}-{int(time.time())}"
        self.crowd = [f"crowd-{i:04d}" for i in range(args.crowd)]
        self.rounds = {"idle": [], "crowded": []}

    def repository(self, name, apps, namespace):
        work = self.scratch / f"work-{name}"
        for app in apps:
            small_app(work, app, namespace)
        bare = self.scratch / "git" / f"{name}.git"
        git_init(bare, bare=True)
        git_init(work)
        return work, bare, git_commit(work, f"bench fairness: {name}", push_to=bare)

    def runs_total(self):
        return sum(value for (name, _), value in self.side.metrics().items() if name == "applyset_reconcile_total")

    def push(self, phase, note):
        """A change of the lone app pushed, the webhook POSTed; the times until it is applied."""
        args, side = self.args, self.side
        value = f"v-{time.time_ns()}"
        small_app(self.lone_work, "lone", LONE, value=value)
        runs_before = self.runs_total()
        sha = git_commit(self.lone_work, f"lone: {value}", push_to=self.lone_bare)
        pushed = time.monotonic()
        answer = side.hook("lone", TOKEN, namespace=LONE)
        times = time_changes(self.proxy, pushed, {
            "object": (f"/api/v1/namespaces/{LONE}/configmaps/lone-cm-0",
                       lambda o: bool(o) and o.get("data", {}).get("value") == value),
            "revision": (side.api_path("lone", LONE),
                         lambda o: bool(o) and sha in (o.get("status") or {}).get("lastAppliedRevision", "")),
        }, limit=max(60, 2 * args.interval))
        times["runs"] = self.runs_total() - runs_before - 1   # the crowd's, the lone one's apart
        times["pushed"], times["note"] = pushed, note
        self.rounds[phase].append(times)
        say(f"  {phase} #{len(self.rounds[phase])} ({note}): webhook {answer}; push → object changed "
            f"{seconds_text(times['object'])} s, → lastAppliedRevision {seconds_text(times['revision'])} s; crowd runs finished "
            f"meanwhile: {times['runs']:.0f} ({load()})")
        side.check_running(f"the {phase} push")
        return times

    def crowd_handled(self, value):
        out = self.side.k("get", "applysets", "-n", CROWD, "-o",
                          "jsonpath={range .items[*]}{.status.lastHandledReconcileAt}{\"\\n\"}{end}", check=False)
        return sum(1 for line in out.splitlines() if line == value)

    def request_crowd(self, value):
        """Every crowd ApplySet requested at once: the annotation merge-patched by 16 clients."""
        patch = {"metadata": {"annotations": {REQUESTED_AT: value}}}
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda name: self.proxy.patch(self.side.api_path(name, CROWD), patch), self.crowd))

    def run(self):
        args = self.args
        self.kube = Kubectl(kubectl_binary("bench-controller"), control_plane_up("bench-controller"))
        say(f"bench-controller --fairness --crowd {args.crowd}: control plane KUBECONFIG={self.kube.kubeconfig}; "
            f"{os.cpu_count()} cores; {load()} (at start)")
        if not args.no_build:
            build_release()
        binary = release_binary()
        if not binary.is_file():
            sys.exit(f"bench-controller: no {binary} (build it, or drop --no-build)")
        install_crds(self.kube, flux=False)
        self.proxy = ApiProxy(self.kube)
        crowd_work, _, crowd_sha = self.repository("crowd", self.crowd, CROWD)
        self.lone_work, self.lone_bare, lone_sha = self.repository("lone", ["lone"], LONE)

        side = self.side = ApplysetSide(self.kube, self.scratch / "applyset", LONE, [CROWD])
        side.resource_namespaces = [LONE, CROWD]
        side.k("create", "namespace", CROWD, check=False)
        side.create_namespaces()
        side.webhook_secret(SECRET, TOKEN, namespace=LONE)
        side.launch(binary, args.concurrent_reconciles, "--min-interval", "1s",
                    "--shard-selector", f"{LABEL}={self.run_id}", webhook=True)
        say(f"controller: --concurrent-reconciles {args.concurrent_reconciles} --min-interval 1s; crowd: "
            f"{args.crowd} ApplySets × 4 ConfigMaps in {CROWD}, interval {args.crowd_interval}s; lone: 1 in {LONE}, "
            f"interval {args.interval}s, own repository")
        labels = {LABEL: self.run_id}
        started = time.monotonic()
        side.k("create", "-f", "-", stdin=side.resources(self.git.url("lone.git"), ["lone"], args.interval,
                                                          names=["lone"], webhook_secret=SECRET, labels=labels))
        side.wait_for("the lone ApplySet Ready", lambda: side.ready_count(lone_sha) == 1, limit=300, period=0.5)
        say(f"lone ApplySet Ready in {time.monotonic() - started:.1f} s")

        say(f"\n--- idle: the lone ApplySet alone, {args.rounds} pushes ---")
        for _ in range(args.rounds):
            self.push("idle", "idle controller")
            time.sleep(2)

        say(f"\n--- crowded: {args.crowd} ApplySets in {CROWD} ---")
        manifests = side.resources(self.git.url("crowd.git"), self.crowd, args.crowd_interval, names=self.crowd,
                                   namespace=CROWD, labels=labels)
        started = time.monotonic()
        side.k("create", "-f", "-", stdin=manifests)
        created = time.monotonic() - started
        self.push("crowded", f"the crowd just created, in {created:.1f} s")
        side.wait_for(f"all {args.crowd} crowd ApplySets Ready", lambda: side.ready_count(crowd_sha, CROWD) == args.crowd,
                      limit=3600, period=2)
        say(f"  the crowd all Ready {time.monotonic() - started:.1f} s after its creation began ({load()})")
        for _ in range(args.rounds - 1):
            value = f"bench-{time.time_ns()}"
            started = time.monotonic()
            self.request_crowd(value)
            requested = time.monotonic() - started
            times = self.push("crowded", f"the crowd all requested, in {requested:.1f} s")
            side.wait_for("the crowd's requests handled", lambda: self.crowd_handled(value) == args.crowd,
                          limit=600, period=0.5)
            times["drained"] = time.monotonic() - times["pushed"]
            say(f"    the crowd had handled all {args.crowd} requests {times['drained']:.1f} s after the push")
            time.sleep(2)
        say(f"\n{load()} (at the end); {os.cpu_count()} cores; peak RSS {side.memory()['applyset']['VmHWM']:.0f} MiB")
        return self.summary()

    def summary(self):
        args = self.args
        say(f"\n=== fairness: one ApplySet's push → applied, idle vs beside {args.crowd} ApplySets due in another "
            f"namespace (--concurrent-reconciles {args.concurrent_reconciles}) ===")
        say(f"{'':44}{'idle':>10}{'crowded':>10}{'crowded/idle':>14}")
        figures = {}
        for key, label in (("object", "push → object changed"), ("revision", "push → lastAppliedRevision")):
            for stat, fn in (("median", statistics.median), ("max", max)):
                pair = []
                for phase in ("idle", "crowded"):
                    values = [r[key] for r in self.rounds[phase] if r[key] is not None]
                    missing = len(self.rounds[phase]) - len(values)
                    pair.append(fn(values) if values and not missing else None)
                figures[(key, stat)] = pair
                a, b = pair
                ratio = f"{b / a:.2f}" if a and b is not None else "-"
                say(f"{label + ', ' + stat:44}{seconds_text(a) + ' s':>10}{seconds_text(b) + ' s':>10}{ratio:>14}")
        say(f"(rounds: {len(self.rounds['idle'])} idle, {len(self.rounds['crowded'])} crowded: the first right after "
            f"the crowd's creation, the others right after it was all requested)")
        idle, crowded = figures[("object", "median")]
        passed = idle is not None and crowded is not None and crowded <= TARGET * idle
        say(f"  target crowded median ≤ {TARGET} × idle median (push → object changed): "
            f"{seconds_text(crowded)} s vs {seconds_text(idle)} s → {'PASS' if passed else 'FAIL'}")
        return 0 if passed else 1

    def close(self):
        try:
            if self.side:
                self.side.clean_up()
        finally:
            if self.proxy:
                self.proxy.close()
            self.git.close()
            release_scratch(self.args.keep, self.scratch, "the controller's log, the repositories")


def main(args):
    exit_on_signals()
    if args.crowd < 1 or args.rounds < 2:
        sys.exit("bench-controller: --fairness needs --crowd ≥ 1 and --rounds ≥ 2")
    bench = Fairness(args)
    try:
        return bench.run()
    finally:
        bench.close()
