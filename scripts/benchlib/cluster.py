"""The local control plane (scripts/control-plane), kubectl, and the apiserver's request counts."""

import functools
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from .common import REPO, cpu_seconds, load, say, stop_processes

CONTROL_PLANE = REPO / "scripts" / "control-plane"

# Whether control_plane_up() brought the control plane up (rather than finding it up): only then
# does control_plane_down() stop it. One that was up before is someone else's, in use.
_started_here = False


def state_dir():
    """The control plane's state directory: APPLYSET_CP_STATE, as scripts/control-plane reads it."""
    return Path(os.environ.get("APPLYSET_CP_STATE", REPO / "tests/control-plane/state"))


def control_plane_pids():
    """The pid of each of the control plane's servers (etcd, kube-apiserver,
    kube-controller-manager, kube-scheduler, kwok: the files under <state>/pids), by name."""
    pids = {}
    for pid_file in sorted((state_dir() / "pids").glob("*.pid")):
        try:
            pids[pid_file.stem] = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            pass
    return pids


def control_plane_cpu_seconds():
    """CPU time each of the control plane's servers has used, in seconds, by name; one not
    running is left out."""
    used = {}
    for name, pid in control_plane_pids().items():
        try:
            used[name] = cpu_seconds(pid)
        except (OSError, ValueError):
            pass
    return used


def control_plane_threads():
    """Every thread id of the control plane's servers."""
    threads = []
    for pid in control_plane_pids().values():
        try:
            threads += [int(task.name) for task in Path(f"/proc/{pid}/task").iterdir()]
        except OSError:
            pass
    return threads


def split_cores():
    """Pins the control plane's servers to the first half of this process's cores and this
    process (so every client it starts after: the controller, the plain client, kubectl) to
    the other half, as a cluster runs its controllers on other nodes than its apiserver.
    Returns (the control plane's cores, the clients' cores, a function that puts every
    affinity back as it was). Threads a server starts later inherit its pinning."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        raise SystemExit("--split-cores needs at least 2 cores")
    servers, clients = cores[:len(cores) // 2], cores[len(cores) // 2:]
    before = {}
    for thread in control_plane_threads():
        try:
            before[thread] = os.sched_getaffinity(thread)
            os.sched_setaffinity(thread, servers)
        except OSError:
            pass  # a thread that ended meanwhile
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, clients)

    def restore():
        os.sched_setaffinity(0, own)
        for thread in control_plane_threads():
            try:
                os.sched_setaffinity(thread, before.get(thread, own))
            except OSError:
                pass
    return servers, clients, restore


def cpu_used_since(before):
    """control_plane_cpu_seconds() now minus `before` (an earlier one), by name."""
    return {name: seconds - before.get(name, 0.0) for name, seconds in control_plane_cpu_seconds().items()}


def wait_until_quiet(cores=0.1, period=3.0, limit=300.0):
    """Waits until the control plane has used less than `cores` of CPU over two `period`s in a
    row (idle it uses ~0.05), at most `limit` seconds; returns the seconds waited.

    What a phase leaves behind outlives it: after a flood's Namespaces are gone,
    kube-controller-manager still works through their deletions at its own 20 requests a
    second (1,800 `DELETE endpoints` over 90 s after 1,800 Services), inside whatever phase
    comes next. Measured phases start from the same quiet control plane, or the one that
    follows a cleanup pays for it."""
    started = time.monotonic()
    quiet_in_a_row = 0
    while quiet_in_a_row < 2 and time.monotonic() - started < limit:
        before = sum(control_plane_cpu_seconds().values())
        time.sleep(period)
        used = sum(control_plane_cpu_seconds().values()) - before
        quiet_in_a_row = quiet_in_a_row + 1 if used < cores * period else 0
    return time.monotonic() - started


def quiet_before(phase):
    """wait_until_quiet(), then says how long it took before `phase` (a measured one)."""
    waited = wait_until_quiet()
    say(f"control plane quiet before {phase} after {waited:.0f} s ({load()})")


def go_runtime_text(before, after, objects):
    """"N KiB allocated an object, G GC cycles" between two Kubectl.go_runtime() readings."""
    if any(key not in reading for reading in (before, after) for key in ("allocated", "gc_cycles")):
        return "kube-apiserver's Go runtime unknown"
    allocated = (after["allocated"] - before["allocated"]) / objects / 1024
    return (f"kube-apiserver allocated {allocated:.0f} KiB an object, {after['gc_cycles'] - before['gc_cycles']:.0f} "
            f"GC cycles")


def cpu_breakdown(used):
    """"12.3 s: kube-apiserver 8.1, etcd 2.0, …" of cpu_used_since()'s figures."""
    parts = ", ".join(f"{name} {seconds:.1f}" for name, seconds in sorted(used.items(), key=lambda kv: -kv[1]))
    return f"{sum(used.values()):.1f} s: {parts}"


