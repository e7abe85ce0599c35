"""Sweeps: ``python -m wormhole sweep SPEC.yaml`` -- a grid of runs, each computed once.

A spec is a YAML mapping.  A key whose value is a list is an axis of the grid
(the grid is the product of the axes, in the order they are written); any
other value is fixed for every point.  Keys:

* ``workload``: a collective (``allreduce``, ``reducescatter``, ``allgather``,
  ``alltoall``, ``broadcast``: over the first ``gpus`` GPUs in NCCL ring order,
  ``size_mb`` MiB each), a training preset (``gpt13b``, ... with ``layers``,
  ``tp``, ``pp``, ``dp``, ``ep``, ``micro_batches``), ``chakra:PREFIX`` (a
  Chakra trace; ``comm_group``) or ``htsim:FILE.cm`` (a connection matrix);
* ``topology``: ``rail`` (rail-optimized, default), ``fattree`` or a topology
  file; ``gpus`` (default 16), ``rate`` (Gb/s, default 100);
* ``cc`` (a congestion-control preset, default hpcc), ``seed`` (default 1),
  ``mode`` (``accelerated``, default, or ``full``), ``chunk_mb`` (default 4);
* ``nccl_channels``: NCCL channels of the ring collectives (default: one per
  GPU of a group on each server, ``wormhole.workload.channels``; 1: one ring);
* ``params``: a mapping of registry parameters (``python -m wormhole params``),
  each a value or a list (an axis), e.g. ``params: {steady_theta: [0.02, 0.05]}``;
* ``out`` (the output folder, or ``--out``), ``memo_db`` (default
  ``OUT/memo.sqlite``: one memo database every accelerated point shares).

Every point's result is stored as ``OUT/points/<key>.json`` the moment it is
computed; the key is a SHA-256 of the point's inputs (its parameters, the
contents of the files it reads) and the wormhole version, so a rerun -- after
a change to the spec, or after the sweep was killed -- computes only the
points that have no result yet (a point that failed is tried again).  ``OUT/results.csv`` (and
``OUT/results.parquet`` when pyarrow is installed) has one row per point,
``OUT/summary.png`` the simulated time of each point against the first numeric
axis, one line per combination of the other axes (mean over seeds).

Points run on a local process pool by default (``--workers``), one after the
other with ``--serial``, or on Dask distributed (an optional dependency:
``pip install wormhole[dask]``): ``--dask local`` starts a LocalCluster bound
to 127.0.0.1, ``--scheduler tcp://HOST:PORT`` uses a running scheduler whose
workers have the same wormhole installed (and see the input files and the
memo database at the same paths; SQLite's WAL mode needs a local or a
lock-capable shared filesystem).

Note: accelerated points replay convergences memoized by earlier points, so a
point's simulated time can depend on which points ran before it into the
shared memo database (by at most the memo's replay error); ``memo_db: none``
or ``mode: full`` makes every point independent of the others.
"""
import csv
import hashlib
import io
import itertools
import json
import os
import sys
import time

from .errors import ConfigError, WormholeError, read_yaml

POINT_KEYS = ("workload", "topology", "gpus", "rate", "cc", "seed", "mode", "size_mb", "chunk_mb", "layers", "tp",
              "pp", "dp", "ep", "micro_batches", "comm_group", "nccl_channels", "params")
DEFAULTS = {"workload": "allreduce", "topology": "rail", "gpus": 16, "rate": 100.0, "cc": "hpcc", "seed": 1,
            "mode": "accelerated", "chunk_mb": 4.0, "nccl_channels": None}
META_KEYS = ("out", "memo_db", "name")
COLLECTIVE_NAMES = ("allreduce", "reducescatter", "allgather", "alltoall", "broadcast")
RESULT_COLS = ("time_ps", "time_ms", "events", "events_skipped", "flows", "fabric_bytes", "memo_hits",
               "memo_misses", "wall_seconds", "status")


class SweepError(WormholeError):
    """A bad sweep spec: unknown key, empty axis, unknown workload or parameter."""


def version():
    from . import __version__
    return __version__


# ---------------------------------------------------------------- spec -> points
def load_spec(path):
    spec = read_yaml(path, SweepError, "sweep spec")
    if not isinstance(spec, dict):
        raise SweepError("a sweep spec is a YAML mapping of keys to values or lists", path)
    base = os.path.dirname(os.path.abspath(path))
    return spec, base


