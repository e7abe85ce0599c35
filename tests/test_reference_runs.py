"""The reference simulator's own runs (tests/data/hpcc-ns3-runs, copied from
../shared/reference) and runs of flows joining running ones made for this
project (tests/data/ref_join): same inputs, every flow's FCT equal to the
nanosecond, for HPCC, DCQCN, TIMELY and DCTCP.  DCQCN's probabilistic ECN marks follow the
reference's random streams (ecn_rng=ns3, the default)."""
import os

import pytest

import wormhole as wh
from wormhole.ns3rng import first_draw, setup_streams

from conftest import DATA, parse_fct, run_dir

RUNS = os.path.join(DATA, "hpcc-ns3-runs")
CASES = sorted(n for n in os.listdir(RUNS) if os.path.isdir(os.path.join(RUNS, n)))


def test_all_twelve_runs_are_present():
    assert len(CASES) == 12
    assert {c.rsplit("_", 1)[1] for c in CASES} == {"hpcc", "dcqcn", "timely", "dctcp"}


@pytest.mark.parametrize("case", CASES)
def test_fct_equal_to_the_reference(case):
    d = os.path.join(RUNS, case)
    net, ours = run_dir(d)
    assert ours == parse_fct(os.path.join(d, "fct.txt"))


def test_dcqcn_on_a_fat_tree_equal_to_the_reference():
    """A k=4 fat-tree (36 nodes) DCQCN incast run through the reference built
    here: the stream sequence and its set-up offset hold beyond one switch."""
    d = os.path.join(DATA, "ref_dcqcn_fattree4")
    net, ours = run_dir(d)
    assert net.stats["ecn_marks"] > 0
    assert ours == parse_fct(os.path.join(d, "fct.txt"))


JOIN = os.path.join(DATA, "ref_join")
JOIN_CASES = sorted(n for n in os.listdir(JOIN) if os.path.isdir(os.path.join(JOIN, n)))


@pytest.mark.parametrize("case", JOIN_CASES)
def test_flows_joining_a_running_bottleneck_equal_to_the_reference(case):
    """Flows that start while others run (staggered starts, one long flow with
    short ones arriving one by one, random arrivals on a star and a leaf-spine),
    run through the reference built here: a queue pair joins its NIC only after
    every event already due at its start time, as the reference's two chained
    start events make it (a packet another flow sends in that nanosecond goes
    first), which decides who is dequeued first at the switch."""
    d = os.path.join(JOIN, case)
    net, ours = run_dir(d)
    assert ours == parse_fct(os.path.join(d, "fct.txt"))


def test_join_cases_cover_every_algorithm():
    assert len(JOIN_CASES) >= 10
    assert {c.rsplit("_", 1)[1] for c in JOIN_CASES} == {"hpcc", "dcqcn", "timely", "dctcp"}


def test_another_random_stream_changes_dcqcn_but_stays_close():
    d = os.path.join(RUNS, "incast8_dcqcn")
    ref = parse_fct(os.path.join(d, "fct.txt"))
    _, other = run_dir(d, ecn_rng="splitmix", seed=7)
    errs = [abs(other[k][2] - v[2]) / v[2] for k, v in ref.items()]
    assert 0 < max(errs) < 0.1


def test_mrg32k3a_streams_match_the_reference_library():
    # first RandU01 of RngStream(seed 1, stream s, run 1), printed by ns-3.17's own library
    assert [round(first_draw(s), 6) for s in range(4)] == [0.816532, 0.83515, 0.943898, 0.985291]
    assert setup_streams(wh.star(3)) == 26 and setup_streams(wh.star(9)) == 62