def control_plane_up(program):
    """`scripts/control-plane up` (APPLYSET_CP_STATE / APPLYSET_CP_APISERVER_PORT pass through);
    returns the KUBECONFIG it prints. Remembers whether it was up before (`status` exits 0, or
    `up` says it is "already up"), for control_plane_down()."""
    global _started_here
    was_up = subprocess.run([str(CONTROL_PLANE), "status"], capture_output=True).returncode == 0
    out = subprocess.run([str(CONTROL_PLANE), "up"], check=True, capture_output=True, text=True)
    last = out.stdout.strip().splitlines()[-1]
    if not last.startswith("KUBECONFIG="):
        sys.exit(f"{program}: `scripts/control-plane up` did not print KUBECONFIG=…:\n{out.stdout}{out.stderr}")
    _started_here = _started_here or not (was_up or "already up" in out.stderr)
    return last[len("KUBECONFIG="):]


def control_plane_down():
    """`scripts/control-plane down` if control_plane_up() started the control plane; otherwise
    nothing (it was up before: others use it)."""
    global _started_here
    if _started_here:
        subprocess.run([str(CONTROL_PLANE), "down"], capture_output=True)
        _started_here = False


@functools.cache
def kubectl_binary(program, strict=False):
    """kubectl.1.33 beside the kubectl on PATH, else that kubectl. strict: APPLYSET_TEST_KUBECTL
    comes first, and without it kubectl.1.33 must be there. Exits (as program) without kubectl."""
    if strict and os.environ.get("APPLYSET_TEST_KUBECTL"):
        return os.environ["APPLYSET_TEST_KUBECTL"]
    kubectl = shutil.which("kubectl")
    if not kubectl:
        sys.exit(f"{program}: no kubectl on PATH" + (" (kubectl.1.33 is expected beside it)" if strict else ""))
    versioned = Path(os.path.realpath(kubectl)).parent / "kubectl.1.33"
    if versioned.is_file():
        return str(versioned)
    if strict:
        sys.exit(f"{program}: {versioned} does not exist")
    return kubectl


# apiserver_request_total's labels, in the order request_counts() keys its counts by default.
REQUEST_KEY = ("verb", "resource", "scope", "subresource")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


