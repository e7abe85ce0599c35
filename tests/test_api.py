"""The Network API as another simulator's system layer uses it (issue 20):
on_delivered next to on_done, the messages table and result types, named
ports, unit-tagged arguments and ApiError, peek / step / run / fresh, and the
example ASTRA-sim frontend.  Each on the packet backend (full and accelerated)
and the flow backend."""
import os
import sys

import numpy as np
import pytest

import wormhole as wh
from wormhole.units import US, gbps, mb, us

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "examples"))

MODES = {"full": dict(), "accelerated": dict(accelerate=True), "flow": dict(backend="flow")}


def make(mode, topo=None, cc="none", **kw):
    kw = dict(MODES[mode], **kw)
    backend = kw.pop("backend", "packet")
    return wh.Network(topo or wh.leaf_spine(2, 2, 2), wh.Config(cc=cc, **kw), backend=backend)


# -- 1. on_delivered -------------------------------------------------------------
@pytest.mark.parametrize("mode", list(MODES))
def test_a_flow_is_delivered_before_it_is_done(mode):
    net = make(mode)
    log = []
    fid = net.send(0, 3, mb(1), on_delivered=lambda r: log.append(("delivered", net.now, r)),
                   on_done=lambda r: log.append(("done", net.now, r)))
    net.run()
    (k1, t1, r1), (k2, t2, r2) = log
    assert (k1, k2) == ("delivered", "done")
    assert r1.delivered == t1 and r2.finish == t2 and r2.delivered == t1
    row = net.results[fid]
    assert row["delivered"] == t1 and row["finish"] == t2
    if mode == "flow":
        assert t1 == t2                 # a fluid model has no ACKs
    else:
        # the ACK of the last packet travels back over 4 hops (1 us each, 60 B at 100 Gb/s) after the data
        assert 4 * US < t2 - t1 < 4 * US + 4 * 5000


@pytest.mark.parametrize("mode", list(MODES))
def test_messages_are_delivered_in_order_before_they_are_done(mode):
    net = make(mode, cc="hpcc")
    conn = net.connect(0, 3)
    got = {"delivered": [], "done": []}
    for _ in range(4):
        net.post(conn, "2MB", on_delivered=lambda m: got["delivered"].append((net.now, m)),
                 on_done=lambda m: got["done"].append((net.now, m)))
    net.run()
    assert [m.id for _, m in got["delivered"]] == [0, 1, 2, 3] == [m.id for _, m in got["done"]]
    for (td, md), (ta, ma) in zip(got["delivered"], got["done"]):
        assert md.delivered == td == ma.delivered and ma.done == ta
        assert td <= ta if mode == "flow" else td < ta
    times = [t for t, _ in got["delivered"]]
    assert times == sorted(times) and len(set(times)) == 4


def ring(net, n, chunk, trigger):
    """Ring all-reduce steps (examples/ring_driver.py)."""
    from ring_driver import ring_allreduce
    return ring_allreduce(net, list(range(n)), chunk, trigger)


def test_delivered_starts_ring_steps_earlier_than_done():
    topo = wh.leaf_spine(2, 2, 2)
    a, end_a = ring(wh.Network(topo, wh.Config(cc="none")), 4, mb(1), "delivered")
    b, end_b = ring(wh.Network(topo, wh.Config(cc="none")), 4, mb(1), "done")
    assert len(a[0]) == len(b[0]) == 6
    lag = np.array(b[0][1:]) - np.array(a[0][1:])
    assert (lag > 2 * US).all() and np.all(np.diff(lag) >= 0)     # half an RTT or more per step, accumulating
    assert end_a < end_b


def test_accelerated_delivery_is_reported_at_the_virtual_time():
    """Messages queued on a connection end inside a fast-forward: each is
    delivered at the time the steady goodput delivers it, close to the full
    run's time and before it is acknowledged."""
    def run(acc):
        net = wh.Network(wh.leaf_spine(2, 2, 2), wh.Config(cc="none", accelerate=acc))
        c1, c2 = net.connect(0, 3), net.connect(1, 2)
        in_skip = []
        for c in (c1, c2):
            for _ in range(8):
                net.post(c, mb(1), on_delivered=lambda m: in_skip.append(bool(net.skipping())))
        net.run()
        return net, in_skip

    full, _ = run(False)
    acc, in_skip = run(True)
    assert acc.stats["events_skipped"] > 0 and sum(in_skip) >= 4
    f, a = full.messages, acc.messages
    assert (a["delivered"] > 0).all() and (a["delivered"] < a["done"]).all()
    err = np.abs(a["delivered"] - f["delivered"]) / f["delivered"]
    assert err.max() < 0.01
    # delivery leads the acknowledgement by about the ACK's way back, as in the full run
    lead_f, lead_a = f["done"] - f["delivered"], a["done"] - a["delivered"]
    assert np.abs(lead_a - lead_f).max() < 0.5 * US


