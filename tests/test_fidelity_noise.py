"""The noise floor of a fidelity report (``python -m wormhole fidelity --noise``, bench/accel_fidelity.py
--noise): the full run against itself with every link 1 ns longer; a perturbation that changes no event
time is reported as such, not as a floor of zero (1 ppm slower links are absorbed where no CC reads a
link's rate and transmission times truncate to whole ns: TIMELY on the k=8 fat-tree at 64 GPUs gave the
very same run)."""
import importlib.util
import json
import os

import numpy as np
import pytest

import wormhole as wh
from conftest import run_cli
from wormhole.fidelity import longer_bench_argv, longer_links, same_run
from wormhole.runner import default_fabric, workload_parser

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("accel_fidelity", os.path.join(HERE, "bench", "accel_fidelity.py"))
fid = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fid)


def _run(fct, it):
    return (None, 1.0, np.array(fct, dtype=float), it)


def test_same_run_needs_every_message_and_the_iteration():
    a = _run([5.0, 7.0, 9.0], 100)
    assert same_run(a, _run([5.0, 7.0, 9.0], 100))
    assert not same_run(a, _run([5.0, 7.0, 9.5], 100))      # one message moved
    assert not same_run(a, _run([5.0, 7.0, 9.0], 101))      # the iteration moved
    assert not same_run(a, _run([5.0, 7.0], 100))           # a message missing


def _row(same):
    return {"row": "fattree", "cc": "timely", "gpus": 64, "iteration_err_pct": 0.17, "fct_err_mean_pct": 10.9,
            "fct_err_p99_pct": 127.6, "fct_err_max_pct": 313.5, "skipped_pct": 0.881, "accounted_vs_full_pct": -0.05,
            "wall_full_s": 16.8, "wall_accelerated_s": 18.7,
            "noise_floor": {"iteration_err_pct": 0.0, "fct_err_mean_pct": 0.0, "fct_err_p99_pct": 0.0,
                            "rank_p99_pct": None, "same_run": same, "kind": "rate"}}


def test_an_unchanged_run_is_no_floor_of_zero():
    line = fid.format_row(_row(True))
    assert "no noise floor measured" in line and "mean 0.000" not in line
    line = fid.format_row(_row(False))
    assert "mean 0.000" in line and "no noise floor" not in line


def test_longer_links_add_one_ns_to_every_link(tmp_path):
    """A topology file is copied with every link's delay 1 ns longer (whatever its unit), the rest as it
    was; the default fabric gets its --delay plus 1 ns."""
    src = tmp_path / "topo.txt"
    src.write_text("4 1 3\n3\n0 3 100Gbps 1000ns 0\n1 3 100Gbps 0.002ms 0\n2 3 25Gbps 1us 0\n")
    (tmp_path / "o").mkdir()
    argv = longer_bench_argv(["gpt13b", "--topology", str(src), "--gpus", "8"], str(tmp_path / "o"))
    new = workload_parser().parse_args(argv).topology
    assert new != str(src) and argv[:5] == ["gpt13b", "--topology", str(src), "--gpus", "8"]
    a, b = wh.read_topology(str(src)), wh.read_topology(new)
    assert [lk.delay_ps + 1000 for lk in a.links] == [lk.delay_ps for lk in b.links]
    assert [(lk.a, lk.b, lk.rate_bps) for lk in a.links] == [(lk.a, lk.b, lk.rate_bps) for lk in b.links]
    assert a.is_switch == b.is_switch
    for argv, want in ((["gpt13b", "--gpus", "8"], 1001.0), (["gpt13b", "--delay", "500", "--gpus", "8"], 501.0),
                       (["gpt13b", "--delay=2000", "--gpus", "8"], 2001.0)):
        out = longer_bench_argv(argv, str(tmp_path))
        assert workload_parser().parse_args(out).delay == want
        assert out == ["gpt13b", "--gpus", "8", "--delay", repr(want)]     # the user's --delay replaced, the rest kept


