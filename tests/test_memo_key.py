"""The memo key: every parameter that changes dynamics, and the fabric-wide
window and base RTT, so that one database shared by several configurations or
fabrics gives each exactly the results it gets with a database of its own."""
import os

import pytest

import wormhole as wh
from wormhole.accel.memo import parameters_key
from wormhole.config import ONLY_DEFAULT, PARAMS, _p
from wormhole.units import US

from conftest import contest_rounds

# Parameters that cannot change what a packet simulation computes, and why.  A
# parameter moved here (or added with dynamics=False) must be argued for here.
NOT_DYNAMICS = {
    "preset": "selects defaults: the values it gives are in the key themselves",
    "preset_gbps": "the same: rate_ai, rate_hai, int_multi, buffer_size and the ECN maps are in the key",
    "dynamic_pfc_threshold": "no effect (the switch always uses the dynamic threshold)",
    "pause_time": "no effect (a pause holds until a resume)",
    "simulator_stop_time": "stops the clock; a convergence cut by it is never stored",
    "max_flows": "a limit: exceeding it raises",
    "max_packets": "a limit: exceeding it raises",
    "sample_interval": "records samples, changes no packet",
    "accelerate": "always on when the memo is used",
    "memo": "always on when the memo is used",
    "memo_db": "where the entries are",
    "memo_mirrors": "mirrors store no entry: every entry comes from a partition simulated packet by packet",
    "threads": "the partitioned kernel takes no accelerator (refused), so never a memo key",
    "lps": "the same (and a cut never changes the outcome)",
    "tie_order": "the accelerator runs with the reference order only (local is refused with it)",
    "event_queue": "the same order of events either way (tests/test_event_queue.py)",
    "flow_model": "flow backend only",
    "flow_window": "flow backend only",
    "flow_tcp_gamma": "flow backend only",
    "flow_crosstraffic": "flow backend only",
    "pint_log_base": "no effect (HPCC-PINT is not implemented)",
    "pint_prob": "no effect (HPCC-PINT is not implemented)",
}


def test_every_parameter_is_classified():
    for p in PARAMS:
        assert isinstance(p.dynamics, bool), p.name
    assert {p.name for p in PARAMS if not p.dynamics} == set(NOT_DYNAMICS)
    with pytest.raises(TypeError):
        _p("new_knob", "int", 1, "a parameter added without saying whether it changes dynamics", int)


def _other_value(p, base, tmp_path):
    """A valid value of ``p`` that differs from its value in ``base``."""
    special = {"cc": "dctcp", "ecn_rng": "splitmix", "route_order": "id", "kmin_map": "1 100000000000 77",
               "kmax_map": "1 100000000000 777", "pmax_map": "1 100000000000 0.5", "preset": "none",
               "flow_model": "maxmin", "memo_db": str(tmp_path / "elsewhere.sqlite"), "preset_gbps": 25,
               "event_queue": "heap"}
    cur = base[p.name]
    if p.name in special:
        return special[p.name]
    if isinstance(cur, bool):
        return not cur
    cands = [2 * cur + 1 if cur is not None else 1, cur + 1 if cur is not None else 2, p.lo, p.hi]
    for v in cands:
        if v is None or v == cur:
            continue
        try:
            c = base.copy(**{p.name: v})
        except wh.ConfigError:
            continue
        if c[p.name] != cur:
            return v
    raise AssertionError("no other value for %s" % p.name)


def test_each_dynamics_parameter_changes_the_key_and_no_other_does(tmp_path):
    base = wh.Config(cc="hpcc", accelerate=True)
    topo = wh.star(3)
    key0 = parameters_key(wh.Network(topo, base))
    for p in PARAMS:
        if p.name in ONLY_DEFAULT:           # one accepted value: nothing to vary
            continue
        if p.name in ("threads", "tie_order"):      # other values refused with the accelerator
            with pytest.raises(wh.ConfigError):
                wh.Network(topo, base.copy(**{p.name: {"threads": 2, "tie_order": "local"}[p.name]}))
            continue
        v = _other_value(p, base, tmp_path)
        cfg = base.copy(**{p.name: v})
        key = parameters_key(wh.Network(topo, cfg))
        if p.dynamics or p.name in ("preset", "preset_gbps"):
            assert key != key0, (p.name, v)
        else:
            assert key == key0, (p.name, v)


