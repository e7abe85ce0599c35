"""Collectives, training iterations and SimAI workload files."""
import os

import pytest

import wormhole as wh
from wormhole.workload import (AllGather, AllToAll, Broadcast, ReduceScatter, RingAllReduce, SendRecv, Transport,
                               TrainingJob, load_preset, read_simai)
from wormhole.workload.models import WorkloadError
from wormhole.units import US, gbps

from conftest import DATA

RATE = gbps(100)
# beta of a NIC that sends data and returns the ACKs of the data it receives (every ring
# member does both): one 1048-byte frame (83 ns) and one 60-byte ACK (4 ns) per 1000 payload bytes
PER_BYTE = (83_000 + 4_000) / 1000
PER_BYTE_ONE_WAY = 83_000 / 1000


def fabric(gpus=32):
    """Rail fabric, fixed rate: GPUs 0, 8, 16, 24 sit on four servers of one rail."""
    return wh.Network(wh.rail_optimized(gpus), cc="none")


def run(coll_cls, ranks, nbytes, gpus=32, **kw):
    net = fabric(gpus)
    t = Transport(net)
    done = []
    c = coll_cls(t, ranks, nbytes, on_done=done.append, **kw)
    c.log = []
    c.start()
    net.run()
    assert done == [c]
    return net, t, c


@pytest.mark.parametrize("cls,steps,frac", [(RingAllReduce, 6, 1.5), (ReduceScatter, 3, 0.75),
                                            (AllGather, 3, 0.75), (AllToAll, 1, 0.75)])
def test_collective_bytes_and_steps(cls, steps, frac):
    S = 4 * 1_000_000
    net, t, c = run(cls, [0, 8, 16, 24], S, chunk_bytes=256 * 1024)
    assert c.steps == steps
    assert c.sent_bytes == [int(frac * S)] * 4          # e.g. all-reduce: 2(N-1)/N of the buffer per rank
    assert t.fabric_bytes == sum(c.sent_bytes) and t.nvlink_bytes == 0
    assert (net.messages["done"] > 0).all()


def test_broadcast_and_sendrecv_bytes():
    S = 3_000_000
    _, t, c = run(Broadcast, [0, 8, 16, 24], S)
    assert c.sent_bytes == [S, S, S, 0] and c.steps == 3
    net, t, c = run(SendRecv, [0, 8], S, chunk_bytes=1_000_000)
    assert c.sent_bytes == [S, 0] and t.fabric_flows == 3
    assert net.stats["flows"] == 1          # three messages on one connection


def test_intra_server_transfers_use_nvlink_not_the_fabric():
    net, t, c = run(RingAllReduce, list(range(8)), 8_000_000)
    assert t.fabric_bytes == 0 and t.nvlink_bytes == 8 * 14_000_000      # 2(N-1)/N x 8 MB from each of 8 GPUs
    assert net.stats["flows"] == 0


def test_no_step_before_its_data_arrived():
    _, _, c = run(RingAllReduce, [0, 8, 16, 24], 8_000_000, chunk_bytes=500_000)
    arrive = {}
    for ev in c.log:
        if ev[0] == "arrive":
            arrive[(ev[2], ev[3], ev[4])] = ev[1]        # (receiving rank, step, chunk) -> time
    sends = [ev for ev in c.log if ev[0] == "send"]
    assert len(sends) == 6 * 4 * 4
    for _, t, i, k, ch in sends:
        if k > 0:
            assert t >= arrive[(i, k - 1, ch)]


def test_ring_allreduce_matches_alpha_beta_on_an_idle_fabric():
    N, S = 4, 8_000_000
    seg = S // N
    # one chunk per segment, one transfer in flight: every step is one flow of `seg` bytes
    net, t, c = run(RingAllReduce, [0, 8, 16, 24], S, chunk_bytes=seg, max_inflight=1)
    single = wh.Network(wh.rail_optimized(32), cc="none")
    fid = single.send(0, 8, seg)
    single.run()
    alpha = single.flow(fid).fct - seg * PER_BYTE_ONE_WAY
    alpha_beta = 2 * (N - 1) * (alpha + seg * PER_BYTE)
    assert abs(c.duration - alpha_beta) / alpha_beta < 0.02


