"""Random corruptions of valid input files, fed to every reader: each must end
in a WormholeError (naming the file) or a valid result, never another
exception.  Shared by tests/test_fuzz.py and bench/fuzz.py."""
import os
import random

import wormhole as wh
from wormhole.cluster import ClusterSimulator, ClusterSpec, ModelPool, make_contention, read_measured, read_trace
from wormhole.workload import load_preset, read_simai

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
RUN = os.path.join(DATA, "hpcc-ns3-runs", "ring_intra_dcqcn")
PRESETS = os.path.join(os.path.dirname(DATA), "..", "wormhole", "presets")
PRESET = os.path.join(PRESETS, "gpt13b.yaml")
SPEC = os.path.join(PRESETS, "cluster_testbed_16gpu.yaml")
POOL_YAML = os.path.join(PRESETS, "pool_v100.yaml")
POOL = ModelPool.load(POOL_YAML)

TOKENS = ["-1", "0", "nan", "inf", "-inf", "1e309", "99999999999999999999", "3.5", "abc", "", "\x00", "0x10",
          "100Gbps", "-5ms", "1e-30s", "UNKNOWN_KEY", "ALLREDUCE_XX", "NONE", ":", "\u00e9", "1" * 40]


def _split(line, sep):
    return line.split(sep) if sep else line.split()


def corrupt(text, rnd, sep=None):
    """One random corruption; ``sep`` is the field separator (None: whitespace)."""
    join = sep or " "
    lines = text.splitlines()
    op = rnd.randrange(9)
    if op == 0 and text:                                      # truncate
        return text[:rnd.randrange(len(text))]
    if op == 1 and lines:                                     # replace a token
        i = rnd.randrange(len(lines))
        toks = _split(lines[i], sep)
        if toks:
            toks[rnd.randrange(len(toks))] = rnd.choice(TOKENS)
            lines[i] = join.join(toks)
        return "\n".join(lines)
    if op == 2 and lines:                                     # delete a line
        del lines[rnd.randrange(len(lines))]
        return "\n".join(lines)
    if op == 3 and lines:                                     # duplicate a line
        i = rnd.randrange(len(lines))
        lines.insert(i, lines[i])
        return "\n".join(lines)
    if op == 4:                                               # binary garbage
        return text[:rnd.randrange(len(text) + 1)] + "".join(chr(rnd.randrange(256)) for _ in range(20))
    if op == 5 and lines:                                     # a huge number
        i = rnd.randrange(len(lines))
        toks = _split(lines[i], sep)
        if toks:
            toks[rnd.randrange(len(toks))] = str(rnd.choice([2**31, 2**63, 10**30, -2**40]))
            lines[i] = join.join(toks)
        return "\n".join(lines)
    if op == 6:                                               # an unknown key / extra tokens
        lines.insert(rnd.randrange(len(lines) + 1), join.join(["BOGUS", "1", "2", "3"]))
        return "\n".join(lines)
    if op == 7 and lines:                                     # drop a token
        i = rnd.randrange(len(lines))
        toks = _split(lines[i], sep)
        if toks:
            del toks[rnd.randrange(len(toks))]
            lines[i] = join.join(toks)
        return "\n".join(lines)
    return "\n".join(rnd.sample(lines, len(lines)))           # shuffle lines


def _cluster_run(path):
    """A corrupted trace must also survive the simulation (bad models, GPU counts)."""
    jobs = read_trace(path)
    ClusterSimulator(jobs, POOL, ClusterSpec.uniform(2, 8, nic="463MB/s"), make_contention("mosim")).run()


def readers():
    """name -> (file, reader, field separator or None for whitespace)."""
    topo = wh.read_topology(os.path.join(RUN, "topology.txt"))
    cl = os.path.join(DATA, "cluster")
    return {
        "topology": (os.path.join(RUN, "topology.txt"), wh.read_topology, None),
        "flows": (os.path.join(RUN, "flow.txt"), lambda p: wh.read_flows(p, topo), None),
        "config": (os.path.join(RUN, "config.txt"), wh.Config.from_file, None),
        "simai": (os.path.join(DATA, "simai", "gpt13b_tp8_pp1_a100.txt"), read_simai, None),
        "preset": (PRESET, load_preset, None),
        "cluster_trace": (os.path.join(cl, "testbed-trace-16gpu.csv"), _cluster_run, ","),
        "tiresias_trace": (os.path.join(cl, "tiresias_20_job.csv"), read_trace, ","),
        "measured": (os.path.join(cl, "perjob.csv"), read_measured, ","),
        "cluster_spec": (SPEC, ClusterSpec.load, None),
        "pool": (POOL_YAML, ModelPool.load, None),
    }


def fuzz(n_per_reader, workdir, seed=0):
    """Returns (cases, unexpected) where unexpected lists (reader, exception repr, input)."""
    rnd = random.Random(seed)
    unexpected = []
    cases = 0
    for name, (src, read, sep) in readers().items():
        with open(src, encoding="utf-8") as fh:
            text = fh.read()
        ext = os.path.splitext(src)[1]
        for k in range(n_per_reader):
            bad = corrupt(text, rnd, sep)
            if rnd.random() < 0.3:
                bad = corrupt(bad, rnd, sep)
            path = os.path.join(workdir, "%s_%d%s" % (name, k, ext))
            with open(path, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(bad)
            cases += 1
            try:
                read(path)
            except wh.WormholeError as e:
                if e.file is None:
                    unexpected.append((name, "WormholeError without a file: %s" % e, bad[:200]))
            except Exception as e:              # noqa: BLE001 - the point is to catch anything else
                unexpected.append((name, repr(e), bad[:200]))
            os.unlink(path)
    return cases, unexpected
