"""htsim connection matrices: parsing, triggers, a shipped permutation, round trips, named errors."""
import os

import pytest

import wormhole as wh
from conftest import run_cli
from wormhole.workload.htsim import (Connection, HtsimError, HtsimRun, Trigger, cm_text, network_connections,
                                     read_cm, run_cm)

PERM = os.path.join(os.path.dirname(__file__), "data", "htsim", "perm_16n_16c_2MB.cm")
FT4 = os.path.join(os.path.dirname(__file__), "data", "ref_fixed_fattree4_pfc_drops", "topology.txt")


def _net():
    return wh.Network(wh.fat_tree(4), wh.Config.preset("hpcc", 100))


def test_shipped_permutation_runs():
    cm = read_cm(PERM)
    assert cm.nodes == 16 and len(cm.connections) == 16
    assert {c.src for c in cm.connections} == set(range(16)) == {c.dst for c in cm.connections}
    net = _net()
    run = run_cm(net, PERM)
    s = run.summary()
    assert s["completed"] == 16 and s["finish_ps"] == net.now
    assert all(r["size"] == 2_000_000 for r in net.results)


def test_written_matrix_reads_back_to_the_same_run(tmp_path):
    net = _net()
    run_cm(net, PERM)
    p = tmp_path / "out.cm"
    p.write_text(cm_text(*network_connections(net)))
    net2 = _net()
    run_cm(net2, str(p))
    assert (net.results["fct"] == net2.results["fct"]).all()
    assert (net.results["start"] == net2.results["start"]).all()


def test_triggers(tmp_path):
    p = tmp_path / "t.cm"
    p.write_text("""# chain, barrier, multishot
Nodes 4
Connections 6
Triggers 3
0->1 id 1 start 0 size 100000 send_done_trigger 1
2->3 id 2 start 5000000 size 200000 recv_done_trigger 2
1->2 id 3 trigger 1 size 50000 send_done_trigger 2
3->0 id 4 trigger 2 size 10000 send_done_trigger 3
0->2 id 5 trigger 3 size 10000
1->3 id 6 trigger 3 size 10000
trigger id 1 oneshot
trigger id 2 barrier count 2
trigger id 3 multishot
""")
    cm = read_cm(str(p))
    net = wh.Network(wh.star(4), wh.Config(cc="none"))
    run = HtsimRun(net, cm).start()
    net.run()
    res = net.results
    f = run.flows
    assert set(f) == {0, 1, 2, 3, 4}              # multishot fired once: only connection 5 of 5, 6 started
    assert res["start"][f[2]] == res["finish"][f[0]]
    assert res["start"][f[3]] == max(res["finish"][f[1]], res["finish"][f[2]])
    assert res["start"][f[4]] == res["finish"][f[3]]


def test_named_errors(tmp_path):
    cases = [
        ("Nodes 4\n0->9 start 0 size 10\n", "beyond Nodes", 2),
        ("Nodes 4\n0->1 start 0\n", "without a size", 2),
        ("Nodes 4\n0->1 id 1 trigger 3 size 10\n", "never defined", 2),
        ("Nodes 4\n0->1 start 0 size 10 speed 3\n", "unknown token", 2),
        ("Nodes 4\n0->1 start 0 size 0\n", "endless", 2),
        ("Nodes 4\nConnections 2\n0->1 start 0 size 10\n", "Connections says 2", None),
        ("Nodes 4\ntrigger id 1 sometimes\n", "unknown token in a trigger", 2),
        ("Nodes 4\n0->1 id 1 start 5 trigger 1 size 10\ntrigger id 1 oneshot\n", "both a start", 2),
        ("Connections 1\n0->1 start 0 size 10\n", "no Nodes", 1),
    ]
    for text, msg, line in cases:
        p = tmp_path / "bad.cm"
        p.write_text(text)
        with pytest.raises(HtsimError, match=msg) as e:
            read_cm(str(p))
        assert e.value.file == str(p) and e.value.line == line and isinstance(e.value, wh.WormholeError)


