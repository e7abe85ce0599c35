"""The Network API as another simulator's system layer would drive it."""
import numpy as np
import pytest

import wormhole as wh
from wormhole.units import US


def test_completion_callback_can_chain_flows():
    net = wh.Network(wh.star(3))
    log = []

    def second_done(r):
        log.append(("second", r.finish))

    def first_done(r):
        log.append(("first", r.finish))
        fid = net.send(1, 2, 50_000, on_done=second_done)
        assert net.flow(fid).start == r.finish == net.now

    net.send(0, 1, 100_000, on_done=first_done)
    net.run()
    assert [x[0] for x in log] == ["first", "second"]
    res = net.results
    assert res["start"][1] == res["finish"][0]
    assert (res["fct"] > 0).all()


def test_schedule_fires_in_order_at_the_right_time():
    net = wh.Network(wh.star(2))
    seen = []
    net.schedule(5 * US, lambda: seen.append(("b", net.now)))
    net.schedule(2 * US, lambda: seen.append(("a", net.now)))
    net.schedule(5 * US, lambda: seen.append(("c", net.now)))

    def nested():
        seen.append(("d", net.now))
        net.schedule(0, lambda: seen.append(("e", net.now)))

    net.schedule(7 * US, nested)
    net.run()
    assert seen == [("a", 2 * US), ("b", 5 * US), ("c", 5 * US), ("d", 7 * US), ("e", 7 * US)]


def test_compute_then_send_like_a_system_layer():
    """A rank computes for 10 us, then sends; the receiver's next step starts
    when the data is there."""
    net = wh.Network(wh.star(3))
    done = {}

    def step2(r):
        done["step2"] = net.now

    def step1(r):
        net.schedule(10 * US, lambda: net.send(1, 2, 20_000, on_done=step2))

    net.schedule(10 * US, lambda: net.send(0, 1, 20_000, on_done=step1))
    net.run()
    res = net.results
    assert res["start"][0] == 10 * US
    assert res["start"][1] == res["finish"][0] + 10 * US
    assert done["step2"] == res["finish"][1]


def test_run_until_then_resume():
    net = wh.Network(wh.star(3))
    a = net.send(0, 2, 1_000_000)
    net.run(until=20 * US)
    assert net.now == 20 * US
    assert net.flow(a).fct == -1
    net.run()
    assert net.flow(a).fct > 0
    ref = wh.Network(wh.star(3))
    b = ref.send(0, 2, 1_000_000)
    ref.run()
    assert ref.flow(b).fct == net.flow(a).fct


def test_networks_do_not_interfere():
    def build():
        net = wh.Network(wh.dumbbell(2, 2), seed=5, kmin_map="1 100000000000 5",
                         kmax_map="1 100000000000 50")
        for i in range(2):
            net.send(i, 2 + i, 300_000)
        return net

    alone = build()
    alone.run()
    x, y = build(), build()
    x.run(until=50 * US)
    y.run()
    x.run()
    for n in (x, y):
        assert np.array_equal(n.results, alone.results)
        assert n.fct_lines() == alone.fct_lines()


def test_results_and_stats_fields():
    net = wh.Network(wh.star(2))
    net.send(0, 1, 10_000)
    net.run()
    r = net.results
    assert r.dtype.names == ("id", "src", "dst", "sport", "dport", "size", "start", "finish", "fct",
                             "standalone_fct", "delivered")
    st = net.stats
    for k in ("events", "events_by_kind", "data_packets", "drops", "pfc_pauses", "wall_seconds",
              "sim_time_ps"):
        assert k in st
    assert st["events"] == sum(st["events_by_kind"].values())
    assert st["data_packets"] == 10


def test_source_ports_count_per_host_pair():
    net = wh.Network(wh.star(3))
    net.send(0, 2, 1000)
    net.send(0, 2, 1000)
    net.send(1, 2, 1000)
    r = net.results
    assert list(r["sport"]) == [10000, 10001, 10000]


@pytest.mark.parametrize("args,err", [
    ((0, 0, 100), "dst"),
    ((0, 1, -5), "nbytes"),
    ((0, 1, 0), "nbytes"),
    ((0, 1, 1.5), "nbytes"),
    ((0, 1, "5 apples"), "nbytes"),
    ((0, 2, 100), "dst"),      # node 2 is the switch of star(2)
    ((0, 99, 100), "dst"),
    ((0, 1, 100, "5 parsecs"), "at"),
])
def test_bad_send(args, err):
    """API misuse is an ApiError (a WormholeError) naming the argument."""
    net = wh.Network(wh.star(2))
    with pytest.raises(wh.ApiError) as e:
        net.send(*args)
    assert e.value.argument == err and err in str(e.value) and isinstance(e.value, wh.WormholeError)


def test_send_in_the_past_is_rejected():
    net = wh.Network(wh.star(2))
    net.run(until=5 * US)
    with pytest.raises(wh.ApiError, match="at is in the past"):
        net.send(0, 1, 100, at=1 * US)


def test_unknown_backend_is_a_named_error():
    with pytest.raises(wh.ApiError, match="backend"):
        wh.Network(wh.star(2), backend="fluid")