class Kubectl:
    """A kubectl binary with one --kubeconfig: kube(*args) runs it and returns its stdout, kube.run(*args)
    its CompletedProcess (check: raise when it fails)."""

    def __init__(self, binary, kubeconfig):
        self.binary, self.kubeconfig = binary, kubeconfig

    def run(self, *args, stdin=None, check=True):
        return subprocess.run([self.binary, "--kubeconfig", self.kubeconfig, *args], input=stdin, text=True,
                              capture_output=True, check=check)

    def __call__(self, *args, stdin=None, check=True):
        return self.run(*args, stdin=stdin, check=check).stdout

    def out(self, *args, stdin=None, check=True, program="bench-controller"):
        """Like kube(*args), but a failure (check) exits (as program) with kubectl's error output."""
        out = self.run(*args, stdin=stdin, check=False)
        if check and out.returncode:
            sys.exit(f"{program}: kubectl {' '.join(args[:3])} … failed:\n{out.stderr[-3000:]}")
        return out.stdout

    def metrics(self):
        """The apiserver's /metrics text (read once for request_counts() and go_runtime() alike)."""
        return self("get", "--raw", "/metrics")

    def save_allocation_profile(self, directory, name):
        """kube-apiserver's /debug/pprof/allocs (every allocation sampled since it started, as
        `go tool pprof` reads it) saved as directory/name.pb.gz; nothing when directory is None.
        Read twice, each after a garbage collection (gc=1): Go's profile leaves out what was
        allocated since the collection before the last one, so two collections in a row
        publish everything allocated before the first (a quiet apiserver's last natural one
        may be minutes old, during the cleanup before). Needs a control plane up with
        APPLYSET_CP_PROFILING=true: without it, says so and goes on."""
        if directory is None:
            return
        for _ in range(2):
            out = subprocess.run([self.binary, "--kubeconfig", self.kubeconfig, "get", "--raw",
                                  "/debug/pprof/allocs?gc=1"], capture_output=True)
            if out.returncode:
                break
        if out.returncode:
            say(f"no allocation profile {name} (is the control plane up with APPLYSET_CP_PROFILING=true?): "
                f"{out.stderr.decode(errors='replace').strip()[-300:]}")
            return
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / f"{name}.pb.gz").write_bytes(out.stdout)

    def start_cpu_profile(self, directory, name, seconds, resources):
        """Starts kube-apiserver's CPU profile of the next `seconds` (/debug/pprof/profile) in a
        thread, saved as directory/name.cpu.pb.gz beside name.cpu.json: the objects the apiserver
        created meanwhile (POSTs of `resources`, by every client), for a cost an object. Returns the thread (join it before the phase's cleanup), or None when directory is
        None. Needs a control plane up with APPLYSET_CP_PROFILING=true: without it, says so."""
        if directory is None:
            return None
        Path(directory).mkdir(parents=True, exist_ok=True)
        # Read before the thread starts, so that a phase's first creates are counted however fast it goes.
        before = self.request_counts()

        def profile():
            out = subprocess.run([self.binary, "--kubeconfig", self.kubeconfig, "get", "--raw",
                                  f"/debug/pprof/profile?seconds={seconds}"], capture_output=True)
            created = counts_delta(before, self.request_counts())
            if out.returncode:
                say(f"no CPU profile {name} (is the control plane up with APPLYSET_CP_PROFILING=true?): "
                    f"{out.stderr.decode(errors='replace').strip()[-300:]}")
                return
            (Path(directory) / f"{name}.cpu.pb.gz").write_bytes(out.stdout)
            objects = int(sum(n for (verb, resource, _, sub), n in created.items()
                              if verb == "POST" and not sub and resource in resources))
            (Path(directory) / f"{name}.cpu.json").write_text(json.dumps({"seconds": seconds, "objects": objects}))

        thread = threading.Thread(target=profile, name=f"cpu-profile-{name}", daemon=True)
        thread.start()
        return thread

    def go_runtime(self, text=None):
        """kube-apiserver's Go runtime so far, from `text` (metrics(); read when None): bytes
        allocated and GC cycles (go_memstats_alloc_bytes_total, go_gc_duration_seconds_count)."""
        wanted = {"go_memstats_alloc_bytes_total": "allocated", "go_gc_duration_seconds_count": "gc_cycles"}
        figures = {}
        for line in (self.metrics() if text is None else text).splitlines():
            name, _, value = line.partition(" ")
            if name in wanted:
                figures[wanted[name]] = float(value)
        return figures

    def request_counts(self, key=REQUEST_KEY, text=None):
        """apiserver_request_total from the apiserver's /metrics (`text`, or read when None), summed
        by the labels named in key (a missing label counts as "")."""
        counts = Counter()
        for line in (self.metrics() if text is None else text).splitlines():
            if not line.startswith("apiserver_request_total{"):
                continue
            labels = dict(LABEL.findall(line[: line.rindex("}")]))
            counts[tuple(labels.get(name, "") for name in key)] += float(line.rsplit(" ", 1)[1])
        return counts


def counts_delta(before, after):
    """What grew from one request_counts() to a later one (the keys that grew, by how much)."""
    return Counter({key: after[key] - before.get(key, 0) for key in after if after[key] - before.get(key, 0) > 0})


def requests_summary(delta, least):
    """"POST configmaps 6000, PUT deployments/status 2400, …" of a counts_delta() of the default
    key, the requests of at least `least` (by every client of the apiserver), most first."""
    rows = Counter()
    for (verb, resource, _scope, subresource), value in delta.items():
        rows[f"{verb} {resource}{'/' + subresource if subresource else ''}"] += value
    return ", ".join(f"{row} {value:.0f}" for row, value in rows.most_common() if value >= least)