def expand(spec, path=None, base="."):
    """The grid's points (dicts of every point key, params as a dict), in spec order."""
    axes, fixed, pfixed, paxes = [], {}, {}, []
    for k, v in spec.items():
        if k in META_KEYS:
            continue
        if k == "params":
            if not isinstance(v, dict):
                raise SweepError("params must be a mapping of parameter names to values or lists", path, value=v)
            for pk, pv in v.items():
                if isinstance(pv, list):
                    if not pv:
                        raise SweepError("params.%s is an empty list" % pk, path, value=pv)
                    paxes.append((pk, pv))
                else:
                    pfixed[pk] = pv
            continue
        if k not in POINT_KEYS:
            raise SweepError("unknown sweep key %r (%s, params, out, memo_db)" % (k, ", ".join(POINT_KEYS[:-1])),
                             path, value=k)
        if isinstance(v, list):
            if not v:
                raise SweepError("%s is an empty list" % k, path, value=v)
            axes.append((k, v))
        else:
            fixed[k] = v
    names = [k for k, _ in axes] + ["params." + k for k, _ in paxes]
    points = []
    for combo in itertools.product(*[vals for _, vals in axes + paxes]):
        p = dict(DEFAULTS)
        p.update(fixed)
        params = dict(pfixed)
        for (k, _), v in zip(axes, combo[:len(axes)]):
            p[k] = v
        for (k, _), v in zip(paxes, combo[len(axes):]):
            params[k] = v
        p["params"] = params
        points.append(_check_point(p, path, base))
    return points, names


def _abs(value, base):
    return value if os.path.isabs(value) else os.path.normpath(os.path.join(base, value))


def _check_point(p, path, base):
    from .cc import PRESETS
    from .config import Config
    w = p["workload"]
    if not isinstance(w, str):
        raise SweepError("workload must be a name", path, value=w)
    if w.startswith("chakra:"):
        p["workload"] = "chakra:" + _abs(w[7:], base)
        if p.get("comm_group"):
            p["comm_group"] = _abs(p["comm_group"], base)
    elif w.startswith("htsim:"):
        p["workload"] = "htsim:" + _abs(w[6:], base)
        if not os.path.isfile(p["workload"][6:]):
            raise SweepError("no such connection matrix", path, value=w)
    elif w not in COLLECTIVE_NAMES:
        from .workload import preset_names
        if w not in preset_names():
            raise SweepError("unknown workload %r (a collective: %s; a preset: %s; chakra:PREFIX; htsim:FILE)"
                             % (w, ", ".join(COLLECTIVE_NAMES), ", ".join(preset_names())), path, value=w)
    elif "size_mb" not in p:
        raise SweepError("a collective needs size_mb", path, value=w)
    if p["topology"] not in ("rail", "fattree"):
        p["topology"] = _abs(str(p["topology"]), base)
        if not os.path.isfile(p["topology"]):
            raise SweepError("topology must be rail, fattree or a topology file", path, value=p["topology"])
    if p["cc"] not in PRESETS:
        raise SweepError("unknown congestion control %r (%s)" % (p["cc"], ", ".join(PRESETS)), path, value=p["cc"])
    if p["mode"] not in ("accelerated", "full"):
        raise SweepError("mode must be accelerated or full", path, value=p["mode"])
    for k in ("gpus", "seed", "layers", "tp", "pp", "dp", "ep", "micro_batches"):
        if p.get(k) is not None and (isinstance(p[k], bool) or not isinstance(p[k], int) or p[k] < 0):
            raise SweepError("%s must be a non-negative integer" % k, path, value=p[k])
    from .workload.channels import check_channels
    try:
        check_channels(p["nccl_channels"])
    except WormholeError as e:
        raise SweepError("nccl_channels: %s" % e.message, path, value=p["nccl_channels"])
    for k in ("size_mb", "rate", "chunk_mb"):
        if p.get(k) is not None and (isinstance(p[k], bool) or not isinstance(p[k], (int, float)) or p[k] <= 0):
            raise SweepError("%s must be a positive number" % k, path, value=p[k])
    try:
        Config(**p["params"])
    except WormholeError as e:
        raise SweepError("params: %s" % e.message, path, value=e.value)
    return p


def _file_digest(path, h):
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        h.update(b"<missing>")


def point_key(p):
    """SHA-256 of a point's inputs: its parameters, the files it reads, the wormhole version."""
    h = hashlib.sha256()
    h.update(json.dumps(p, sort_keys=True, default=str).encode())
    h.update(("wormhole " + version()).encode())
    files = []
    if p["topology"] not in ("rail", "fattree"):
        files.append(p["topology"])
    w = p["workload"]
    if w.startswith("htsim:"):
        files.append(w[6:])
    elif w.startswith("chakra:"):
        prefix = w[7:]
        r = 0
        while os.path.exists("%s.%d.et" % (prefix, r)):
            files.append("%s.%d.et" % (prefix, r))
            r += 1
        if p.get("comm_group"):
            files.append(p["comm_group"])
    for f in files:
        h.update(f.encode())
        _file_digest(f, h)
    return h.hexdigest()


