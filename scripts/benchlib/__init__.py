"""What the benchmark and request-counting scripts share (scripts/bench-*, bench_vs_flux.py,
bench_monorepo.py, bench_fairness.py, count-requests), one home for each helper:

  common         REPO, say, the load average, free ports, process memory and CPU time, a
                 Prometheus endpoint's samples, waiting, stopping processes, the release build;
  cluster        the local control plane (up; down only if this process brought it up), kubectl,
                 apiserver_request_total counts, reads through `kubectl proxy`;
  audit          the control plane's audit log: reading it from a mark, and the readers built on it;
  git            git with a fixed identity, a repository's first commit and later ones, a git
                 smart-HTTP server (counting requests per repository and kind);
  manifests      the generated manifests (YAML text) and their builders;
  sides          the controllers under test run as processes (applyset's, Flux's), their custom
                 resources, what can be read of them, the clean-up.

The scripts put scripts/ on sys.path (and set sys.dont_write_bytecode, so that no __pycache__
is left in the work tree) and import from here.
"""
