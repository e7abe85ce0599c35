"""Fabric models, volume="ring" and sender="rate": a worker moves the bytes of a
ring all-reduce of its gradient (2 (N - 1) / N x grad_mb, at most what its
measured rate c = V_net / N moves in the communication time the profile
leaves) at c, and the rest of the communication time is a fixed pause that
the NIC does not stretch.  Expectations worked out by hand from the shipped
V100 pool (wormhole/presets/pool_v100.yaml)."""
import pytest

from wormhole.cluster import ClusterSpec, ModelPool, make_contention
from wormhole.cluster.fabric import CHUNKS, FabricContention, sync_bytes
from wormhole.cluster.sim import Running
from wormhole.errors import ContentionError

from conftest import run_cli


@pytest.fixture(scope="module")
def pool():
    return ModelPool.load("v100")


def running(pool, key, model, servers):
    r = Running(key, None, model, len(servers), pool.entry(model), pool.profile(model, len(servers)), 10.0,
                servers=list(servers))
    r.last, r.load_end = 1.0, 0.0
    return r


def test_ring_bytes_are_the_gradient_ring_unless_the_profile_cannot_move_them(pool):
    """vgg16 x 8: the ring moves 2 x 7 / 8 x 527.8 MB = 923.65 MB per worker,
    under what c = 10507.50 / 8 MB/s moves in 2.73561 - 0.54235 s (2880.7 MB),
    so the gradient's.  bert x 8: its ring would be 2 x 7 / 8 x 1560 = 2730 MB,
    more than c = 4125.66 / 8 MB/s moves in 3.47512 - 0.19981 s (1689.1 MB):
    the profile cannot have moved it, so the rate's bytes."""
    vgg = running(pool, "a", "vgg16", [0] * 8)
    assert sync_bytes(vgg, "ring") == pytest.approx(2 * 7 / 8 * 527.8e6)
    assert sync_bytes(vgg, "rate") == pytest.approx(10507.50261 / 8 * (1.46475 + 1.27086 - 0.542348032) * 1e6)
    bert = running(pool, "b", "bert", [0] * 8)
    assert sync_bytes(bert, "ring") == pytest.approx(4125.661936 / 8 * (2.22671 + 1.24841 - 0.199811866) * 1e6)
    assert sync_bytes(bert, "ring") < 2 * 7 / 8 * 1560e6
    c = FabricContention("flow", volume="ring", sender="rate")
    assert c.buckets(vgg) == [pytest.approx(923.65e6)]             # after the compute: one message
    assert c.compute_s(vgg) == pytest.approx(0.542348032)           # the one-GPU compute, as for rate
    assert c.sender_Bps(vgg) == pytest.approx(10507.50261 / 8 * 1e6)
    assert c.sender_Bps(running(pool, "c", "vgg16", [0])) is None   # one worker: no network


def test_rate_sender_equals_the_profile_sender_for_rate_bytes(pool):
    """With volume="rate" the profile sender's rate is c itself (its bytes fill
    the communication time at c), so sender="rate" replays the same job."""
    s = ClusterSpec.uniform(2, 8, nic="463MB/s")
    a = running(pool, "a", "resnet50", [0, 0, 1, 1])
    prof = FabricContention("flow").iteration_times([a], s)["a"][0]
    rate = FabricContention("flow", sender="rate").iteration_times([a], s)["a"][0]
    assert rate == pytest.approx(prof, rel=1e-9)


