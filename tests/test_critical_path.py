"""Workload introspection: the iteration's critical path and the bytes and times per collective kind."""
import json
from dataclasses import replace

import wormhole as wh
from wormhole.bench import main
from wormhole.workload import TrainingJob, load_preset
from wormhole.workload.critical import by_kind, collapse


def job_of(pp, mb, gpus=16, **kw):
    pre = load_preset("gpt7b", gpus=gpus, tp=8, pp=pp, micro_batches=mb, **kw)
    pre.model = replace(pre.model, layers=2, hidden=1024, ffn=4096, seq=512, vocab=1000)
    net = wh.Network(wh.rail_optimized(gpus), cc="none")
    job = TrainingJob(net, pre)
    job.start()
    net.run()
    return job


def contiguous(chain, t0, t1):
    assert chain[0].start == t0 and chain[-1].end == t1
    for a, b in zip(chain, chain[1:]):
        assert b.start == a.end
    assert sum(b.time for b in chain) == t1 - t0


def test_two_stages_two_micro_batches():
    """1F1B on 2 stages, 2 micro-batches, backward = 2 x forward, transfers shorter than a forward:
    stage 0 runs F0 F1 B0 B1, stage 1 F0 B0 F1 B1.  Stage 1 waits for micro-batch 0's activation, then
    never again (micro-batch 1's arrived during its B0); stage 0 ends waiting for micro-batch 1's gradient.
    So the iteration is F0 on stage 0, the activation's transfer, all of stage 1, the last gradient's
    transfer and stage 0's B1."""
    job = job_of(pp=2, mb=2)
    r = job.results[0]
    chain = r.critical_path
    contiguous(chain, r.start, r.end)
    ops = [row[0] for row in collapse(chain)]
    assert ops == ["stage 0 replica 0 forward mb 0", "pp activation mb 0 stage 0 to 1",
                   "stage 1 replica 0 forward mb 0", "stage 1 replica 0 backward mb 0",
                   "stage 1 replica 0 forward mb 1", "stage 1 replica 0 backward mb 1",
                   "pp gradient mb 1 stage 1 to 0", "stage 0 replica 0 backward mb 1"]
    # stage 1's ops: the compute of its layer and its logits, its 2 TP all-reduces per pass
    f1, b1 = job.compute_per_mb[1]
    f0, b0 = job.compute_per_mb[0]
    kinds = by_kind(chain)
    assert kinds["compute"] + kinds["tp"] == f0 + 2 * f1 + 2 * b1 + b0
    assert kinds["pp"] == 2 * chain[4].time and kinds["dp"] == 0
    # 6 passes on the path, each over the stage's one layer: 2 TP all-reduces at the channel's alpha-beta time
    assert job.layers_per_stage == 1 and kinds["tp"] == 6 * 2 * job.tp_ar


def test_data_parallel_iteration_ends_in_the_last_bucket():
    """DP 2, one micro-batch: a replica's forward and backward, then the all-reduce that finished last,
    started when the last replica's backward produced its bucket."""
    job = job_of(pp=1, mb=1)
    r = job.results[0]
    chain = r.critical_path
    contiguous(chain, r.start, r.end)
    rows = collapse(chain)
    assert [row[0].split(" replica")[0] for row in rows[:2]] == ["stage 0", "stage 0"]
    assert rows[0][0].endswith("forward mb 0") and rows[1][0].endswith("backward mb 0")
    assert rows[-1][0].startswith("dp allreduce bucket") and len(rows) == 3
    last = chain[-1]
    assert last.kind == "dp" and last.tag == "dp allreduce" and chain[-2].op == rows[1][0]
    s = job.summary()
    table = s["collectives_by_kind"]
    assert table["dp allreduce"]["critical_ps"] == last.time
    assert s["critical_path"]["by_kind_ps"]["dp"] == last.time


def test_collective_table_adds_up():
    job = job_of(pp=2, mb=2, gpus=32)
    s = job.summary()
    t = s["collectives_by_kind"]
    assert sum(r["nvlink_bytes"] for r in t.values()) == s["nvlink_bytes"]
    assert sum(r["fabric_bytes"] for r in t.values()) == s["fabric_bytes"]
    assert t["tp allreduce"]["count"] == s["tp_allreduces"]
    assert t["pp sendrecv"]["count"] == s["pp_transfers"] and t["pp sendrecv"]["fabric_bytes"] == s["pp_bytes"]
    assert sum(r["critical_ps"] for r in t.values()) == sum(
        v for k, v in s["critical_path"]["by_kind_ps"].items() if k != "compute")


def test_bench_prints_and_writes_the_introspection(capsys):
    args = ["gpt7b", "--gpus", "32", "--pp", "2", "--micro-batches", "2", "--layers", "2", "--no-progress"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "collectives kind" in out and "tp allreduce" in out and "critical    path of the iteration" in out
    assert main(args + ["--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    blocks = rep["critical_path"]["blocks"]
    assert blocks[0]["start_ps"] == 0 and blocks[-1]["end_ps"] == rep["iteration_time_ps"]
    assert set(rep["collectives_by_kind"]) >= {"tp allreduce", "pp sendrecv", "dp allreduce"}