def test_accelerated_ring_steps_follow_the_full_run():
    topo = wh.leaf_spine(2, 2, 2)
    a, _ = ring(wh.Network(topo, wh.Config(cc="none")), 4, mb(4), "delivered")
    acc = wh.Network(topo, wh.Config(cc="none", accelerate=True))
    b, _ = ring(acc, 4, mb(4), "delivered")
    assert acc.stats["events_skipped"] > 0
    for r in a:
        err = np.abs(np.array(b[r][1:]) - np.array(a[r][1:])) / np.array(a[r][1:])
        assert err.max() < 0.02


# -- 2. the messages table and result types ----------------------------------------
@pytest.mark.parametrize("mode", list(MODES))
def test_messages_table_matches_message_results(mode):
    net = make(mode)
    c1, c2 = net.connect(0, 3), net.connect(1, 2)
    ids = [net.post(c1, 100_000), net.post(c2, 50_000), net.post(c1, 1e5)]
    net.run()
    tab = net.messages
    assert tab.dtype.names == ("id", "connection", "src", "dst", "size", "posted", "delivered", "done", "fct")
    assert list(tab["id"]) == ids and list(tab["connection"]) == [c1, c2, c1]
    assert list(tab["src"]) == [0, 1, 0] and list(tab["dst"]) == [3, 2, 3]
    for row in tab:
        m = net.message(int(row["id"]))
        assert isinstance(m, wh.MessageResult)
        assert tuple(m) == tuple(int(x) for x in row)
        assert m.fct == m.done - m.posted > 0 and m.latency == m.fct and m.conn == m.connection
    # flows and messages share the names a system layer reads
    f = net.flow(net.send(0, 3, 1000))
    net.run()
    f = net.flow(f.id)
    assert isinstance(f, wh.FlowResult)
    for name in ("id", "src", "dst", "size", "posted", "delivered", "done", "fct", "start", "finish"):
        assert hasattr(f, name) and hasattr(m, name)
    assert f.fct == f.done - f.posted and m.start == m.posted and m.finish == m.done
    assert len(net.results) == 3 and net.results["delivered"][2] == f.delivered > 0


@pytest.mark.parametrize("mode", list(MODES))
def test_messages_table_read_mid_run_shows_pending_and_posting_continues(mode):
    net = make(mode)
    c = net.connect(0, 3)
    a = net.post(c, 200_000)
    tab = net.messages              # read before anything ran: pending
    assert list(tab["delivered"]) == [-1] and list(tab["done"]) == [-1] and list(tab["fct"]) == [-1]
    assert net.message(a).done == -1 and net.message(a).size == 200_000
    b = net.post(c, 1_000)          # posting goes on after a read of the table
    net.run()
    tab = net.messages
    assert len(tab) == 2 and int(tab["id"][1]) == b
    assert (tab["done"] > tab["posted"]).all() and (tab["delivered"] <= tab["done"]).all()
    assert int(tab["done"][1]) >= int(tab["done"][0])
    with pytest.raises(wh.ApiError, match="nbytes"):   # beyond int64: refused before anything is queued
        net.post(c, 1 << 63)
    assert len(net.messages) == 2


# -- 3. named ports -------------------------------------------------------------
@pytest.mark.parametrize("mode", list(MODES))
def test_ports_are_named_by_node_and_interface(mode):
    topo = wh.leaf_spine(2, 2, 2)
    net = make(mode, topo)
    tab = net.ports
    assert len(tab) == 2 * len(topo.links)
    for row in tab:
        p = int(row["port"])
        info = net.port_info(p)
        assert net.port(info.node, info.ifindex) == p
        back = net.port_info(info.peer_port)
        assert back.node == info.peer and back.peer == info.node and back.peer_port == p
        assert info.rate == gbps(100) and info.delay == US
    fid = net.send(0, 3, 10_000)
    path = [net.port_info(p) for p in net.flow_path(fid)]
    assert path[0].node == 0 and path[-1].peer == 3
    assert all(a.peer == b.node for a, b in zip(path, path[1:]))
    with pytest.raises(wh.ApiError) as e:
        net.port(0, 7)
    assert e.value.argument == "ifindex"
    with pytest.raises(wh.ApiError) as e:
        net.port_info(len(tab))
    assert e.value.argument == "port"


