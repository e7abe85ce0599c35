"""A flow's own congestion control (Network.send(..., cc=X)): the kernel's table
of operations is chosen per flow."""
import pytest

import wormhole as wh


def incast(cfg, per_flow=None, n=3, size=400_000):
    net = wh.Network(wh.star(n + 1), cfg)
    flows = [net.send(i, n, size, cc=per_flow) for i in range(n)]
    net.run()
    return net, flows


# ECN marking from the first queued KB, so that every algorithm reacts
MARKS = dict(kmin_map="1 100000000000 1", kmax_map="1 100000000000 10", pmax_map="1 100000000000 1.0")


@pytest.mark.parametrize("own, other", [("dctcp", "dcqcn"), ("dcqcn", "none"), ("none", "dctcp")])
def test_a_flow_of_its_own_algorithm_runs_as_in_a_configuration_of_it(own, other):
    """Same header (no INT), same parameters (the registry defaults): flows that
    choose ``own`` under a configuration of ``other`` run exactly as under ``own``."""
    ref, rf = incast(wh.Config.generic(cc=own, **MARKS))
    mixed, mf = incast(wh.Config.generic(cc=other, **MARKS), per_flow=own)
    assert [ref.flow(f).fct for f in rf] == [mixed.flow(f).fct for f in mf]
    assert [ref.cc_state(f) for f in rf] == [mixed.cc_state(f) for f in mf]
    assert mixed.cc_state(mf[0])["cc"] == own
    if own != "none":
        assert ref.stats["ecn_marks"] > 0


def test_mixed_algorithms_on_one_bottleneck():
    net = wh.Network(wh.star(3), wh.Config.generic(cc="dcqcn", **MARKS))
    a = net.send(0, 2, 2_000_000)
    b = net.send(1, 2, 2_000_000, cc="dctcp")
    c = net.connect(0, 2, cc="swift", dport=200)
    net.post(c, 500_000)
    net.run()
    assert net.stats["flows_completed"] == 2 and net.messages["done"][0] > 0
    sa, sb, sc = net.cc_state(a), net.cc_state(b), net.cc_state(c)
    assert (sa["cc"], sb["cc"], sc["cc"]) == ("dcqcn", "dctcp", "swift")
    assert "target_rate" in sa and "ca_state" in sb and "cwnd" in sc
    assert net.stats["events_by_kind"]["cc_timer"] > 0          # DCQCN's timers, for its flow only


def test_a_flow_cc_is_checked():
    net = wh.Network(wh.star(3), cc="dcqcn")
    with pytest.raises(wh.ApiError, match="one of"):
        net.send(0, 2, 1000, cc="reno")
    with pytest.raises(wh.ApiError, match="INT hop records"):
        net.send(0, 2, 1000, cc="hpcc")                          # DCQCN's packets carry no INT
    net.send(0, 2, 1000, cc="swift")                             # a timestamp is in every packet
    hp = wh.Network(wh.star(3), cc="hpcc")
    hp.send(0, 2, 1000, cc="dcqcn")
    hp.send(0, 2, 1000, cc="hpcc")
    acc = wh.Network(wh.star(3), cc="hpcc", accelerate=True)
    with pytest.raises(wh.ApiError, match="memo"):
        acc.send(0, 2, 1000, cc="dcqcn")
    wh.Network(wh.star(3), cc="hpcc", accelerate=True, memo=False).send(0, 2, 1000, cc="dcqcn")
    fl = wh.Network(wh.star(3), backend="flow")
    with pytest.raises(wh.NotAvailableError):
        fl.send(0, 2, 1000, cc="dcqcn")
