#!/usr/bin/env python3
"""Offline validation of rendered manifests (scripts/check-deploy).

Run with the Python of .cache/tools/venv (scripts/install-tools), which has
kubernetes-validate:

    validate-manifests.py [-k 1.33.0] [--require-namespace] FILE...   (- for stdin)

Every document must validate:
  * built-in kinds strictly (unknown fields rejected) against the Kubernetes
    OpenAPI schemas that kubernetes-validate ships for that version; a
    CustomResourceDefinition is a built-in kind (apiextensions.k8s.io/v1), so
    the CRDs are checked the same way;
  * the custom kinds the chart may render (ServiceMonitor, PrometheusRule) against a schema of
    the fields the chart uses, kept below;
  * any other kind fails: nothing is skipped.
Also: metadata.name everywhere, no object twice, and with --require-namespace
a metadata.namespace on every namespaced object (kubectl apply -f would
otherwise put it in the current context's namespace).
Prints one PASS or FAIL line per file; exits 1 on any failure.
"""

import argparse
import sys

import jsonschema
import yaml
from kubernetes_validate import utils as kv

CLUSTER_SCOPED = {
    ("", "Namespace"),
    ("", "PersistentVolume"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("apiregistration.k8s.io", "APIService"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "StorageClass"),
    ("networking.k8s.io", "IngressClass"),
    ("node.k8s.io", "RuntimeClass"),
}

_LABELS = {"type": "object", "additionalProperties": {"type": "string"}}
_DURATION = {"type": "string", "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}
_OBJECT_META = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": _LABELS,
        "annotations": _LABELS,
    },
    "additionalProperties": False,
}

# monitoring.coreos.com/v1 ServiceMonitor: the fields this chart renders, as the
# Prometheus Operator's CRD types them.
SERVICE_MONITOR_V1 = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": _OBJECT_META,
        "spec": {
            "type": "object",
            "required": ["selector", "endpoints"],
            "properties": {
                "selector": {
                    "type": "object",
                    "properties": {"matchLabels": _LABELS},
                    "additionalProperties": False,
                },
                "namespaceSelector": {
                    "type": "object",
                    "properties": {
                        "any": {"type": "boolean"},
                        "matchNames": {"type": "array", "items": {"type": "string"}},
                    },
                    "additionalProperties": False,
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "scheme": {"enum": ["http", "https"]},
                            "interval": _DURATION,
                            "scrapeTimeout": _DURATION,
                            "honorLabels": {"type": "boolean"},
                        },
                        "additionalProperties": False,
                    },
                },
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}

# monitoring.coreos.com/v1 PrometheusRule: the fields this chart renders, as the
# Prometheus Operator's CRD types them (the rules themselves are checked by
# promtool in scripts/check-monitoring).
PROMETHEUS_RULE_V1 = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "PrometheusRule"},
        "metadata": _OBJECT_META,
        "spec": {
            "type": "object",
            "properties": {
                "groups": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "interval": _DURATION,
                            "rules": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "required": ["expr"],
                                    "properties": {
                                        "alert": {"type": "string"},
                                        "record": {"type": "string"},
                                        "expr": {"type": "string", "minLength": 1},
                                        "for": _DURATION,
                                        "keep_firing_for": _DURATION,
                                        "labels": _LABELS,
                                        "annotations": _LABELS,
                                    },
                                    "additionalProperties": False,
                                },
                            },
                        },
                        "additionalProperties": False,
                    },
                },
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}

CUSTOM_SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR_V1,
    ("monitoring.coreos.com/v1", "PrometheusRule"): PROMETHEUS_RULE_V1,
}


def group_of(api_version):
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def describe(doc):
    meta = doc.get("metadata") or {}
    ns = meta.get("namespace")
    return "%s %s%s" % (doc.get("kind"), ns + "/" if ns else "", meta.get("name"))


def check_document(doc, version, require_namespace):
    """Returns a list of error strings for one document."""
    if not isinstance(doc, dict):
        return ["not a mapping: %r" % (doc,)]
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return ["apiVersion and kind are required"]
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        return ["%s: metadata.name is required" % kind]
    errors = []
    scoped = (group_of(api_version), kind) in CLUSTER_SCOPED
    if require_namespace and not scoped and not meta.get("namespace"):
        errors.append("%s: namespaced but has no metadata.namespace" % describe(doc))
    if scoped and meta.get("namespace"):
        errors.append("%s: cluster-scoped but has metadata.namespace" % describe(doc))
    custom = CUSTOM_SCHEMAS.get((api_version, kind))
    if custom is not None:
        validator = jsonschema.Draft202012Validator(custom)
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.path)):
            path = ".".join(str(p) for p in err.path)
            errors.append("%s: %s: %s" % (describe(doc), path, err.message))
        return errors
    try:
        kv.validate(doc, version, strict=True)
    except kv.ValidationError as err:
        path = ".".join(str(p) for p in err.path)
        errors.append("%s: %s: %s" % (describe(doc), path, err.message))
    except kv.SchemaNotFoundError as err:
        errors.append("%s: %s (and it is not one of the custom kinds this check knows)" % (describe(doc), err.message))
    except kv.VersionNotSupportedError as err:
        errors.append(err.message)
    if kind == "CustomResourceDefinition" and api_version == "apiextensions.k8s.io/v1" and not errors:
        versions = (doc.get("spec") or {}).get("versions") or []
        if sum(1 for v in versions if v.get("storage")) != 1:
            errors.append("%s: exactly one version must have storage: true" % describe(doc))
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", "--kubernetes-version", default="1.33.0")
    parser.add_argument("--require-namespace", action="store_true")
    parser.add_argument("--label", help="name of the input in the PASS/FAIL line")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()

    failed = False
    for name in args.files:
        label = args.label or name
        try:
            text = sys.stdin.read() if name == "-" else open(name, encoding="utf-8").read()
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
        except (OSError, yaml.YAMLError) as err:
            print("FAIL validate %s: %s" % (label, err))
            failed = True
            continue
        errors, seen, kinds = [], set(), {}
        for doc in docs:
            errs = check_document(doc, args.kubernetes_version, args.require_namespace)
            errors += errs
            if isinstance(doc, dict) and not errs:
                meta = doc["metadata"]
                key = (group_of(doc["apiVersion"]), doc["kind"], meta.get("namespace"), meta["name"])
                if key in seen:
                    errors.append("%s: appears twice" % describe(doc))
                seen.add(key)
                kinds[doc["kind"]] = kinds.get(doc["kind"], 0) + 1
        if not docs:
            errors.append("no objects")
        if errors:
            failed = True
            for err in errors:
                print("  error: %s" % err)
            print("FAIL validate %s: %d error(s) (Kubernetes %s)" % (label, len(errors), args.kubernetes_version))
        else:
            summary = ", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items()))
            print("PASS validate %s: %d objects valid for Kubernetes %s (%s)" % (label, len(docs), args.kubernetes_version, summary))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
