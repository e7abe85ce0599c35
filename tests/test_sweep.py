"""python -m wormhole sweep: grid expansion, hashing, engines (serial, pool, Dask), resume."""
import csv
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import run_cli
from wormhole.sweep import SweepError, expand, point_key, run_sweep

SPEC = """workload: allreduce
gpus: 16
mode: full
cc: [hpcc, dcqcn]
size_mb: [1, 2]
seed: [1, 2]
"""
SIM_COLS = ("key", "workload", "cc", "seed", "size_mb", "time_ps", "events", "flows", "fabric_bytes", "status")


def _table(path):
    with open(path) as fh:
        return [{c: r[c] for c in SIM_COLS} for r in csv.DictReader(fh)]


def _spec(tmp_path, text=SPEC, name="spec.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_expand_and_keys(tmp_path):
    points, axes = expand({"workload": "allreduce", "cc": ["hpcc", "dcqcn"], "size_mb": [1, 2, 4], "seed": [1, 2],
                           "params": {"steady_theta": [0.02, 0.05]}})
    assert len(points) == 24 and axes == ["cc", "size_mb", "seed", "params.steady_theta"]
    keys = {point_key(p) for p in points}
    assert len(keys) == 24
    with pytest.raises(SweepError, match="unknown sweep key"):
        expand({"workload": "allreduce", "size_mb": 1, "colour": "red"})
    with pytest.raises(SweepError, match="unknown congestion control"):
        expand({"workload": "allreduce", "size_mb": 1, "cc": ["hpcc", "bbr"]})
    with pytest.raises(SweepError, match="params"):
        expand({"workload": "allreduce", "size_mb": 1, "params": {"no_such_parameter": 1}})


def test_serial_pool_and_rerun(tmp_path):
    spec = _spec(tmp_path)
    rows, info = run_sweep(spec, str(tmp_path / "s"), "serial", progress=False)
    assert info["computed"] == 8 and all(r["status"] == "ok" for r in rows)
    rows2, info2 = run_sweep(spec, str(tmp_path / "p"), "pool", workers=2, progress=False)
    assert _table(tmp_path / "s" / "results.csv") == _table(tmp_path / "p" / "results.csv")
    # a rerun computes nothing; a changed spec computes only its new points
    again, info3 = run_sweep(spec, str(tmp_path / "s"), "serial", progress=False)
    assert info3["computed"] == 0 and info3["cached"] == 8
    spec2 = _spec(tmp_path, SPEC.replace("size_mb: [1, 2]", "size_mb: [1, 2, 3]"), "spec2.yaml")
    _, info4 = run_sweep(spec2, str(tmp_path / "s"), "serial", progress=False)
    assert info4["computed"] == 4 and info4["cached"] == 8
    assert (tmp_path / "s" / "summary.png").stat().st_size > 1000


def test_killed_sweep_resumes(tmp_path):
    spec = _spec(tmp_path, SPEC.replace("gpus: 16", "gpus: 32\ntopology: fattree").replace(
        "size_mb: [1, 2]", "size_mb: [2, 4, 6]"))
    out = tmp_path / "k"
    pts = out / "points"
    here = os.path.dirname(os.path.abspath(__file__))
    import wormhole                 # the subprocess runs the wormhole the tests import (as conftest.run_cli)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(wormhole.__file__))) + os.pathsep + \
        env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "wormhole", "sweep", spec, "--out", str(out), "--serial",
                             "--no-progress"], cwd=here, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    t0 = time.time()
    while time.time() - t0 < 120 and not (pts.exists() and any(n.endswith(".json") for n in os.listdir(pts))):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = {n: os.stat(pts / n).st_mtime_ns for n in os.listdir(pts) if n.endswith(".json")}
    assert 1 <= len(done)
    assert not [n for n in os.listdir(pts) if not n.endswith(".json") and not n.endswith(".tmp%d" % proc.pid)]
    rows, info = run_sweep(spec, str(out), "serial", progress=False)
    assert info["cached"] == len(done) and info["computed"] == 12 - len(done)
    for n, m in done.items():                   # finished points were not recomputed
        assert os.stat(pts / n).st_mtime_ns == m
    assert all(r["status"] == "ok" for r in rows) and len(rows) == 12


def test_dask_local_cluster_matches_serial(tmp_path):
    pytest.importorskip("distributed")
    spec = _spec(tmp_path)
    run_sweep(spec, str(tmp_path / "s"), "serial", progress=False)
    rows, info = run_sweep(spec, str(tmp_path / "d"), "dask", workers=2, scheduler="local", progress=False)
    assert info["engine"] == "dask" and info["computed"] == 8
    assert _table(tmp_path / "s" / "results.csv") == _table(tmp_path / "d" / "results.csv")
    # a running scheduler, by address (--scheduler tcp://HOST:PORT)
    from distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                      silence_logs=40) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        rows, info = run_sweep(spec, str(tmp_path / "t"), "dask", scheduler=cluster.scheduler_address,
                               progress=False)
    assert info["computed"] == 8
    assert _table(tmp_path / "s" / "results.csv") == _table(tmp_path / "t" / "results.csv")


def test_parquet_when_pyarrow(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    run_sweep(_spec(tmp_path, SPEC.replace("seed: [1, 2]", "seed: 1")), str(tmp_path / "q"), "serial",
              progress=False)
    assert pq.read_table(str(tmp_path / "q" / "results.parquet")).num_rows == 4


def test_cli(tmp_path):
    spec = _spec(tmp_path, SPEC.replace("size_mb: [1, 2]", "size_mb: 1"))
    r = run_cli("sweep", spec, "--out", str(tmp_path / "c"), "--serial", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "4 points: 0 from earlier runs, 4 computed" in r.stdout
    bad = _spec(tmp_path, "workload: allreduce\nsize_mb: 1\ncc: [hpcc, nope]\n", "bad.yaml")
    r = run_cli("sweep", bad, "--out", str(tmp_path / "b"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "nope" in r.stderr
    assert not (tmp_path / "b").exists()


def test_shared_memo_database_under_a_pool(tmp_path):
    """Accelerated points open one memo database together: none fails, entries are shared.  (One ring, whose
    points repeat memoized convergences; on 8 channels none of these points hits the memo.)"""
    spec = _spec(tmp_path, SPEC.replace("mode: full", "mode: accelerated").replace("size_mb: [1, 2]",
                                                                                   "size_mb: [16, 64]")
                 + "nccl_channels: 1\n")
    rows, info = run_sweep(spec, str(tmp_path / "m"), "pool", workers=2, progress=False)
    assert all(r["status"] == "ok" for r in rows), [r["status"] for r in rows]
    assert (tmp_path / "m" / "memo.sqlite").exists()
    assert sum(r["memo_hits"] for r in rows) >= 1
