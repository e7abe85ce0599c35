"""NCCL's channels for the ring collectives: the channel orders and the rails their server crossings use,
the bytes every NIC carries, the time on an idle rail-optimized fabric against the alpha-beta formula of C
parallel rings, and groups with one GPU per server unchanged."""
import json

import pytest

import wormhole as wh
from wormhole.bench import main
from wormhole.workload import AllGather, ReduceScatter, RingAllReduce, Transport, alpha_beta_ring, ring_order
from wormhole.workload import tuner
from wormhole.workload.channels import channel_count, channel_orders, crossings, ring_channels

# ps per payload byte of 1048-byte frames per 1000 payload bytes at 100 Gb/s (83 ns), and with the 60-byte
# ACKs of the data the same NIC receives going out beside them (4 ns more)
ONE_WAY = 83_000 / 1000
BOTH_WAYS = (83_000 + 4_000) / 1000


def rails(order, gps=8):
    """The local GPU index (rail) of each server crossing of a ring order, as (src rail, dst rail)."""
    return [(a % gps, b % gps) for a, b in crossings(order, gps)]


def test_channel_orders_two_servers_of_eight():
    """Channel c: server 0 from GPU c round to c - 1, server 1 the same reversed; it crosses GPU c - 1 to
    GPU 8 + c - 1 (rail c - 1) and back GPU 8 + c to c (rail c)."""
    orders = channel_orders(range(16), 8, 8)
    assert orders[0] == ring_order(range(16)) == list(range(8)) + list(range(15, 7, -1))
    assert orders[1] == [1, 2, 3, 4, 5, 6, 7, 0, 8, 15, 14, 13, 12, 11, 10, 9]
    assert orders[3] == [3, 4, 5, 6, 7, 0, 1, 2, 10, 9, 8, 15, 14, 13, 12, 11]
    assert [rails(o) for o in orders] == [[(7, 7), (0, 0)], [(0, 0), (1, 1)], [(1, 1), (2, 2)], [(2, 2), (3, 3)],
                                          [(3, 3), (4, 4)], [(4, 4), (5, 5)], [(5, 5), (6, 6)], [(6, 6), (7, 7)]]
    # every GPU's NIC sends the crossing of exactly one channel (and receives that of another)
    senders = sorted(a for o in orders for a, _ in crossings(o))
    assert senders == list(range(16))


def test_channel_orders_two_servers_of_four():
    """A TP 2 job's DP group on 16 GPUs: GPUs 0, 2, 4, 6 and 8, 10, 12, 14; 4 channels on rails (6, 0),
    (0, 2), (2, 4), (4, 6)."""
    g = [0, 2, 4, 6, 8, 10, 12, 14]
    assert ring_channels(g, 8) == 4
    orders = channel_orders(g, 8, 4)
    assert orders == [[0, 2, 4, 6, 14, 12, 10, 8], [2, 4, 6, 0, 8, 14, 12, 10],
                      [4, 6, 0, 2, 10, 8, 14, 12], [6, 0, 2, 4, 12, 10, 8, 14]]
    assert [rails(o) for o in orders] == [[(6, 6), (0, 0)], [(0, 0), (2, 2)], [(2, 2), (4, 4)], [(4, 4), (6, 6)]]


def test_channel_orders_four_servers():
    """4 servers: even servers rotated, odd ones reversed, so channel c alternates between two rails and
    closes on the rail it started from; 4 x 8 and 4 x 4 (a TP 2 job's DP group on 32 GPUs)."""
    orders = channel_orders(range(32), 8, 8)
    assert orders[2] == ([2, 3, 4, 5, 6, 7, 0, 1] + [9, 8, 15, 14, 13, 12, 11, 10] + [18, 19, 20, 21, 22, 23, 16, 17]
                         + [25, 24, 31, 30, 29, 28, 27, 26])
    for c, o in enumerate(orders):
        assert rails(o) == [((c - 1) % 8,) * 2, (c,) * 2, ((c - 1) % 8,) * 2, (c,) * 2]
    g = list(range(0, 32, 2))
    assert ring_channels(g, 8) == 4
    orders = channel_orders(g, 8, 4)
    assert orders[1] == [2, 4, 6, 0, 8, 14, 12, 10, 18, 20, 22, 16, 24, 30, 28, 26]
    assert [rails(o) for o in orders] == [[(6, 6), (0, 0), (6, 6), (0, 0)], [(0, 0), (2, 2), (0, 0), (2, 2)],
                                          [(2, 2), (4, 4), (2, 2), (4, 4)], [(4, 4), (6, 6), (4, 4), (6, 6)]]
    senders = sorted(a for o in orders for a, _ in crossings(o))
    assert senders == g


