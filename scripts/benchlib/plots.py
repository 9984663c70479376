"""The benchmarks' charts for the book's Benchmarks page (docs/src/benchmarks/*.svg), drawn by
svg.py from a run's results:

  vs-flux.svg                   bench-controller --vs-flux: per shape, applyset's and Flux's time
                                until all Ready, peak memory and requests in a no-op interval (bars);
  vs-flux-ready-<shape>.svg     the same run: how many were Ready over time, each side (curves);
  first-apply-ready.svg         bench-controller (the first apply): ApplySets Ready over time, each
                                run, beside the faster flood's pace (curves).

A run saves its results as JSON in target/bench/ (build output, not in git) and writes the charts
into --plots DIR (default docs/src/benchmarks). They can be drawn again from the JSON:

    python3 scripts/benchlib/plots.py target/bench/vs-flux.json [--plots DIR]
"""

import datetime
import json
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):      # run as a script: import svg and common as benchlib's modules
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchlib"

from .common import REPO, load_figures, say  # noqa: E402
from .svg import bar_panels, step_curves  # noqa: E402

PLOTS = REPO / "docs" / "src" / "benchmarks"
RESULTS = REPO / "target" / "bench"


class ReadyTimeline:
    """How many were Ready over time, from a clock started by the caller: count(n) notes the
    count at each poll (only changes are kept) and returns it, so that it wraps a wait's
    condition."""

    def __init__(self, started):
        self.started = started
        self.points = [(0.0, 0)]

    def count(self, n):
        if n != self.points[-1][1]:
            self.points.append((round(time.monotonic() - self.started, 2), n))
        return n

    def finish(self):
        """The points, the last one at the moment of the call (the curve reaches the end)."""
        return self.points + [(round(time.monotonic() - self.started, 2), self.points[-1][1])]


def machine():
    """"2 cores (AMD EPYC 7B13)": the machine, as a caption names it."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({model})"


def conditions(command, load_at_start):
    """What every results file records besides the figures: the command, the machine, the
    date (UTC) and the load averages at the start and at the end."""
    return {"command": command, "machine": machine(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "load": {"start": load_at_start, "end": load_figures()}}


def caption(results, what):
    load = results["load"]
    return (f"{what} Measured by `{results['command']}` on {results['date']}, {results['machine']}, load average "
            f"{load['start'].split()[0]} at the start and {load['end'].split()[0]} at the end.")


def save(name, results, plots):
    """Writes target/bench/<name>.json and the charts of those results into plots."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(results, indent=1) + "\n")
    say(f"results: {path}")
    for chart in draw(results, Path(plots)):
        say(f"chart: {chart}")


def draw(results, plots):
    """The charts of one results file, written into plots; returns their paths."""
    plots.mkdir(parents=True, exist_ok=True)
    charts = {"vs-flux": vs_flux_charts, "first-apply": first_apply_charts}[results["benchmark"]](results)
    written = []
    for name, content in charts:
        path = plots / name
        path.write_text(content)
        written.append(path)
    return written


def vs_flux_charts(results):
    flux = f"Flux {results['flux_release']}"
    panels, charts = [], []
    for shape in results["shapes"]:
        sides = shape["sides"]

        def figure(key, side):
            return sides[side][key] if side in sides else None

        for heading, unit, key in (("time until all Ready (each once)", "s", "ready"),
                                   ("peak RSS of the controller processes", "MiB", "peak_rss"),
                                   ("requests on managed objects in a no-op interval", "", "managed")):
            panels.append((f"{shape['title']}: {heading}", unit,
                           [("applyset", figure(key, "applyset")), (flux, figure(key, "flux"))]))
        curves = [(label, sides[side]["timeline"]) for side, label in (("applyset", "applyset"), ("flux", flux))
                  if side in sides]
        charts.append((f"vs-flux-ready-{shape['name']}.svg", step_curves(
            f"{shape['title']}: Ready over time", curves,
            caption(results, f"{shape['description']}. Counted from the creation of the custom resources; each "
                             f"counts once it has been Ready at the commit."),
            "seconds since the custom resources were created", f"Ready (of {shape['apps']})")))
    bars = bar_panels(f"applyset and {flux}, side by side", panels,
                      caption(results, "One side after the other on the same control plane, both reading one "
                                       "repository from a local git server; shorter bars are better."))
    return [("vs-flux.svg", bars)] + charts


def first_apply_charts(results):
    runs = results["runs"]
    apps, objects = results["applysets"], results["objects"]
    references = []
    if results.get("flood_per_second"):
        seconds = apps * objects / results["flood_per_second"]
        references.append((f"the faster flood's pace ({results['flood_per_second']:.0f} objects/s)",
                           [(0, 0), (seconds, apps)]))
    curves = [(f"{run['label']}: all Ready in {run['ready']:.1f} s", run["timeline"]) for run in runs]
    flood = (" The flood is a plain client creating the same objects with no rate limit (the physical limit)."
             if references else "")
    chart = step_curves(
        f"First apply of {apps} ApplySets × {objects} objects: Ready over time", curves,
        caption(results, "From the creation of the first ApplySet." + flood),
        "seconds since the first ApplySet was created", f"ApplySets Ready (of {apps})", references)
    return [("first-apply-ready.svg", chart)]


def main(argv):
    import argparse
    parser = argparse.ArgumentParser(description="Draws the charts of a benchmark's results file again.")
    parser.add_argument("results", type=Path, help="a results file, e.g. target/bench/vs-flux.json")
    parser.add_argument("--plots", type=Path, default=PLOTS, help=f"where to write the charts (default {PLOTS})")
    args = parser.parse_args(argv)
    for chart in draw(json.loads(args.results.read_text()), args.plots):
        say(f"chart: {chart}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