def test_port_state_and_samples_use_the_named_ports():
    net = wh.Network(wh.star(3), wh.Config(cc="none", sample_interval=1.0))
    net.send(0, 2, mb(1))
    net.send(1, 2, mb(1))           # an incast: the switch port to host 2 queues
    net.run(until="50us")
    sw_to_2 = next(p for p in range(len(net.ports)) if net.port_info(p).node == 3 and net.port_info(p).peer == 2)
    info = net.port_info(sw_to_2)
    assert net.port_state((info.node, info.ifindex)) == net.port_state(sw_to_2)
    s = net.samples()
    q = s[s["kind"] == "queue"]
    assert len(q) and set(q["index"]) == {sw_to_2}
    assert (q["node"] == info.node).all() and (q["ifindex"] == info.ifindex).all()
    assert (s[s["kind"] == "rate"]["node"] == -1).all()
    with pytest.raises(wh.ApiError):
        net.port_state((3, 9))
    flow = wh.Network(wh.star(3), backend="flow")
    with pytest.raises(wh.NotAvailableError):
        flow.port_state(0)


# -- 4. units and ApiError ------------------------------------------------------
@pytest.mark.parametrize("mode", list(MODES))
def test_unit_tagged_arguments_mean_the_same_as_numbers(mode):
    def run(a, b, at, delay, until):
        net = make(mode)
        hit = []
        net.send(0, 3, a, at=at)
        net.schedule(delay, lambda: hit.append(net.now))
        c = net.connect(1, 2)
        net.post(c, b)
        net.run(until=until)
        return net.results[["size", "start", "finish"]].tolist(), net.messages.tolist(), hit, net.now

    plain = run(1_000_000, 4096, 2 * US, 5 * US, 2000 * US)
    assert plain == run("1MB", "4KiB", "2us", "5us", "2ms") == run(1e6, 4096.0, us(2), us(5), 2e9)
    assert plain[2] == [5 * US] and plain[3] == 2000 * US


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("call,arg", [
    (lambda n: n.send(0, 3, 1.5), "nbytes"),
    (lambda n: n.send(0, 3, "2 MFLOP"), "nbytes"),
    (lambda n: n.send(0, 3, 100, at=-1), "at"),
    (lambda n: n.send(0, 3, 100, on_done=5), "on_done"),
    (lambda n: n.send(0, 3, 100, on_delivered="x"), "on_delivered"),
    (lambda n: n.send("nope", 3, 100), "src"),
    (lambda n: n.send(0, 3, 100, pg=9), "pg"),
    (lambda n: n.post(0, 100), "conn"),
    (lambda n: n.post(n.connect(0, 3), -4), "nbytes"),
    (lambda n: n.schedule("1 fortnight", print), "delay"),
    (lambda n: n.schedule(5, None), "callback"),
    (lambda n: n.run(until="soon"), "until"),
    (lambda n: n.message(0), "mid"),
    (lambda n: n.flow(3), "fid"),
])
def test_api_misuse_names_the_argument(mode, call, arg):
    net = make(mode)
    with pytest.raises(wh.ApiError) as e:
        call(net)
    assert e.value.argument == arg and arg in str(e.value)
    assert isinstance(e.value, wh.WormholeError) and not isinstance(e.value, wh.FlowFileError)


def test_config_takes_unit_strings_in_each_parameters_unit():
    c = wh.Config(nack_interval="5us", rto="1ms", simulator_stop_time="2ms", buffer_size="32MiB", mtu="1KB",
                  rate_ai="5Mbps", preset_gbps="100Gbps", time_quantum_ps="1ns")
    assert (c.nack_interval, c.rto, c.simulator_stop_time) == (5.0, 1000.0, 0.002)
    assert (c.buffer_size, c.mtu, c.rate_ai, c.preset_gbps, c.time_quantum_ps) == (32.0, 1000, 5_000_000, 100, 1000)
    assert wh.Config(buffer_size="32MB").buffer_size == pytest.approx(32e6 / 2 ** 20)
    assert wh.Config(nack_interval=5).nack_interval == 5.0          # a bare number keeps the registry's unit
    for name, value in (("nack_interval", "5 parsecs"), ("mtu", "1.5B"), ("buffer_size", "16 furlongs")):
        with pytest.raises(wh.ConfigError, match=name):
            wh.Config(**{name: value})
    # a stop time given as a string stops the run there
    net = wh.Network(wh.star(2), wh.Config(simulator_stop_time="20us"))
    net.send(0, 1, mb(10))
    net.run()
    assert abs(net.now - 20 * US) <= 1000       # the reference's seconds -> ns conversion may lose 1 ns