def test_odd_servers_close_across_rails():
    """3 servers: the last (even) server ends on GPU index c - 1, the first starts on c: the closing
    crossing changes rails, the others stay on one."""
    for c, o in enumerate(channel_orders(range(24), 8, 8)):
        assert rails(o) == [((c - 1) % 8,) * 2, (c,) * 2, ((c - 1) % 8, c)]


def test_channel_count():
    assert ring_channels(range(16), 8) == 8
    assert ring_channels(range(16), 8, 1) == 1 and ring_channels(range(16), 8, 3) == 3
    assert ring_channels([0, 8, 16, 24], 8) == 1 and ring_channels([0, 8, 16, 24], 8, 4) == 1   # one per server
    assert ring_channels(range(8), 8) == 1                  # one server: NVLink only
    assert ring_channels([0, 1, 8], 8) == 1                 # uneven servers
    assert channel_count(2, 8) == 8 and channel_count(2, 0) == 1
    with pytest.raises(wh.WormholeError):
        channel_count(2, 8, 0)


class Recording(Transport):
    """A transport that also counts the fabric bytes each GPU sends."""

    def __init__(self, net):
        super().__init__(net)
        self.by_src = {}

    def send(self, src, dst, nbytes, on_done, tag=None, channel=0):
        if self.server(src) != self.server(dst):
            self.by_src[src] = self.by_src.get(src, 0) + nbytes
        super().send(src, dst, nbytes, on_done, tag, channel)


def run(cls, gpus, ranks, nbytes, **kw):
    net = wh.Network(wh.rail_optimized(gpus), cc="none")
    t = Recording(net)
    done = []
    c = cls(t, ranks, nbytes, on_done=done.append, **kw).start()
    net.run()
    assert done == [c]
    return net, t, c


