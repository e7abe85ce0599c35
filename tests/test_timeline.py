"""--timeline: Chrome/Perfetto trace-event JSON from bench, run and cluster."""
import json
import os

import pytest

from conftest import DATA, run_cli

REQUIRED = ("ph", "ts", "pid", "tid", "name")


def check_trace_events(doc):
    """The trace-event format's required fields, by hand (independent of wormhole.timeline.validate)."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list) and doc["traceEvents"]
    for e in doc["traceEvents"]:
        for k in REQUIRED:
            assert k in e, (k, e)
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and isinstance(e["name"], str)
        assert e["ph"] in ("X", "C", "M", "i")
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
        if e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values())
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index")
    from wormhole.timeline import validate
    assert validate(doc) == len(doc["traceEvents"])
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    return names


def _bench(*args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "wormhole.bench"] + list(args), capture_output=True, text=True,
                          timeout=300)


def test_bench_timeline(tmp_path):
    tl = tmp_path / "tl.json"
    r = _bench("gpt13b", "--gpus", "16", "--layers", "2", "--timeline", str(tl), "--json", "--no-progress")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    plain = json.loads(_bench("gpt13b", "--gpus", "16", "--layers", "2", "--json", "--no-progress").stdout)
    assert rep["iteration_time_ps"] == plain["iteration_time_ps"]       # the Chakra graph replays the job
    doc = json.loads(tl.read_text())
    names = check_trace_events(doc)
    evs = doc["traceEvents"]
    assert {"GPU %d" % g for g in range(16)} <= set(names.values())
    assert {"connections", "links", "accelerator"} <= set(names.values())
    cats = {e.get("cat") for e in evs}
    assert {"comp", "comm_coll", "message", "skip"} <= cats
    assert any(e["ph"] == "C" and "util" in e["name"] for e in evs)
    end = max(e["ts"] + e.get("dur", 0) for e in evs if e.get("cat") == "comp")
    assert end <= rep["iteration_time_ps"] / 1e6 + 1e-6


def test_run_and_cluster_timeline(tmp_path):
    ft4 = os.path.join(DATA, "ref_fixed_fattree4_pfc_drops")
    tl = tmp_path / "run.json"
    r = run_cli("run", "--topology", os.path.join(ft4, "topology.txt"), "--flows", os.path.join(ft4, "flow.txt"),
                "--cc", "hpcc", "--mode", "accelerated", "--out", str(tmp_path / "o"), "--timeline", str(tl), "--quiet")
    assert r.returncode == 0, r.stderr
    doc = json.loads(tl.read_text())
    check_trace_events(doc)
    assert sum(1 for e in doc["traceEvents"] if e.get("cat") == "flow") == 56
    assert any(e["ph"] == "C" and "queue" in e["name"] for e in doc["traceEvents"])
    # the timeline's sampling does not change the run
    r2 = run_cli("run", "--topology", os.path.join(ft4, "topology.txt"), "--flows", os.path.join(ft4, "flow.txt"),
                 "--cc", "hpcc", "--mode", "accelerated", "--out", str(tmp_path / "p"), "--quiet")
    assert (tmp_path / "o" / "fct.txt").read_text() == (tmp_path / "p" / "fct.txt").read_text()
    ct = tmp_path / "cl.json"
    r = run_cli("cluster", "--trace", os.path.join(DATA, "cluster", "testbed-trace-16gpu.csv"), "--cluster",
                "testbed-16gpu", "--contention", "none", "--out", str(tmp_path / "c"), "--timeline", str(ct))
    assert r.returncode == 0, r.stderr
    names = check_trace_events(json.loads(ct.read_text()))
    assert any(n.startswith("none: server") for n in names.values())


def test_bad_timeline_path_exits_2_before_running(tmp_path):
    r = _bench("gpt13b", "--gpus", "16", "--layers", "2", "--timeline", str(tmp_path / "no" / "tl.json"),
               "--no-progress")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--timeline" in r.stderr


def test_validate_rejects_missing_fields():
    from wormhole.errors import WormholeError
    from wormhole.timeline import validate
    with pytest.raises(WormholeError, match="no 'dur'|non-negative dur"):
        validate({"traceEvents": [{"ph": "X", "ts": 0, "pid": 1, "tid": 1, "name": "a"}]})
    with pytest.raises(WormholeError, match="no 'tid'"):
        validate({"traceEvents": [{"ph": "C", "ts": 0, "pid": 1, "name": "a", "args": {"v": 1}}]})