class ApiProxy:
    """`kubectl proxy` on a free port of 127.0.0.1, for requests many times a second (no kubectl
    process each; one kept-alive connection per thread): get(path) is the object at an API path,
    None when it does not exist; patch(path, body) merge-patches it. close() stops the proxy."""

    def __init__(self, kube):
        self.process = subprocess.Popen(
            [kube.binary, "--kubeconfig", kube.kubeconfig, "proxy", "--port=0", "--address=127.0.0.1"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        first = self.process.stdout.readline()  # "Starting to serve on 127.0.0.1:PORT"
        if "Starting to serve on" not in first:
            stop_processes([self.process], timeout=5)
            raise RuntimeError(f"kubectl proxy did not start: {first}")
        self.port = int(first.strip().rsplit(":", 1)[1])
        # Whatever it says later is drained, so that it never blocks on a full pipe.
        threading.Thread(target=self.process.stdout.read, daemon=True).start()
        self.local = threading.local()
        self.connections = []

    def request(self, method, path, body=None, headers=None):
        """The answer's status and JSON body (None when there is none)."""
        for attempt in (1, 2):
            try:
                if getattr(self.local, "connection", None) is None:
                    self.local.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                    self.connections.append(self.local.connection)
                self.local.connection.request(method, path, body=body, headers=headers or {})
                response = self.local.connection.getresponse()
                data = response.read()
                break
            except (OSError, http.client.HTTPException):
                self.local.connection = None   # the proxy closed a kept-alive connection: once more
                if attempt == 2:
                    raise
        try:
            return response.status, json.loads(data) if data else None
        except ValueError:
            return response.status, None

    def get(self, path):
        status, body = self.request("GET", path)
        if status == 404:
            return None
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {body}")
        return body

    def patch(self, path, patch):
        """A JSON merge patch (a dict) of the object at path."""
        status, body = self.request("PATCH", path, json.dumps(patch).encode(),
                                    {"Content-Type": "application/merge-patch+json"})
        if status != 200:
            raise RuntimeError(f"PATCH {path}: {status} {body}")
        return body

    def close(self):
        for connection in self.connections:
            connection.close()
        stop_processes([self.process], timeout=10)


class WatchedLines:
    """One `kubectl get RESOURCE -n NAMESPACE --watch -o jsonpath=NAME=TEMPLATE`, kept running:
    lines() is the latest TEMPLATE line of each object. One watch costs the apiserver an event
    per change, where polling costs a kubectl process and a whole LIST every second (on a
    2-core machine, CPU taken from what is measured). A watch that ends is started again.
    close() stops it."""

    def __init__(self, kube, resource, namespace, template):
        # -v=6: kubectl logs its requests, and the watch's answer says it is listening (an empty
        # list prints nothing).
        self.command = [kube.binary, "--kubeconfig", kube.kubeconfig, "-v=6", "get", resource, "-n", namespace, "--watch",
                        "-o", "jsonpath={.metadata.name}=" + template + '{"\\n"}']
        self.latest = {}
        self.lock = threading.Lock()
        self.closed = False
        self.process = None
        # Set once kubectl watches (its watch request answered): a change before then would
        # only be seen when the list arrives, later than it happened.
        self.watching = threading.Event()
        threading.Thread(target=self._follow, daemon=True).start()

    def wait_watching(self, timeout=60):
        """Waits until kubectl watches (it starts slowly on a busy machine)."""
        if not self.watching.wait(timeout):
            raise RuntimeError(f"{' '.join(self.command[4:])}: not watching within {timeout} s")

    def _follow(self):
        while True:
            # Started under the lock, so that close() never misses a kubectl started as it closes.
            with self.lock:
                if self.closed:
                    return
                process = self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE,
                                                          stderr=subprocess.PIPE, text=True)
            threading.Thread(target=self._notice_watching, args=(process,), daemon=True).start()
            for line in process.stdout:
                name, _, rest = line.rstrip("\n").partition("=")
                with self.lock:
                    self.latest[name] = rest
                self.watching.set()
            process.wait()
            time.sleep(1)   # a watch that fails at once is not started again in a tight loop

    def _notice_watching(self, process):
        for line in process.stderr:
            if '"Response"' in line and "watch=true" in line:
                self.watching.set()

    def lines(self):
        with self.lock:
            return list(self.latest.values())

    def close(self):
        with self.lock:
            self.closed = True
            process = self.process
        if process is not None:
            stop_processes([process], timeout=10)


def release_scratch(keep, scratch, what):
    """The end of a benchmark run: with keep, say that the control plane and scratch (what it
    holds) are kept; otherwise remove scratch and stop the control plane this run brought up."""
    if keep:
        from .common import say
        say(f"kept: the control plane, and {scratch} ({what})")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
        control_plane_down()
