"""The host model (compute contention of co-located jobs on PCIe switch uplinks
and socket memory, wormhole.cluster.host): extensions by hand on a tiny case,
the NIC staging bytes, GPU slots in the simulator, spec refusals."""
import os

import pytest

from wormhole.cluster import ClusterSimulator, ClusterSpec, Job, ModelPool, make_contention
from wormhole.cluster.contention import NoContention
from wormhole.cluster.fabric import sync_bytes
from wormhole.cluster.host import HostSpec, host_extensions, parse_host, with_host, worker_bytes
from wormhole.cluster.pool import ModelEntry, Profile
from wormhole.cluster.sim import Running
from wormhole.cluster.spec import SpecError

from conftest import run_cli

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "cluster")


def entry(name, input_mb, it_s, workers=2, grad_mb=10.0):
    return ModelEntry(name, grad_mb, {workers: Profile(it_s, 0.0, 0.0), 1: Profile(it_s, 0.0, 0.0)}, input_mb)


def job(key, e, servers, slots=None):
    n = len(servers)
    r = Running(key, None, e.name, n, e, e.profiles[n], 10.0, servers=list(servers), slots=slots)
    r.last, r.load_end = 1.0, 0.0
    return r


def host_spec(n=1, gpus=4, host=HostSpec(4, 1e9, 4, 10e9)):
    return ClusterSpec.uniform(n, gpus, host=host)


def test_two_jobs_on_one_switch_by_hand():
    # A: 100 MB input per worker per 1.0 s iteration; B: 300 MB per 0.5 s; both 2 workers, one switch, one socket
    a, b = job("A", entry("a", 100.0, 1.0), [0, 0], [0, 1]), job("B", entry("b", 300.0, 0.5), [0, 0], [2, 3])
    ext = host_extensions([a, b], host_spec())
    # A on the uplink: B's two workers at 600 MB/s each -> rho = 1.2 -> its fair share 1/3: 0.1 s x (3 - 1);
    # memory: 200 MB, B at 2 x 1.2 GB/s -> rho = 0.24: 0.02 s x (1 / 0.76 - 1)
    assert ext["A"] == pytest.approx(0.2 + 0.02 * (1 / 0.76 - 1), rel=1e-12)
    # B on the uplink: A at 2 x 100 MB/s -> rho = 0.2: 0.3 s x 0.25; memory: 600 MB, rho = 0.04: 0.06 s x (1/0.96 - 1)
    assert ext["B"] == pytest.approx(0.075 + 0.06 * (1 / 0.96 - 1), rel=1e-12)
    times = with_host(NoContention().iteration_times([a, b], host_spec()), [a, b], host_spec())
    assert times["A"] == (pytest.approx(1.0 + ext["A"]), 1.0) and times["B"][0] == pytest.approx(0.5 + ext["B"])


def test_separate_switches_share_only_the_socket_and_no_host_means_none():
    a, b = job("A", entry("a", 100.0, 1.0), [0, 0], [0, 1]), job("B", entry("b", 300.0, 0.5), [0, 0], [2, 3])
    ext = host_extensions([a, b], host_spec(host=HostSpec(2, 1e9, 4, 10e9)))
    assert ext["A"] == pytest.approx(0.02 * (1 / 0.76 - 1)) and ext["B"] == pytest.approx(0.06 * (1 / 0.96 - 1))
    ext = host_extensions([a, b], host_spec(host=HostSpec(2, 1e9, 2, 10e9)))
    assert ext == {"A": 0.0, "B": 0.0}
    plain = ClusterSpec.uniform(1, 4)
    t = NoContention().iteration_times([a, b], plain)
    assert with_host(t, [a, b], plain) is t
    assert host_extensions([a], host_spec()) == {"A": 0.0}        # alone: its profile holds its own workers


