"""The kernel benchmark's htsim columns (``bench kernel --htsim CMD``), checked with a stand-in for
htsim_hpcc: a small script that reads the connection matrix it is given as htsim does and prints a
finish line per connection, so the tests need no htsim build."""
import json
import subprocess
import sys

import pytest

from conftest import stand_in
from wormhole.bench import kernel_main
from wormhole.workload.htsim import read_cm

# The stand-in: checks its arguments, then prints htsim's "Flow ... finished at T total bytes B" for every
# connection (T = 100 + its index, us), or fails when FAKE_FAIL is set; logs the node count it was given.
FAKE = r'''#!%s
import os, sys
a = sys.argv[1:]
opt = dict(zip(a[::2], a[1::2]))
assert opt["-strat"] == "ecmp_host" and opt["-paths"] == "16", a
if os.environ.get("FAKE_FAIL"):
    print("Unknown queue type"); sys.exit(1)
conns = [l for l in open(opt["-tm"]).read().splitlines() if "->" in l]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write("%%s %%d %%s\n" %% (opt["-nodes"], len(conns), opt["-tm"]))
for k, c in enumerate(conns):
    print("Flow hpcc_%%d finished at %%d total bytes 1000000" %% (k, 100 + k))
''' % sys.executable


@pytest.fixture
def fake(tmp_path, monkeypatch):
    return stand_in(tmp_path, monkeypatch, "htsim_hpcc", FAKE)


def test_kernel_bench_runs_the_same_permutation_on_htsim(fake, capsys, tmp_path):
    kernel_main(["--only", "htsim_fattree8_perm_9KB", "--repeat", "1", "--json", "--no-reference",
                 "--htsim", str(fake)])
    r = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    h = r["htsim"]
    assert r["cc"] == "hpcc" and r["flows_completed"] == 128
    assert h["flows"] == 128 and h["flows_finished"] == 128
    assert h["fct_mean_us"] == pytest.approx(100 + 127 / 2)
    assert h["setup_seconds"] > 0 and h["wall_seconds"] > 0 and "ratio_run" in h
    assert 150 < r["fct_mean_us"] < 1000        # 1 MB at 100 Gb/s: 80 us alone, more when paths collide
    log = [l.split() for l in (tmp_path / "log.txt").read_text().splitlines()]
    assert [(n, c) for n, c, _ in log] == [("128", "0"), ("128", "128")]     # its set-up alone, then the flows


def test_a_permutation_written_for_htsim_is_a_permutation(tmp_path):
    from wormhole.bench import htsim_permutation
    from wormhole.workload.htsim import cm_text, network_connections
    net = htsim_permutation(8)()
    path = tmp_path / "p.cm"
    path.write_text(cm_text(*network_connections(net)))
    cm = read_cm(str(path))
    conns = cm.connections
    assert sorted(c.src for c in conns) == list(range(128)) == sorted(c.dst for c in conns)
    assert all(c.src != c.dst and c.size == 1_000_000 for c in conns)


def test_a_failing_or_missing_htsim_is_one_line_exit_2(fake, monkeypatch):
    p = subprocess.run([sys.executable, "-m", "wormhole.bench", "kernel", "--only", "htsim_fattree8_perm_9KB",
                        "--htsim", "/no/such/htsim_hpcc"], capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().count("\n") == 0 and "/no/such/htsim_hpcc" in p.stderr
    monkeypatch.setenv("FAKE_FAIL", "1")
    p = subprocess.run([sys.executable, "-m", "wormhole.bench", "kernel", "--only", "htsim_fattree8_perm_9KB",
                        "--repeat", "1", "--no-reference", "--htsim", str(fake)], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "exit status 1" in p.stderr and "Unknown queue type" in p.stderr
