"""git with a fixed identity and no user or system configuration, and a git smart-HTTP server."""

import os
import subprocess
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@applyset.dev",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@applyset.dev"}
NO_CONFIG = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def git(cwd, *args):
    """`git ARGS` in cwd; its output, stripped."""
    env = dict(os.environ, **IDENTITY, **NO_CONFIG)
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def git_init(path, bare=False):
    """A new repository (bare or with a work tree) at path, on branch main."""
    git(None, "init", "-q", *(["--bare"] if bare else []), "-b", "main", str(Path(path).resolve()))


def git_commit(work, message, push_to=None):
    """Commits everything in the work tree (`add -A`), pushes main to push_to (a remote's name, a
    path or a URL) when given; returns the commit's sha."""
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", message)
    if push_to:
        git(work, "push", "-q", str(push_to), "main")
    return git(work, "rev-parse", "HEAD")


def request_kind(path):
    """A smart-HTTP request's (repository, kind): "/shop.git/info/refs" → ("shop.git", "info/refs")."""
    for kind in ("info/refs", "git-upload-pack", "git-receive-pack"):
        if path.endswith("/" + kind):
            return path[1:-len(kind) - 1], kind
    return path.lstrip("/").split("/", 1)[0], path


class GitHttpServer:
    """A git smart-HTTP server on 127.0.0.1: `git http-backend` (CGI) behind http.server, serving
    the bare repositories under `root`, read only (upload-pack) unless writable (then a push is
    taken by a repository with http.receivepack true). `url(name)` is a repository's address;
    `requests` counts what it answered by method and status, `paths` by repository and kind
    ("info/refs", "git-upload-pack", "git-receive-pack", or the rest of the path); `events`
    lists each request as (time.monotonic() when it came, seconds to answer, repository, kind)."""

    def __init__(self, root, writable=False):
        self.root = Path(root)
        self.requests = Counter()
        self.paths = Counter()
        self.events = []
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
                received = time.monotonic()
                path, _, query = self.path.partition("?")
                if not writable and ("/git-receive-pack" in path or "service=git-receive-pack" in query):
                    self.send_error(403, "read only")
                    return
                data = self.body() if self.command == "POST" else b""
                env = {
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "GIT_PROJECT_ROOT": str(server.root), "GIT_HTTP_EXPORT_ALL": "1", **NO_CONFIG,
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
                server.paths[request_kind(path)] += 1
                server.events.append((received, time.monotonic() - received, *request_kind(path)))
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