def test_staging_bytes_on_the_ring_boundaries():
    pool = ModelPool.load("v100")
    r = Running("r", None, "resnet50", 4, pool.entry("resnet50"), pool.profile("resnet50", 4), 1.0,
                servers=[0, 1, 0, 1])
    ring = sync_bytes(r, "rate")
    inp = pool.entry("resnet50").input_mb * 1e6
    assert ring > 0 and inp == pytest.approx(128 * 3 * 224 * 224 * 4)
    got = {(s, g): k for s, g, k in worker_bytes(r, [0, 0, 1, 1])}
    # ring by server then slot: (0,0) -> (0,1) -> (1,0) -> (1,1) -> (0,0); (0,1) and (1,1) send across, (1,0) and
    # (0,0) receive
    assert got[(0, 1)] == {"h2d": inp, "d2h": ring, "mem": 2 * inp + 4 * ring}
    assert got[(1, 0)] == {"h2d": inp + ring, "d2h": 0.0, "mem": 2 * inp + 4 * ring}
    assert got[(0, 0)]["h2d"] == inp + ring and got[(1, 1)]["d2h"] == ring


def test_simulator_gives_the_lowest_free_slots_and_frees_them():
    e = entry("m", 100.0, 1.0, workers=2)
    pool = ModelPool({"m": e})
    jobs = [Job("j0", "m", 0.0, 2, 10.0), Job("j1", "m", 0.0, 2, 100.0), Job("j2", "m", 20.0, 2, 10.0)]
    spec = host_spec(host=HostSpec(2, 1e9, 4, 1e18))
    res = ClusterSimulator(jobs, pool, spec, NoContention(), policy="bin-packing", loading="none").run()
    by = {j.job_id: j for j in res.jobs}
    # j0 (slots 0, 1) and j1 (2, 3) are on different switches: no contention, j0 takes its 10 s
    assert by["j0"].end == pytest.approx(10.0)
    # j2 gets j0's freed slots 0, 1: still no shared switch
    assert by["j2"].end == pytest.approx(30.0)
    shared = host_spec(host=HostSpec(4, 1e9, 4, 1e18))
    res = ClusterSimulator(jobs, pool, shared, NoContention(), policy="bin-packing", loading="none").run()
    by = {j.job_id: j for j in res.jobs}
    # one switch: each sees the other's 2 workers at 100 MB/s, rho = 0.2: 0.1 s x 0.25 more per 1 s iteration
    assert by["j0"].end == pytest.approx(10.0 * 1.025)


def test_host_refusals_name_the_key():
    with pytest.raises(SpecError, match="gpus_per_switch"):
        parse_host({"gpus_per_switch": 0, "uplink": "15.75GB/s", "gpus_per_socket": 4, "memory": "128GB/s"})
    with pytest.raises(SpecError, match="host uplink"):
        parse_host({"gpus_per_switch": 2, "uplink": "fast", "gpus_per_socket": 4, "memory": "128GB/s"})
    with pytest.raises(SpecError, match="needs memory"):
        parse_host({"gpus_per_switch": 2, "uplink": "15.75GB/s", "gpus_per_socket": 4})
    with pytest.raises(SpecError, match="unknown host key"):
        parse_host({"gpus_per_switch": 2, "uplink": "1GB/s", "gpus_per_socket": 4, "memory": "1GB/s", "nvme": 1})


