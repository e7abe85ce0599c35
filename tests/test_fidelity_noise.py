"""bench/accel_fidelity.py --noise: a perturbation that changes no event time is reported as such, not as
a noise floor of zero (1 ppm slower links are absorbed where no CC reads a link's rate and transmission
times truncate to whole ns: TIMELY on the k=8 fat-tree at 64 GPUs gave the very same run)."""
import importlib.util
import os

import numpy as np

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
