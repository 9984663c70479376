"""The local control plane (scripts/control-plane), kubectl, and the apiserver's request counts."""

import functools
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from .common import REPO

CONTROL_PLANE = REPO / "scripts" / "control-plane"

# Whether control_plane_up() brought the control plane up (rather than finding it up): only then
# does control_plane_down() stop it. One that was up before is someone else's, in use.
_started_here = False


def state_dir():
    """The control plane's state directory: APPLYSET_CP_STATE, as scripts/control-plane reads it."""
    return Path(os.environ.get("APPLYSET_CP_STATE", REPO / "tests/control-plane/state"))


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

    def request_counts(self, key=REQUEST_KEY):
        """apiserver_request_total from the apiserver's /metrics, summed by the labels named in key
        (a missing label counts as "")."""
        counts = Counter()
        for line in self("get", "--raw", "/metrics").splitlines():
            if not line.startswith("apiserver_request_total{"):
                continue
            labels = dict(LABEL.findall(line[: line.rindex("}")]))
            counts[tuple(labels.get(name, "") for name in key)] += float(line.rsplit(" ", 1)[1])
        return counts


def counts_delta(before, after):
    """What grew from one request_counts() to a later one (the keys that grew, by how much)."""
    return Counter({key: after[key] - before.get(key, 0) for key in after if after[key] - before.get(key, 0) > 0})