# ---------------------------------------------------------------- one point
def _fabric(p):
    import wormhole as wh
    from .units import gbps
    if p["topology"] == "rail":
        return wh.rail_optimized(p["gpus"], rate=gbps(p["rate"]))
    if p["topology"] == "fattree":
        k = 2
        while k ** 3 // 4 < p["gpus"]:
            k += 2
        return wh.fat_tree(k, rate=gbps(p["rate"]))
    return wh.read_topology(p["topology"])


def run_point(p, memo_db=None):
    """Simulate one point; a dict of results (``status`` 'ok' or the error's one line)."""
    import wormhole as wh
    t0 = time.perf_counter()
    out = {"status": "ok"}
    try:
        topo = _fabric(p)
        acc = p["mode"] == "accelerated"
        cfg = wh.Config.preset(p["cc"], max(1, round(topo.nic_rate() / 1e9)), accelerate=acc,
                               memo_db=memo_db if acc else None, seed=p["seed"], **p["params"])
        for attempt in range(20):
            try:
                net = wh.Network(topo, cfg)
                break
            except WormholeError as e:     # the shared memo database, opened by another point right now
                if "locked" not in str(e) or attempt == 19:
                    raise
                time.sleep(0.05 * (attempt + 1))
        chunk = int(p["chunk_mb"] * (1 << 20))
        w = p["workload"]
        from .workload import COLLECTIVES, TrainingJob, Transport, load_preset, ring_order
        from .workload.chakra import drive
        fin = []
        if w in COLLECTIVES:
            gpus = topo.hosts[:p["gpus"]]
            cls = COLLECTIVES[w]
            c = cls(Transport(net), ring_order(gpus), int(p["size_mb"] * (1 << 20)), chunk_bytes=chunk,
                    on_done=lambda c: fin.append(1), **({"channels": p["nccl_channels"]} if cls.ring else {}))
            c.start()
            drive(net, lambda: bool(fin))
            if c.duration is None:
                raise WormholeError("the collective did not finish")
            t, fabric_bytes = c.duration, c.t.fabric_bytes
        elif w.startswith("chakra:"):
            from .workload.chakra import run_chakra
            run = run_chakra(net, w[7:], p["gpus"], p.get("comm_group"), chunk_bytes=chunk,
                             nccl_channels=p["nccl_channels"])
            t, fabric_bytes = run.iteration_time, run.t.fabric_bytes
        elif w.startswith("htsim:"):
            from .workload.htsim import run_cm
            run = run_cm(net, w[6:])
            t, fabric_bytes = run.finish, int(sum(c.size for c in run.cm.connections))
        else:
            from dataclasses import replace
            pre = load_preset(w, gpus=p["gpus"], tp=p.get("tp"), pp=p.get("pp"), dp=p.get("dp"), ep=p.get("ep"),
                              micro_batches=p.get("micro_batches"))
            if p.get("layers"):
                pre.model = replace(pre.model, layers=p["layers"])
            job = TrainingJob(net, pre, chunk_bytes=chunk, nccl_channels=p["nccl_channels"])
            job.start(lambda j: fin.append(1))
            drive(net, lambda: bool(fin))
            if not job.results:
                raise WormholeError("the job did not finish")
            t, fabric_bytes = job.results[-1].time, job.t.fabric_bytes
        st = net.stats
        out.update(time_ps=int(t), time_ms=t / 1e9, events=st["events"], events_skipped=st.get("events_skipped", 0),
                   flows=st["flows"], fabric_bytes=int(fabric_bytes), memo_hits=st.get("memo_hits", 0),
                   memo_misses=st.get("memo_misses", 0))
    except WormholeError as e:
        out["status"] = "error: %s" % e
    out["wall_seconds"] = round(time.perf_counter() - t0, 4)
    return out


