#!/usr/bin/env python
"""Set-up and start-up cost: (1) building a Network on a 1,024-host fat-tree
(k=16), broken down into builder, Fabric (ports, routing, MMU) and the kernel's
copy of the arrays; (2) the wall clock of ``python -m wormhole run`` on a
2-flow reference input, next to a bare interpreter and the package import, and
the imports that run spends most on.  Medians of several runs; wall-clock
figures on a shared machine move with its load (printed).

    python bench/startup.py [--k 16] [--repeat 5] [--runs 7] [--input DIR ...]

The default inputs are the 2-flow incasts of tests/data/hpcc-ns3-runs; an
input that is missing is named as such and skipped (exit status 1).
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

RUNS = os.path.join(ROOT, "tests", "data", "hpcc-ns3-runs")
DEFAULT_INPUTS = [os.path.join(RUNS, n) for n in ("incast2_hpcc", "incast2_dctcp")]
BUILD_TARGET_S = 0.5
RUN_TARGET_S = 0.15


def load():
    try:
        return "load average %.2f %.2f %.2f on %d CPUs" % (os.getloadavg() + (os.cpu_count(),))
    except OSError:
        return "load average unknown"


def median(xs):
    return statistics.median(xs)


# -- (1) fat-tree build --------------------------------------------------------
def build_figures(k, repeat):
    t0 = time.perf_counter()
    import wormhole as wh
    from wormhole.fabric import Fabric
    from wormhole.network import Network
    t_import = time.perf_counter() - t0
    rows = []
    for _ in range(repeat):
        cfg = wh.Config()
        a = time.perf_counter()
        topo = wh.fat_tree(k)
        b = time.perf_counter()
        f = Fabric.__new__(Fabric)        # Fabric.__init__, step by step
        topo.validate()
        f.topo, f.config = topo, cfg
        c = time.perf_counter()
        f._ports()
        d = time.perf_counter()
        f._routes()
        e = time.perf_counter()
        f._mmu()
        g = time.perf_counter()
        cpu0 = time.process_time()
        net = Network(topo, cfg)         # the whole set-up, Fabric included
        h = time.perf_counter()
        cpu = time.process_time() - cpu0
        fabric = g - b
        rows.append({"builder": b - a, "validate": c - b, "ports": d - c, "routes": e - d, "mmu": g - e,
                     "fabric": fabric, "network": h - g, "kernel_and_rest": (h - g) - fabric,
                     "total": (b - a) + (h - g), "network_cpu": cpu})
        del net, f
    med = {key: median([r[key] for r in rows]) for key in rows[0]}
    print("fat-tree k=%d: %d hosts, %d switches, %d links (median of %d builds, %s)" % (
        k, len(topo.hosts), len(topo.switches), len(topo.links), repeat, load()))
    print("  import wormhole + Network (first, in this process) %8.3f s" % t_import)
    print("  builder  wh.fat_tree(%d)                          %8.3f s" % (k, med["builder"]))
    print("  Fabric   validate %.3f, ports %.3f, routes %.3f, mmu %.3f = %.3f s" % (
        med["validate"], med["ports"], med["routes"], med["mmu"], med["fabric"]))
    print("  Network(topo) whole set-up                       %8.3f s (CPU %.3f s)" % (
        med["network"], med["network_cpu"]))
    print("    of which kernel copy-in and the rest          %8.3f s" % med["kernel_and_rest"])
    verdict = "met" if med["total"] <= BUILD_TARGET_S else "MISSED"
    print("  builder + Network                                %8.3f s   target <= %.2f s: %s" % (
        med["total"], BUILD_TARGET_S, verdict))
    return med


# -- (2) the run command -------------------------------------------------------
def _env(cache):
    """The environment of the timed commands: this tree first on the path; with
    ``cache`` a bytecode cache in a private folder (as an installed package
    has), else Python's bytecode setting as this environment has it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
    return env


def wall(cmd, runs, cwd, cache):
    """Median wall clock of a command, and median CPU time (user + system) of
    its process: the second moves less with the machine's load."""
    ts, cs = [], []
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=cwd, env=_env(cache), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
        ts.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cs.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
        if p.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    return median(ts), median(cs)


