"""The control plane's audit log: scripts/control-plane has the apiserver write one JSON line per
finished request (stage ResponseComplete, or Panic) to <state>/logs/audit.log, and rotate it to
audit-<time>.log at 200 MB."""

import json
import time
from collections import Counter
from pathlib import Path

from .cluster import state_dir

FINAL_STAGES = ("ResponseComplete", "Panic")


def audit_log_path():
    """<state>/logs/audit.log of the control plane APPLYSET_CP_STATE selects."""
    return state_dir() / "logs" / "audit.log"


def settle():
    """The audit backend writes a request after its response: waits for the last ones."""
    time.sleep(1.0)


class AuditLog:
    """mark() is where the log ends now; events(mark) are the requests written after it, a
    rotation in between followed (the rotated file read on from the mark, then the new one)."""

    def __init__(self, path):
        self.path = Path(path)

    def available(self):
        return self.path.is_file()

    def mark(self):
        stat = self.path.stat()
        return stat.st_ino, stat.st_size

    def events(self, mark):
        inode, offset = mark
        files = []
        if self.path.stat().st_ino == inode:
            files.append((self.path, offset))
        else:
            for rotated in self.path.parent.glob("audit-*.log"):
                if rotated.stat().st_ino == inode:
                    files.append((rotated, offset))
            files.append((self.path, 0))
        for path, start in files:
            with open(path, "rb") as log:
                log.seek(start)
                for line in log:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue  # a line the apiserver is still writing
                    if event.get("stage") in FINAL_STAGES:
                        yield event


def request_kind(event):
    """What a request was on: its resource (/subresource), "openapi", "discovery" or its path."""
    uri = event.get("requestURI", "").split("?", 1)[0]
    if event.get("objectRef", {}).get("resource"):
        ref = event["objectRef"]
        return ref["resource"] + ("/" + ref["subresource"] if ref.get("subresource") else "")
    if uri.startswith("/openapi"):
        return "openapi"
    if uri in ("/api", "/apis") or uri.startswith("/api/") or uri.startswith("/apis/"):
        return "discovery"
    return uri


class AuditWindow:
    """Requests the audit log (of the control plane whose admin kubeconfig is given) records from
    clients other than kubectl and the control plane's own (users system:*, kwok) between start()
    and finish(), that is the controllers under test, by (user agent's product, verb, resource,
    subresource). Requests received before start() (a watch that ends in the window) are left
    out."""

    def __init__(self, kubeconfig):
        self.log = AuditLog(Path(kubeconfig).parent / "logs" / "audit.log")

    def available(self):
        return self.log.available()

    def start(self):
        self.mark = self.log.mark()
        self.since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())

    def finish(self):
        counts = Counter()
        for event in self.log.events(self.mark):
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