def _store(folder, key, p, res):
    """One point's result file, written atomically (a killed sweep leaves whole files only)."""
    doc = {"key": key, "version": version(), "point": p, "result": res}
    path = os.path.join(folder, key + ".json")
    tmp = path + ".tmp%d" % os.getpid()
    with open(tmp, "w") as fh:
        json.dump(doc, fh, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _job(p, key, folder, memo_db):
    res = run_point(p, memo_db)
    _store(folder, key, p, res)
    return key, res


def _load(folder, key):
    try:
        with open(os.path.join(folder, key + ".json")) as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    if doc.get("key") != key or doc.get("version") != version():
        return None
    res = doc.get("result")
    if not isinstance(res, dict) or res.get("status") != "ok":
        return None                 # a point that failed is tried again
    return res


# ---------------------------------------------------------------- engines
def _run_serial(todo, folder, memo_db, bar):
    for p, key in todo:
        yield _job(p, key, folder, memo_db)
        bar.update(1)


def _run_pool(todo, folder, memo_db, bar, workers):
    from concurrent.futures import ProcessPoolExecutor, as_completed
    import multiprocessing as mp
    ctx = mp.get_context("spawn" if sys.platform == "darwin" else "fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as ex:
        futs = [ex.submit(_job, p, key, folder, memo_db) for p, key in todo]
        for f in as_completed(futs):
            yield f.result()
            bar.update(1)


def _dask_client(scheduler, workers):
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        from .errors import NotAvailableError
        raise NotAvailableError("Dask is not installed (pip install 'wormhole[dask]', i.e. dask[distributed])")
    if scheduler == "local":
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None, silence_logs=40)
        return Client(cluster), cluster
    try:
        return Client(scheduler, timeout=30), None
    except (OSError, ValueError, TimeoutError) as e:
        raise WormholeError("cannot reach the Dask scheduler: %s" % e, value=scheduler)


def _run_dask(todo, folder, memo_db, bar, scheduler, workers):
    from distributed import as_completed
    client, cluster = _dask_client(scheduler, workers)
    try:
        futs = [client.submit(_job, p, key, folder, memo_db, key=key, pure=False) for p, key in todo]
        for f in as_completed(futs):
            yield f.result()
            bar.update(1)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# ---------------------------------------------------------------- the sweep
def outputs(out):
    names = ["results.csv", "summary.png"]
    try:
        import pyarrow  # noqa: F401
        names.append("results.parquet")
    except ImportError:
        pass
    return names


def run_sweep(spec_path, out=None, engine="pool", workers=None, scheduler=None, progress=True, log=None):
    """Expand, compute what is missing, write the table and the plot.  Returns
    (rows, {"points", "cached", "computed", "wall_seconds", "files"})."""
    from .outputs import check_folder, write_files
    spec, base = load_spec(spec_path)
    out = out or spec.get("out")
    if not out:
        raise SweepError("no output folder: give --out DIR or 'out:' in the spec", spec_path)
    if not isinstance(out, str):
        raise SweepError("out must be a folder path", spec_path, value=out)
    if spec.get("out") == out and not os.path.isabs(out):
        out = os.path.join(base, out)
    points, axes = expand(spec, spec_path, base)
    names = outputs(out)
    check_folder(out, "--out", names)
    memo = spec.get("memo_db", "memo.sqlite")
    memo_db = None if memo in (None, "none") else (memo if os.path.isabs(str(memo)) else os.path.join(out, memo))
    folder = os.path.join(out, "points")
    os.makedirs(folder, exist_ok=True)
    if memo_db is not None and any(p["mode"] == "accelerated" for p in points):
        from .accel.memo import MemoDB
        MemoDB(memo_db).db.close()      # created (WAL mode, tables) once, before workers open it together
    keyed = [(p, point_key(p)) for p in points]
    results, todo, seen = {}, [], set()
    for p, key in keyed:
        r = _load(folder, key)
        if r is not None:
            results[key] = r
        elif key not in seen:
            todo.append((p, key))
            seen.add(key)
    cached = len(results)
    workers = int(workers or os.cpu_count() or 1)
    from tqdm import tqdm
    bar = tqdm(total=len(points), initial=cached, desc="sweep", unit="point", file=sys.stderr,
               disable=None if progress else True, leave=False)      # no bar when stderr is not a terminal
    t0 = time.perf_counter()
    try:
        if not todo:
            it = iter(())
        elif engine == "serial" or workers == 1 and engine == "pool":
            it = _run_serial(todo, folder, memo_db, bar)
        elif engine == "pool":
            it = _run_pool(todo, folder, memo_db, bar, workers)
        elif engine == "dask":
            it = _run_dask(todo, folder, memo_db, bar, scheduler or "local", workers)
        else:
            raise SweepError("unknown engine %r (serial, pool, dask)" % engine, value=engine)
        for key, res in it:
            results[key] = res
    finally:
        bar.close()
    wall = time.perf_counter() - t0
    rows = []
    for p, key in keyed:
        row = {"key": key[:16], "version": version()}
        for k in POINT_KEYS:
            if k == "params":
                for pk, pv in sorted(p["params"].items()):
                    row["params." + pk] = pv
            elif k in p:
                row[k] = p[k]
        r = results.get(key, {})
        for c in RESULT_COLS:
            row[c] = r.get(c)
        rows.append(row)
    files = {os.path.join(out, "results.csv"): table_csv(rows)}
    if "results.parquet" in names:
        files[os.path.join(out, "results.parquet")] = table_parquet(rows)
    files[os.path.join(out, "summary.png")] = summary_plot(rows, axes)
    write_files(files)
    info = {"points": len(points), "cached": cached, "computed": len(todo), "wall_seconds": wall,
            "files": sorted(files), "engine": engine, "workers": workers if engine != "serial" else 1}
    return rows, info


def _columns(rows):
    cols = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def table_csv(rows):
    cols = _columns(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if r.get(c) is None else r.get(c) for c in cols])
    return buf.getvalue()