def test_fabric_wide_window_and_rtt_are_in_the_key_under_global_t():
    near, far = wh.dumbbell(2, 2), far_dumbbell(20)
    assert parameters_key(wh.Network(near, cc="hpcc")) != parameters_key(wh.Network(far, cc="hpcc"))
    # each flow uses its own pair's window and RTT without global_t: those are in its colour instead
    assert (parameters_key(wh.Network(near, cc="hpcc", global_t=False))
            == parameters_key(wh.Network(far, cc="hpcc", global_t=False)))


def far_dumbbell(extra_delay_us):
    """dumbbell(2, 2) and a fifth host on a long link: a larger fabric-wide max RTT
    and BDP, with the paths of the hosts 0..3 unchanged."""
    g = wh.dumbbell(2, 2).to_networkx()
    sw = min(n for n, d in g.nodes(data=True) if d["kind"] == "switch")
    h = max(g.nodes) + 1
    g.add_node(h, kind="host")
    g.add_edge(h, sw, rate="100Gbps", delay=int(extra_delay_us * US))
    return wh.Topology.from_networkx(g)


def contests(topo, db, cc="hpcc", rounds=3, **cfg):
    """Rounds of two 5 MB flows through the dumbbell's bottleneck, 10 us apart."""
    return contest_rounds(wh.Network(topo, wh.Config(cc=cc, accelerate=True, memo_db=db, **cfg)), 5_000_000, rounds)


# (name, cc, (topology, parameters) of A, the same of B): B differs from A in one
# thing the old key (16 hand-picked parameters) left out
CASES = [
    ("fabric size", "hpcc", ("near", {}), ("far", {})),
    ("global_t", "hpcc", ("far5", {"global_t": False}), ("far5", {})),
    ("kmin_map", "dctcp", ("far5", {}), ("far5", {"kmin_map": "2 100000000000 100 400000000000 400",
                                                  "kmax_map": "2 100000000000 100 400000000000 400"})),
    ("l2_ack_interval", "hpcc", ("near", {}), ("near", {"l2_ack_interval": 4000})),
    ("int_multi", "hpcc", ("near", {}), ("near", {"int_multi": 8})),
]
TOPOS = {"near": lambda: wh.dumbbell(2, 2), "far": lambda: far_dumbbell(20), "far5": lambda: far_dumbbell(5)}


@pytest.mark.parametrize("name,cc,a,b", CASES, ids=[c[0] for c in CASES])
def test_a_shared_database_gives_each_configuration_its_own_results(tmp_path, name, cc, a, b):
    shared, own = str(tmp_path / "shared.sqlite"), str(tmp_path / "own.sqlite")
    first = contests(TOPOS[a[0]](), shared, cc, **a[1])
    assert first.stats["memo_stored"] >= 1          # the shared database holds A's convergences
    b_shared = contests(TOPOS[b[0]](), shared, cc, **b[1])
    b_own = contests(TOPOS[b[0]](), own, cc, **b[1])
    assert b_shared.fct_lines() == b_own.fct_lines()
    assert b_shared.stats["memo_hits"] == b_own.stats["memo_hits"]
    assert b_shared.stats["events"] == b_own.stats["events"]
    # and A still replays its own entries from the shared database
    again = contests(TOPOS[a[0]](), shared, cc, **a[1])
    assert again.stats["memo_hits"] >= first.stats["memo_hits"]
    assert os.path.getsize(shared) > 0
