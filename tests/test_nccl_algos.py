"""NCCL's double binary tree all-reduce beside the ring: its trees, its bytes, its time on an idle fabric
against the alpha-beta bounds, and the tuner's choice."""
import json

import pytest

import wormhole as wh
from wormhole.bench import main
from wormhole.workload import RingAllReduce, Transport
from wormhole.workload import tuner
from wormhole.workload.collectives import TreeAllReduce, double_binary_tree, nccl_trees, tree_depth
from wormhole.units import gbps

PER_BYTE_ONE_WAY = 83_000 / 1000        # ps per payload byte of a 1048-byte frame per 1000 bytes at 100 Gb/s


def run(cls, n, nbytes, **kw):
    net = wh.Network(wh.rail_optimized(8 * max(n, 2)), cc="none")
    t = Transport(net)
    done = []
    c = cls(t, [8 * i for i in range(n)], nbytes, on_done=done.append, **kw)
    c.start()
    net.run()
    assert done == [c]
    return c, t


def one_message(nbytes):
    net = wh.Network(wh.rail_optimized(16), cc="none")
    f = net.send(0, 8, nbytes)
    net.run()
    return net.flow(f).fct


@pytest.mark.parametrize("n", [2, 4, 7, 8, 16])
def test_double_binary_tree(n):
    t0, t1 = double_binary_tree(n)
    for par in (t0, t1):
        assert par.count(-1) == 1
        for i in range(n):          # every rank reaches the root
            seen, j = 0, i
            while par[j] >= 0:
                j, seen = par[j], seen + 1
            assert seen <= tree_depth(n)
    if n % 2 == 0:                  # interior in one tree, leaf in the other
        inner0 = {p for p in t0 if p >= 0}
        inner1 = {p for p in t1 if p >= 0}
        assert not inner0 & inner1


@pytest.mark.parametrize("n", [2, 4, 8])
def test_tree_moves_the_ring_bytes(n):
    S = 4 << 20
    _, tt = run(TreeAllReduce, n, S)
    _, tr = run(RingAllReduce, n, S)
    assert tt.fabric_bytes == tr.fabric_bytes == 2 * (n - 1) * S // n * n


