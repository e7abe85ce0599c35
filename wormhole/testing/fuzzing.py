"""Random corruptions of valid input files, fed to every reader: each must end
in a WormholeError (naming the file) or a valid result, never another
exception.  Shared by tests/test_fuzz.py and bench/fuzz.py; the valid inputs
are the test fixtures (a source checkout's tests/data, given as ``data``) and
the shipped presets."""
import os
import random

import wormhole as wh
from wormhole.cluster import ClusterSimulator, ClusterSpec, ModelPool, make_contention, read_measured, read_trace
from wormhole.workload import load_preset, read_simai

PRESETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "presets")
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


def readers(data):
    """name -> (file, reader, field separator or None for whitespace), the files
    under the fixture folder ``data`` (tests/data) and the presets."""
    run = os.path.join(data, "hpcc-ns3-runs", "ring_intra_dcqcn")
    topo = wh.read_topology(os.path.join(run, "topology.txt"))
    cl = os.path.join(data, "cluster")
    return {
        "topology": (os.path.join(run, "topology.txt"), wh.read_topology, None),
        "flows": (os.path.join(run, "flow.txt"), lambda p: wh.read_flows(p, topo), None),
        "config": (os.path.join(run, "config.txt"), wh.Config.from_file, None),
        "simai": (os.path.join(data, "simai", "gpt13b_tp8_pp1_a100.txt"), read_simai, None),
        "preset": (PRESET, load_preset, None),
        "cluster_trace": (os.path.join(cl, "testbed-trace-16gpu.csv"), _cluster_run, ","),
        "tiresias_trace": (os.path.join(cl, "tiresias_20_job.csv"), read_trace, ","),
        "measured": (os.path.join(cl, "perjob.csv"), read_measured, ","),
        "cluster_spec": (SPEC, ClusterSpec.load, None),
        "pool": (POOL_YAML, ModelPool.load, None),
    }


def fuzz(n_per_reader, workdir, data, seed=0):
    """Corruptions of the inputs under ``data`` (tests/data) and the presets, in
    ``workdir``.  Returns (cases, unexpected) where unexpected lists (reader,
    exception repr, input)."""
    rnd = random.Random(seed)
    unexpected = []
    cases = 0
    for name, (src, read, sep) in readers(data).items():
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


# ------------------------------------------------------------------ output paths
PATH_PARTS = ["new", "f", "d", "d/e", "d/g", "link", "dead", "f/x", "missing/x", "..", ".", "x" * 300, "a\0b",
              "", "new/", "d/", "link/e", "sub/deeper"]


def _layout(root):
    """A small tree: file f, folder d (with folder e and file g), a link to d, a dangling link."""
    os.makedirs(os.path.join(root, "d", "e"))
    for name in ("f", os.path.join("d", "g")):
        with open(os.path.join(root, name), "w") as fh:
            fh.write(name)
    os.symlink(os.path.join(root, "d"), os.path.join(root, "link"))
    os.symlink(os.path.join(root, "nowhere"), os.path.join(root, "dead"))


def snapshot(root):
    """Everything under ``root``: relative path -> kind and content (links not followed)."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("dir", None)
            else:
                with open(p, "rb") as fh:
                    out[rel] = ("file", fh.read())
    return out


def fuzz_outputs(n_cases, workdir, seed=0):
    """Random output paths (existing files and folders, links, missing or
    file-valued parents, /proc, NUL bytes, long names) given to the checks as a
    folder with files or as a file, then written, sometimes with a folder put in
    the way between check and write.  A check either raises OutputError naming
    the path and leaves the tree as it was, or the write succeeds and changes
    exactly the planned files; a failed write leaves the tree as it was.
    Returns (cases, cases refused by the checks, unexpected)."""
    from wormhole.outputs import OutputError, check_file, check_folder, write_files
    rnd = random.Random(seed)
    unexpected = []
    refused = [0]
    for k in range(n_cases):
        root = os.path.join(workdir, "out%d" % k)
        os.makedirs(root)
        _layout(root)
        parts = [rnd.choice(PATH_PARTS) for _ in range(rnd.choice((1, 1, 2)))]
        path = "/proc/wormhole-fuzz" if rnd.random() < 0.05 else os.path.join(root, *parts) if parts[0] else ""
        if parts and parts[-1].endswith("/") and path:
            path += "/"
        as_folder = rnd.random() < 0.5
        names = rnd.sample(["fct.txt", "g", "e", "sub/jobs.csv", "f"], rnd.randrange(1, 3))
        before = snapshot(root)
        case = (path.replace(root, "ROOT"), "folder %s" % names if as_folder else "file")
        try:
            try:
                targets = check_folder(path, "--out", names) if as_folder else [check_file(path, "--out")]
            except OutputError as e:
                if e.file is None and path not in ("", ) and "\0" not in path:
                    unexpected.append((case, "OutputError without the path: %s" % e))
                if "\n" in str(e):
                    unexpected.append((case, "an error of more than one line: %r" % str(e)))
                refused[0] += 1
                if snapshot(root) != before:
                    unexpected.append((case, "a refused check changed the tree"))
                continue
            block = rnd.random() < 0.2 and not os.path.lexists(targets[-1])
            if block:
                os.makedirs(targets[-1], exist_ok=True)      # appears between the check and the write
                before = snapshot(root)
            data = {t: "%d:%s" % (k, t) for t in targets}
            try:
                write_files(data)
            except OutputError:
                if not block:
                    unexpected.append((case, "an accepted path failed to write"))
                elif snapshot(root) != before:
                    unexpected.append((case, "a failed write left something behind"))
                continue
            if block:
                unexpected.append((case, "a write onto a folder succeeded"))
            for t, text in data.items():
                with open(t) as fh:
                    if fh.read() != text:
                        unexpected.append((case, "wrong content in %s" % t))
            after = snapshot(root)
            changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
            real = {os.path.relpath(os.path.realpath(t), os.path.realpath(root)) for t in targets}
            extra = {p for p in changed if p not in real and after.get(p, ("dir",))[0] != "dir"}
            if extra:
                unexpected.append((case, "files other than the planned ones changed: %s" % sorted(extra)))
        except Exception as e:                  # noqa: BLE001 - the point is to catch anything else
            unexpected.append((case, repr(e)))
    return n_cases, refused[0], unexpected
