"""Whole-run behaviour of each congestion-control algorithm (reference presets
at 100 Gb/s) on small fabrics."""
import numpy as np
import pytest

import wormhole as wh
from wormhole.units import MS, US

ALGOS = ["hpcc", "dcqcn", "timely", "dctcp"]


def throughputs(name, t1, t2, late=0, size=10**9, **over):
    net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset(name, **over))
    net.send(0, 2, size)
    net.send(1, 3, size, at=late)
    net.run(until=t1)
    r1, _, _ = net.delivered()
    net.run(until=t2)
    r2, _, _ = net.delivered()
    return (r2 - r1) * 8 / ((t2 - t1) / 1e12), net


@pytest.mark.parametrize("name", ALGOS)
def test_two_flows_converge_to_the_fair_share(name):
    x, _ = throughputs(name, 20 * MS, 30 * MS)
    fair = x.sum() / 2
    assert np.all(np.abs(x - fair) / fair < 0.05), x
    assert x.sum() > 0.8 * 100e9 * 1000 / 1048 * 0.9      # the bottleneck stays busy


@pytest.mark.parametrize("name", ALGOS)
def test_late_flow_gets_its_share(name):
    x, _ = throughputs(name, 20 * MS, 30 * MS, late=2 * MS)
    fair = x.sum() / 2
    assert np.all(np.abs(x - fair) / fair < 0.05), x


def bottleneck_queue(name):
    net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset(name, sample_interval=5))
    net.send(0, 2, 10**9)
    net.send(1, 3, 10**9)
    net.run(until=10 * MS)
    s = net.samples()
    port = net.fabric.nbr_port[4][5]          # left switch -> right switch
    q = s[(s["kind"] == "queue") & (s["index"] == port) & (s["time"] >= 5 * MS)]["value"]
    n_samples = (10 * MS - 5 * MS) // (5 * US)
    return q.sum() / n_samples, (q.max() if len(q) else 0)


def test_hpcc_keeps_the_queue_near_empty_dcqcn_near_the_ecn_thresholds():
    hq_mean, hq_max = bottleneck_queue("hpcc")
    dq_mean, dq_max = bottleneck_queue("dcqcn")
    kmin, kmax = 400_000, 1_600_000                # preset thresholds at 100 Gb/s
    assert hq_mean < 10_000
    assert dq_mean > 10 * hq_mean and dq_mean > 50_000
    assert dq_max > kmin * 0.5 and dq_mean < kmax


def test_dcqcn_16_to_1_incast_with_small_buffer_triggers_pfc():
    net = wh.Network(wh.star(17), wh.Config.preset("dcqcn", buffer_size=1))
    for i in range(16):
        net.send(i, 16, 2_000_000)
    net.run()
    st = net.stats
    assert st["pfc_pauses"] > 0 and st["drops"] == 0
    assert st["ecn_marks"] > 0
    assert st["flows_completed"] == 16
    rcv_nxt, rcv_bytes, _ = net.delivered()
    assert (rcv_nxt == 2_000_000).all() and (rcv_bytes == 2_000_000).all()


def test_rate_samples_follow_the_cc_rate():
    net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset("hpcc", sample_interval=10))
    a = net.send(0, 2, 5_000_000)
    net.send(1, 3, 5_000_000)
    net.run()
    s = net.samples()
    rates = s[(s["kind"] == "rate") & (s["index"] == a)]["value"]
    assert len(rates) > 10 and rates.min() < 100e9 and rates.max() <= 100e9
    assert np.all(np.diff(s["time"]) >= 0)
