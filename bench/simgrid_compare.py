#!/usr/bin/env python
"""The flow backend's SimGrid models (flow_model cm02 / lv08) against SimGrid 3.32 itself.

For each case the script writes a topology.txt and a flow.txt (the reference
formats), runs them on the flow backend, builds a SimGrid platform from the
same files (a Full routing zone: one SHARED link per egress port, with its
rate in bytes/s and its delay; per host pair, the route our backend gives the
pair's flows, and with cross-traffic the reverse route its ACKs take) and runs
SimGrid on it with a small C++ driver compiled against libsimgrid-dev at bench
time (one actor per flow: sleep_until(start), Comm::sendto(src, dst, size)).
FCT = SimGrid's clock at the end of the sendto - the flow's start.  Prints,
per case, model and cross-traffic setting, the max and mean relative FCT
difference; then the wall-clock of both on 100,000 flows.

    python bench/simgrid_compare.py                 # the cases and the 100,000-flow timing
    python bench/simgrid_compare.py --no-large      # the cases only
    python bench/simgrid_compare.py --topology T --flows F [--model cm02] [--crosstraffic]
    python bench/simgrid_compare.py --record tests/data/simgrid     # the test fixtures

Cases: star (32 hosts), dumbbell (16 + 16 hosts, a 1 ms bottleneck where the
TCP-gamma bound binds), leaf-spine (8 leaves x 8 hosts, 4 spines; one flow
per host pair so that SimGrid's single route per pair is ours), per-link
delays drawn from 0.5-5 us, sizes 10 kB-10 MB log-uniform, Poisson arrivals.
Routes of a pair must agree across its flows; the script stops if they do not.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import wormhole as wh  # noqa: E402
from wormhole.errors import WormholeError  # noqa: E402

DRIVER = r"""
#include <simgrid/s4u.hpp>
#include <cstdio>
#include <string>
#include <vector>
namespace sg4 = simgrid::s4u;