@pytest.mark.parametrize("host,word", [
    ("{gpus_per_switch: 0, uplink: 15.75GB/s, gpus_per_socket: 4, memory: 128GB/s}", "gpus_per_switch"),
    ("{gpus_per_switch: 2, uplink: -3GB/s, gpus_per_socket: 4, memory: 128GB/s}", "uplink"),
    ("{gpus_per_switch: 2, uplink: 15.75GB/s, gpus_per_socket: 4}", "memory"),
    ("[2, 4]", "mapping"),
])
def test_cluster_command_refuses_a_bad_host(tmp_path, host, word):
    p = tmp_path / "bad.yaml"
    p.write_text("servers:\n  - {count: 2, gpus: 8, nic: 5Gbps}\nhost: %s\n" % host)
    r = run_cli("cluster", "--trace", os.path.join(DATA, "testbed-trace-16gpu.csv"), "--cluster", str(p),
                "--contention", "none", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and word in r.stderr and "bad.yaml" in r.stderr
    assert "Traceback" not in r.stderr


def test_shipped_host_spec_loads_and_runs(tmp_path):
    p = tmp_path / "h.yaml"
    p.write_text("servers:\n  - {count: 2, gpus: 8, nic: 5Gbps}\n"
                 "host: {gpus_per_switch: 2, uplink: 15.75GB/s, gpus_per_socket: 4, memory: 128GB/s}\n")
    s = ClusterSpec.load(str(p))
    assert s.host == HostSpec(2, 15.75e9, 4, 128e9)
    pool = ModelPool.load("v100")
    from wormhole.cluster import read_trace
    jobs = read_trace(os.path.join(DATA, "testbed-trace-16gpu.csv"))[:8]
    with_h = ClusterSimulator(jobs, pool, s, make_contention("none"), policy="bin-packing").run()
    without = ClusterSimulator(jobs, pool, ClusterSpec.uniform(2, 8), make_contention("none"),
                               policy="bin-packing").run()
    a = {j.job_id: j.end for j in with_h.jobs}
    b = {j.job_id: j.end for j in without.jobs}
    assert all(a[k] >= b[k] - 1e-9 for k in a)


def test_placement_ties_lowest_index_or_drawn_as_kubernetes_does():
    from wormhole.cluster.policies import PolicyError, get_policy, load_balancing, bin_packing
    # LeastAllocated on free [3, 2, 2, 2]: the first pod goes to server 0; then all four tie at 6 of 8 used
    assert load_balancing(2, [3, 2, 2, 2], [8] * 4) == [0, 0]
    seconds = {tuple(get_policy("load-balancing", seed)(2, [3, 2, 2, 2], [8] * 4)) for seed in range(40)}
    assert {p[0] for p in seconds} == {0} and {p[1] for p in seconds} == {0, 1, 2, 3}
    # MostAllocated: the first pod's tie among equally full servers is drawn, the rest follow it (now fullest)
    draws = {tuple(get_policy("bin-packing", seed)(3, [8, 8, 5, 5], [8] * 4)) for seed in range(40)}
    assert draws == {(2, 2, 2), (3, 3, 3)} and bin_packing(3, [8, 8, 5, 5], [8] * 4) == [2, 2, 2]
    # no tie, no draw: the same placement for every seed
    assert {tuple(get_policy("load-balancing", s)(3, [8, 5, 4, 2], [8] * 4)) for s in range(10)} == {(0, 0, 0)}
    # equal fractions of different capacities tie too (2 of 4 and 4 of 8 used)
    assert {tuple(get_policy("bin-packing", s)(1, [2, 4], [4, 8])) for s in range(30)} == {(0,), (1,)}
    with pytest.raises(PolicyError, match="tie seed"):
        get_policy("bin-packing", "3")


def test_cluster_command_takes_a_tie_seed(tmp_path):
    out = tmp_path / "o"
    args = ("cluster", "--trace", os.path.join(DATA, "testbed-trace-16gpu.csv"), "--cluster", "testbed-16gpu",
            "--policy", "load-balancing", "--contention", "mosim", "--limit", "10")
    r = run_cli(*args, "--tie-seed", "4", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert len((out / "mosim" / "jobs.csv").read_text().splitlines()) == 11
    r = run_cli(*args, "--tie-seed", "x", "--out", str(tmp_path / "o2"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "tie-seed" in r.stderr


def test_without_p2p_the_ring_inside_a_server_is_staged_too():
    e = entry("m", 10.0, 1.0, workers=2)
    r = job("r", e, [0, 0], [0, 1])
    ring = sync_bytes(r, "rate")
    assert ring == 0.0          # the toy profile shows no network time: nothing to stage
    pool = ModelPool.load("v100")
    r = Running("r", None, "vgg16", 2, pool.entry("vgg16"), pool.profile("vgg16", 2), 1.0, servers=[0, 0])
    ring, inp = sync_bytes(r, "rate"), pool.entry("vgg16").input_mb * 1e6
    assert ring > 0
    assert worker_bytes(r, [0, 1])[0][2] == {"h2d": inp, "d2h": 0.0, "mem": 2 * inp}         # p2p: NVLink
    # each of the two workers sends its ring message to the other through the host: 3 memory touches per end
    assert worker_bytes(r, [0, 1], p2p=False)[1][2] == {"h2d": inp + ring, "d2h": ring, "mem": 2 * inp + 6 * ring}
    with pytest.raises(SpecError, match="p2p"):
        parse_host({"gpus_per_switch": 2, "uplink": "1GB/s", "gpus_per_socket": 4, "memory": "1GB/s", "p2p": "no"})
    assert parse_host({"gpus_per_switch": 2, "uplink": "1GB/s", "gpus_per_socket": 4, "memory": "1GB/s",
                       "p2p": False}).p2p is False
