"""bench/accel_fidelity.py --noise: a perturbation that changes no event time is reported as such, not as
a noise floor of zero (1 ppm slower links are absorbed where no CC reads a link's rate and transmission
times truncate to whole ns: TIMELY on the k=8 fat-tree at 64 GPUs gave the very same run)."""
import importlib.util
import os

import numpy as np

import wormhole as wh
from wormhole.runner import default_fabric, workload_parser

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("accel_fidelity", os.path.join(HERE, "bench", "accel_fidelity.py"))
fid = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fid)


def _run(fct, it):
    return (None, 1.0, np.array(fct, dtype=float), it)


def test_same_run_needs_every_message_and_the_iteration():
    a = _run([5.0, 7.0, 9.0], 100)
    assert fid.same_run(a, _run([5.0, 7.0, 9.0], 100))
    assert not fid.same_run(a, _run([5.0, 7.0, 9.5], 100))      # one message moved
    assert not fid.same_run(a, _run([5.0, 7.0, 9.0], 101))      # the iteration moved
    assert not fid.same_run(a, _run([5.0, 7.0], 100))           # a message missing


def _row(identical):
    return {"row": "fattree", "cc": "timely", "gpus": 64, "iteration_err_pct": 0.17, "fct_err_mean_pct": 10.9,
            "fct_err_p99_pct": 127.6, "fct_err_max_pct": 313.5, "skipped_pct": 0.881, "accounted_vs_full_pct": -0.05,
            "wall_full_s": 16.8, "wall_accelerated_s": 18.7,
            "noise_floor": {"iteration_err_pct": 0.0, "mean_pct": 0.0, "p99_pct": 0.0, "rank_p99_pct": None,
                            "identical": identical}}


def test_an_unchanged_run_is_no_floor_of_zero():
    line = fid.format_row(_row(True))
    assert "no noise floor measured" in line and "mean 0.000" not in line
    line = fid.format_row(_row(False))
    assert "mean 0.000" in line and "no noise floor" not in line


def test_longer_links_add_one_ns_to_every_link(tmp_path):
    """--noise delay: a topology file is copied with every link's delay 1 ns longer (whatever its unit), the
    rest of the file as it was; the default fabric gets --delay 1001."""
    src = tmp_path / "topo.txt"
    src.write_text("4 1 3\n3\n0 3 100Gbps 1000ns 0\n1 3 100Gbps 0.002ms 0\n2 3 25Gbps 1us 0\n")
    (tmp_path / "o").mkdir()
    argv = fid._longer_links(["gpt13b", "--topology", str(src), "--gpus", "8"], str(tmp_path / "o"))
    new = argv[argv.index("--topology") + 1]
    assert new != str(src) and argv[-2:] == ["--gpus", "8"]
    a, b = wh.read_topology(str(src)), wh.read_topology(new)
    assert [lk.delay_ps + 1000 for lk in a.links] == [lk.delay_ps for lk in b.links]
    assert [lk.rate_bps for lk in a.links] == [lk.rate_bps for lk in b.links]
    assert fid._longer_links(["gpt13b", "--gpus", "8"], str(tmp_path)) == ["gpt13b", "--gpus", "8", "--delay", "1001"]


def test_delay_option_shapes_the_default_fabric():
    topo = default_fabric(workload_parser().parse_args(["gpt13b", "--gpus", "16", "--delay", "1001"]))
    assert {lk.delay_ps for lk in topo.links} == {1_001_000}
    topo = default_fabric(workload_parser().parse_args(["gpt13b", "--gpus", "16"]))
    assert {lk.delay_ps for lk in topo.links} == {1_000_000}


def test_a_bad_delay_is_one_line_and_exit_2(capsys):
    import pytest
    for bad in ("0", "-3", "abc", "nan"):
        with pytest.raises(SystemExit) as e:
            workload_parser().parse_args(["gpt13b", "--delay", bad])
        assert e.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--delay" in err[0] and repr(bad) in err[0]
