"""NCCL's NVLS and NVLS-tree on NVSwitches: bytes, times on an idle fabric against their alpha-beta formulas
(on the NVLink channel and as packets with NVLink in the fabric), the tuner's choices, and the training
job's use of them."""
import json

import pytest

import wormhole as wh
from wormhole.bench import main
from wormhole.workload import TrainingJob, Transport, load_preset
from wormhole.workload import tuner
from wormhole.workload.algorithms import channel_time_ps
from wormhole.workload.collectives import TreeAllReduce
from wormhole.workload.models import WorkloadError
from wormhole.workload.nvls import NvlsAllGather, NvlsAllReduce, NvlsReduceScatter, NvlsTreeAllReduce

NVL = 2400e9
BETA = 8 / NVL * 1e12               # ps per byte on NVLink
ALPHA = 1_000_000                    # the channel's latency


def run(cls, ranks, nbytes, nvlink=False, gpus=16, cc="none", **kw):
    topo = wh.rail_optimized(gpus, nvlink="2400Gbps" if nvlink else None)
    cfg = wh.Config(cc="none", time_quantum_ps=1) if cc == "none" else wh.Config.preset(cc, time_quantum_ps=1)
    net = wh.Network(topo, cfg)
    t = Transport(net, 8, 2400.0, ALPHA)
    done = []
    c = cls(t, ranks, nbytes, on_done=done.append, **kw)
    c.start()
    net.run()
    assert done == [c]
    return c, t, net