def tiny_preset(**kw):
    pre = load_preset("gpt7b", **kw)
    from dataclasses import replace
    m = replace(pre.model, layers=4, hidden=1024, ffn=4096, seq=512, vocab=1000)
    pre.model = m
    return pre


def test_iteration_matches_alpha_beta_on_an_idle_fabric():
    """DP only, one gradient bucket launched after the whole backward (no
    overlap): iteration = forward + backward + the all-reduce, whose alpha-beta
    time with N = 2 is 2 steps of half the buffer at line rate (headers included)."""
    pre = tiny_preset(gpus=16, tp=8, pp=1)
    pre.bucket_mb = 10_000
    net = wh.Network(wh.rail_optimized(16), cc="none")
    job = TrainingJob(net, pre)
    job.start()
    net.run()
    r = job.results[0]
    assert job.par.dp == 2 and len(job.buckets) == 1
    f, b = job.compute_per_mb[0]
    assert r.compute == f + b
    S = job.buckets[0][1] + job.emb_bytes
    alpha = 2 * (2 * US + 2 * 80_000)                  # two steps, each one path latency and its ACK
    expect = f + b + alpha + 2 * (S / 2) * PER_BYTE
    assert abs(r.time - expect) / expect < 0.02


def test_pipeline_stages_exchange_activations_over_the_fabric():
    pre = tiny_preset(gpus=32, tp=8, pp=2, micro_batches=4)
    net = wh.Network(wh.rail_optimized(32), wh.Config.preset("hpcc"))
    job = TrainingJob(net, pre)
    job.start()
    net.run()
    s = job.summary()
    assert s["iterations"] == 1 and s["pp"] == 2 and s["dp"] == 2
    act = job.act_bytes
    grads = sum(b for _, b in job.buckets) * 2 + job.emb_bytes * 2       # two stages, both hold embeddings
    # p2p: 4 micro-batches x (activation forward + gradient backward) x 2 replicas
    p2p = 4 * 2 * act * 2
    ar = grads * 8 * 2 * 1          # per TP rank, 2 replicas each sending (N-1)/N x 2 = 1 x buffer
    assert s["fabric_bytes"] == p2p + ar
    # stage 1 cannot start micro-batch 0 before stage 0 finished it and the activation crossed
    assert job.results[0].time > 2 * job.compute_per_mb[0][0]


def test_moe_expert_all_to_all_crosses_the_fabric():
    pre = load_preset("moe", gpus=32)
    from dataclasses import replace
    pre.model = replace(pre.model, layers=2, hidden=1024, ffn=2048, seq=256, vocab=1000)
    net = wh.Network(wh.rail_optimized(32), wh.Config.preset("hpcc"))
    job = TrainingJob(net, pre)
    job.start()
    net.run()
    assert job.results and job.t.fabric_bytes > 0 and job.par.ep == 2


def test_reads_the_simai_gpt13b_file():
    w = read_simai(os.path.join(DATA, "simai", "gpt13b_tp8_pp1_a100.txt"))
    assert len(w.layers) == 92 and w.tp == 8 and w.policy == "HYBRID_TRANSFORMER_FWD_IN_BCKWD"
    names = [l.name for l in w.layers]
    assert names.count("attention_layer") == 40 and names.count("mlp_layer") == 40
    g = [l for l in w.layers if l.name == "grad_norm"][0]
    assert (g.fwd_comm, g.fwd_bytes, g.wg_comm, g.wg_bytes) == ("ALLGATHER", 3248619520, "REDUCESCATTER", 6497239040)
    assert w.layers[4].fwd_compute_ns == 752000