def test_failures_are_read_not_simulated(tmp_path):
    p = tmp_path / "f.cm"
    p.write_text("Nodes 2\nConnections 1\nFailures 1\n0->1 start 0 size 10\nfailure switch_type TOR switch_id 0 "
                 "link_id 1\n")
    cm = read_cm(str(p))
    assert cm.failures[0].switch_type == "TOR" and cm.failures[0].link_id == 1
    with pytest.raises(wh.NotAvailableError, match="failures"):
        HtsimRun(wh.Network(wh.star(2), wh.Config(cc="none")), cm)
    HtsimRun(wh.Network(wh.star(2), wh.Config(cc="none")), cm, ignore_failures=True)


def test_cli_run_htsim_and_write_cm(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    r = run_cli("run", "--topology", FT4, "--htsim", PERM, "--cc", "hpcc", "--out", str(a), "--write-cm",
                str(tmp_path / "a.cm"), "--quiet")
    assert r.returncode == 0, r.stderr
    r = run_cli("run", "--topology", FT4, "--htsim", str(tmp_path / "a.cm"), "--cc", "hpcc", "--out", str(b),
                "--quiet")
    assert r.returncode == 0, r.stderr
    assert (a / "fct.txt").read_text() == (b / "fct.txt").read_text()
    bad = tmp_path / "bad.cm"
    bad.write_text("Nodes 16\n0->1 start 0 size -5\n")
    r = run_cli("run", "--topology", FT4, "--htsim", str(bad), "--out", str(tmp_path / "c"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "bad.cm:2" in r.stderr
    assert not (tmp_path / "c").exists()


def test_cm_text_round_trip(tmp_path):
    conns = [Connection(0, 1, 1000, 0), Connection(1, 2, 2000, None, id=7, trigger=1),
             Connection(2, 0, 10, 5, send_done_trigger=1)]
    p = tmp_path / "x.cm"
    p.write_text(cm_text(conns, 3, [Trigger(1, "oneshot")]))
    cm = read_cm(str(p))
    assert [(c.src, c.dst, c.size, c.start, c.trigger, c.send_done_trigger) for c in cm.connections] == [
        (0, 1, 1000, 0, 0, 0), (1, 2, 2000, None, 1, 0), (2, 0, 10, 5, 0, 1)]


def test_bench_write_cm(tmp_path):
    import json
    import subprocess
    import sys
    p = tmp_path / "job.cm"
    r = subprocess.run([sys.executable, "-m", "wormhole.bench", "gpt13b", "--gpus", "16", "--layers", "2",
                        "--write-cm", str(p), "--json", "--no-progress"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    cm = read_cm(str(p))
    assert cm.nodes == 16 and len(cm.connections) == rep["messages"]
    assert sum(c.size for c in cm.connections) == rep["fabric_bytes"]
    assert min(c.start for c in cm.connections) > 0          # the first bucket waits for backward compute


def test_a_matrix_without_triggers_runs_on_the_partitioned_kernel(tmp_path):
    """No trigger, observer or on_done: plain flows, so --threads 2 runs it, with the sequential run's fct.txt."""
    outs = []
    for threads in (None, "1", "2"):
        out = tmp_path / ("t%s" % threads)
        argv = ["run", "--topology", FT4, "--htsim", PERM, "--cc", "hpcc", "--out", str(out), "--quiet"]
        if threads:
            argv += ["--threads", threads]
        r = run_cli(*argv)
        assert r.returncode == 0, r.stderr
        outs.append((out / "fct.txt").read_bytes())
    assert outs[0] and outs[0] == outs[1] == outs[2]
    net = _net()
    run = HtsimRun(net, read_cm(PERM)).start()
    assert run.left == 16 and run.finish is None
    net.run()
    assert run.left == 0 and run.finish == int(net.results["finish"].max())