def test_longer_links_find_the_topology_in_either_form(tmp_path):
    """``--topology=FILE`` is a topology file too: its copy gets the longer links (not --delay, which the
    bench refuses beside a topology)."""
    src = tmp_path / "topo.txt"
    src.write_text("3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n")
    (tmp_path / "o").mkdir()
    for form in (["--topology=%s" % src], ["--topology", str(src)], ["--topo", str(src)], ["--topo=%s" % src]):
        argv = longer_bench_argv(["gpt13b"] + form + ["--gpus", "8"], str(tmp_path / "o"))
        assert argv[:len(form) + 3] == ["gpt13b"] + form + ["--gpus", "8"]     # the user's arguments kept
        args = workload_parser().parse_args(argv)
        assert args.topology != str(src) and not any(a.startswith("--delay") for a in argv)
        assert [lk.delay_ps for lk in wh.read_topology(args.topology).links] == [1_001_000, 1_001_000]


def test_longer_links_replace_the_topology_the_parser_takes(tmp_path):
    """Named twice, the parser takes the last --topology: that one is copied, and the copy is taken."""
    first, last = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n")
    last.write_text("3 1 2\n2\n0 2 100Gbps 2000ns 0\n1 2 100Gbps 2000ns 0\n")
    (tmp_path / "o").mkdir()
    argv = longer_bench_argv(["gpt13b", "--topology", str(first), "--topology", str(last)], str(tmp_path / "o"))
    assert argv[:5] == ["gpt13b", "--topology", str(first), "--topology", str(last)]
    taken = workload_parser().parse_args(argv).topology
    assert taken not in (str(first), str(last))
    assert [lk.delay_ps for lk in wh.read_topology(taken).links] == [2_001_000, 2_001_000]
    # the last one abbreviated: still the one the parser takes, and its copy is taken
    argv = longer_bench_argv(["gpt13b", "--topology", str(first), "--topo", str(last)], str(tmp_path / "o"))
    taken = workload_parser().parse_args(argv).topology
    assert [lk.delay_ps for lk in wh.read_topology(taken).links] == [2_001_000, 2_001_000]


def test_longer_links_keeps_names_and_domains():
    topo = wh.rail_optimized(16)
    longer = longer_links(topo)
    assert longer.names == topo.names and longer.gpus_per_server == topo.gpus_per_server
    assert [lk.delay_ps - 1000 for lk in longer.links] == [lk.delay_ps for lk in topo.links]


def test_delay_option_shapes_the_default_fabric():
    topo = default_fabric(workload_parser().parse_args(["gpt13b", "--gpus", "16", "--delay", "1001"]))
    assert {lk.delay_ps for lk in topo.links} == {1_001_000}
    topo = default_fabric(workload_parser().parse_args(["gpt13b", "--gpus", "16"]))
    assert {lk.delay_ps for lk in topo.links} == {1_000_000}


def test_a_bad_delay_is_one_line_and_exit_2(capsys):
    for bad in ("0", "-3", "abc", "nan"):
        with pytest.raises(SystemExit) as e:
            workload_parser().parse_args(["gpt13b", "--delay", bad])
        assert e.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--delay" in err[0] and repr(bad) in err[0]


def test_fidelity_command_reports_the_noise_floor(data_dir, tmp_path):
    cfg = os.path.join(data_dir, "hpcc-ns3-runs", "incast8_hpcc", "config.txt")
    p = run_cli("fidelity", "--config", cfg, "--noise", "--out", str(tmp_path / "o"))
    assert p.returncode == 0, p.stderr
    nf = json.loads((tmp_path / "o" / "summary.json").read_text())["noise_floor"]
    assert nf["perturbation"] == "every link 1 ns longer" and not nf["same_run"]
    assert nf["fct_err_mean_pct"] > 0 and nf["fct_err_p99_pct"] >= nf["fct_err_mean_pct"]
    line = [x for x in p.stdout.splitlines() if x.startswith("full vs full")]
    assert len(line) == 1 and "every link 1 ns longer" in line[0] and "%.4f%%" % nf["fct_err_mean_pct"] in line[0]


def test_fidelity_command_reports_the_noise_floor_of_a_training_run(tmp_path):
    p = run_cli("fidelity", "--noise", "--out", str(tmp_path / "o"), "--bench", "gpt13b", "--gpus", "16",
                "--layers", "1")
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    nf = s["noise_floor"]
    assert not nf["same_run"] and "iteration_err_pct" in nf and nf["fct_err_max_pct"] >= nf["fct_err_mean_pct"] > 0
    assert s["workload"].endswith("gpt13b --gpus 16 --layers 1")       # the report names the user's run, not the copy