def test_simai_micro_workload_runs():
    from wormhole.workload import SimAIIteration
    w = read_simai(os.path.join(DATA, "simai", "micro_all_reduce.txt"))
    w.layers[:] = w.layers[:6]          # the small sizes
    net = wh.Network(wh.rail_optimized(16), wh.Config.preset("hpcc"))
    it = SimAIIteration(net, w, 16)
    it.start()
    net.run()
    s = it.summary()
    assert s["iterations"] == 1 and s["fabric_bytes"] > 0 and s["dp"] == 16     # MICRO: one group of all GPUs


@pytest.mark.parametrize("text,msg,line", [
    ("BOGUS model_parallel_NPU_group: 8\n1\nx -1 1 NONE 0 1 NONE 0 1 NONE 0 1\n", "policy", 1),
    ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8\n2\nx -1 1 NONE 0 1 NONE 0 1 NONE 0 1\n",
     "ends after 1 of 2", 4),
    ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8\n1\nx -1 1 SHUFFLE 0 1 NONE 0 1 NONE 0 1\n",
     "communication type", 3),
    ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8\n1\nx -1 fast NONE 0 1 NONE 0 1 NONE 0 1\n",
     "integers", 3),
    ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8\n1\nx -1 1 NONE 0\n", "12 fields", 3),
    ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: x\n1\n", "not an integer", 1),
    ("HYBRID_TRANSFORMER_FWD_IN_BCKWD\nmany\n", "number of layers", 2),
])
def test_bad_simai_files(tmp_path, text, msg, line):
    p = tmp_path / "w.txt"
    p.write_text(text)
    with pytest.raises(WorkloadError) as e:
        read_simai(str(p))
    assert msg in str(e.value) and e.value.line == line and e.value.file == str(p)


def test_bad_presets(tmp_path):
    with pytest.raises(WorkloadError):
        load_preset("gpt99b")
    with pytest.raises(WorkloadError):
        load_preset("gpt13b", gpus=100)            # not a multiple of TP x PP
    with pytest.raises(WorkloadError):
        load_preset("gpt13b", gpus=128, pp=3)      # 40 layers do not split into 3 stages
    p = tmp_path / "bad.yaml"
    p.write_text("model: [1, 2\n")
    with pytest.raises(WorkloadError) as e:
        load_preset(str(p))
    assert e.value.file == str(p)
    p.write_text("model:\n  layers: -4\n  hidden: 8\n  ffn: 8\n  heads: 1\n  seq: 8\n")
    with pytest.raises(WorkloadError) as e:
        load_preset(str(p))
    assert "layers" in str(e.value)


def test_bench_command_reports_an_iteration(capsys):
    import json
    from wormhole.bench import main
    assert main(["gpt7b", "--gpus", "16", "--layers", "1", "--json", "--no-progress", "--mode", "full"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["iteration_time_ps"] > 0 and rep["events"] > 0 and rep["fabric_bytes"] > 0 and rep["dp"] == 2
    assert rep["mode"] == "full" and rep["events_skipped"] == 0
    assert main(["gpt7b", "--gpus", "16", "--layers", "1", "--json", "--no-progress"]) == 0
    acc = json.loads(capsys.readouterr().out)
    assert acc["mode"] == "accelerated" and acc["events_skipped"] > 0       # the default
    assert abs(acc["iteration_time_ps"] - rep["iteration_time_ps"]) / rep["iteration_time_ps"] < 0.01
    assert main(["gpt7b", "--gpus", "12", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "multiple" in err and len(err.strip().splitlines()) == 1


def test_only_training_presets_are_named_as_models():
    """The preset folder also holds a model pool and cluster specs: they are not bench models."""
    from wormhole.workload import preset_names
    names = preset_names()
    assert {"gpt13b", "gpt175b", "moe"} <= set(names)
    assert not any(n.startswith(("pool_", "cluster_")) for n in names)
    with pytest.raises(wh.WormholeError, match="needs a 'model' mapping"):
        load_preset("pool_v100", gpus=8)
