"""The fabric models' ring all-reduce in dependent steps (collective="ring")
and the replay started from the jobs' positions in their iterations
(offsets="actual")."""
import pytest

from wormhole.cluster import ClusterSpec, ModelPool
from wormhole.errors import ContentionError
from wormhole.cluster.fabric import PHASE_SLOTS, FabricContention, scenario_key, sync_bytes
from wormhole.cluster.sim import Running


@pytest.fixture(scope="module")
def pool():
    return ModelPool.load("v100")


def running(pool, key, model, servers, done=0.0):
    r = Running(key, None, model, len(servers), pool.entry(model), pool.profile(model, len(servers)), 10.0,
                servers=list(servers))
    r.last, r.load_end, r.remaining = 1.0, 0.0, 10.0 - done
    return r


def spec():
    return ClusterSpec.uniform(2, 8, nic="5Gbps", efficiency=463 / 625)


def grab_networks(c):
    """The Networks the contention model builds (to read their messages)."""
    nets, orig = [], c._network

    def build(*a, **k):
        n = orig(*a, **k)
        nets.append(n)
        return n
    c._network = build
    return nets


def test_a_ring_step_is_sent_only_after_the_previous_step_arrived(pool):
    """bert x 4 on 2 + 2, all at once: each worker sends its share in
    2 (N - 1) = 6 equal steps, and its step s leaves no earlier than step s - 1
    of its predecessor reached it."""
    s = spec()
    r = running(pool, "a", "bert", [0, 0, 1, 1])
    c = FabricContention("flow", collective="ring", sender="transport", volume="gradient", overlap=False)
    nets = grab_networks(c)
    c.scenario([r], s)
    msgs = nets[-1].messages          # the scenario's replay (the last Network it builds)
    conns = sorted({int(m["connection"]) for m in msgs})
    assert len(conns) == 4
    per = {k: sorted((m for m in msgs if m["connection"] == k), key=lambda m: m["id"]) for k in conns}
    share = int(round(sync_bytes(r) * c.wire_factor(s)))
    iters = c.iterations + 1
    for k in conns:
        assert len(per[k]) == 6 * iters
        sizes = [int(m["size"]) for m in per[k][:6]]
        assert max(sizes) - min(sizes) <= 1 and sum(sizes) == pytest.approx(share, abs=6)
    for j, k in enumerate(conns):
        pred = per[conns[(j - 1) % 4]]
        for i, m in enumerate(per[k]):
            if i % 6:
                assert m["posted"] >= pred[i - 1]["delivered"] >= 0


def test_a_ring_moves_a_bandwidth_bound_bucket_as_fast_as_independent_flows(pool):
    """bert x 4 on 2 + 2 alone, all at once: on each NIC direction the six
    steps follow each other without a gap (a worker's next step waits on a
    server-local link), so the all-reduce takes share / goodput either way;
    the ring adds only the steps' latencies."""
    s = spec()
    r = running(pool, "a", "bert", [0, 0, 1, 1])
    kw = dict(sender="transport", volume="gradient", overlap=False)
    flows = FabricContention("flow", **kw).iteration_times([r], s)["a"][0]
    ring = FabricContention("flow", collective="ring", **kw).iteration_times([r], s)["a"][0]
    assert ring == pytest.approx(flows, rel=2e-3)


def test_two_jobs_started_together_share_the_nic_half_and_half(pool):
    """offsets="actual": two identical jobs at the same point of their
    iterations stay in step, so each NIC-bound all-reduce (bert x 4 on 2 + 2,
    all at once, after the compute) meets the other's the whole time and takes
    twice as long: the iteration grows by share / goodput."""
    s = spec()
    a, b = running(pool, "a", "bert", [0, 0, 1, 1]), running(pool, "b", "bert", [0, 0, 1, 1])
    kw = dict(sender="transport", volume="gradient", overlap=False, offsets="actual")
    c = FabricContention("flow", **kw)
    alone = c.iteration_times([a], s)["a"][0]
    both = c.iteration_times([a, b], s)
    assert both["a"][0] == pytest.approx(both["b"][0], rel=1e-6)
    assert both["a"][0] - alone == pytest.approx(sync_bytes(a) / 463e6, rel=0.01)


def test_the_phase_is_the_fraction_of_an_iteration_done(pool):
    """A job 6.75 iterations in is 12 sixteenths into its iteration; jobs at
    other phases are another scenario (no memo hit), jobs at the same ones the
    same (a hit)."""
    s = spec()
    c = FabricContention("flow", offsets="actual")
    a = running(pool, "a", "resnet50", [0, 0, 1, 1], done=6.75)
    assert PHASE_SLOTS == 16 and c.phase_slot(a) == 12
    b = running(pool, "b", "resnet50", [0, 0, 1, 1], done=2.0)
    assert c.phase_slot(b) == 0
    c.iteration_times([a, b], s)
    n = c.simulated
    c.iteration_times([running(pool, "x", "resnet50", [0, 0, 1, 1], done=1.76),
                       running(pool, "y", "resnet50", [0, 0, 1, 1], done=5.01)], s)
    assert c.simulated == n
    c.iteration_times([running(pool, "x", "resnet50", [0, 0, 1, 1], done=1.5),
                       running(pool, "y", "resnet50", [0, 0, 1, 1], done=5.0)], s)
    assert c.simulated > n
    assert scenario_key([a, b], s)[0] == scenario_key([b, a], s)[0]


def test_unknown_collective_and_offsets_are_named():
    with pytest.raises(ContentionError, match="collective"):
        FabricContention("flow", collective="tree")
    with pytest.raises(ContentionError, match="offsets"):
        FabricContention("flow", offsets="random")


def test_cluster_command_takes_the_collective_and_the_offsets(tmp_path):
    import os
    from conftest import run_cli
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "cluster")
    out = tmp_path / "out"
    r = run_cli("cluster", "--trace", os.path.join(data, "testbed-trace-16gpu.csv"), "--cluster", "testbed-16gpu",
                "--policy", "load-balancing", "--contention", "flow", "--collective", "ring", "--offsets", "actual",
                "--limit", "6", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert len((out / "flow" / "jobs.csv").read_text().splitlines()) == 7
    r = run_cli("cluster", "--trace", os.path.join(data, "testbed-trace-16gpu.csv"), "--cluster", "testbed-16gpu",
                "--contention", "flow", "--collective", "tree", "--out", str(tmp_path / "o2"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "collective" in r.stderr