@pytest.mark.parametrize("gpus,ranks,channels", [(16, list(range(16)), 8), (32, list(range(0, 32, 2)), 4)])
def test_every_nic_carries_the_same_bytes_and_ranks_send_what_one_ring_sends(gpus, ranks, channels):
    """S divisible by C x N: each channel's crossing carries 2 (N - 1) / N of its S / C, and each GPU sends
    one channel's crossing; per rank the bytes are the single ring's 2 (N - 1) / N S; all on the rails."""
    n = len(ranks)
    S = channels * n * 64 * 1024
    _, t1, one = run(RingAllReduce, gpus, ring_order(ranks), S, channels=1)
    _, t, c = run(RingAllReduce, gpus, ring_order(ranks), S)
    assert len(c.channels) == channels and one.channels is None
    assert t.by_src == {g: 2 * (n - 1) * S // (n * channels) for g in ranks}
    assert c.sent_bytes == one.sent_bytes == [2 * (n - 1) * S // n] * n
    assert t.fabric_bytes == t1.fabric_bytes and t.nvlink_bytes == t1.nvlink_bytes
    assert set(t.fabric_classes) == {"leaf"}
    assert c.transfers == sum(r.transfers for r in c.channels)


@pytest.mark.parametrize("cls", [ReduceScatter, AllGather])
def test_reduce_scatter_and_all_gather_on_channels(cls):
    S = 8 * 16 * 4096 + 5            # a remainder: the first channels take a byte more
    _, t1, one = run(cls, 16, ring_order(range(16)), S, channels=1)
    _, t, c = run(cls, 16, ring_order(range(16)), S)
    assert [r.nbytes for r in c.channels] == [8 * 2 * 4096 + 1] * 5 + [8 * 2 * 4096] * 3
    assert sum(c.sent_bytes) == sum(one.sent_bytes) == 15 * S
    assert t.fabric_bytes + t.nvlink_bytes == t1.fabric_bytes + t1.nvlink_bytes


def one_message(nbytes):
    net = wh.Network(wh.rail_optimized(16), cc="none")
    f = net.send(0, 8, nbytes)
    net.run()
    return net.flow(f).fct


def test_all_reduce_on_eight_channels_against_alpha_beta():
    """2 servers x 8 GPUs, 64 MiB, idle rail fabric, fixed rate.  Each ring is bounded by its two server
    crossings (NVLink is 24 x faster): one chunk per segment of S / (C N), 30 steps.  One message in flight
    per connection: every step is alpha + segment x beta, alpha that of one message.  The single ring's
    crossing GPUs only send or only receive on the fabric (83 ps per byte); with 8 channels every NIC also
    returns the ACKs of the channel it receives (87 ps per byte).  So 8 channels are 8 x 83 / 87 faster
    less alpha: 7.09 x here.  Tolerance 2%: the formula counts every ACK as 4 ns on the wire (60 bytes are
    4.8 ns at 100 Gb/s, the kernel whole ns), 1% of the 87."""
    N, S = 16, 64 << 20
    ranks = ring_order(range(16))
    _, _, c1 = run(RingAllReduce, 16, ranks, S, channels=1, max_inflight=1)
    _, _, c8 = run(RingAllReduce, 16, ranks, S, max_inflight=1)
    assert len(c8.channels) == 8
    alpha = one_message(S // N) - S // N * ONE_WAY
    e1 = alpha_beta_ring("allreduce", N, S, 8e12 / ONE_WAY, alpha)
    e8 = alpha_beta_ring("allreduce", N, S, 8e12 / BOTH_WAYS, alpha, channels=8)
    assert e1 == pytest.approx(30 * (alpha + S // N * ONE_WAY))
    assert e8 == pytest.approx(30 * (alpha + S // (8 * N) * BOTH_WAYS))
    assert c1.duration == pytest.approx(e1, rel=0.02)
    assert c8.duration == pytest.approx(e8, rel=0.02)
    assert c1.duration / c8.duration == pytest.approx(e1 / e8, rel=0.02)
    assert all(r.duration <= c8.duration for r in c8.channels)


def test_all_reduce_on_eight_channels_bandwidth_bound():
    """The same with the default two messages in flight: a crossing's next step is posted before the last
    one's ACK returns, so each crossing link is busy the whole time, 30 segments back to back, plus one
    alpha: 30 x 4 MiB x 83 ps and 30 x 512 KiB x 87 ps; 8 channels are 8 x 83 / 87 = 7.63 x faster."""
    N, S = 16, 64 << 20
    ranks = ring_order(range(16))
    _, _, c1 = run(RingAllReduce, 16, ranks, S, channels=1)
    _, _, c8 = run(RingAllReduce, 16, ranks, S)
    alpha = one_message(S // N) - S // N * ONE_WAY
    assert c1.duration == pytest.approx(alpha + 30 * S // N * ONE_WAY, rel=0.01)
    assert c8.duration == pytest.approx(alpha + 30 * S // (8 * N) * BOTH_WAYS, rel=0.01)
    assert c1.duration / c8.duration == pytest.approx(8 * ONE_WAY / BOTH_WAYS, rel=0.02)


def test_one_gpu_per_server_is_the_single_ring():
    """Ranks on 4 servers, one each: no channels whatever is asked; the same run event for event."""
    S = 8_000_000
    runs = [run(RingAllReduce, 32, [0, 8, 16, 24], S, **kw) for kw in ({}, {"channels": 1}, {"channels": 4})]
    assert all(c.channels is None for _, _, c in runs)
    assert len({c.duration for _, _, c in runs}) == 1
    assert len({net.stats["events"] for net, _, _ in runs}) == 1


def test_readiness_reaches_every_channel():
    """Ranks ready one after the other (as backward produces a bucket): no channel's rank sends before it is
    ready, and the collective ends after the last is."""
    net = wh.Network(wh.rail_optimized(16), cc="none")
    t = Transport(net)
    done = []
    c = RingAllReduce(t, ring_order(range(16)), 8 * 16 * 65536, on_done=done.append)
    for r in c.channels:
        r.log = []
    at = {}
    for i in range(16):
        def go(i=i):
            at[c.ranks[i]] = net.now
            c.ready(i)
        net.schedule(10_000_000 * (i + 1), go)
    net.run()
    assert done == [c] and c.start_time == 10_000_000
    for r in c.channels:
        first = {}
        for ev in r.log:
            if ev[0] == "send":
                first.setdefault(r.ranks[ev[2]], ev[1])
        assert set(first) == set(range(16))
        assert all(first[g] >= at[g] for g in first)
    assert c.end_time > max(at.values())


def test_tuner_ring_bandwidth_counts_the_channels_nics():
    """NCCL's bus bandwidth is channels x a channel's: 2 servers x 8 GPUs with 8 channels cross on 8 NICs,
    min(300 GB/s NVLink, 8 x 12.5 GB/s) = 100 GB/s, x 16 / 30 for the algorithm bandwidth; one channel:
    12.5 GB/s; one GPU per server: one NIC whatever the channels; the tree: one NIC."""
    hw, hw1 = tuner.Hardware(2400e9, 100e9), tuner.Hardware(2400e9, 100e9, ring_channels=1)
    sh = tuner.Shape(16, 2, 8)
    assert tuner.bandwidth_gbs("allreduce", "ring", sh, hw) == pytest.approx(100 * 16 / 30)
    assert tuner.bandwidth_gbs("allreduce", "ring", sh, hw1) == pytest.approx(12.5 * 16 / 30)
    assert tuner.bandwidth_gbs("allreduce", "ring", sh, tuner.Hardware(2400e9, 100e9, ring_channels=2)) == \
        pytest.approx(25 * 16 / 30)
    assert tuner.bandwidth_gbs("allreduce", "ring", tuner.Shape(16, 16, 1), hw) == pytest.approx(12.5 * 16 / 30)
    assert tuner.bandwidth_gbs("allreduce", "tree", sh, hw) == tuner.bandwidth_gbs("allreduce", "tree", sh, hw1)
    assert tuner.choose("allreduce", sh, hw, 64 << 20) == "ring"


def bench(*extra):
    return ["gpt7b", "--gpus", "16", "--layers", "1", "--no-progress", "--json"] + list(extra)


def test_bench_channels_tp1(capsys):
    """TP 1 on 2 servers: the DP ring has 8 GPUs per server, 8 channels by default; 1 is the single ring."""
    assert main(bench("--tp", "1")) == 0
    rep8 = json.loads(capsys.readouterr().out)
    assert main(bench("--tp", "1", "--nccl-channels", "1")) == 0
    rep1 = json.loads(capsys.readouterr().out)
    assert rep8["dp_ring_channels"] == 8 and rep1["dp_ring_channels"] == 1
    assert rep8["nccl_channels"] is None and rep1["nccl_channels"] == 1
    assert rep8["fabric_bytes"] == rep1["fabric_bytes"] and set(rep8["fabric_bytes_by_class"]) == {"leaf"}
    assert rep8["exposed_comm_ps"] < rep1["exposed_comm_ps"]


def test_bench_channels_leave_tp8_alone(capsys):
    """TP 8: DP groups of one GPU per server, one ring whatever --nccl-channels says: the same run."""
    args = ["gpt13b", "--gpus", "32", "--layers", "1", "--no-progress", "--json"]
    assert main(args) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(args + ["--nccl-channels", "1"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert a["dp_ring_channels"] == b["dp_ring_channels"] == 1
    for k in ("iteration_time_ps", "events", "events_skipped", "fabric_bytes", "flows", "messages"):
        assert a[k] == b[k]


@pytest.mark.parametrize("bad", ["0", "-2", "x", "65"])
def test_bench_rejects_bad_channel_counts(capsys, bad):
    with pytest.raises(SystemExit) as e:
        main(bench("--nccl-channels", bad))
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--nccl-channels" in err
