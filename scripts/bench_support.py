"""Shared parts of scripts/bench-controller (and its --vs-flux mode, scripts/bench_vs_flux.py):
kubectl and the local control plane, git, the generated repository, apiserver request counts,
process memory, and a git smart-HTTP server."""

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def say(message):
    print(message, flush=True)


def load():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def kubectl_binary():
    kubectl = shutil.which("kubectl")
    if not kubectl:
        sys.exit("bench-controller: no kubectl on PATH")
    versioned = Path(os.path.realpath(kubectl)).parent / "kubectl.1.33"
    return str(versioned) if versioned.is_file() else kubectl


def control_plane_up():
    """`scripts/control-plane up` (APPLYSET_CP_STATE / APPLYSET_CP_APISERVER_PORT pass through)."""
    out = subprocess.run([str(REPO / "scripts/control-plane"), "up"], check=True, capture_output=True, text=True)
    last = out.stdout.strip().splitlines()[-1]
    if not last.startswith("KUBECONFIG="):
        sys.exit(f"bench-controller: `scripts/control-plane up` did not print KUBECONFIG=…:\n{out.stdout}{out.stderr}")
    return last[len("KUBECONFIG="):]


def control_plane_down():
    subprocess.run([str(REPO / "scripts/control-plane"), "down"], capture_output=True)


def git(cwd, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@applyset.dev",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@applyset.dev",
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def generate(work, applysets, objects, prefix="bench", revision=1, replicas=1):
    """Per ApplySet: its Namespace, 5 Deployments, 20% headless Services, the rest ConfigMaps.

    Revision 2 drops the Deployments' MODE env var and the ConfigMaps' RETRIES key (fields that
    earlier revisions set: the history holds the earlier versions of those objects)."""
    deployments = min(5, objects - 1)
    services = (objects - 1 - deployments) // 5
    configmaps = objects - 1 - deployments - services
    for index in range(applysets):
        ns = f"{prefix}-{index:03d}"
        docs = [f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n"]
        for c in range(configmaps):
            docs.append(
                f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config-{c:03d}\n  namespace: {ns}\n"
                f"  labels:\n    app.kubernetes.io/part-of: shop-{index}\n"
                f"data:\n  LOG_LEVEL: info\n  UPSTREAM: http://svc-{c % 7}.{ns}.svc:8080\n"
                + (f"  RETRIES: \"{c % 5}\"\n" if revision == 1 else ""))
        for s in range(services):
            docs.append(
                f"apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-{s:03d}\n  namespace: {ns}\n"
                f"spec:\n  clusterIP: None\n  selector:\n    app: svc-{s:03d}\n  ports:\n  - name: http\n    port: 80\n")
        for d in range(deployments):
            docs.append(
                f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web-{d}\n  namespace: {ns}\n"
                f"spec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: web-{d}\n"
                f"  template:\n    metadata:\n      labels:\n        app: web-{d}\n    spec:\n      containers:\n"
                f"      - name: app\n        image: registry.example.com/shop/web:1.{d}.0\n"
                f"        ports:\n        - containerPort: 8080\n        env:\n"
                + ("        - name: MODE\n          value: bench\n" if revision == 1 else "        - name: TIER\n          value: web\n"))
        app = work / f"app-{index:03d}"
        app.mkdir(parents=True)
        (app / "all.yaml").write_text("---\n".join(docs))


def request_counts(kubectl, kubeconfig, dry_run=False):
    """apiserver_request_total summed by (verb, resource, scope, subresource), and by dry_run too
    (a fifth element, "" or e.g. "All") when dry_run is true."""
    text = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "get", "--raw", "/metrics"],
                          check=True, capture_output=True, text=True).stdout
    counts = Counter()
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line[: line.rindex("}")]))
        value = float(line.rsplit(" ", 1)[1])
        key = (labels.get("verb", ""), labels.get("resource", ""), labels.get("scope", ""), labels.get("subresource", ""))
        if dry_run:
            key += (labels.get("dry_run", ""),)
        counts[key] += value
    return counts


