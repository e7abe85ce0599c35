"""Interleaved 1F1B (Megatron's virtual pipeline stages): the schedule, its bubble, its PP traffic,
recomputation and the paper's GPT-18B preset."""
import json
from dataclasses import replace

import pytest

import wormhole as wh
from wormhole.bench import main
from wormhole.workload import TrainingJob, load_preset
from wormhole.workload.training import interleaved_1f1b, pipeline_makespan


def test_schedule_2_stages_2_virtual_4_micro_batches_by_hand():
    """Stage 0 warms up with (PP - 0 - 1) x 2 + (VPP - 1) x PP = 4 forwards, stage 1 with 2; virtual
    micro-batch k is micro-batch 2 (k // 4) + k % 2 of chunk (k % 4) // 2 (reversed for backwards)."""
    F = lambda mb, c: ("F", mb, c)
    B = lambda mb, c: ("B", mb, c)
    assert interleaved_1f1b(2, 2, 4, 0) == [
        F(0, 0), F(1, 0), F(0, 1), F(1, 1),                             # warm-up
        F(2, 0), B(0, 1), F(3, 0), B(1, 1), F(2, 1), B(0, 0), F(3, 1), B(1, 0),    # 1F1B
        B(2, 1), B(3, 1), B(2, 0), B(3, 0)]                             # cool-down
    assert interleaved_1f1b(2, 2, 4, 1) == [
        F(0, 0), F(1, 0),
        F(0, 1), B(0, 1), F(1, 1), B(1, 1), F(2, 0), B(0, 0), F(3, 0), B(1, 0), F(2, 1), B(2, 1), F(3, 1), B(3, 1),
        B(2, 0), B(3, 0)]
    # M == PP: Megatron runs every forward first
    assert [k for k, _, _ in interleaved_1f1b(2, 2, 2, 1)] == ["F"] * 4 + ["B"] * 4


@pytest.mark.parametrize("pp,vpp,m", [(2, 2, 4), (2, 1, 4), (4, 2, 8), (4, 3, 8), (8, 2, 16)])
def test_bubble_is_the_textbook_fraction(pp, vpp, m):
    """Backward = 2 x forward per chunk, no transfer time: iteration = ideal x (1 + (p - 1) / (v m))."""
    plans = {p: interleaved_1f1b(pp, vpp, m, p) for p in range(pp)}
    for p in range(pp):
        assert sorted(plans[p]) == sorted((k, mb, c) for k in "FB" for mb in range(m) for c in range(vpp))
    span, ops = pipeline_makespan(plans, pp, vpp, 1, 2)
    ideal = m * vpp * (1 + 2)
    assert span - ideal == ideal * (pp - 1) / (vpp * m)
    if (pp, vpp, m) == (2, 2, 4):           # stage 1 idles 3 units (one chunk's F + B) in total
        busy = sum(t1 - t0 for _, t0, t1 in ops[1])
        assert (busy, span) == (24, 27)


def tiny(vpp, recompute=None, micro_batches=4, gpus=16):
    pre = load_preset("gpt7b", gpus=gpus, tp=8, pp=2, micro_batches=micro_batches, vpp=vpp, recompute=recompute)
    pre.model = replace(pre.model, layers=4, hidden=1024, ffn=4096, seq=512, vocab=1000)
    return pre


def run(pre, gpus=16):
    net = wh.Network(wh.rail_optimized(gpus), cc="none")
    job = TrainingJob(net, pre)
    job.start()
    net.run()
    return job


def test_interleaved_run_on_the_fabric_follows_the_schedule():
    """Each micro-batch crosses 2 x 2 - 1 = 3 stage boundaries each way (VPP 1: 1); the iteration is the
    schedule's makespan with the measured chunk times and one transfer's time; VPP 2 beats VPP 1."""
    probe = wh.Network(wh.rail_optimized(16), cc="none")
    one = probe.send(0, 8, (1024 * 512 * 2) // 8)
    probe.run()
    comm = probe.flow(one).fct
    times = {}
    for v in (1, 2):
        job = run(tiny(v))
        s = job.summary()
        assert s["vpp"] == v and job.layers_per_chunk == 4 // (2 * v)
        hops = 2 * v - 1
        assert s["pp_transfers"] == 4 * hops * 2 * 8        # micro-batches x hops x (F, B) x TP ranks
        assert s["pp_bytes"] == s["pp_transfers"] * job.act_bytes // 8 == s["fabric_bytes"]
        f, b = job.compute_per_mb[1]
        span, _ = pipeline_makespan({p: job._vops(p) for p in range(2)}, 2, v, f / v, b / v, comm)
        times[v] = job.results[0].time
        assert abs(times[v] - span) / span < 0.01
    assert times[2] < times[1]


def test_recomputation_adds_a_forward_to_each_backward():
    base, rc = run(tiny(2)), run(tiny(2, recompute=True))
    f, b = base.compute_per_mb[0]
    f2, b2 = rc.compute_per_mb[0]
    assert f2 == f and b2 == b + f                           # stage 0: no logits
    assert rc.summary()["recompute"] and rc.tp_allreduces == base.tp_allreduces * 3 // 2
    assert rc.results[0].time > base.results[0].time


def test_impossible_interleaving_is_refused():
    with pytest.raises(wh.WormholeError, match="PP > 1"):
        load_preset("gpt7b", gpus=16, vpp=2)
    with pytest.raises(wh.WormholeError, match="multiple of PP"):
        load_preset("gpt7b", gpus=16, pp=2, vpp=2, micro_batches=3)
    with pytest.raises(wh.WormholeError, match="model chunks"):
        load_preset("gpt175b", gpus=16, pp=2, vpp=5, micro_batches=2)


def test_gpt18b_preset_is_the_papers_plan_and_runs():
    pre = load_preset("gpt18b-vpp", gpus=256)
    par = pre.parallel
    assert (par.tp, par.dp, par.pp, par.vpp, pre.model.layers, pre.model.hidden) == (8, 16, 2, 2, 40, 6144)
    pre.model = replace(pre.model, layers=4, hidden=1024, ffn=4096, seq=512, vocab=1000)
    pre.parallel = replace(par, micro_batches=2)
    job = run(pre, 256)
    s = job.summary()
    assert s["gpus"] == 256 and s["iterations"] == 1 and s["dp_collectives"]["allreduce"] > 0


def test_bench_vpp_option(capsys):
    assert main(["gpt7b", "--gpus", "16", "--pp", "2", "--vpp", "2", "--micro-batches", "2", "--layers", "4",
                 "--no-progress", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["vpp"] == 2 and rep["pp_transfers"] == 2 * 3 * 2 * 8
    assert main(["gpt7b", "--gpus", "16", "--pp", "2", "--vpp", "2", "--micro-batches", "2", "--layers", "2",
                 "--no-progress"]) == 2
    assert "PP x VPP" in capsys.readouterr().err
