"""The kernel benchmark's reference columns (wormhole/refsim.py, ``bench kernel --reference``), checked
with a stand-in for the reference: a small script that reads config.txt as the reference does and
writes the FCT file it is given, so the tests need no ns-3 build."""
import json
import os
import subprocess
import sys

import pytest

from conftest import stand_in
from wormhole import refsim
from wormhole.bench import kernel_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASE = os.path.join(ROOT, "tests", "data", "hpcc-ns3-runs", "incast8_hpcc")

# The stand-in: checks its inputs exist, then copies $FAKE_FCT to FCT_OUTPUT_FILE unless its stop time
# comes before the first flow (a set-up-only run writes no FCT), and logs the config it saw.
FAKE = r'''#!%s
import os, shutil, sys
cfg = dict(l.split(None, 1) for l in open(sys.argv[1]).read().splitlines() if len(l.split(None, 1)) == 2)
cfg = {k: v.strip() for k, v in cfg.items()}
for k in ("TOPOLOGY_FILE", "FLOW_FILE"):
    assert os.path.isabs(cfg[k]) and os.path.isfile(cfg[k]), cfg[k]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(cfg["SIMULATOR_STOP_TIME"] + " " + cfg["FCT_OUTPUT_FILE"] + "\n")
if os.environ.get("FAKE_FAIL"):
    print("assertion failed in RdmaHw"); sys.exit(3)
first = min(float(l.split()[5]) for l in open(cfg["FLOW_FILE"]).read().splitlines()[1:] if l.strip())
if float(cfg["SIMULATOR_STOP_TIME"]) > first:
    shutil.copy(os.environ["FAKE_FCT"], cfg["FCT_OUTPUT_FILE"])
''' % sys.executable


@pytest.fixture
def fake(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_FCT", os.path.join(CASE, "fct.txt"))
    return stand_in(tmp_path, monkeypatch, "third", FAKE)


def test_rewrite_config_makes_inputs_absolute_and_redirects_outputs(tmp_path):
    text = ("TOPOLOGY_FILE topo/t.txt\nFLOW_FILE f.txt\nTRACE_FILE tr.txt\nFCT_OUTPUT_FILE out/fct.txt\n"
            "PFC_OUTPUT_FILE pfc.txt\nSIMULATOR_STOP_TIME 3\nCC_MODE 3\n")
    out = refsim.rewrite_config(text, "/data/in", str(tmp_path), stop_s=1.999999999)
    lines = dict(l.split(None, 1) for l in out.splitlines())
    assert lines["TOPOLOGY_FILE"] == "/data/in/topo/t.txt"
    assert lines["FLOW_FILE"] == "/data/in/f.txt"
    assert lines["TRACE_FILE"] == "/data/in/tr.txt"
    assert lines["FCT_OUTPUT_FILE"] == os.path.join(str(tmp_path), "fct.txt")
    assert lines["PFC_OUTPUT_FILE"] == os.path.join(str(tmp_path), "pfc.txt")
    assert float(lines["SIMULATOR_STOP_TIME"]) == pytest.approx(1.999999999, abs=1e-12)
    assert lines["CC_MODE"] == "3"
    # without a stop time the config's own is kept
    assert "SIMULATOR_STOP_TIME 3" in refsim.rewrite_config(text, "/d", str(tmp_path)).splitlines()


def test_first_start_is_one_ns_before_the_earliest_flow():
    class F:
        def __init__(self, t):
            self.start_ps = t
    assert refsim.first_start_s([F(2_000_000_000_000), F(1_500_000_000_000)]) == pytest.approx(1.499999999)


def test_parse_command_names_a_missing_program():
    with pytest.raises(refsim.ReferenceError, match="no/such/third"):
        refsim.parse_command("env LD_LIBRARY_PATH=/x no/such/third")
    with pytest.raises(refsim.ReferenceError, match="names no program"):
        refsim.parse_command("env A=1")
    assert refsim.parse_command("env A=1 %s" % sys.executable)[-1] == sys.executable


def test_run_reports_the_fct_and_leaves_the_input_untouched(fake, tmp_path):
    before = sorted(os.listdir(CASE))
    r = refsim.run([str(fake)], CASE)
    assert r["fct"] == open(os.path.join(CASE, "fct.txt"), "rb").read()
    assert r["wall_seconds"] > 0
    pre = refsim.run([str(fake)], CASE, stop_s=-1e-9)    # this input's flows start at 0
    assert pre["fct"] is None
    assert sorted(os.listdir(CASE)) == before
    log = (tmp_path / "log.txt").read_text().split("\n")
    assert not log[0].split()[1].startswith(CASE) and log[0].split()[1].endswith("fct.txt")


def test_a_failing_reference_is_an_error_naming_the_folder(fake, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "1")
    with pytest.raises(refsim.ReferenceError, match=r"incast8_hpcc/config.txt: .*status 3: assertion failed"):
        refsim.run([str(fake)], CASE)


def test_kernel_bench_compares_with_the_reference(fake, capsys, tmp_path):
    kernel_main(["--only", "incast8_hpcc", "--repeat", "1", "--json", "--reference", str(fake),
                 "--reference-setup"])
    r = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    q = r["reference"]
    assert q["fct_identical"] is True          # the stand-in wrote the reference's own fct.txt: ours equals it
    assert q["setup_seconds"] > 0 and q["ratio_whole"] > 0 and "ratio_run" in q
    # a reference whose output differs by one byte is reported as different
    bad = tmp_path / "bad_fct.txt"
    text = open(os.path.join(CASE, "fct.txt")).read()
    bad.write_text(text[:-2] + ("0" if text[-2] != "0" else "1") + text[-1])
    os.environ["FAKE_FCT"] = str(bad)
    kernel_main(["--only", "incast8_hpcc", "--repeat", "1", "--json", "--reference", str(fake)])
    r = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert r["reference"]["fct_identical"] is False and "ratio_run" not in r["reference"]


def test_kernel_cli_missing_reference_is_one_line_exit_2():
    p = subprocess.run([sys.executable, "-m", "wormhole.bench", "kernel", "--only", "incast8_hpcc",
                        "--reference", "/no/such/third"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "/no/such/third" in p.stderr
    assert p.stdout == ""