def top_imports(cmd, cwd, cache, n=8):
    """Import time of a command (``-X importtime``), in all and by top-level
    package (the self time of every module, summed over its package)."""
    p = subprocess.run([cmd[0], "-X", "importtime"] + cmd[1:], cwd=cwd, env=_env(cache), stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    by_pkg, total = {}, 0
    for line in p.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, cum, name = line[len("import time:"):].split("|")
        pkg = name.strip().split(".")[0]
        by_pkg[pkg] = by_pkg.get(pkg, 0) + int(own)
        if name.startswith(" ") and not name.startswith("  "):      # depth 1
            total += int(cum)
    top = sorted(((us, pkg) for pkg, us in by_pkg.items()), reverse=True)
    return total / 1e6, top[:n]


def run_figures(inputs, runs):
    missing = False
    cwd = tempfile.mkdtemp(prefix="wh-startup-")     # outside the tree: no shadowing, outputs here
    py = sys.executable
    todo = []
    for d in inputs:
        d = os.path.abspath(d)
        need = [os.path.join(d, n) for n in ("config.txt", "topology.txt", "flow.txt")]
        absent = [p for p in need if not os.path.exists(p)]
        if absent:
            print("%s: INPUT MISSING (%s); skipped" % (d, ", ".join(absent)))
            missing = True
        else:
            todo.append((d, need))
    modes = [("with a bytecode cache (as an installed package)", os.path.join(cwd, "pycache"))]
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        modes.append(("as this environment runs it (PYTHONDONTWRITEBYTECODE set: every module of the "
                      "tree compiled at each start)", None))
    results = {}
    for label, cache in modes:
        if cache:                       # fill the cache once
            wall([py, "-c", "import wormhole.cli, wormhole.network"], 1, cwd, cache)
            for d, need in todo:
                wall([py, "-m", "wormhole", "run", "--config", need[0], "--out", os.path.join(cwd, "warm")],
                     1, cwd, cache)
        base = wall([py, "-c", "pass"], runs, cwd, cache)
        imp = wall([py, "-c", "import wormhole.cli, wormhole.network"], runs, cwd, cache)
        print("python -m wormhole run, %s; median of %d runs, %s; wall (CPU) seconds" % (label, runs, load()))
        print("  interpreter alone (python -c pass)                  %.3f (%.3f)" % base)
        print("  python -c 'import wormhole.cli, wormhole.network'   %.3f (%.3f)" % imp)
        for d, need in todo:
            with open(need[2]) as fh:
                n_flows = int(fh.readline().split()[0])
            name = os.path.basename(d)
            out = os.path.join(cwd, name)
            stats = os.path.join(cwd, name + ".json")
            cmd = [py, "-m", "wormhole", "run", "--config", need[0], "--out", out, "--stats-json", stats]
            t, c = wall(cmd, runs, cwd, cache)
            tq, cq = wall(cmd + ["--quiet"], runs, cwd, cache)
            import json
            with open(stats) as fh:
                loop = json.load(fh)["wall_seconds"]
            verdict = "met" if t <= RUN_TARGET_S else "MISSED"
            print("  %s (%d flows): %.3f (%.3f); --quiet %.3f (%.3f); its event loop %.3f   "
                  "target <= %.2f s wall: %s" % (name, n_flows, t, c, tq, cq, loop, RUN_TARGET_S, verdict))
            imports, top = top_imports(cmd, cwd, cache)
            print("    imports of that run (-X importtime, one run): %.3f s; by package:" % imports)
            print("      " + ", ".join("%s %.3f" % (pkg, us / 1e6) for us, pkg in top))
            results[(name, cache is not None)] = t
    return results, missing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=16, help="fat-tree arity (16: 1,024 hosts)")
    ap.add_argument("--repeat", type=int, default=5, help="fat-tree builds (median)")
    ap.add_argument("--runs", type=int, default=7, help="runs of each command (median)")
    ap.add_argument("--input", action="append", help="reference input folder (config.txt, topology.txt, "
                    "flow.txt); default: the 2-flow incasts of tests/data/hpcc-ns3-runs")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--skip-run", action="store_true")
    a = ap.parse_args()
    missing = False
    if not a.skip_build:
        build_figures(a.k, a.repeat)
    if not a.skip_run:
        _, missing = run_figures(a.input or DEFAULT_INPUTS, a.runs)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