def test_two_ranks_tree_is_the_ring():
    S = 8 << 20
    ct, _ = run(TreeAllReduce, 2, S, chunk_bytes=S)
    cr, _ = run(RingAllReduce, 2, S, chunk_bytes=S)
    assert ct.duration == cr.duration
    # reduce half each way, then broadcast it back: both directions at once, so each NIC also returns the
    # other direction's ACKs (60 bytes per 1000 payload bytes: 4 ps per byte beside the data's 83)
    alpha = one_message(S // 2) - S // 2 * PER_BYTE_ONE_WAY
    expect = 2 * (alpha + S // 2 * (83_000 + 4_000) / 1000)
    assert abs(ct.duration - expect) / expect < 0.02


def test_small_buffer_tree_alpha_beta_on_8_servers():
    """One chunk per half: 2 x depth hops of S/2, each between one message time (alpha + S/2 beta) and that
    plus S/2 beta (a parent's two children share its port); the ring takes 2 (N - 1) hops of S/N."""
    n, S = 8, 64 << 10
    ct, _ = run(TreeAllReduce, n, S)
    cr, _ = run(RingAllReduce, n, S)
    hop = one_message(S // 2)
    lo, hi = 2 * tree_depth(n) * hop, 2 * tree_depth(n) * (hop + S // 2 * PER_BYTE_ONE_WAY)
    assert lo * 0.98 <= ct.duration <= hi * 1.02
    ring = 2 * (n - 1) * one_message(S // n)
    assert abs(cr.duration - ring) / ring < 0.05
    assert ct.duration < cr.duration


def test_tuner_picks_tree_small_and_ring_large():
    """16 ranks, one per server, 100 Gb/s NICs (a DP group of a TP 8 job on 128 GPUs), NCCL's Simple model:
    ring latency 1.4 x (8.4 + 30 x 14) us (30 network steps, x 1.4 plateau), bandwidth 12.5 x 16 / 30 GB/s;
    tree latency 8.4 + 2 x log2(16) x 14 us, bandwidth 12.5 x 0.92 x 0.5 x the size's correction (0.7 for
    4-8 MiB).  They cross where the lines meet in that bin."""
    hw = tuner.Hardware(100e9, 100e9)
    sh = tuner.Shape(16, 16, 1)
    ring_lat, ring_bw = 1.4 * (8.4 + 30 * 14), 12.5 * 16 / 30
    tree_lat, tree_bw = 8.4 + 2 * 4 * 14, 12.5 * 0.92 * 0.5 * 0.7
    assert tuner.latency_us("allreduce", "ring", sh) == pytest.approx(ring_lat)
    assert tuner.latency_us("allreduce", "tree", sh) == pytest.approx(tree_lat)
    x = (ring_lat - tree_lat) / (1 / (1000 * tree_bw) - 1 / (1000 * ring_bw))
    assert 4 << 20 <= x < 8 << 20
    last = tuner.crossovers("allreduce", sh, hw, algos=("ring", "tree"))[-1]
    assert last[1:] == ("tree", "ring") and abs(last[0] - x) <= 2
    assert tuner.choose("allreduce", sh, hw, 64 << 10) == "tree"
    assert tuner.choose("allreduce", sh, hw, 64 << 20) == "ring"
    assert tuner.choose("allreduce", tuner.Shape(2, 2, 1), hw, 1) in ("ring", "tree")
    assert tuner.choose("allreduce", sh, hw, 1 << 30, "tree") == "tree"
    assert tuner.choose("allreduce", sh, hw, 1 << 30, "nvls") == "ring"       # no NVLS on this GPU: the ring
    with pytest.raises(wh.WormholeError):
        tuner.choose("allreduce", sh, hw, 1, "pat")


def test_tree_is_a_chain_inside_a_server_and_a_double_binary_tree_across():
    """NCCL's trees over 2 servers of 4 ranks: chains 0-1-2-3 and 4-5-6-7 (tree 0), 3-2-1-0 and 7-6-5-4
    (tree 1), the servers' heads joined by the 2-node double binary tree."""
    t0, t1 = nccl_trees([0, 0, 0, 0, 1, 1, 1, 1])
    assert t0 == [-1, 0, 1, 2, 0, 4, 5, 6]
    assert t1 == [1, 2, 3, 7, 5, 6, 7, -1]
    assert nccl_trees([0, 1, 2, 3, 4]) == list(double_binary_tree(5))


def test_bench_nccl_algo(capsys):
    args = ["gpt7b", "--gpus", "32", "--layers", "1", "--no-progress", "--json"]
    assert main(args + ["--nccl-algo", "tree"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["nccl_algo"] == "tree" and set(rep["dp_collectives"]) == {"allreduce_tree"}


def test_ring_order_keeps_server_crossings_on_one_rail():
    """NCCL's ring order: every other server's GPUs reversed, so 2 servers of 8 are joined GPU 7 to 15 and
    8 to 0 (rails 7 and 0: one leaf each, no spine); one GPU per server keeps GPU order."""
    from wormhole.workload import ring_order
    assert ring_order(range(16)) == list(range(8)) + list(range(15, 7, -1))
    assert ring_order([0, 8, 16, 24]) == [0, 8, 16, 24]
    assert ring_order([2, 0, 10, 8]) == [0, 2, 10, 8]
    net = wh.Network(wh.rail_optimized(16), cc="none")
    t = Transport(net)
    RingAllReduce(t, ring_order(range(16)), 4 << 20).start()
    net.run()
    assert set(t.fabric_classes) == {"leaf"}


def test_dp_ring_of_a_tp1_job_stays_on_the_rails(capsys):
    """TP 1 on 16 GPUs: the DP ring spans both servers, 8 GPUs each; in ring order no byte crosses a spine."""
    args = ["gpt7b", "--gpus", "16", "--tp", "1", "--layers", "1", "--no-progress", "--json"]
    assert main(args) == 0
    rep = json.loads(capsys.readouterr().out)
    assert set(rep["fabric_bytes_by_class"]) == {"leaf"} and rep["fabric_bytes"] > 0
