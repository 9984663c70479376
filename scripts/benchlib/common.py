"""REPO, output, the machine, processes (memory, CPU time, metrics) and the release build."""

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
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


def cpu_seconds(pid):
    """CPU time a process has used, in seconds: user and system, its own and its waited-for
    children's (/proc/<pid>/stat utime, stime, cutime, cstime, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the command's ")": state is field 3 of stat(5), so field n is fields[n - 3].
    return sum(int(fields[n - 3]) for n in (14, 15, 16, 17)) / os.sysconf("SC_CLK_TCK")


def machine_cpu():
    """The machine's CPU time so far, in seconds, from /proc/stat's first line: "busy" (user,
    nice, system, irq, softirq), "idle" (idle and iowait) and "stolen" (steal: time the
    hypervisor gave our virtual CPUs to someone else)."""
    ticks = [int(n) for n in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = ticks
    hz = os.sysconf("SC_CLK_TCK")
    return {"busy": (user + nice + system + irq + softirq) / hz, "idle": (idle + iowait) / hz, "stolen": steal / hz}


def machine_cpu_text(before, after, seconds):
    """"1.87 busy, 0.08 idle, 0.05 stolen of 2 cores" between two machine_cpu() readings over a
    window of `seconds`: a window whose cores were not all ours (stolen) or not all used (idle)
    explains a rate that moved without the work an object moving."""
    used = {key: (after[key] - before[key]) / seconds for key in ("busy", "idle", "stolen")}
    return (f"{used['busy']:.2f} busy, {used['idle']:.2f} idle, {used['stolen']:.2f} stolen of "
            f"{os.cpu_count()} cores")


METRIC_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
METRIC_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def scrape(url):
    """A Prometheus text endpoint's samples: (name, frozenset of (label, value)) → value."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        match = METRIC_SAMPLE.match(line)
        if match and not line.startswith("#"):
            name, labels, value = match.groups()
            samples[(name, frozenset(METRIC_LABEL.findall(labels or "")))] = float(value)
    return samples


def sample(samples, name, **labels):
    """The sum of scrape()'s samples of name whose labels include labels (0 when none)."""
    wanted = set(labels.items())
    return sum(value for (n, have), value in samples.items() if n == name and wanted <= have)


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


def exit_on_signals():
    """A TERM (or a HUP from a closed terminal) exits like ^C, through the callers' finally
    blocks: processes stopped, the control plane down if this run brought it up."""
    import signal
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda signum, frame: sys.exit(128 + signum))


def release_binary():
    """target/release/applyset (under CARGO_TARGET_DIR when it is set)."""
    return Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "applyset"


def build_release(message="building applyset (cargo build --release -p applyset) …", locked=True):
    """`cargo build --release [--locked] -p applyset`, after saying message (None: nothing)."""
    if message:
        say(message)
    subprocess.run(["cargo", "build", "--release", *(["--locked"] if locked else []), "-p", "applyset"],
                   cwd=REPO, check=True)


def seconds_text(seconds):
    """Seconds as a table shows them: two decimals, or "-" when not measured."""
    return "-" if seconds is None else f"{seconds:.2f}"
