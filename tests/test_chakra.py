"""Chakra execution traces: our wire format against protobuf's, round trips, a
hand-written trace, named errors for broken traces."""
import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

import wormhole as wh
from wormhole.workload import RingAllReduce, TrainingJob, Transport, load_preset
from wormhole.workload.chakra import (ChakraError, ChakraRun, ChakraTrace, Node, chakra_files, encode_metadata,
                                      encode_node, frame, read_et, run_chakra, training_trace, write_training)

MB = 1 << 20


def _net(n=16, gps=8, acc=True):
    topo = wh.rail_optimized(n, gpus_per_server=gps)
    return wh.Network(topo, wh.Config.preset("hpcc", 100, accelerate=acc))


def _write(prefix, ranks, groups=None):
    """ranks: list of node lists; returns the groups path (or None)."""
    for r, nodes in enumerate(ranks):
        with open("%s.%d.et" % (prefix, r), "wb") as fh:
            fh.write(frame(encode_metadata()) + b"".join(frame(encode_node(n)) for n in nodes))
    if groups is not None:
        with open(prefix + ".json", "w") as fh:
            json.dump(groups, fh)
        return prefix + ".json"
    return None


def test_decoder_reads_protobuf_bytes_written_by_hand():
    # Node{id: 5, name: "x", type: COMP_NODE, data_deps: [1, 300] (packed), ctrl_deps: [2] (unpacked),
    #      duration_micros: 7, attr {name: "num_ops", uint64_val: 9}, attr {name: "pg_name", string_val: "3"}}
    node = (b"\x08\x05" b"\x12\x01x" b"\x18\x04" b"\x2a\x03\x01\xac\x02" b"\x20\x02" b"\x38\x07"
            b"\x52\x0b\x0a\x07num_ops\x68\x09" b"\x52\x0d\x0a\x07pg_name\xea\x01\x013")
    meta = b"\x0a\x050.0.4"
    buf = bytes([len(meta)]) + meta + bytes([len(node)]) + node
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t.0.et")
        with open(p, "wb") as fh:
            fh.write(buf)
        with pytest.raises(ChakraError, match="missing node"):      # deps 1, 300, 2 are not in the file
            read_et(p)
    from wormhole.workload.chakra import _dec_node
    nd = _dec_node(node)
    assert (nd.id, nd.name, nd.type, nd.data_deps, nd.ctrl_deps, nd.duration_micros) == (5, "x", "COMP", [1, 300],
                                                                                          [2], 7)
    assert nd.attrs == {"num_ops": 9, "pg_name": "3"}
    # our encoder gives bytes the decoder reads back
    assert _dec_node(encode_node(nd)) == nd


def test_hand_written_trace(tmp_path):
    """4 ranks, 1 per server: compute 10 us, then an all-reduce of 1 MB over ranks {0,1,2,3},
    then rank 0 sends 64 KB to rank 3 (ctrl dep), rank 3 receives it and computes 5 us."""
    ar = lambda i: Node(i, "ar", "COMM_COLL", data_deps=[0], attrs={"comm_type": 0, "comm_size": MB,
                                                                    "pg_name": "7"})
    comp = lambda: Node(0, "fwd", "COMP", duration_micros=10)
    ranks = [[comp(), ar(1), Node(2, "send", "COMM_SEND", ctrl_deps=[1],
                                  attrs={"comm_dst": 3, "comm_size": 65536, "comm_tag": 4})],
             [comp(), ar(1)], [comp(), ar(1)],
             [comp(), ar(1), Node(2, "recv", "COMM_RECV", data_deps=[1], attrs={"comm_src": 0, "comm_size": 65536,
                                                                                 "comm_tag": 4}),
              Node(3, "bwd", "COMP", data_deps=[2], duration_micros=5)]]
    g = _write(str(tmp_path / "hand"), ranks, {"7": [0, 1, 2, 3]})
    net = _net(4, gps=1, acc=False)
    run = run_chakra(net, str(tmp_path / "hand"), 4, g, gpus_per_server=1)
    # the same pieces through the Network API by hand
    ref = _net(4, gps=1, acc=False)
    t = Transport(ref, 1)
    marks = {}

    def after_ar(c):
        marks["ar"] = ref.now
        from wormhole.workload import SendRecv
        SendRecv(t, [0, 3], 65536, on_done=lambda c: ref.schedule(5_000_000, lambda: marks.setdefault("end", ref.now)),
                 chunk_bytes=4 * MB).start()
    ref.schedule(10_000_000, lambda: RingAllReduce(t, [0, 1, 2, 3], MB, on_done=after_ar, chunk_bytes=4 * MB).start())
    ref.run()
    assert run.iteration_time == marks["end"]
    recs = {(r, name): (t0, t1) for r, nid, name, ty, t0, t1 in run.records}
    assert recs[(0, "fwd")] == (0, 10_000_000)
    assert recs[(2, "ar")][1] == marks["ar"]
    assert recs[(3, "bwd")] == (marks["end"] - 5_000_000, marks["end"])


