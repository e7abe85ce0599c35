"""NVLink chains of a ring collective: the hops inside a server computed when a chunk enters it
(``_core.chains.RingChains``) give the hop-by-hop result, with one event per server crossing."""
import pytest

import wormhole as wh
from wormhole._core.chains import RingChains
from wormhole.workload.collectives import AllGather, RingAllReduce, ReduceScatter, Transport, _Ring, ring_order


def _toy(dts, m, steps=2):
    """Three ranks: 0 -> 1 and 1 -> 2 on NVLink, 2 -> 0 through a NIC; two chunks per segment of 100 bytes."""
    return RingChains([True, True, False], [[100, 100]] * 3, [dts] * 3, m, steps)


def test_chain_times_by_hand():
    ch = _toy([10, 10], 1)
    ch.ready(0, 0)
    ch.ready(1, 5)
    log = []
    tails = ch.advance(0, log)
    # rank 0: its chunks at 0 and (one in flight) 10, arriving at 10 and 20, queued at rank 1 behind rank 1's
    # own two (ready at 5): rank 1 sends at 5, 15, 25, 35; each arrives 10 later at rank 2 (the NIC's GPU)
    assert [e for e in log if e[0] == "send"] == [("send", 0, 0, 0, 0), ("send", 10, 0, 0, 1),
                                                  ("send", 5, 1, 0, 0), ("send", 15, 1, 0, 1),
                                                  ("send", 25, 1, 1, 0), ("send", 35, 1, 1, 1)]
    assert tails == [(15, 2, 0, 0), (25, 2, 0, 1), (35, 2, 1, 0), (45, 2, 1, 1)]
    assert ch.arrived == 2 and ch.latest == 20          # the arrivals at rank 1; rank 2's are the ring's events
    assert ch.transfers == 6 and ch.nvlink_bytes == 600 and ch.sent_by(0) == 200 and ch.sent_by(1) == 400


def test_chain_delivers_in_order():
    # two in flight: chunk 1 (4 ps) leaves with chunk 0 (10 ps) and may not arrive before it
    ch = _toy([10, 4], 2, steps=1)
    ch.ready(0, 0)
    ch.ready(1, 0)
    log = []
    ch.advance(0, log)
    assert ("arrive", 10, 1, 0, 0) in log and ("arrive", 10, 1, 0, 1) in log


def test_readiness_queues_own_chunks_between_arrivals():
    ch = _toy([10, 10], 2, steps=3)
    ch.ready(0, 0)
    ch.advance(0)                       # rank 1 not ready: step 1 of both chunks arrives at 10 and waits there
    ch.push(0, 12, 1, 0)                # step 1 of chunk 0 from the fabric at 12: leaves rank 0 at 12, step 2 at rank 1 by 22
    ch.advance(0)
    ch.ready(1, 15)                     # own chunks after the two that arrived at 10, before the one due at 22
    log = []
    ch.advance(1, log)
    assert [(e[1], e[3], e[4]) for e in log if e[0] == "send"] == [(15, 1, 0), (15, 1, 1), (25, 0, 0), (25, 0, 1),
                                                                   (35, 2, 0)]


CASES = [(RingAllReduce, 16, 3_000_001, 256 * 1024, 0, 1, "none", 2),
         (RingAllReduce, 32, 16 * 1024 * 1024, 4 * 1024 * 1024, 3_000_000, None, "hpcc", 2),
         (ReduceScatter, 32, 3_000_001, 256 * 1024, 3_000_000, 1, "hpcc", 1),
         (AllGather, 16, 16 * 1024 * 1024, 256 * 1024, 3_000_000, None, "dcqcn", 2)]


def _run(collapse, cls, gpus, nbytes, chunk, stagger, channels, cc, inflight, monkeypatch):
    monkeypatch.setattr(_Ring, "collapse_nvlink", collapse)
    net = wh.Network(wh.rail_optimized(gpus), cc=cc)
    t = Transport(net)
    done = []
    ranks = ring_order(range(gpus))
    c = cls(t, ranks, nbytes, on_done=done.append, chunk_bytes=chunk, channels=channels, max_inflight=inflight)
    rings = c.channels or [c]
    if stagger:
        for i in range(len(ranks)):
            net.schedule(stagger * ((i * 7) % len(ranks)) + 1, lambda i=i: c.ready(i))
    else:
        c.start()
    net.run()
    assert done == [c]
    m = net.messages
    return ([r._chained for r in rings], c.end_time, c.sent_bytes, c.transfers, t.nvlink_bytes, t.fabric_bytes,
            dict(t.by_tag), m[["src", "dst", "size", "posted", "delivered", "done"]].tolist(), net.stats["events"])


@pytest.mark.parametrize("case", CASES)
def test_chains_give_the_hop_by_hop_result(case, monkeypatch):
    a = _run(True, *case, monkeypatch=monkeypatch)
    b = _run(False, *case, monkeypatch=monkeypatch)
    assert all(a[0]) and not any(b[0])
    assert a[1:8] == b[1:8]
    assert a[8] < b[8]                  # the NVLink hops inside a server are no longer events


def test_a_ring_inside_one_server_stays_hop_by_hop():
    net = wh.Network(wh.rail_optimized(16), cc="none")
    t = Transport(net)
    c = RingAllReduce(t, list(range(8)), 8_000_000).start()
    assert not c._chained
    net.run()
    assert c.end_time > 0 and t.nvlink_bytes == 8 * 14_000_000
