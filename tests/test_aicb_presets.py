"""AICB's model suite (Workload_spec_v1.1.csv) as presets: each loads at 128 GPUs with the file's
parallelism, sequence parallelism and ZeRO stage; SP and ZeRO change the collectives, not the bytes."""
import os
from dataclasses import replace

import pytest

import wormhole as wh
from wormhole.workload import TrainingJob, load_preset, preset_names

# the rows of AICB's workload_Workload_spec_v1.1.csv the presets follow (tab-separated, as in the file;
# rows 7 (Llama3-405B: 126 layers do not split into PP 16) and 9 (DeepSpeed ZeRO-3) have no preset)
SPEC = """\
1	LLaMA_7B	7B	4096	32	32	2048	16384	Megatron	128	1	world_size/(PP*TP)	1	-	-	-	-	-
2	GPT_13B	13B	5120	40	32	2048	20480	Megatron	128	2	world_size/(PP*TP)	1	enable	-	-	-	-
3	GPT_22B	22B	6144	48	64	2048	24576	Megatron	128	4	world_size/(PP*TP)	1	-	-	-	-	-
4	LLaMA_65B	65B	8192	80	64	4096	28672	Megatron	128	8	world_size/(PP*TP)	2	enable	-	-	-	-
5	GPT_175B	175B	12288	96	96	2048	49152	Megatron	128	8	world_size/(PP*TP)	8	enable	-	-	-	-
6	GPT_175B	175B	12288	96	96	2048	49152	Megatron	128	8	world_size/(PP*TP)	8	disable	-	-	-	-
8	LLaMA_7B	7B	4096	32	32	4096	11008	Deepspeed	128	1	world_size	1	-	2	-	-	-
10	Mistral_8*7B	56B	4096	32	32	2048	14336	Megatron	128	2	world_size/(PP*TP)	1	enable	-	8	8	2
"""
PRESETS = {1: "aicb-llama7b", 2: "aicb-gpt13b", 3: "aicb-gpt22b", 4: "aicb-llama65b", 5: "aicb-gpt175b",
           6: "aicb-gpt175b-nosp", 8: "aicb-llama7b-zero2", 10: "aicb-mistral-8x7b"}
REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "reference", "workloads",
                         "aicb", "workload_Workload_spec_v1.1.csv")


def rows():
    out = {}
    for line in SPEC.splitlines():
        f = line.split("\t")
        out[int(f[0])] = f
    return out


def test_the_rows_are_the_files():
    if not os.path.exists(REFERENCE):
        pytest.skip("AICB reference file not present")
    with open(REFERENCE) as fh:
        ref = {int(f[0]): f for f in (ln.rstrip("\n").split("\t") for ln in list(fh)[1:]) if f[0].strip()}
    for rid, f in rows().items():
        assert ref[rid][:len(f)] == f


@pytest.mark.parametrize("rid", sorted(PRESETS))
def test_preset_matches_the_file(rid):
    f = rows()[rid]
    name = PRESETS[rid]
    assert name in preset_names()
    pre = load_preset(name, gpus=int(f[9]))
    m, par = pre.model, pre.parallel
    assert (m.hidden, m.layers, m.heads, m.seq, m.ffn) == tuple(int(x) for x in f[3:8])
    tp, pp = int(f[10]), int(f[12])
    assert (par.tp, par.pp) == (tp, pp)
    assert par.dp == (128 // (tp * pp) if f[11] == "world_size/(PP*TP)" else 128)
    assert par.gpus == 128
    assert par.sp == (f[13] == "enable")
    assert pre.zero == (0 if f[14] == "-" else int(f[14]))
    if f[15] != "-":        # MoE: expert parallel number, experts, top-k
        assert (par.ep, m.experts, m.topk) == (int(f[15]), int(f[16]), int(f[17]))
    else:
        assert par.ep == 1 and m.experts == 0
    assert pre.extra["aicb"]["id"] == rid


def tiny(name, gpus, **kw):
    pre = load_preset(name, gpus=gpus, **kw)
    pre.model = replace(pre.model, layers=2, hidden=1024, ffn=4096, seq=512, vocab=1000)
    return pre


def run(pre, gpus):
    net = wh.Network(wh.rail_optimized(gpus), cc="none")
    job = TrainingJob(net, pre)
    job.start()
    net.run()
    assert len(job.results) == 1
    return job, job.summary()


def test_sequence_parallel_is_reduce_scatter_and_all_gather_of_the_same_bytes():
    on, s_on = run(tiny("aicb-gpt13b", 16), 16)
    off, s_off = run(tiny("aicb-gpt13b", 16, sp=False), 16)
    assert s_on["sequence_parallel"] and not s_off["sequence_parallel"]
    n = s_off["tp_collectives"]["allreduce"]
    assert n == 2 * 2 * 2 * 8          # 2 layers x (2 forward + 2 backward) x 8 (stage, replica) pairs
    assert s_on["tp_collectives"] == {"reducescatter": n, "allgather": n}
    assert s_on["nvlink_bytes"] == s_off["nvlink_bytes"] > 0
    assert s_on["iteration_time_ps"] == s_off["iteration_time_ps"]


def test_zero2_reduce_scatters_gradients_then_all_gathers_parameters():
    z, s_z = run(tiny("aicb-llama7b-zero2", 16), 16)
    a, s_a = run(tiny("aicb-llama7b-zero2", 16, zero=0), 16)
    nb = len(z.buckets) + 1                             # the layers' buckets and the embedding
    assert s_z["zero"] == 2 and s_z["dp_collectives"] == {"reducescatter": nb, "allgather": nb}
    assert s_a["dp_collectives"] == {"allreduce": nb}
    # reduce-scatter + all-gather move what the all-reduce moves; the gather waits for the optimizer step
    assert s_z["fabric_bytes"] == s_a["fabric_bytes"]
    assert s_z["iteration_time_ps"] >= s_a["iteration_time_ps"] * 0.98


def test_zero3_is_refused():
    with pytest.raises(wh.WormholeError, match="ZeRO stage"):
        load_preset("aicb-llama7b", gpus=128, zero=3)


def test_moe_row_runs_with_its_expert_parallelism():
    pre = tiny("aicb-mistral-8x7b", 128)
    assert pre.parallel.ep == 8 and pre.parallel.dp == 64
    pre.model = replace(pre.model, layers=1)
    job, s = run(pre, 128)
    assert s["ep"] == 8 and s["tp_collectives"]["reducescatter"] > 0 and s["fabric_bytes"] > 0