@pytest.mark.parametrize("pp,mb,layers", [(1, 1, 2), (2, 4, 4)])
def test_round_trip_same_iteration_time(tmp_path, pp, mb, layers):
    pre = load_preset("gpt13b", gpus=16, tp=8, pp=pp, micro_batches=mb)
    pre.model = replace(pre.model, layers=layers)
    net = _net()
    job = TrainingJob(net, pre)
    job.start()
    net.run()
    want = job.summary()["iteration_time_ps"]
    prefix = str(tmp_path / "gpt")
    written = write_training(TrainingJob(_net(), pre), prefix)
    assert len(written) == 17 and os.path.exists(prefix + ".json")
    run = run_chakra(_net(), prefix, 16, prefix + ".json")
    assert run.iteration_time == want
    # in memory (what --timeline runs) as well
    mem = ChakraRun(_net(), training_trace(TrainingJob(_net(), pre)))
    n2 = mem.net
    mem.start()
    n2.run()
    assert mem.iteration_time == want


def test_micros_only_trace_is_close(tmp_path):
    """What ASTRA-sim reads (duration_micros): the iteration within a microsecond per compute node."""
    pre = load_preset("gpt13b", gpus=16, tp=8, pp=1)
    pre.model = replace(pre.model, layers=2)
    files = chakra_files(TrainingJob(_net(), pre), str(tmp_path / "g"), exact=False)
    for p, b in files.items():
        with open(p, "wb") as fh:
            fh.write(b)
    exact = ChakraRun(_net(), training_trace(TrainingJob(_net(), pre)))
    exact.start()
    exact.net.run()
    run = run_chakra(_net(), str(tmp_path / "g"), 16, str(tmp_path / "g.json"))
    n_comp = sum(1 for r in run.records if r[3] == "COMP") // 16
    assert abs(run.iteration_time - exact.iteration_time) <= n_comp * 500_000 + 1


def _one(tmp_path, nodes_per_rank, groups=None, name="t"):
    prefix = str(tmp_path / name)
    g = _write(prefix, nodes_per_rank, groups)
    return prefix, g


def test_truncated_trace(tmp_path):
    prefix, _ = _one(tmp_path, [[Node(0, "c", "COMP", duration_micros=1)]])
    p = prefix + ".0.et"
    data = open(p, "rb").read()
    open(p, "wb").write(data[:-3])
    with pytest.raises(ChakraError) as e:
        ChakraTrace.load(prefix, 1)
    assert e.value.file == p and "truncated" in str(e.value)
    assert isinstance(e.value, wh.WormholeError)


def test_missing_dependency(tmp_path):
    prefix, _ = _one(tmp_path, [[Node(0, "c", "COMP", duration_micros=1), Node(1, "d", "COMP", data_deps=[42])]])
    with pytest.raises(ChakraError) as e:
        ChakraTrace.load(prefix, 1)
    assert e.value.file == prefix + ".0.et" and e.value.value == 42


def test_send_without_receive(tmp_path):
    prefix, _ = _one(tmp_path, [[Node(0, "s", "COMM_SEND", attrs={"comm_dst": 1, "comm_size": 10, "comm_tag": 3})],
                                [Node(0, "c", "COMP")]])
    with pytest.raises(ChakraError, match="send 0 -> 1 .tag 3. without its receive") as e:
        ChakraTrace.load(prefix, 2)
    assert e.value.file == prefix + ".0.et"


def test_unknown_group_and_inconsistent_collective(tmp_path):
    coll = lambda size, pg: [Node(0, "ar", "COMM_COLL", attrs={"comm_type": 0, "comm_size": size, "pg_name": pg})]
    prefix, g = _one(tmp_path, [coll(10, "5"), coll(10, "5")], {"1": [0, 1]})
    with pytest.raises(ChakraError, match="unknown communicator group") as e:
        ChakraTrace.load(prefix, 2, g)
    assert e.value.value == "5" and e.value.file == prefix + ".0.et"
    prefix, g = _one(tmp_path, [coll(10, "1"), coll(20, "1")], {"1": [0, 1]}, name="u")
    with pytest.raises(ChakraError, match="of 20 bytes here") as e:
        ChakraTrace.load(prefix, 2, g)
    assert e.value.file == prefix + ".1.et"


def test_missing_rank_file_and_cycle(tmp_path):
    prefix, _ = _one(tmp_path, [[Node(0, "c", "COMP")]])
    with pytest.raises(ChakraError, match="missing trace file"):
        ChakraTrace.load(prefix, 2)
    prefix, _ = _one(tmp_path, [[Node(0, "a", "COMP", data_deps=[1]), Node(1, "b", "COMP", data_deps=[0])]], name="c")
    with pytest.raises(ChakraError, match="never ran") as e:
        run_chakra(_net(8, acc=False), prefix, 1)
    assert e.value.file == prefix + ".0.et"


