"""REPO, output, the machine, processes and the release build."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def say(message, file=None):
    print(message, file=file or sys.stdout, flush=True)


def load_figures():
    """The load averages over 1, 5 and 15 minutes, as /proc/loadavg writes them: "0.52 0.41 0.30"."""
    return "%.2f %.2f %.2f" % os.getloadavg()


def load():
    return "load average " + load_figures()


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def proc_memory(pid):
    """VmHWM (peak RSS) and VmRSS of a process, in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


def wait_for(what, condition, processes, limit=2400, period=1.0,
             exited="bench-controller: {name} exited (waiting for {what}):\n{log}"):
    """Polls condition() until true; returns the seconds it took. Exits when one of processes
    (name → (Popen, log path)) exits (with `exited`, formatted with name, what and the log's
    end), or after limit seconds."""
    started = time.monotonic()
    while not condition():
        for name, (process, log_path) in processes.items():
            if process.poll() is not None:
                sys.exit(exited.format(name=name, what=what, log=Path(log_path).read_text()[-4000:]))
        if time.monotonic() - started > limit:
            sys.exit(f"bench-controller: {what} not reached after {limit} s")
        time.sleep(period)
    return time.monotonic() - started


def stop_processes(processes, timeout):
    """TERM to each process still running, then a wait of up to timeout seconds (None: no limit)
    for each, a KILL for one that outlives it."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def release_binary():
    """target/release/applyset (under CARGO_TARGET_DIR when it is set)."""
    return Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "applyset"


def build_release(message="building applyset (cargo build --release -p applyset) …", locked=True):
    """`cargo build --release [--locked] -p applyset`, after saying message (None: nothing)."""
    if message:
        say(message)
    subprocess.run(["cargo", "build", "--release", *(["--locked"] if locked else []), "-p", "applyset"],
                   cwd=REPO, check=True)