def proc_memory(pid):
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class GitHttpServer:
    """A git smart-HTTP server on 127.0.0.1: `git http-backend` (CGI) behind http.server, serving
    the bare repositories under `root` (read only: upload-pack). `url(name)` is a repository's
    address; `requests` counts what it answered."""

    def __init__(self, root):
        self.root = Path(root)
        self.requests = Counter()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self.cgi()

            def do_POST(self):
                self.cgi()

            def body(self):
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline().strip():
                                pass
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def cgi(self):
                path, _, query = self.path.partition("?")
                if "/git-receive-pack" in path or "service=git-receive-pack" in query:
                    self.send_error(403, "read only")
                    return
                data = self.body() if self.command == "POST" else b""
                env = {
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "GIT_PROJECT_ROOT": str(server.root), "GIT_HTTP_EXPORT_ALL": "1",
                    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
                    "REQUEST_METHOD": self.command, "PATH_INFO": path, "QUERY_STRING": query,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(data)),
                    "REMOTE_ADDR": self.client_address[0], "SERVER_PROTOCOL": "HTTP/1.1",
                }
                if self.headers.get("Content-Encoding"):
                    env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
                if self.headers.get("Git-Protocol"):
                    env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
                out = subprocess.run(["git", "http-backend"], input=data, env=env, capture_output=True).stdout
                head, _, payload = out.partition(b"\r\n\r\n")
                if not _:
                    head, _, payload = out.partition(b"\n\n")
                status, headers = 200, []
                for line in head.decode("latin-1").splitlines():
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                server.requests[(self.command, status)] += 1
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{name}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def wait_for(what, condition, processes, limit=2400, period=1.0):
    """Polls condition() until true; returns the seconds it took. Exits when one of processes
    (name → (Popen, log path)) exits, or after limit seconds."""
    started = time.monotonic()
    while not condition():
        for name, (process, log_path) in processes.items():
            if process.poll() is not None:
                sys.exit(f"bench-controller: {name} exited (waiting for {what}):\n{Path(log_path).read_text()[-4000:]}")
        if time.monotonic() - started > limit:
            sys.exit(f"bench-controller: {what} not reached after {limit} s")
        time.sleep(period)
    return time.monotonic() - started


class AuditWindow:
    """Requests the apiserver's audit log (scripts/control-plane writes one: <state>/logs/audit.log,
    one JSON line per finished request) records from clients other than kubectl and the control
    plane's own (users system:*, kwok) between start() and finish(), that is the controllers under test,
    by (user agent's product, verb, resource, subresource). Requests received before start() (a
    watch that ends in the window) are left out; a rotation of the log in between is followed."""

    def __init__(self, kubeconfig):
        self.path = Path(kubeconfig).parent / "logs" / "audit.log"

    def available(self):
        return self.path.is_file()

    def start(self):
        stat = self.path.stat()
        self.inode, self.offset = stat.st_ino, stat.st_size
        self.since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())

    def finish(self):
        import json
        files = []
        if self.path.stat().st_ino == self.inode:
            files.append((self.path, self.offset))
        else:
            for rotated in self.path.parent.glob("audit-*.log"):
                if rotated.stat().st_ino == self.inode:
                    files.append((rotated, self.offset))
            files.append((self.path, 0))
        counts = Counter()
        for path, offset in files:
            with open(path, "rb") as f:
                f.seek(offset)
                for line in f:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    agent = event.get("userAgent", "")
                    user = event.get("user", {}).get("username", "")
                    # kwok: the control plane's fake nodes (their leases), when scripts/control-plane runs it.
                    if agent.startswith(("kubectl", "kwok")) or user.startswith("system:"):
                        continue
                    if event.get("requestReceivedTimestamp", "")[:19] < self.since:
                        continue
                    ref = event.get("objectRef") or {}
                    product = agent.split("/")[0] or "(no user agent)"
                    counts[(product, event.get("verb", "").upper(), ref.get("resource", "(non-resource)"),
                            ref.get("subresource", ""))] += 1
        return counts
