"""The physical limit for `scripts/bench-controller`: the apiserver's own create throughput for
the same objects the controller's first apply creates, from a plain client.

The objects are bench-controller's apps generated again under another prefix (their own
Namespaces), created by `applyset/examples/create_flood.rs`: Namespaces first, then every
other object, each with --flood-concurrency plain POSTs in flight and no client-side rate
limit, so that the apiserver (and its API Priority and Fairness) is the only bound; the
Namespaces are timed and counted like the rest (until 2026-11-29 they were created one at a
time before the clock started, and the flood counted 9,900 objects where the first apply
counts 10,000 and creates its Namespaces on its clock). By default each is
sent as the apply creates it (`--physical-bodies applied`: its ApplySet label and its
last-applied annotation, a copy of the object that about doubles a small one: the bytes the
apiserver decodes, validates and stores); `--physical-bodies manifests` sends the manifests as
they are. The Namespaces are deleted, and waited for, before the controller's run.
"""

import json
import os
import subprocess
import time
from pathlib import Path

from benchlib.cluster import control_plane_cpu_seconds, counts_delta, cpu_used_since, go_runtime_text
from benchlib.common import REPO, machine_cpu, machine_cpu_text, say
from benchlib.manifests import GENERATED_RESOURCES, generate_applysets

PREFIX = "bench-flood"


def flood_binary(build):
    """target/release/examples/create_flood (under CARGO_TARGET_DIR when it is set), built first
    unless build is False and it exists."""
    binary = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "examples" / "create_flood"
    if build or not binary.exists():
        say("building the plain client (cargo build --release --example create_flood) …")
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "applyset", "--example", "create_flood"],
                       cwd=REPO, check=True)
    return binary


# An ApplySet id as long as the controller's (applyset-<43 characters of base64url>-v1).
APPLYSET_ID = "applyset-" + "f" * 43 + "-v1"


def create_throughput(kube, args, scratch, concurrency, name="flood"):
    """{"objects", "seconds", "per_second", "failed", "cpu_seconds", "control_plane_cpu",
    "requests", "runtime", "machine"} of one flood of args.applysets × args.objects (sent as
    args.physical_bodies says), then its Namespaces deleted; name: its directory in scratch.
    cpu_seconds is the client's own CPU time over its creates; control_plane_cpu the control
    plane servers' (by name) over the whole client (its start and the Namespaces included: a
    second or two of a nearly idle control plane); machine how the machine's cores went over the
    same (machine_cpu_text()); requests the apiserver's requests meanwhile (counts_delta()).
    With args.cpu_profiles, kube-apiserver's CPU profile of its first args.cpu_profile_seconds."""
    work = Path(scratch) / f"flood-{name}"
    work.mkdir()
    generate_applysets(work, args.applysets, args.objects, PREFIX, revision=1)
    binary = flood_binary(not args.no_build)
    try:
        bodies = ["--as-applied", APPLYSET_ID] if args.physical_bodies == "applied" else []
        kube.save_allocation_profile(args.allocation_profiles, f"flood-{name}-before")
        text = kube.metrics()
        requests_before, runtime_before = kube.request_counts(text=text), kube.go_runtime(text)
        profiling = kube.start_cpu_profile(args.cpu_profiles, f"flood-{name}", args.cpu_profile_seconds,
                                           GENERATED_RESOURCES)
        control_plane_before, machine_before, started = control_plane_cpu_seconds(), machine_cpu(), time.monotonic()
        out = subprocess.run([str(binary), "--kubeconfig", kube.kubeconfig, "--concurrency", str(concurrency),
                              *bodies, str(work)], capture_output=True, text=True, check=True).stdout
        figures = json.loads(out.strip().splitlines()[-1])
        figures["control_plane_cpu"] = cpu_used_since(control_plane_before)
        figures["machine"] = machine_cpu_text(machine_before, machine_cpu(), time.monotonic() - started)
        text = kube.metrics()
        kube.save_allocation_profile(args.allocation_profiles, f"flood-{name}-after")
        if profiling:
            profiling.join()
        figures["requests"] = counts_delta(requests_before, kube.request_counts(text=text))
        figures["runtime"] = go_runtime_text(runtime_before, kube.go_runtime(text), figures["objects"])
    finally:
        names = [f"{PREFIX}-{i:03d}" for i in range(args.applysets)]
        kube("delete", "namespace", *names, "--ignore-not-found", "--wait=false", check=False)
        started = time.monotonic()
        while time.monotonic() - started < 900:
            left = kube("get", "namespaces", "-o", "name", check=False).split()
            if not any(n.startswith(f"namespace/{PREFIX}-") for n in left):
                break
            time.sleep(2)
    return figures
