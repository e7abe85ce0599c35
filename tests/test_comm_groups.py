"""Each NCCL communicator has its own connections: transfers of different
parallelism groups (the tag's first word: dp, ep, pp, tp) between the same two
GPUs go on different queue pairs and share the NIC, while transfers of one
group queue on one connection, in order (fixed rate, so times are exact)."""
import wormhole as wh
from wormhole.workload.collectives import Transport, comm_group


def _run(sends):
    net = wh.Network(wh.rail_optimized(16), cc="none")
    t = Transport(net)
    done = {}
    for name, nbytes, tag in sends:
        t.send(0, 8, nbytes, lambda name=name: done.__setitem__(name, net.now), tag=tag)
    net.run()
    return done, t


def test_the_group_is_the_tags_first_word():
    assert comm_group("dp allreduce") == "dp" and comm_group("ep alltoall") == "ep"
    assert comm_group("pp sendrecv") == "pp" and comm_group(None) is None


def test_one_group_queues_on_one_connection():
    done, t = _run([("a", 4_000_000, "dp allreduce"), ("b", 100_000, "dp reducescatter")])
    assert len(t.conns) == 1
    assert done["b"] > done["a"]                 # behind the 4 MB message on the same queue pair


def test_another_group_does_not_wait_behind_it():
    alone, _ = _run([("b", 100_000, "ep alltoall")])
    done, t = _run([("a", 4_000_000, "dp allreduce"), ("b", 100_000, "ep alltoall")])
    assert len(t.conns) == 2
    assert done["b"] < done["a"] / 4             # not behind the 4 MB message
    # sharing the NIC with it (round robin between the queue pairs), about twice its time alone
    assert 1.5 * alone["b"] < done["b"] < 2.5 * alone["b"]
