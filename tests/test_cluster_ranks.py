"""Rings in rank order (ring="rank") and the pairwise experiment's rank
layouts (wormhole.cluster.pairwise.rank_layout): a job whose ranks alternate
between two servers crosses the NIC on every ring link."""
import pytest

from wormhole.cluster import ClusterSpec, ModelPool
from wormhole.cluster.fabric import FabricContention, sync_bytes
from wormhole.cluster.pairwise import pair_change, rank_layout
from wormhole.cluster.policies import load_balancing
from wormhole.cluster.sim import Running
from wormhole.errors import WormholeError


@pytest.fixture(scope="module")
def pool():
    return ModelPool.load("v100")


def running(pool, key, model, servers):
    return Running(key, None, model, len(servers), pool.entry(model), pool.profile(model, len(servers)), 1.0,
                   servers=list(servers))


def test_rank_layouts_by_hand():
    assert rank_layout(4, "blocked") == ([0, 0, 0, 0, 1, 1, 1, 1], [0, 1, 2, 3, 0, 1, 2, 3])
    assert rank_layout(4, "alternate") == ([0, 1, 0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 2, 2, 3, 3])
    assert rank_layout(2, "alternate") == ([0, 1, 0, 1], [0, 0, 1, 1])
    with pytest.raises(WormholeError, match="ranks"):
        rank_layout(4, "random")


def test_load_balancing_places_an_8_pod_job_alternately():
    """LeastAllocated, one pod at a time, ties to the lower index, on two empty
    8-GPU servers: s0 (tie), s1 (less allocated), s0 (tie), ... -- the
    "alternate" layout; bin packing's is not a 4 + 4 split at all."""
    assert load_balancing(8, [8, 8], [8, 8]) == rank_layout(4, "alternate")[0]


def test_a_rank_ring_of_alternating_ranks_crosses_the_nic_on_every_link(pool):
    """resnet50 x 8 alone, all at once after its compute (flow backend): in
    server order 4 + 4 one connection per NIC direction carries the share, so
    the all-reduce takes share / goodput; with ranks alternating and the ring in
    rank order all 8 links cross, 4 connections share each NIC direction and it
    takes 4 share / goodput: 3 share / 463 MB/s more."""
    s = ClusterSpec.uniform(2, 8, nic="5Gbps", efficiency=463 / 625)
    kw = dict(sender="transport", volume="gradient", overlap=False)
    alt = running(pool, "a", "resnet50", rank_layout(4, "alternate")[0])
    by_server = FabricContention("flow", **kw).iteration_times([alt], s)["a"][0]
    by_rank = FabricContention("flow", ring="rank", **kw).iteration_times([alt], s)["a"][0]
    blocked = running(pool, "a", "resnet50", rank_layout(4, "blocked")[0])
    blocked_rank = FabricContention("flow", ring="rank", **kw).iteration_times([blocked], s)["a"][0]
    assert blocked_rank == pytest.approx(by_server, rel=1e-9)
    assert by_rank - by_server == pytest.approx(3 * sync_bytes(alt) / 463e6, rel=0.01)


def test_the_pairwise_rank_layout_only_matters_for_a_rank_ring(pool):
    """ring="server" orders each ring server by server, so both layouts give
    the same change; ring="rank" with alternating ranks puts 4 connections of
    each job on each NIC direction, and two NIC-bound jobs (vgg16 with bert)
    then slow each other more than in the blocked layout."""
    s = ClusterSpec.load("testbed-16gpu")
    server = FabricContention("flow")
    assert pair_change(pool, s, server, "vgg16", "bert", ranks="alternate") == pytest.approx(
        pair_change(pool, s, server, "vgg16", "bert", ranks="blocked"), rel=1e-9)
    rank = FabricContention("flow", ring="rank")
    with pytest.raises(WormholeError, match="ranks"):
        pair_change(pool, s, rank, "vgg16", "bert", ranks="diagonal")
    alt = pair_change(pool, s, rank, "alexnet", "vgg16", ranks="alternate")
    blk = pair_change(pool, s, rank, "alexnet", "vgg16", ranks="blocked")
    # alexnet sends c = 132 MB/s on each link: blocked, one link per NIC direction, under half the NIC (no slowdown
    # under max-min); alternating, 4 links per NIC direction want 4 c = 529 MB/s > 463 even alone (each link gets
    # G / 4), and vgg16 (4 links of 1313 MB/s, communicating all but 2% of its iteration) leaves each G / 8:
    # (C + V / (G / 8)) / (C + V / (G / 4)), C its compute, V its bytes per link
    a = running(pool, "a", "alexnet", rank_layout(4, "alternate")[0])
    from wormhole.cluster.fabric import compute_only_s
    C, V, G = compute_only_s(a), sync_bytes(a, "rate"), 463.1e6
    assert blk == pytest.approx(1.0, abs=0.01)
    assert alt == pytest.approx((C + V / (G / 8)) / (C + V / (G / 4)), rel=0.03)


def test_the_spec_names_the_ring_order(tmp_path, pool):
    """``ring: rank`` in a spec file is what the fabric models replay unless
    they are given one; a bad value names the file and the value."""
    f = tmp_path / "c.yaml"
    f.write_text("servers:\n  - {count: 2, gpus: 8, nic: 5Gbps}\nefficiency: 0.741\nring: rank\n")
    s = ClusterSpec.load(str(f))
    assert s.ring == "rank" and ClusterSpec.uniform(2, 8).ring == "server"
    alt = running(pool, "a", "resnet50", rank_layout(4, "alternate")[0])
    kw = dict(sender="transport", volume="gradient", overlap=False)
    by_spec = FabricContention("flow", **kw).iteration_times([alt], s)["a"][0]
    by_model = FabricContention("flow", ring="rank", **kw).iteration_times([alt], ClusterSpec.uniform(
        2, 8, nic="5Gbps", efficiency=0.741))["a"][0]
    overridden = FabricContention("flow", ring="server", **kw).iteration_times([alt], s)["a"][0]
    assert by_spec == pytest.approx(by_model, rel=1e-9) and overridden < by_spec
    f.write_text("servers:\n  - {count: 2, gpus: 8}\nring: diagonal\n")
    with pytest.raises(WormholeError, match="ring must be one of server, rank") as e:
        ClusterSpec.load(str(f))
    assert str(f) in str(e.value) and "diagonal" in str(e.value)
    with pytest.raises(WormholeError, match="ring order"):
        FabricContention("flow", ring="diagonal")