int main(int argc, char** argv)
{
  sg4::Engine e(&argc, argv);
  if (argc != 4) { std::fprintf(stderr, "usage: driver platform.xml flows.txt out.txt\n"); return 2; }
  e.load_platform(argv[1]);
  FILE* in = std::fopen(argv[2], "r");
  long n = 0;
  if (std::fscanf(in, "%ld", &n) != 1) return 3;
  std::vector<double> finish(n, -1.0);
  for (long i = 0; i < n; i++) {
    int s, d;
    unsigned long long size;
    double start;
    if (std::fscanf(in, "%d %d %llu %lf", &s, &d, &size, &start) != 4) return 3;
    sg4::Host* src = e.host_by_name("h" + std::to_string(s));
    sg4::Host* dst = e.host_by_name("h" + std::to_string(d));
    double* out = &finish[i];
    sg4::Actor::create("f" + std::to_string(i), src, [src, dst, size, start, out]() {
      if (start > 0)
        sg4::this_actor::sleep_until(start);
      sg4::Comm::sendto(src, dst, size);
      *out = sg4::Engine::get_clock();
    });
  }
  std::fclose(in);
  e.run();
  FILE* o = std::fopen(argv[3], "w");
  for (long i = 0; i < n; i++)
    std::fprintf(o, "%.17g\n", finish[i]);
  std::fclose(o);
  return 0;
}
"""

MODELS = {"cm02": "CM02", "lv08": "LV08"}


def driver_path():
    """Compile the driver once (cached by its source's hash)."""
    h = hashlib.sha1(DRIVER.encode()).hexdigest()[:12]
    cache = os.path.join(tempfile.gettempdir(), "wormhole-simgrid-driver-" + h)
    exe = os.path.join(cache, "driver")
    if not os.path.exists(exe):
        os.makedirs(cache, exist_ok=True)
        src = os.path.join(cache, "driver.cpp")
        with open(src, "w") as fh:
            fh.write(DRIVER)
        subprocess.run(["g++", "-O2", "-std=c++17", src, "-o", exe, "-lsimgrid"], check=True)
    return exe


# -- cases ------------------------------------------------------------------------
def _delay(rng):
    return "%dns" % int(rng.choice([500, 1000, 2000, 5000]))


def write_topology_text(path, n_nodes, switches, links):
    with open(path, "w") as fh:
        fh.write("%d %d %d\n" % (n_nodes, len(switches), len(links)))
        fh.write(" ".join(str(s) for s in switches) + "\n")
        for a, b, rate, delay in links:
            fh.write("%d %d %s %s 0\n" % (a, b, rate, delay))


def make_case(kind, n_flows, seed, folder, load=0.5):
    """Write folder/topology.txt and folder/flow.txt; returns their paths."""
    rng = np.random.default_rng(seed)
    links = []
    if kind == "star":
        nh = 32
        sw = [nh]
        links = [(h, nh, "100Gbps", _delay(rng)) for h in range(nh)]
        pairs = None
        n_nodes = nh + 1
    elif kind == "dumbbell":
        nh = 32
        sw = [nh, nh + 1]
        links = [(h, nh + (h >= 16), "100Gbps", _delay(rng)) for h in range(nh)]
        links.append((nh, nh + 1, "100Gbps", "1ms"))          # long bottleneck: TCP-gamma binds
        n_nodes = nh + 2
        pairs = None
    elif kind.startswith("leafspine"):
        leaves, per, spines = (8, 8, 4) if kind == "leafspine" else (8, 16, 1)
        nh = leaves * per
        sw = list(range(nh, nh + leaves + spines))
        for h in range(nh):
            links.append((h, nh + h // per, "100Gbps", _delay(rng)))
        up = "100Gbps" if spines > 1 else "800Gbps"
        for lf in range(leaves):
            for sp in range(spines):
                links.append((nh + lf, nh + leaves + sp, up, _delay(rng)))
        n_nodes = nh + leaves + spines
        pairs = spines > 1          # ECMP: one flow per (unordered) host pair
    else:
        raise WormholeError("unknown case kind", value=kind)
    sizes = np.exp(rng.uniform(np.log(1e4), np.log(1e7), n_flows)).astype(np.int64)
    mean_time = sizes.mean() * 8 / 100e9
    rate = load * nh / mean_time                            # arrivals per second
    starts = np.cumsum(rng.exponential(1 / rate, n_flows))
    flows = []
    used = set()
    for i in range(n_flows):
        while True:
            s, d = (int(x) for x in rng.choice(nh, 2, replace=False))
            if kind == "dumbbell" and rng.random() < 0.8 and (s < 16) == (d < 16):
                continue                                    # most flows cross the bottleneck
            if pairs:
                key = (min(s, d), max(s, d))
                if key in used:
                    continue
                used.add(key)
            break
        flows.append((s, d, int(sizes[i]), float(starts[i])))
    os.makedirs(folder, exist_ok=True)
    tp, fp = os.path.join(folder, "topology.txt"), os.path.join(folder, "flow.txt")
    write_topology_text(tp, n_nodes, sw, links)
    with open(fp, "w") as fh:
        fh.write("%d\n" % n_flows)
        for s, d, size, start in flows:
            fh.write("%d %d 3 100 %d %.9f\n" % (s, d, size, start))
    return tp, fp


# -- our run ----------------------------------------------------------------------
def run_ours(tp, fp, model, crosstraffic):
    t0 = time.perf_counter()
    topo = wh.read_topology(tp)
    flows = wh.read_flows(fp, topo)
    net = wh.Network(topo, backend="flow", flow_model=model, flow_crosstraffic=crosstraffic)
    for f in flows:
        net.send(f.src, f.dst, f.size, at=f.start_ps, pg=f.pg, dport=f.dport)
    net.run()
    wall = time.perf_counter() - t0
    res = net.results
    return net, flows, res["fct"] / 1e12, wall


# -- SimGrid ----------------------------------------------------------------------
def platform_xml(net, flows, crosstraffic):
    """A Full zone: hosts h<i>, one link per egress port, the route of each pair."""
    fab = net.fabric
    routes = {}

    def put(pair, ports, what):
        old = routes.setdefault(pair, ports)
        if old != ports:
            raise WormholeError("host pair %s has two routes (%s): SimGrid routes a pair one way; build the case "
                                "with a single route per pair" % (pair, what), value=pair)

    for i, f in enumerate(flows):
        put((f.src, f.dst), net.flow_path(i), "data")
        if crosstraffic:
            put((f.dst, f.src), net.flow_path(i, reverse=True), "reverse route of the cross-traffic")
    used = sorted({p for r in routes.values() for p in r})
    out = ['<?xml version="1.0"?>', '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
           '<platform version="4.1">', '<zone id="z" routing="Full">']
    for h in fab.hosts:
        out.append('<host id="h%d" speed="1Gf"/>' % int(h))
    for p in used:
        out.append('<link id="p%d" bandwidth="%rBps" latency="%rs"/>'
                   % (p, float(fab.port_rate[p]) / 8, int(fab.port_delay[p]) / 1e12))
    for (s, d), ports in sorted(routes.items()):
        out.append('<route src="h%d" dst="h%d" symmetrical="NO">%s</route>'
                   % (s, d, "".join('<link_ctn id="p%d"/>' % p for p in ports)))
    out += ["</zone>", "</platform>"]
    return "\n".join(out) + "\n"


def run_simgrid(net, flows, model, crosstraffic, folder):
    exe = driver_path()
    xml = os.path.join(folder, "platform.xml")
    with open(xml, "w") as fh:
        fh.write(platform_xml(net, flows, crosstraffic))
    fl = os.path.join(folder, "sg_flows.txt")
    with open(fl, "w") as fh:
        fh.write("%d\n" % len(flows))
        for f in flows:
            fh.write("%d %d %d %r\n" % (f.src, f.dst, f.size, f.start_ps / 1e12))
    out = os.path.join(folder, "sg_out.txt")
    cmd = [exe, xml, fl, out, "--cfg=network/model:" + MODELS[model],
           "--cfg=network/crosstraffic:" + ("yes" if crosstraffic else "no"),
           "--cfg=contexts/stack-size:64", "--cfg=contexts/guard-size:0", "--log=root.thres:warning"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise WormholeError("SimGrid run failed: %s" % p.stderr[-2000:], value=p.returncode)
    finish = np.loadtxt(out, ndmin=1)
    start = np.array([f.start_ps / 1e12 for f in flows])
    return finish - start, wall


def compare(tp, fp, model, crosstraffic, folder):
    net, flows, ours, w_ours = run_ours(tp, fp, model, crosstraffic)
    sg, w_sg = run_simgrid(net, flows, model, crosstraffic, folder)
    rel = np.abs(ours - sg) / sg
    return rel, ours, sg, w_ours, w_sg


CASES = [("star", 1000, 1), ("dumbbell", 1000, 2), ("leafspine", 1500, 3)]


def make_boundary_case(folder):
    """Two flows where SimGrid's surf/precision test falls on its doubles: h0 -> h1 starts at
    74.078 us over 5 + 2.5 us of links, so with LV08 its latency phase (13.01 x 7.5 us) ends at
    1.7165300000000002e-4 s, 1.0000000000157e-9 s after h2 -> h1 starts (1.71652e-4 s): not
    within 1e-9 s, so not merged into that round (in picoseconds the two are exactly 1 ns apart)."""
    os.makedirs(folder, exist_ok=True)
    tp, fp = os.path.join(folder, "topology.txt"), os.path.join(folder, "flow.txt")
    write_topology_text(tp, 4, [3], [(0, 3, "100Gbps", "5000ns"), (1, 3, "100Gbps", "2500ns"),
                                     (2, 3, "100Gbps", "500ns")])
    with open(fp, "w") as fh:
        fh.write("2\n0 1 3 100 200000 0.0000740781\n2 1 3 100 200000 0.000171652\n")
    return tp, fp


def record(folder):
    """Small fixtures for tests/test_simgrid_models.py: topology, flows and SimGrid's FCTs."""
    for kind, n, seed in [("star", 60, 11), ("dumbbell", 60, 12), ("leafspine", 80, 13), ("boundary", 0, 0)]:
        d = os.path.join(folder, kind)
        tp, fp = make_boundary_case(d) if kind == "boundary" else make_case(kind, n, seed, d, load=0.8)
        for model in MODELS:
            for ct in (False, True):
                with tempfile.TemporaryDirectory() as tmp:
                    net, flows, ours, _ = run_ours(tp, fp, model, ct)
                    sg, _ = run_simgrid(net, flows, model, ct, tmp)
                name = os.path.join(d, "simgrid_%s_%s.txt" % (model, "ct" if ct else "noct"))
                with open(name, "w") as fh:
                    fh.write("# SimGrid 3.32 network/model:%s network/crosstraffic:%s; FCT of each flow of "
                             "flow.txt in seconds\n" % (MODELS[model], "yes" if ct else "no"))
                    for v in sg:
                        fh.write("%.17g\n" % v)
                print("%-10s %-5s ct=%-3s max rel %.2e" % (kind, model, "yes" if ct else "no",
                                                          (np.abs(ours - sg) / sg).max()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topology")
    ap.add_argument("--flows")
    ap.add_argument("--model", choices=sorted(MODELS), nargs="+", default=sorted(MODELS))
    ap.add_argument("--crosstraffic", choices=("yes", "no", "both"), default="both")
    ap.add_argument("--no-large", action="store_true", help="skip the 100,000-flow timing")
    ap.add_argument("--large-flows", type=int, default=100_000)
    ap.add_argument("--record", metavar="DIR", help="write the test fixtures to DIR and stop")
    args = ap.parse_args()
    if shutil.which("g++") is None:
        raise SystemExit("g++ and libsimgrid-dev are needed")
    if args.record:
        record(args.record)
        return
    cts = {"yes": [True], "no": [False], "both": [False, True]}[args.crosstraffic]
    work = tempfile.mkdtemp(prefix="wormhole-simgrid-")
    if args.topology:
        cases = [("given", args.topology, args.flows)]
    else:
        cases = []
        for kind, n, seed in CASES:
            tp, fp = make_case(kind, n, seed, os.path.join(work, kind))
            cases.append((kind, tp, fp))
    print("%-10s %6s %-5s %-5s %12s %12s" % ("case", "flows", "model", "xtraf", "max rel", "mean rel"))
    for kind, tp, fp in cases:
        for model in args.model:
            for ct in cts:
                rel, ours, sg, _, _ = compare(tp, fp, model, ct, os.path.dirname(tp) or ".")
                print("%-10s %6d %-5s %-5s %12.2e %12.2e" % (kind, len(rel), model, "yes" if ct else "no",
                                                            rel.max(), rel.mean()))
    if not args.no_large and not args.topology:
        n = args.large_flows
        tp, fp = make_case("leafspine1", n, 4, os.path.join(work, "large"), load=0.5)
        print("\n%d flows, leaf-spine 8 x 16 hosts, one 800 Gb/s spine (single routes), load 0.5, "
              "crosstraffic off:" % n)
        print("%-5s %12s %12s %12s %12s" % ("model", "ours s", "SimGrid s", "max rel", "mean rel"))
        for model in args.model:
            rel, ours, sg, w_ours, w_sg = compare(tp, fp, model, False, os.path.dirname(tp))
            print("%-5s %12.2f %12.2f %12.2e %12.2e" % (model, w_ours, w_sg, rel.max(), rel.mean()))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