# -- 5. peek / step / run / fresh ---------------------------------------------------
@pytest.mark.parametrize("mode", list(MODES))
def test_stepping_reproduces_a_run(mode):
    def build():
        net = make(mode, cc="none" if mode == "flow" else "hpcc")
        c = net.connect(0, 3)
        net.send(1, 2, 200_000, at="3us")
        net.schedule("10us", lambda: net.post(c, 300_000))
        return net

    ref = build()
    ref.run()
    net = build()
    assert net.peek() == (0 if mode != "flow" else 7 * US)   # flow: the send joins after its 4 us latency
    times, steps = [], 0
    while True:
        t = net.peek()
        if t is None:
            break
        assert t >= net.now
        assert net.step() == net.now >= t
        times.append(net.now)
        steps += 1
    assert net.step() is None and net.peek() is None
    assert times == sorted(times) and steps > 3
    assert net.results.tolist() == ref.results.tolist() and net.messages.tolist() == ref.messages.tolist()
    if mode == "full":       # every pop: events, stale ones, the flow starts' same-time phases, and the
        # transmission ends and NIC wake-ups a run leaves unscheduled (stepping schedules every one)
        st = ref.stats
        assert st["tx_done_unscheduled"] > 0
        assert steps == (st["events"] + st["stale_events"] + st["tx_done_unscheduled"] + st["nic_wake_unscheduled"]
                         + 2 * 2)
    # run(until) stops in between; a fresh network repeats the experiment from zero
    again = ref.fresh()
    assert again.now == 0 and again.peek() is None and len(again.results) == 0
    c = again.connect(0, 3)
    again.send(1, 2, 200_000, at="3us")
    again.schedule("10us", lambda: again.post(c, 300_000))
    again.run(until="10us")
    assert again.now == 10 * US and again.peek() is not None
    again.run()
    assert again.results.tolist() == ref.results.tolist()
    assert type(again) is type(ref) and again.config.accelerate == ref.config.accelerate
    other = ref.fresh(cc="dcqcn") if mode != "flow" else ref.fresh(flow_model="maxmin")
    assert other.config.cc == ("dcqcn" if mode != "flow" else "none")


def test_topology_repr_names_its_size():
    t = wh.leaf_spine(2, 4, 2, rate=gbps(100))
    assert repr(t) == "<Topology 'leafspine-2x4-2': 8 hosts, 4 switches, 12 links, 100Gbps, 1us>"
    assert "0 hosts" in repr(wh.Topology())


# -- 6. the ASTRA-sim frontend example --------------------------------------------
def test_astra_frontend_runs_a_2d_allreduce():
    from astra_frontend import run
    done = {}
    for mode, kw in (("full", {}), ("accelerated", {"accelerate": True}), ("flow", {"backend": "flow"})):
        finish, net = run(rows=2, cols=4, nbytes=4_000_000, **kw)
        assert sorted(finish) == list(range(8))
        m = net.messages
        # per rank: 3 + 1 reduce-scatter steps and 1 + 3 all-gather steps
        assert len(m) == 8 * 8 and (m["done"] > 0).all() and (m["delivered"] <= m["done"]).all()
        assert set(m["size"]) == {1_000_000, 500_000}
        done[mode] = max(finish.values())
    # ideal: 7 MB per rank at 100 Gb/s = 560 us
    assert 560e3 < done["flow"] < done["full"] < 1.2 * 560e3 * 1.5
    assert abs(done["accelerated"] - done["full"]) / done["full"] < 0.02


def test_builders_take_unit_strings_and_name_a_bad_argument():
    """The builders take rates and delays with their units, as the rest of the API does."""
    a = wh.leaf_spine(2, 4, 2, rate="100Gbps", uplink_rate="400Gbps", delay="1us")
    b = wh.leaf_spine(2, 4, 2, rate=gbps(100), uplink_rate=gbps(400), delay=US)
    assert a.links == b.links and any(l.rate_bps == gbps(400) for l in a.links)
    assert repr(wh.dumbbell(2, rate="25Gbps", bottleneck="10Gbps", delay="500ns")) == \
        repr(wh.dumbbell(2, rate=gbps(25), bottleneck=gbps(10), delay=500 * 1000))
    with pytest.raises(wh.ApiError, match="rate") as e:
        wh.star(4, rate="fast")
    assert e.value.argument == "rate"
    with pytest.raises(wh.ApiError) as e:
        wh.fat_tree(4, delay="-1us")
    assert e.value.argument == "delay"
