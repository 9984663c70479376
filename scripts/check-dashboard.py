#!/usr/bin/env python3
"""Checks the chart's Grafana dashboard JSON by the rules the project holds it to.

    scripts/check-dashboard.py DASHBOARD.json PROMTOOL

Our own rules (the conventions of Grafana's dashboard linter, which the Go module proxy does
not serve, written down for this dashboard):

* template variables: `datasource` (type datasource, Prometheus), and `job` and `instance`
  (queries of that data source, `instance` narrowed by `$job`);
* every panel but a row, and every one of its targets, reads from `${datasource}`;
* every panel has a title, an id no other panel has, and (graphs and stats) a unit;
* every query selects by `job=~"$job"` and `instance=~"$instance"` wherever it names a metric,
  and every range function (`rate`, `irate`, `increase`, `*_over_time`) takes `$__rate_interval`;
* every query is PromQL that the real parser accepts: each is written as a recording rule (the
  dashboard variables given plain values) and read by `promtool check rules`.

Prints one line per problem and exits 1 when there is any.
"""

import json
import re
import subprocess
import sys
import tempfile

DATASOURCE = "${datasource}"
RANGE_FUNCTIONS = re.compile(r"\b(rate|irate|increase|\w+_over_time)\s*\(")
METRIC = re.compile(r"\b((?:applyset|process)_[a-z_]+)\b(\{[^}]*\})?")
# What Grafana puts in place of the variables, for the parser.
VARIABLE_VALUES = {"$__rate_interval": "5m", "$job": ".*", "$instance": ".*"}


def variables_problems(dashboard):
    found = {v.get("name"): v for v in dashboard.get("templating", {}).get("list", [])}
    problems = []
    source = found.get("datasource")
    if not source or source.get("type") != "datasource" or source.get("query") != "prometheus":
        problems.append("templating: no `datasource` variable of type datasource for prometheus")
    for name in ("job", "instance"):
        variable = found.get(name)
        if not variable or variable.get("type") != "query":
            problems.append(f"templating: no `{name}` query variable")
        elif uses_source(variable.get("datasource")) is False:
            problems.append(f"templating: `{name}` does not read from {DATASOURCE}")
    instance = found.get("instance", {}).get("query", "")
    if "$job" not in str(instance):
        problems.append("templating: `instance` is not narrowed by $job")
    return problems


def uses_source(datasource):
    """True when it names the dashboard's variable, False when another, None when unset."""
    if datasource is None:
        return None
    uid = datasource.get("uid") if isinstance(datasource, dict) else datasource
    return uid in (DATASOURCE, "$datasource")


def query_problems(where, expr):
    problems = []
    for match in METRIC.finditer(expr):
        name, selector = match.group(1), match.group(2) or ""
        for label in ("job", "instance"):
            if f'{label}=~"${label}"' not in selector:
                problems.append(f'{where}: {name} is not selected by {label}=~"${label}"')
    for match in RANGE_FUNCTIONS.finditer(expr):
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(expr)):
            depth += {"(": 1, ")": -1}.get(expr[end], 0)
            if depth == 0:
                break
        if "[$__rate_interval]" not in expr[match.end():end]:
            problems.append(f"{where}: {match.group(1)}(…) does not take [$__rate_interval]")
    return problems


def panels_problems(dashboard):
    problems, queries, ids = [], [], {}
    panels = list(dashboard.get("panels", []))
    for panel in panels:
        panels.extend(panel.get("panels", []))  # a collapsed row holds its panels
    for panel in panels:
        title = panel.get("title", "")
        where = f"panel {panel.get('id')} {title!r}"
        if not title:
            problems.append(f"{where}: no title")
        if panel.get("id") in ids:
            problems.append(f"{where}: id also of panel {ids[panel.get('id')]!r}")
        ids[panel.get("id")] = title
        if panel.get("type") == "row":
            continue
        if uses_source(panel.get("datasource")) is not True:
            problems.append(f"{where}: does not read from {DATASOURCE}")
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit")
        if panel.get("type") in ("timeseries", "stat", "gauge", "bargauge") and not unit:
            problems.append(f"{where}: no unit")
        if not panel.get("targets"):
            problems.append(f"{where}: no query")
        for target in panel.get("targets", []):
            target_where = f"{where} target {target.get('refId')}"
            if uses_source(target.get("datasource")) is False:
                problems.append(f"{target_where}: does not read from {DATASOURCE}")
            expr = target.get("expr", "")
            problems.extend(query_problems(target_where, expr))
            queries.append((target_where, expr))
    return problems, queries


def parse_problems(queries, promtool):
    """Each query as a recording rule, read by promtool's PromQL parser."""
    rules = []
    for index, (_, expr) in enumerate(queries):
        for variable, value in VARIABLE_VALUES.items():
            expr = expr.replace(variable, value)
        rules.append({"record": f"dashboard:query_{index}", "expr": expr})
    with tempfile.NamedTemporaryFile("w", suffix=".json") as out:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, out)
        out.flush()
        result = subprocess.run([promtool, "check", "rules", out.name], capture_output=True, text=True)
    if result.returncode == 0:
        return []
    text = (result.stdout + result.stderr).strip()
    named = [f"{where}: {line.strip()}" for line in text.splitlines()
             for index, (where, _) in enumerate(queries) if f"query_{index}\"" in line or f"query_{index} " in line]
    return named or [f"promtool check rules refused a query:\n{text}"]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    dashboard = json.load(open(sys.argv[1]))
    problems = variables_problems(dashboard)
    panel_problems, queries = panels_problems(dashboard)
    problems += panel_problems
    problems += parse_problems(queries, sys.argv[2])
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    print(f"{len(queries)} queries on {len({w.split(' target')[0] for w, _ in queries})} panels: every rule holds")


if __name__ == "__main__":
    main()
