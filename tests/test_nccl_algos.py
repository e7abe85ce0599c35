"""NCCL's double binary tree all-reduce beside the ring: its trees, its bytes, its time on an idle fabric
against the alpha-beta bounds, and the tuner's choice."""
import json

import pytest

import wormhole as wh
from wormhole.bench import main
from wormhole.workload import RingAllReduce, Transport
from wormhole.workload.collectives import (TreeAllReduce, choose_allreduce, double_binary_tree, tree_crossover_bytes,
                                           tree_depth)
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
    rate, alpha = gbps(100), 5_000_000
    for n in (2, 16):
        x = tree_crossover_bytes(n, rate, alpha)
        if n == 2:
            assert choose_allreduce(n, 1, rate, alpha) == "ring"      # one edge: the ring
            continue
        assert choose_allreduce(n, int(x * 0.9), rate, alpha) == "tree"
        assert choose_allreduce(n, int(x * 1.1), rate, alpha) == "ring"
    assert choose_allreduce(16, 1 << 30, rate, alpha, "tree") == "tree"
    with pytest.raises(wh.WormholeError):
        choose_allreduce(16, 1, rate, alpha, "nvls")


def test_bench_nccl_algo(capsys):
    args = ["gpt7b", "--gpus", "32", "--layers", "1", "--no-progress", "--json"]
    assert main(args + ["--nccl-algo", "tree"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["nccl_algo"] == "tree" and set(rep["dp_collectives"]) == {"allreduce_tree"}
