import json
import os

import pytest

from conftest import parse_fct, run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_run_reference_config_writes_reference_columns(data_dir, tmp_path):
    out = tmp_path / "out"
    stats = tmp_path / "stats.json"
    cfg = os.path.join(data_dir, "hpcc-ns3-runs", "ring_intra_dcqcn", "config.txt")
    p = run_cli("run", "--config", cfg, "--cc", "none", "--out", str(out), "--stats-json", str(stats))
    assert p.returncode == 0, p.stderr
    ours = parse_fct(out / "fct.txt")
    ref = parse_fct(os.path.join(data_dir, "hpcc-ns3-runs", "ring_intra_dcqcn", "fct.txt"))
    assert ours == ref
    assert (out / "pfc.txt").exists()
    st = json.loads(stats.read_text())
    for k in ("events", "wall_seconds", "packets", "drops", "pfc_pauses", "sim_end_ns"):
        assert k in st
    assert "M events/s" in p.stdout


def test_run_with_explicit_files(data_dir, tmp_path):
    d = os.path.join(data_dir, "hpcc-ns3-runs", "incast2_hpcc")
    p = run_cli("run", "--topology", os.path.join(d, "topology.txt"), "--flows", os.path.join(d, "flow.txt"),
                "--out", str(tmp_path / "o"), "--quiet")
    assert p.returncode == 0, p.stderr
    lines = (tmp_path / "o" / "fct.txt").read_text().splitlines()
    assert len(lines) == 2 and all(len(l.split()) == 8 for l in lines)


@pytest.mark.parametrize("mutate", ["bad_topology", "bad_flows", "bad_config", "no_out"])
def test_bad_input_one_line_exit_2_nothing_written(data_dir, tmp_path, mutate):
    d = os.path.join(data_dir, "hpcc-ns3-runs", "incast2_hpcc")
    topo, flows = os.path.join(d, "topology.txt"), os.path.join(d, "flow.txt")
    args = ["run", "--topology", topo, "--flows", flows, "--out", str(tmp_path / "o")]
    if mutate == "bad_topology":
        bad = tmp_path / "t.txt"
        bad.write_text("4 1 3\n3\n0 3 100Gbps 0.001ms 0\n1 3 100Gbps 0.001ms 0\n2 9 100Gbps 0.001ms 0\n")
        args[2] = str(bad)
    elif mutate == "bad_flows":
        bad = tmp_path / "f.txt"
        bad.write_text("2\n0 2 3 100 -1 0\n1 2 3 100 10 0\n")
        args[4] = str(bad)
    elif mutate == "bad_config":
        bad = tmp_path / "c.txt"
        bad.write_text("CC_MODE 3\nBOGUS 1\n")
        args += ["--config", str(bad)]
    else:
        args = args[:-2]
    p = run_cli(*args)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "o").exists()


def test_params_prints_registry():
    p = run_cli("params")
    assert p.returncode == 0 and "`buffer_size`" in p.stdout


def test_fidelity_command_writes_csv_json_and_plot(data_dir, tmp_path):
    cfg = os.path.join(data_dir, "hpcc-ns3-runs", "incast8_hpcc", "config.txt")
    for backend in ("packet", "flow"):
        out = tmp_path / backend
        p = run_cli("fidelity", "--config", cfg, "--backend", backend, "--out", str(out))
        assert p.returncode == 0, p.stderr
        summary = json.loads((out / "summary.json").read_text())
        assert summary["flows"] == 8 and "fct_err_p99_pct" in summary and "skipped_pct" in summary
        assert (out / "fidelity.csv").read_text().count("\n") == 9
        assert (out / "fidelity.png").stat().st_size > 0