def table_parquet(rows):
    import pyarrow as pa
    import pyarrow.parquet as pq
    cols = _columns(rows)
    data = {}
    for c in cols:
        vals = [r.get(c) for r in rows]
        if any(isinstance(v, str) for v in vals) and not all(v is None or isinstance(v, str) for v in vals):
            vals = [None if v is None else str(v) for v in vals]
        data[c] = vals
    buf = io.BytesIO()
    pq.write_table(pa.table(data), buf)
    return buf.getvalue()


def summary_plot(rows, axes):
    """Simulated time against the first numeric axis (else the first axis), a line per
    combination of the other axes except the seed (mean over seeds)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from .outputs import figure_bytes
    col = lambda a: a
    xaxis = next((a for a in axes if a != "seed" and all(isinstance(r.get(col(a)), (int, float))
                                                          for r in rows)), None)
    if xaxis is None:
        xaxis = next((a for a in axes if a != "seed"), None)
    others = [a for a in axes if a not in (xaxis, "seed")]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    groups = {}
    for r in rows:
        if r.get("time_ms") is None:
            continue
        g = tuple((a, r.get(a)) for a in others)
        groups.setdefault(g, {}).setdefault(r.get(xaxis) if xaxis else 0, []).append(r["time_ms"])
    for g, series in groups.items():
        xs = list(series)
        try:
            xs = sorted(xs)
        except TypeError:
            pass
        ys = [sum(series[x]) / len(series[x]) for x in xs]
        label = ", ".join("%s=%s" % (a, v) for a, v in g) or "all"
        ax.plot([str(x) for x in xs] if not all(isinstance(x, (int, float)) for x in xs) else xs, ys, "o-",
                label=label)
    ax.set_xlabel(xaxis or "point")
    ax.set_ylabel("simulated time (ms, mean over seeds)")
    ax.grid(alpha=0.3)
    if groups:
        ax.legend(fontsize=8)
    ax.set_title("sweep: %d points" % len(rows))
    fig.tight_layout()
    data = figure_bytes(fig)
    plt.close(fig)
    return data


def add_arguments(p):
    p.add_argument("spec", help="the sweep spec (YAML): axes as lists, fixed values as scalars")
    p.add_argument("--out", metavar="DIR", help="output folder (default: the spec's 'out'); results.csv, "
                   "results.parquet (with pyarrow), summary.png, points/ and memo.sqlite in it")
    eng = p.add_mutually_exclusive_group()
    eng.add_argument("--serial", action="store_true", help="run the points one after the other in this process")
    eng.add_argument("--dask", choices=("local",), help="local: a dask.distributed LocalCluster on 127.0.0.1")
    eng.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="a running Dask scheduler")
    p.add_argument("--workers", type=int, help="processes of the local pool or the LocalCluster (default: CPUs)")
    p.add_argument("--no-progress", action="store_true")


def main_args(args):
    if args.workers is not None and args.workers < 1:
        raise ConfigError("--workers must be at least 1", value=args.workers)
    engine = "serial" if args.serial else "dask" if (args.dask or args.scheduler) else "pool"
    rows, info = run_sweep(args.spec, args.out, engine, args.workers, args.scheduler or args.dask,
                           progress=not args.no_progress)
    bad = [r for r in rows if r["status"] != "ok"]
    print("sweep       %d points: %d from earlier runs, %d computed (%s%s) in %.2f s wall-clock" % (
        info["points"], info["cached"], info["computed"], info["engine"],
        "" if info["engine"] == "serial" else ", %d workers" % info["workers"], info["wall_seconds"]))
    if bad:
        print("errors      %d points: %s" % (len(bad), bad[0]["status"]))
    print("wrote       %s" % ", ".join(info["files"]))
    return 0