def test_bench_chakra_cli(tmp_path):
    prefix, g = _one(tmp_path, [[Node(0, "ar", "COMM_COLL", attrs={"comm_type": 0, "comm_size": MB})]
                                for _ in range(8)])
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-m", "wormhole.bench", "chakra", "--trace", prefix, "--gpus", "8",
                          "--gpus-per-server", "1", "--json", "--no-progress"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    ref = _net(8, gps=1)
    c = RingAllReduce(Transport(ref, 1), list(range(8)), MB).start()
    ref.run()
    assert rep["iteration_time_ps"] == c.duration
    bad = subprocess.run([sys.executable, "-m", "wormhole.bench", "chakra", "--trace", prefix, "--gpus", "16",
                          "--gpus-per-server", "1", "--no-progress"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "missing trace file" in bad.stderr


def test_corrupted_traces_raise_named_errors(tmp_path):
    import random
    pre = load_preset("gpt13b", gpus=16, tp=8, pp=2, micro_batches=2)
    pre.model = replace(pre.model, layers=2)
    files = chakra_files(TrainingJob(_net(), pre), str(tmp_path / "g"))
    good = files[str(tmp_path / "g") + ".3.et"]
    rnd = random.Random(7)
    p = str(tmp_path / "f.0.et")
    for _ in range(300):
        b = bytearray(good)
        for _ in range(rnd.randint(1, 4)):
            op = rnd.random()
            i = rnd.randrange(len(b))
            if op < 0.5:
                b[i] = rnd.randrange(256)
            elif op < 0.8:
                del b[i:i + rnd.randint(1, 8)]
            else:
                b[i:i] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 4)))
        with open(p, "wb") as fh:
            fh.write(bytes(b))
        try:
            read_et(p)
        except ChakraError as e:
            assert e.file == p


def test_process_groups_from_metadata_nodes(tmp_path):
    """A PyTorch-converted trace declares its groups in a METADATA node (inputs' values), as ASTRA-sim reads them."""
    meta = Node(0, "pg", "METADATA", inputs="""['[{"pg_name": "3", "ranks": [0, 2]}, {"pg_name": "4", "ranks": [1, 3]}, """
                                           """{"pg_name": "5", "ranks": []}]']""")
    ar = lambda pg: Node(1, "ar", "COMM_COLL", data_deps=[0], attrs={"comm_type": 0, "comm_size": MB, "pg_name": pg})
    prefix, _ = _one(tmp_path, [[meta, ar("3")], [meta, ar("4")], [meta, ar("3")], [meta, ar("4")]])
    tr = ChakraTrace.load(prefix, 4)
    assert tr.groups == {"3": [0, 2], "4": [1, 3], "5": [0, 1, 2, 3]}
    run = run_chakra(_net(4, gps=1, acc=False), prefix, 4, gpus_per_server=1)
    assert sorted(c[0] for c in run.collectives) == ["3", "4"]
    prefix, _ = _one(tmp_path, [[meta, ar("5")], [meta, ar("4")], [meta, ar("5")], [meta, ar("4")]], name="v")
    with pytest.raises(ChakraError, match="not called by rank 1") as e:
        ChakraTrace.load(prefix, 4)
    assert e.value.file == prefix + ".1.et"


def test_astra_resource_rule(tmp_path):
    """Two independent 10 us compute nodes and a 1 MB all-reduce: concurrent by default; with ASTRA-sim's
    HardwareResource rule the compute nodes run one after the other (the collective beside them)."""
    nodes = lambda: [Node(0, "a", "COMP", duration_micros=10), Node(1, "b", "COMP", duration_micros=10),
                     Node(2, "ar", "COMM_COLL", attrs={"comm_type": 0, "comm_size": MB}),
                     Node(3, "c", "COMP", duration_micros=1, data_deps=[2], attrs={"is_cpu_op": True})]
    prefix, _ = _one(tmp_path, [nodes(), nodes()])
    tr = ChakraTrace.load(prefix, 2)
    times = {}
    for res in ("none", "astra"):
        net = _net(2, gps=1, acc=False)
        run = ChakraRun(net, tr, gpus_per_server=1, resources=res).start()
        net.run()
        run.check_finished()
        times[res] = {name: (t0, t1) for r, nid, name, ty, t0, t1 in run.records if r == 0}
    assert times["none"]["a"] == times["none"]["b"] == (0, 10_000_000)
    assert times["astra"]["a"] == (0, 10_000_000) and times["astra"]["b"] == (10_000_000, 20_000_000)
    assert times["astra"]["ar"] == times["none"]["ar"]