def test_only_the_bytes_meet_the_co_runner_the_pause_does_not_stretch(pool):
    """flow model, resnet50 x 4 split 2 + 2.  Bytes b = min(2 x 3 / 4 x 97.5,
    1560.93 / 4 x 0.41425) MB = 146.25 MB, sent at c = 390.23 MB/s (under the
    NIC's goodput g, so alone the NIC costs only the last of the CHUNKS pieces:
    b / CHUNKS x (1 / g - 1 / intra)).  The pause is the rest of the profiled
    iteration: T_iter - compute - b / c - b / CHUNKS / intra.  Two such jobs
    ask 2 c > g: each slows, but by no more than sending all of b at g / 2
    instead of c, b (2 / g - 1 / c) (the bytes' share; the pause is fixed);
    with the rate bytes (161.66 MB, no pause) the same bound is larger."""
    s = ClusterSpec.uniform(2, 8, nic="463MB/s")
    c = FabricContention("flow", volume="ring", sender="rate")
    g = c.transport_check(s)["own_goodput_Bps"]
    intra = g / s.servers[0].nic_Bps * s.servers[0].intra_Bps
    p = pool.profile("resnet50", 4)
    b, rate = 2 * 3 / 4 * 97.5e6, 1560.92668 / 4 * 1e6
    assert b < rate * 0.41425 and rate < g
    a, o = running(pool, "a", "resnet50", [0, 0, 1, 1]), running(pool, "b", "resnet50", [0, 0, 1, 1])
    comp = 0.30231
    base, pause = c.alone_packed(a, s)
    assert base == pytest.approx(comp + b / rate + b / CHUNKS / intra, rel=1e-3)
    assert pause == pytest.approx(p.iteration_s - base, rel=1e-9) and pause > 0
    alone = c.iteration_times([a], s)["a"][0]
    assert alone == pytest.approx(p.iteration_s + b / CHUNKS * (1 / g - 1 / intra), rel=1e-3)
    both = c.iteration_times([a, o], s)
    extra = both["a"][0] - alone
    assert 0.01 < extra <= b * (2 / g - 1 / rate) * 1.01
    r = FabricContention("flow")                                   # the rate bytes, paced to fill the window
    extra_rate = r.iteration_times([a, o], s)["a"][0] - r.iteration_times([a], s)["a"][0]
    assert extra < extra_rate


def test_unknown_names_are_refused(pool):
    with pytest.raises(ContentionError) as e:
        make_contention("flow", volume="rings")
    assert "volume source must be one of" in str(e.value) and "ring" in str(e.value)
    with pytest.raises(ContentionError) as e:
        make_contention("flow", sender="peak")
    assert "rate" in str(e.value)
    p = run_cli("cluster", "--trace", "x.csv", "--cluster", "testbed-16gpu", "--out", "o", "--sender", "peak")
    assert p.returncode == 2 and "invalid choice" in p.stderr and "Traceback" not in p.stderr


def test_rate_ddp_sends_the_rate_bytes_in_buckets_during_the_backward_pass(pool):
    """volume="rate-ddp", resnet50 x 4 (gradient 97.5 MB: buckets 1, 25, 25, 25,
    21.5 MB, scaled to the rate bytes B = 1560.92668 / 4 x 0.41425 MB).  Compute
    without communication 0.30231 s: forward 0.10077 s, backward 0.20154 s,
    bucket i ready at 0.20154 x (its cumulative share) into the backward.
    Bucket 0 (B / 97.5) goes long before bucket 1 is ready (26 / 97.5 of the
    backward); from then on the sender is busy (a bucket of 25 / 97.5 B takes
    longer than the 25 / 97.5 x 0.20154 s until the next is ready), so the rate
    that ends the iteration at the profile's 0.71656 s is
    r = (B - B / 97.5) / (0.71656 - 0.10077 - 0.20154 x 26 / 97.5)."""
    c = FabricContention("flow", volume="rate-ddp")
    a = running(pool, "a", "resnet50", [0] * 4)
    B = 1560.92668 / 4 * 0.41425 * 1e6
    assert c.buckets(a) == [pytest.approx(B * x / 97.5) for x in (1, 25, 25, 25, 21.5)]
    fwd, bwd = 0.30231 / 3, 0.30231 * 2 / 3
    r = (B - B / 97.5) / (0.71656 - fwd - bwd * 26 / 97.5)
    assert c.sender_Bps(a) == pytest.approx(r, rel=1e-6)
    assert bwd / 97.5 + B / 97.5 / r < bwd * 26 / 97.5          # bucket 0 done before bucket 1 is ready
    assert B * 25 / 97.5 / r > bwd * 25 / 97.5                  # then always busy
    assert r < 1560.92668 / 4 * 1e6                             # below c: the backward pass carries some
    serial = FabricContention("flow", volume="rate-ddp", overlap=False)
    assert serial.buckets(a) == [pytest.approx(B)] and serial.sender_Bps(a) == pytest.approx(1560.92668 / 4 * 1e6)
    s = ClusterSpec.uniform(2, 8, nic="463MB/s")
    alone = c.iteration_times([a], s)["a"][0]                   # on one server: the profile
    assert alone == pytest.approx(0.71656, rel=1e-6)