@pytest.mark.parametrize("S,chunk", [(8 << 20, 4 << 20), (3 << 20, 4 << 20), (10_000_001, 1 << 20)])
def test_nvls_allreduce_on_the_channel_is_its_formula(S, chunk):
    """Each chunk's up step (every GPU sends it to the switch) then its multicast, pipelined, each port
    busy S beta in all: 2 alpha + (S + c) beta (c: S cut in equal chunks of at most chunk_bytes)."""
    c, t, _ = run(NvlsAllReduce, list(range(8)), S, chunk_bytes=chunk)
    c0 = -(-S // -(-S // chunk))                # S in equal chunks of at most `chunk`
    assert abs(c.duration - (2 * ALPHA + (S + c0) * BETA)) <= len(c.chunks) + 2      # ps rounding per step
    assert abs(c.duration - channel_time_ps("allreduce", "nvls", 8, S, chunk, t.nvlink_time)) <= len(c.chunks) + 2
    assert t.nvlink_bytes == 8 * S and t.fabric_bytes == 0          # each GPU sends its buffer once
    assert c.sent_bytes == [S] * 8


def test_nvls_reduce_scatter_and_all_gather_bytes():
    S = 8 << 20
    rs, t, _ = run(NvlsReduceScatter, list(range(8)), S)
    assert t.nvlink_bytes == 8 * S
    ag, t, _ = run(NvlsAllGather, list(range(8)), S)
    assert t.nvlink_bytes == S and ag.sent_bytes == [S // 8] * 8
    for c in (rs, ag):
        assert abs(c.duration - (2 * ALPHA + (S + (4 << 20) // 8) * BETA)) <= 8


def one_message(src, dst, nbytes, nvlink=True):
    """Time to deliver one message alone (an NVLink transfer is done when delivered)."""
    net = wh.Network(wh.rail_optimized(16, nvlink="2400Gbps" if nvlink else None), wh.Config(cc="none", time_quantum_ps=1))
    f = net.send(src, dst, nbytes)
    net.run()
    return net.flow(f).delivered


@pytest.mark.parametrize("S", [4 << 20, 16 << 20, 64 << 20])
def test_nvls_allreduce_as_packets_on_an_idle_fabric(S):
    """Fixed rate: the first chunk's up step and the last one's multicast alone (1048-byte frames per 1000
    payload bytes), between them each GPU port sends chunk k + 1 up while returning the ACKs (60 bytes per
    1000) of chunk k coming down: 2 alpha + 2 c 1.048 beta + (S - c) 1.108 beta, alpha one GPU-to-switch
    message's latency to delivery."""
    c0 = 4 << 20
    c, t, net = run(NvlsAllReduce, list(range(8)), S, nvlink=True, chunk_bytes=c0)
    slice_ = c0 // 8
    alpha = one_message(0, net.topology.nvlink.engine(1), slice_) - slice_ * 1.048 * BETA
    expect = 2 * alpha + 2 * c0 * 1.048 * BETA + (S - c0) * 1.108 * BETA
    assert abs(c.duration - expect) / expect < 0.01
    assert t.nvlink_bytes == 8 * S and t.fabric_bytes == 0
    assert net.stats["flows"] == 2 * 8 * 8          # a connection per GPU and engine, each way


def test_nvls_tree_on_the_channel_is_nvls_around_the_trees():
    """2 servers x 4 GPUs, one chunk: the NVLS reduce-scatter (alpha + c beta up, alpha + c/4 beta down to
    the slice's owner), a 2-rank tree per slice across the servers (on the fabric, through 4 rails at once),
    the NVLS all-gather (alpha + c/4 beta up, alpha + c beta multicast)."""
    S = 4 << 20
    ranks = [0, 1, 2, 3, 8, 9, 10, 11]
    c, t, _ = run(NvlsTreeAllReduce, ranks, S)
    tree, tt, _ = run(TreeAllReduce, [0, 8], S // 4)
    expect = 4 * ALPHA + (2 * S + 2 * S / 4) * BETA + tree.duration
    assert abs(c.duration - expect) <= 10
    assert t.fabric_bytes == 2 * S == 4 * tt.fabric_bytes         # the trees move their slices: 2 (nodes - 1) S
    assert t.nvlink_bytes == 8 * S + 2 * S        # reduce: every GPU its buffer; gather: each server its slices


def test_nvls_tree_as_packets_against_its_parts():
    """The same with NVLink in the fabric: up c 1.048 beta, the owner's slice back, the tree, the slice up,
    the multicast, each step one GPU-to-switch latency; within 2 %."""
    S = 4 << 20
    ranks = [0, 1, 2, 3, 8, 9, 10, 11]
    c, t, net = run(NvlsTreeAllReduce, ranks, S, nvlink=True)
    tree, _, _ = run(TreeAllReduce, [0, 8], S // 4, nvlink=True)
    x = S // 4
    alpha = one_message(0, net.topology.nvlink.engine(1), x // 4) - x // 4 * 1.048 * BETA
    expect = 4 * alpha + (2 * S + 2 * x) * 1.048 * BETA + tree.duration
    assert abs(c.duration - expect) / expect < 0.02
    assert t.fabric_bytes == 2 * S


def test_nvls_needs_its_group_shapes():
    with pytest.raises(wh.WormholeError, match="inside one server"):
        run(NvlsAllReduce, [0, 8], 1 << 20)
    with pytest.raises(wh.WormholeError, match="same number"):
        run(NvlsTreeAllReduce, [0, 1, 8], 1 << 20)


def test_tuner_nvls_inside_a_server_nvls_tree_across():
    """H100 (NVLS): 8 GPUs of one server, NVLS latency 25 us against the ring's 8.4 + 14 x 3.4 = 56 us and
    twice the ring's bandwidth: NVLS at every size.  A100: never."""
    h100 = tuner.Hardware(3600e9, 100e9, nvls=True)
    a100 = tuner.Hardware(2400e9, 100e9, nvls=False)
    one = tuner.Shape(8, 1, 8)
    assert tuner.latency_us("allreduce", "nvls", one) == 25.0
    assert tuner.latency_us("allreduce", "ring", one) == pytest.approx(8.4 + 14 * 3.4)
    assert tuner.bandwidth_gbs("allreduce", "nvls", one, h100) == pytest.approx(450 * 0.85 * 2 * 8 / 14)
    for s in (1 << 10, 1 << 20, 1 << 30):
        assert tuner.choose("allreduce", one, h100, s) == "nvls"
        assert tuner.choose("allreduce", one, a100, s) == "ring"
    # 128 GPUs on 16 servers: NVLS-tree's latency 25 + 2 x 4 x 20.9 us, its network part on all 8 NICs
    many = tuner.Shape(128, 16, 8)
    assert tuner.latency_us("allreduce", "nvls_tree", many) == pytest.approx(25 + 8 * 20.9)
    assert tuner.bandwidth_gbs("allreduce", "nvls_tree", many, h100) == pytest.approx(12.5 * 8 * 128 / 254)
    assert tuner.choose("allreduce", many, h100, 1 << 28) == "nvls_tree"
    assert tuner.why_not("allreduce", "nvls", many, h100) is not None
    assert tuner.choose("allreduce", many, h100, 1 << 28, "nvls") == "ring"        # forced, impossible: ring


def tiny(gpus=16, **kw):
    pre = load_preset("gpt7b", gpus=gpus, **kw)
    from dataclasses import replace
    pre.model = replace(pre.model, layers=2, hidden=1024, ffn=4096, seq=512, vocab=1000)
    return pre


def test_training_nvls_tp_on_h100_and_refused_on_a100():
    pre = tiny(gpu="h100")
    net = wh.Network(wh.rail_optimized(16), cc="none")
    job = TrainingJob(net, pre, nccl_algo="auto")
    job.start()
    net.run()
    s = job.summary()
    act = job.act_bytes
    assert s["tp_algorithms"] == {"allreduce": "nvls"}
    assert s["tp_allreduce_bytes"] == s["tp_allreduces"] * 8 * act
    assert job.tp_ar == 2 * ALPHA + round((act + act) * 8 / 3600e9 * 1e12)     # one chunk: 2 alpha + 2 S beta
    with pytest.raises(WorkloadError, match="NVLS"):
        TrainingJob(wh.Network(wh.rail_optimized(16), cc="none"), tiny(), nccl_algo="nvls")


def test_bench_forced_nvls_tree(capsys):
    """TP 2 on 16 GPUs: DP groups of 8 GPUs, 4 per server: NVLS-tree runs them; TP groups take NVLS."""
    args = ["gpt7b", "--gpus", "16", "--tp", "2", "--layers", "1", "--gpu", "h100", "--no-progress", "--json",
            "--nccl-algo", "nvls_tree"]
    assert main(args) == 0
    rep = json.loads(capsys.readouterr().out)
    assert set(rep["dp_collectives"]) == {"allreduce_nvls_tree"}
    assert rep["tp_algorithms"] == {"allreduce": "ring"}       # NVLS-tree cannot run in one server: the ring
    assert main(args[:-1] + ["nvls"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["tp_algorithms"] == {"allreduce": "nvls"} and set(rep["dp_collectives"]) == {"allreduce"}


def test_simai_file_keeps_its_collectives_and_takes_the_algorithm():
    """A SimAI micro-benchmark of all-reduces over 16 GPUs (2 servers): with NVLS-tree each one moves
    2 (servers - 1) S over the fabric (the slices' trees) and 16 S + 2 S over NVLink (each of the 16 GPUs its
    buffer up, each server's slices up again for the multicast); the ring moves 2 (N - 1) S in all."""
    from conftest import DATA
    from wormhole.workload import SimAIIteration, read_simai
    w = read_simai(DATA + "/simai/micro_all_reduce.txt")
    sizes = [lay.wg_bytes for lay in w.layers if lay.wg_comm == "ALLREDUCE"]
    out = {}
    for algo in ("ring", "nvls_tree"):
        net = wh.Network(wh.rail_optimized(16), cc="none")
        it = SimAIIteration(net, w, 16, nccl_algo=algo, nvls=True)
        it.start()
        net.run()
        out[algo] = it.summary()
    assert out["nvls_tree"]["fabric_bytes"] == sum(2 * s for s in sizes)
    assert out["nvls_tree"]["nvlink_bytes"] == sum(18 * s for s in sizes)
    assert out["ring"]["fabric_bytes"] + out["ring"]["nvlink_bytes"] == sum(2 * 15 * s for s in sizes)
