"""Cluster layer: contention factors by hand (MoSim Eq. 6-10), placements,
the event loop's bookkeeping, the fabric models, readers and the command."""
import os

import pytest

from wormhole.cluster import (ClusterSimulator, ClusterSpec, Job, ModelPool, bin_packing, compare, load_balancing,
                              make_contention, read_measured, read_trace, summary)
from wormhole.cluster.contention import MoSimContention, nic_demand
from wormhole.cluster.fabric import FabricContention, scenario_key, sync_bytes
from wormhole.cluster.metrics import ks_distance, wasserstein
from wormhole.cluster.pairwise import pair_change
from wormhole.cluster.pool import PoolError, Profile
from wormhole.cluster.sim import Running
from wormhole.cluster.spec import SpecError, parse_bandwidth
from wormhole.cluster.trace import TraceError
from wormhole.errors import WormholeError

from conftest import run_cli

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "cluster")
TRACE16 = os.path.join(DATA, "testbed-trace-16gpu.csv")
PERJOB16 = os.path.join(DATA, "perjob.csv")


@pytest.fixture(scope="module")
def pool():
    return ModelPool.load("v100")


def spec(n=2, gpus=8, nic="463MB/s"):
    return ClusterSpec.uniform(n, gpus, nic=nic)


def running(pool, key, model, servers, loading=False):
    r = Running(key, None, model, len(servers), pool.entry(model), pool.profile(model, len(servers)), 10.0,
                servers=list(servers))
    r.last, r.load_end = (0.0, 1.0) if loading else (1.0, 0.0)
    return r


# ------------------------------------------------------------------ MoSim Eq. 6-10 by hand
def test_nic_demand_eq7():
    assert nic_demand(800.0, 4, 4) == 0.0            # all workers on the server
    assert nic_demand(800.0, 4, 0) == 0.0            # none there
    assert nic_demand(800.0, 4, 2) == 400.0          # 2 c, c = 800 / 4
    assert nic_demand(800.0, 8, 6) == 200.0          # 2 c, c = 800 / 8, whatever the split
    assert nic_demand(1300.0, 2, 1) == 650.0         # two workers: one link, c


def test_fig1_two_jobs_share_both_nics(pool):
    """Fig. 1: job 1 on GPUs 0-1 and 4-5, job 2 on 2-3 and 6-7 (two servers).
    bert x 4 demands 2 x 2218.25 / 4 = 1109.12 MB/s and inception3 x 4
    2 x 1783.24 / 4 = 891.62 MB/s on each NIC of 463 MB/s: each gets its share
    463 x D / 2000.74, so both slow by S = 2000.74 / 463 = 4.3213."""
    s = spec()
    a, b = running(pool, "a", "bert", [0, 0, 1, 1]), running(pool, "b", "inception3", [0, 0, 1, 1])
    f = MoSimContention().factors([a, b], s)
    total = 2 * 2218.247499 / 4 + 2 * 1783.240769 / 4
    assert f["a"] == pytest.approx(total / 463.0) and f["b"] == pytest.approx(total / 463.0)
    assert f["a"] == pytest.approx(4.3213, abs=1e-4)
    tau = MoSimContention().iteration_times([a, b], s)["a"][0]
    assert tau == pytest.approx(1.867 + 0.7821 * total / 463.0)


def test_two_worker_and_multi_worker_jobs(pool):
    s = spec()
    # a split 2-worker bert alone: D = c = 1300.867 / 2 = 650.43 > 463 -> S = 1.4048
    f = MoSimContention().factors([running(pool, "a", "bert", [0, 1])], s)
    assert f["a"] == pytest.approx(1300.867041 / 2 / 463.0)
    # a 6 + 2 resnet44 x 8 (c = 119.64 / 8 -> D = 29.9) fits: S = 1; beside it a
    # 2 + 2 vgg16 x 4 (D = 2 x 4835.14 / 4 = 2417.57) on both servers:
    # sum 2447.48 MB/s on each NIC -> both slow by 2447.48 / 463
    small, big = running(pool, "s", "resnet44", [0] * 6 + [1] * 2), running(pool, "b", "vgg16", [0, 0, 1, 1])
    assert MoSimContention().factors([small], s)["s"] == 1.0
    f = MoSimContention(min_bw_mbps=1.0).factors([small, big], s)
    total = 2 * 119.6416893 / 8 + 2 * 4835.139119 / 4
    assert f["s"] == pytest.approx(total / 463.0) and f["b"] == pytest.approx(total / 463.0)
    # MIN_BW floor (default 10 MB/s): the small job's share 29.91 x 463 / 2447.48
    # = 5.66 MB/s is under it, so its factor is 29.91 / 10
    f = MoSimContention().factors([small, big], s)
    assert 29.9104 * 463.0 / total < 10.0
    assert f["s"] == pytest.approx(2 * 119.6416893 / 8 / 10.0) and f["b"] == pytest.approx(total / 463.0)


def test_jobs_inside_a_server_and_loading_jobs_send_nothing(pool):
    s = spec()
    a, b = running(pool, "a", "bert", [0] * 4), running(pool, "b", "bert", [0, 1], loading=True)
    for m in ("mosim", "fixed", "flow"):
        t = make_contention(m).iteration_times([a, b], s)
        assert t["a"] == (pytest.approx(pool.profile("bert", 4).iteration_s), 1.0), m


def test_fixed_slows_only_jobs_sharing_a_server(pool):
    s = spec(3)
    a, b, c = (running(pool, "a", "resnet44", [0, 0]), running(pool, "b", "resnet44", [0, 1]),
               running(pool, "c", "resnet44", [2, 2]))
    t = make_contention("fixed", fixed_factor=1.25).iteration_times([a, b, c], s)
    it = pool.profile("resnet44", 2).iteration_s
    assert t["a"][0] == pytest.approx(1.25 * it) and t["b"][0] == pytest.approx(1.25 * it)
    assert t["c"] == (pytest.approx(it), 1.0)


# ------------------------------------------------------------------ placements
def test_bin_packing_and_load_balancing_placements():
    cap = [4, 4, 8]
    assert bin_packing(2, [4, 4, 8], cap) == [0, 0]                 # ties: lowest index, then keep filling
    assert bin_packing(4, [2, 4, 8], cap) == [0, 0, 1, 1]           # fullest first
    assert bin_packing(3, [4, 3, 8], cap) == [1, 1, 1]
    assert load_balancing(2, [4, 4, 8], cap) == [0, 1]              # emptiest by fraction first
    assert load_balancing(4, [4, 4, 4], [4, 4, 8]) == [0, 1, 0, 1]    # server 2 is half used already
    assert bin_packing(20, [4, 4, 8], cap) is None and load_balancing(17, [4, 4, 8], cap) is None


def test_fifo_queue_blocks_at_the_head(pool):
    s = spec(1, 8)
    jobs = [Job("a", "resnet44", 0.0, 8, 100.0), Job("b", "resnet44", 1.0, 8, 100.0),
            Job("c", "resnet44", 2.0, 2, 100.0)]
    res = ClusterSimulator(jobs, pool, s, make_contention("none"), policy="bin-packing", loading="none").run()
    by = {j.job_id: j for j in res.jobs}
    assert by["a"].start == 0.0 and by["b"].start == pytest.approx(100.0)
    assert by["c"].start == pytest.approx(200.0)      # waits behind b although 2 GPUs were never free anyway
    for j in res.jobs:
        assert j.jct == pytest.approx(j.wait + j.training)
        assert j.wait == pytest.approx(j.start - j.arrival)


def test_user_policy_plugs_in(pool):
    def last_server_first(gpus, free, capacity):
        out = []
        for i in reversed(range(len(free))):
            take = min(free[i], gpus - len(out))
            out += [i] * take
        return out if len(out) == gpus else None
    res = ClusterSimulator([Job("a", "resnet44", 0.0, 4, 50.0)], pool, spec(2, 8), make_contention("none"),
                           policy=last_server_first).run()
    assert res.jobs[0].placement == "1:4"
    with pytest.raises(WormholeError):
        ClusterSimulator([Job("a", "resnet44", 0.0, 4, 50.0)], pool, spec(), make_contention("none"),
                         policy=lambda g, f, c: [0]).run()


# ------------------------------------------------------------------ the event loop
@pytest.mark.parametrize("model", ["none", "fixed", "mosim", "flow", "packet"])
def test_a_job_alone_runs_at_its_profiled_speed(pool, model):
    """Alone and placed as profiled (one server): training time = trace duration;
    the fabric models also across two servers (alone, packed as the profile:
    the duration; split where it need not be: slower by the NIC transfer)."""
    job = Job("a", "bert", 5.0, 4, 900.0)
    res = ClusterSimulator([job], pool, spec(), make_contention(model), policy="bin-packing").run()
    j = res.jobs[0]
    assert j.placement == "0:4" and j.training == pytest.approx(900.0) and j.jct == pytest.approx(900.0)
    # MoSim's simulator adds the loading time on top of d_J
    res = ClusterSimulator([job], pool, spec(), make_contention(model), policy="bin-packing",
                           loading="extra").run()
    assert res.jobs[0].training == pytest.approx(900.0 + pool.profile("bert", 4).loading_s)
    if model not in ("flow", "packet"):
        return
    # the fabric models filter out a job inside one server: place it across two
    prof = pool.profile("bert", 4)
    # servers of 2 GPUs: 2 + 2 is the only placement, so it is also the packed one
    # the profile is compared with: the fabric adds nothing, but it was simulated
    c = make_contention(model)
    res = ClusterSimulator([job], pool, spec(2, 2), c, policy="bin-packing").run()
    assert res.jobs[0].placement == "0:2 1:2" and c.simulated >= 1
    assert res.jobs[0].training == pytest.approx(900.0, rel=1e-9)
    # servers of 8 GPUs, split 2 + 2 by load balancing: each server's NIC carries one
    # worker's sends, c = 2218.25 / 4 = 554.56 MB/s over T_iter - 0.1998 s (compute
    # without communication: the one-GPU profile's), more than the NIC's 463 MB/s
    c = make_contention(model)
    res = ClusterSimulator([job], pool, spec(), c, policy="load-balancing").run()
    comp = pool.profile("bert", 1).compute_s
    sent = 2218.247499 / 4 * (prof.iteration_s - comp) * 1e6
    floor = comp + sent / 463e6
    load = prof.loading_s
    assert res.jobs[0].placement == "0:2 1:2" and c.simulated >= 1
    assert res.jobs[0].training >= load + (900.0 - load) / prof.iteration_s * floor


def test_progress_is_advanced_event_to_event(pool):
    """Eq. 3-5 by hand: a split 2-worker bert alone for 100 s, then with a split
    vgg16; the first job's end follows from the iterations done at each rate."""
    s = spec()
    prof = pool.profile("bert", 2)
    jobs = [Job("a", "bert", 0.0, 2, None, 1000.0), Job("b", "vgg16", 100.0, 2, None, 10.0 ** 6)]
    res = ClusterSimulator(jobs, pool, s, MoSimContention(), policy="load-balancing", loading="none").run()
    a = [j for j in res.jobs if j.job_id == "a"][0]
    d_a, d_b = 1300.867041 / 2, 2087.844154 / 2
    tau1 = prof.compute_s + prof.network_s * d_a / 463.0
    tau2 = prof.compute_s + prof.network_s * (d_a + d_b) / 463.0
    done = 100.0 / tau1
    assert a.end == pytest.approx(100.0 + (1000.0 - done) * tau2)


def test_trace_jobs_get_iterations_from_duration(pool):
    job = read_trace(TRACE16)[0]
    p = pool.profile("bert", 2)
    res = ClusterSimulator([job], pool, spec(), make_contention("none"), loading="none").run()
    assert res.jobs[0].training == pytest.approx(job.duration)
    assert res.jobs[0].standalone == pytest.approx(job.duration / p.iteration_s * p.iteration_s)


def test_tiresias_baseline_reproduces_mosims_published_errors(pool):
    """MoSim Table II: Tiresias (no contention, loading on top of the duration)
    against the 16-GPU testbed under load balancing: 58.71 / 73.64 / 67.19 / 47.51 %
    (average training time, average JCT, P99 JCT, makespan)."""
    res = ClusterSimulator(read_trace(TRACE16), pool, spec(), make_contention("none"), policy="load-balancing",
                           loading="extra").run()
    err = compare(res.jobs, read_measured(PERJOB16, "load-balancing"))
    got = [err["mape_avg_training"], err["mape_avg_jct"], err["mape_p99_jct"], err["mape_makespan"]]
    assert got == pytest.approx([58.71, 73.64, 67.19, 47.51], abs=0.01)


# ------------------------------------------------------------------ fabric models
def test_fabric_alone_across_servers_adds_the_nic_transfer(pool):
    """flow model, serial iteration: a 1 + 1 job alone moves its ring bytes per
    iteration over the NIC (goodput 463 MB/s: 5 Gbps x efficiency 0.741)
    instead of NVLink (16384 MB/s); tau grows by the difference."""
    s = ClusterSpec.uniform(2, 8, nic="5Gbps", efficiency=463 / 625)
    r = running(pool, "a", "bert", [0, 1])
    b = sync_bytes(r)
    c = FabricContention("flow", overlap=False, volume="gradient", sender="transport")
    tau, f = c.iteration_times([r], s)["a"]
    # the flow backend counts headers on both links alike: NVLink's goodput is
    # its rate x the same header share the NIC's wire factor makes up for
    w = c.wire_factor(s)
    extra = b / 463e6 - b * w / 16384e6 / (625 / (463 * w))
    assert tau == pytest.approx(pool.profile("bert", 2).iteration_s + extra, rel=5e-3)
    assert f == pytest.approx(1 + extra / pool.profile("bert", 2).network_s, rel=5e-3)
    tau_p, _ = FabricContention("packet", overlap=False, volume="gradient", sender="transport").iteration_times(
        [r], s)["a"]
    assert tau_p == pytest.approx(tau, rel=0.05)


def test_ddp_overlap_hides_bucket_transfers_behind_the_backward_pass(pool):
    """DDP: buckets of 1 MB then 25 MB, all-reduced as the backward pass makes
    them, so the NIC works during the backward pass: the iteration is shorter
    than compute-then-communicate, but not shorter than forward + the transfer."""
    s = ClusterSpec.uniform(2, 8, nic="5Gbps", efficiency=463 / 625)
    r = running(pool, "a", "vgg16", [0, 0, 1, 1])
    ddp = FabricContention("flow", volume="gradient", sender="transport")
    serial = FabricContention("flow", overlap=False, volume="gradient", sender="transport")
    sizes = ddp.buckets(r)
    grad = pool.entry("vgg16").grad_mb * 1e6
    assert sizes[0] == pytest.approx(sync_bytes(r) * 1e6 / grad) and sizes[1] == pytest.approx(25 * sizes[0])
    assert sum(sizes) == pytest.approx(sync_bytes(r)) and serial.buckets(r) == [sync_bytes(r)]
    t_ddp, t_ser = ddp.iteration_times([r], s)["a"][0], serial.iteration_times([r], s)["a"][0]
    p = pool.profile("vgg16", 4)
    assert t_ddp < t_ser
    assert t_ser - t_ddp <= p.compute_s * 2 / 3 + 1e-6
    assert t_ddp > p.compute_s / 3 + sync_bytes(r) / 463e6


def test_transport_and_efficiency_from_the_spec(tmp_path):
    """The spec names the transport and the line rate; the efficiency is met on
    one transfer by the wire factor, which both backends report."""
    s = ClusterSpec.load("testbed-16gpu")
    assert s.transport == "dctcp" and s.servers[0].nic_Bps == 625e6 and s.goodput_Bps(0) == pytest.approx(463.125e6)
    for backend, tol in (("flow", 1e-3), ("packet", 0.02)):
        chk = FabricContention(backend).transport_check(s)
        assert chk["wire_factor"] > 1 and chk["goodput_Bps"] == pytest.approx(chk["target_Bps"], rel=tol)
    bad = tmp_path / "c.yaml"
    bad.write_text("servers: [{count: 2, gpus: 8}]\ntransport: bbr\n")
    with pytest.raises(SpecError):
        ClusterSpec.load(str(bad))
    bad.write_text("servers: [{count: 2, gpus: 8}]\nefficiency: 1.5\n")
    with pytest.raises(SpecError):
        ClusterSpec.load(str(bad))
    with pytest.raises(WormholeError):
        FabricContention("flow", bucket_mb=0)


def test_a_loss_based_tcp_transport_with_a_sized_buffer(tmp_path):
    """transport: tcp runs the packet kernel's NewReno without PFC on switches
    of the spec's buffer; the transport's timer floors are divided by the
    replay's time scaling (its timers are at least the RTT's multiples, which
    the scaling leaves), the kernel's fixed timeout is not."""
    path = tmp_path / "c.yaml"
    path.write_text("servers: [{count: 2, gpus: 8, nic: 5Gbps}]\ntransport: tcp\nbuffer: 9MB\nefficiency: 0.741\n")
    s = ClusterSpec.load(str(path))
    assert s.transport == "tcp" and s.buffer_bytes == 9_000_000
    c = FabricContention("packet")
    topo, _ = s.fabric([0, 1])
    cfg = c._network(topo, s, [0, 1], 10.0).config
    assert cfg.cc == "tcp" and not cfg.pfc and cfg.buffer_size == pytest.approx(9e6 / 2**20)
    assert cfg.tcp_rto_min == pytest.approx(200e3 / 10) and cfg.tcp_pto_min == pytest.approx(10e3 / 10)
    assert cfg.rto == 200e3
    chk = c.transport_check(s)
    assert chk["goodput_Bps"] == pytest.approx(chk["target_Bps"], rel=0.02)
    assert c.transport_key(s) != c.transport_key(ClusterSpec(s.servers, transport="tcp", efficiency=0.741))
    for text, needle in (("buffer: 9 parsecs", "buffer must look like"), ("buffer: 0.1B", "at least one byte")):
        path.write_text("servers: [{count: 2, gpus: 8}]\ntransport: tcp\n" + text + "\n")
        with pytest.raises(SpecError) as e:
            ClusterSpec.load(str(path))
        assert needle in str(e.value)


def test_rate_traffic_comes_from_the_profile(pool):
    """volume="rate": compute without communication is the shorter of the
    profile's and the one-GPU profile's compute (BERT: 0.1998 s of 2.2267 s);
    each worker sends at c = V_net / N for the rest of the profiled iteration,
    and that is its sender's rate."""
    from wormhole.cluster.fabric import compute_only_s
    c = FabricContention("flow")
    bert = running(pool, "a", "bert", [0] * 4 + [1] * 4)
    assert compute_only_s(bert) == pytest.approx(0.199811866)
    assert sync_bytes(bert, "rate") == pytest.approx(4125.661936 / 8 * (3.47512 - 0.199811866) * 1e6)
    assert c.sender_Bps(bert) == pytest.approx(4125.661936 / 8 * 1e6, rel=1e-6)
    r50 = running(pool, "b", "resnet50", [0] * 4)           # its one-GPU compute is the longer
    assert compute_only_s(r50) == pytest.approx(0.30231)
    assert c.buckets(r50) == [pytest.approx(1560.92668 / 4 * 0.41425 * 1e6)]
    assert FabricContention("flow", sender="transport").sender_Bps(bert) is None


def test_a_paced_worker_is_slowed_only_where_the_nic_share_is_below_its_rate(pool):
    """flow model: resnet50 x 4 split 2 + 2 sends c = 1560.93 / 4 = 390.2 MB/s,
    under the NIC's goodput g (463 MB/s line rate x the flow backend's header
    share): alone it keeps its profiled iteration but for its last piece
    (1 / CHUNKS of its bytes), which crosses the NIC at g instead of the
    server's links.  Two such jobs ask 2 c > g of each NIC direction: both slow
    down, at most to sharing g half and half the whole time."""
    from wormhole.cluster.fabric import CHUNKS
    s = spec()
    c = FabricContention("flow")
    a, b = running(pool, "a", "resnet50", [0, 0, 1, 1]), running(pool, "b", "resnet50", [0, 0, 1, 1])
    p = pool.profile("resnet50", 4)
    g = c.transport_check(s)["own_goodput_Bps"]
    intra = g / s.servers[0].nic_Bps * s.servers[0].intra_Bps
    sent = 1560.92668 / 4 * (p.iteration_s - p.compute_s) * 1e6
    assert 390.2e6 < g
    alone = c.iteration_times([a], s)["a"][0]
    assert alone == pytest.approx(p.iteration_s + sent / CHUNKS * (1 / g - 1 / intra), rel=1e-3)
    both = c.iteration_times([a, b], s)
    assert both["a"][0] > alone * 1.05 and both["b"][0] > alone * 1.05
    assert both["a"][0] <= p.compute_s + sent / (g / 2) + sent / CHUNKS / g


def test_ring_in_rank_order_crosses_the_nic_at_every_alternation(pool):
    """ring="rank": load balancing places bert x 4 as servers 0, 1, 0, 1, and a
    ring in that order crosses the NICs on all four links, two flows per NIC
    direction; in server order (0, 0, 1, 1) only two links cross.  NIC-bound
    (c = 554.6 MB/s > g), the communication takes twice as long."""
    s = spec()
    alt = running(pool, "a", "bert", [0, 1, 0, 1])
    assert scenario_key([alt], s, "rank")[0] != scenario_key([running(pool, "a", "bert", [0, 0, 1, 1])], s,
                                                                "rank")[0]
    assert scenario_key([alt], s)[0] == scenario_key([running(pool, "a", "bert", [0, 0, 1, 1])], s)[0]
    comp = pool.profile("bert", 1).compute_s
    by_server = FabricContention("flow").iteration_times([alt], s)["a"][0]
    by_rank = FabricContention("flow", ring="rank").iteration_times([alt], s)["a"][0]
    assert by_rank - comp == pytest.approx(2 * (by_server - comp), rel=0.02)


def test_fabric_contention_slows_co_runners_and_is_memoized(pool):
    s = spec(4)
    c = FabricContention("flow")
    a, b = running(pool, "a", "vgg16", [0, 0, 1, 1]), running(pool, "b", "vgg16", [0, 0, 1, 1])
    alone = c.iteration_times([a], s)["a"][0]
    both = c.iteration_times([a, b], s)
    assert both["a"][0] > alone and both["b"][0] > alone
    n = c.simulated
    # the same pattern on other servers, listed the other way round: a memo hit
    a2, b2 = running(pool, "x", "vgg16", [2, 2, 3, 3]), running(pool, "y", "vgg16", [3, 3, 2, 2])
    again = c.iteration_times([b2, a2], s)
    assert c.simulated == n and sorted(v[0] for v in again.values()) == pytest.approx(
        sorted(v[0] for v in both.values()))
    # jobs on disjoint servers do not meet
    far = running(pool, "far", "vgg16", [2, 2, 3, 3])
    assert c.iteration_times([a, far], s)["a"][0] == pytest.approx(alone)


def test_scenario_key_is_invariant_under_server_relabeling(pool):
    s = spec(4)
    g1 = [running(pool, "a", "bert", [0, 0, 0, 1]), running(pool, "b", "vgg16", [1, 2])]
    g2 = [running(pool, "q", "vgg16", [0, 3]), running(pool, "p", "bert", [2, 2, 2, 3])]
    g3 = [running(pool, "a", "bert", [0, 1, 1, 1]), running(pool, "b", "vgg16", [1, 2])]
    assert scenario_key(g1, s)[0] == scenario_key(g2, s)[0]
    assert scenario_key(g1, s)[0] != scenario_key(g3, s)[0]


def test_pairwise_change(pool):
    s = spec()
    # mosim by hand: bert x 8 (4 + 4) with itself: S_solo = 2 x 4125.66 / 8 / 463,
    # S_pair = 2 S_solo
    c = MoSimContention()
    p = pool.profile("bert", 8)
    ssolo = 2 * 4125.661936 / 8 / 463.0
    want = (p.compute_s + p.network_s * 2 * ssolo) / (p.compute_s + p.network_s * ssolo)
    assert pair_change(pool, s, c, "bert", "bert") == pytest.approx(want)
    assert pair_change(pool, s, FabricContention("flow"), "vgg16", "bert") > 1.0


# ------------------------------------------------------------------ metrics
def test_ks_and_wasserstein_by_hand():
    assert ks_distance([1, 2, 3], [1, 2, 4]) == pytest.approx(1 / 3)
    assert wasserstein([1, 2, 3], [1, 2, 4]) == pytest.approx(1 / 3)
    assert wasserstein([0, 0], [5, 5]) == pytest.approx(5.0)
    assert ks_distance([0, 1], [5, 6]) == pytest.approx(1.0)


def test_measured_rows_are_selected_by_policy():
    bp = read_measured(PERJOB16, "bin-packing")
    lb = read_measured(PERJOB16, "load-balancing")
    assert len(bp) == len(lb) == 30
    assert summary(bp)["makespan"] == pytest.approx(23926.28003, abs=1e-3)     # the testbed's summary.csv


# ------------------------------------------------------------------ readers and errors
def test_trace_formats(pool):
    jobs = read_trace(TRACE16)
    assert len(jobs) == 30 and jobs[0].model == "bert" and jobs[0].gpus == 2 and jobs[0].duration == 6521
    assert jobs[0].extra["grad_mb"] == 1560
    t = read_trace(os.path.join(DATA, "tiresias_20_job.csv"))
    assert len(t) == 20 and t[1].gpus == 8 and t[1].arrival == 30 and t[1].model == "vgg11"
    p = read_trace(os.path.join(DATA, "philly_20_job.csv"))
    assert len(p) == 20 and min(j.arrival for j in p) == 0.0 and all(j.duration > 0 for j in p)
    # a trace without pool models draws them (seeded)
    import random
    res = ClusterSimulator(p[:5], pool, spec(4), make_contention("none"), model_rng=random.Random(1)).run()
    assert len(res.jobs) == 5


@pytest.mark.parametrize("text,needle", [
    ("job_id,model,arrival_time,duration,gpu_workers\n0,bert,0,10,two\n", "gpu_workers is not a number"),
    ("job_id,model,arrival_time,duration,gpu_workers\n0,bert,-1,10,2\n", "arrival_time must be at least"),
    ("job_id,model,arrival_time,duration,gpu_workers\n0,bert,0,10,2\n0,bert,1,10,2\n", "duplicate job id"),
    ("job_id,model,arrival_time,gpu_workers\n0,bert,0,2\n", "needs a duration or a num_iteration"),
    ("a,b,c\n1,2,3\n", "unknown trace format"),
    ("name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,6,2048\n", "gives no job durations"),
    ("job_id,num_gpu,submit_time,duration\n0,1.5,0,10\n", "num_gpu is not a whole number"),
])
def test_bad_traces_name_file_and_line(tmp_path, text, needle):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(TraceError) as e:
        read_trace(str(path))
    assert needle in str(e.value) and str(path) in str(e.value)


def test_unknown_model_and_worker_count_are_named(pool, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job_id,model,arrival_time,duration,gpu_workers\n0,bert,0,10,2\n1,llama,0,10,2\n")
    with pytest.raises(PoolError, match="llama.*not in the pool") as e:
        ClusterSimulator(read_trace(str(path)), pool, spec(), make_contention("none"))
    assert "t.csv:3" in str(e.value)
    path.write_text("job_id,model,arrival_time,duration,gpu_workers\n0,bert,0,10,3\n")
    with pytest.raises(PoolError, match="no profile for 3 workers"):
        ClusterSimulator(read_trace(str(path)), pool, spec(), make_contention("none"))
    path.write_text("job_id,model,arrival_time,duration,gpu_workers\n0,bert,0,10,8\n")
    with pytest.raises(TraceError, match="needs 8 GPUs, the cluster has 4"):
        ClusterSimulator(read_trace(str(path)), pool, spec(2, 2), make_contention("none"))


def test_a_model_the_pool_lacks_is_never_replaced(pool, tmp_path):
    """Only a trace without a model column gets drawn models; a name the pool
    lacks is a named error even when a generator is given."""
    import random
    path = tmp_path / "t.csv"
    path.write_text("job_id,model,arrival_time,duration,gpu_workers\n0,bert,0,10,2\n1,llama99,0,10,2\n")
    with pytest.raises(PoolError, match="'llama99' is not in the pool") as e:
        ClusterSimulator(read_trace(str(path)), pool, spec(), make_contention("none"), model_rng=random.Random(0))
    assert "t.csv:3" in str(e.value) and e.value.value == "llama99"
    path.write_text("job_id,num_gpu,submit_time,model_name,duration\n0,1,0,vgg16,10\n1,1,0,vgg19,10\n")
    with pytest.raises(PoolError, match="'vgg19' is not in the pool") as e:
        ClusterSimulator(read_trace(str(path)), pool, spec(), make_contention("none"), model_rng=random.Random(0))
    assert "t.csv:3" in str(e.value)
    path.write_text("job_id,num_gpu,submit_time,model_name,duration\n0,1,0,,10\n")
    with pytest.raises(TraceError, match="missing value in column 'model_name'") as e:
        read_trace(str(path))
    assert "t.csv:2" in str(e.value)
    path.write_text("job_id,num_gpu,submit_time,duration\n0,1,0,10\n1,2,5,10\n")        # no model column
    jobs = read_trace(str(path))
    with pytest.raises(TraceError, match="no model column") as e:
        ClusterSimulator(jobs, pool, spec(), make_contention("none"))
    assert "t.csv:2" in str(e.value)
    res = ClusterSimulator(jobs, pool, spec(), make_contention("none"), model_rng=random.Random(0)).run()
    assert [j.model_source for j in res.jobs] == ["drawn", "drawn"] and res.stats["models_drawn"] == 2
    assert all(j.model in pool for j in res.jobs)
    res = ClusterSimulator(read_trace(TRACE16), pool, spec(), make_contention("none")).run()
    assert {j.model_source for j in res.jobs} == {"trace"} and res.stats["models_drawn"] == 0


def test_cluster_command_refuses_unknown_models_and_says_when_it_draws(tmp_path, capsys):
    from wormhole.cli import main         # in this process (run_cli: the same main in a new interpreter)
    bad = tmp_path / "t.csv"
    bad.write_text("job_id,model,arrival_time,duration,gpu_workers\n0,bert,0,10,2\n1,llama99,0,10,2\n")
    out = tmp_path / "out"
    code = main(["cluster", "--trace", str(bad), "--cluster", "testbed-16gpu", "--contention", "none",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "t.csv:3" in err and "'llama99' is not in the pool" in err and not out.exists()
    bad.write_text("job_id,num_gpu,submit_time,duration\n0,1,0,10\n1,2,5,10\n")
    code = main(["cluster", "--trace", str(bad), "--cluster", "testbed-16gpu", "--contention", "none",
                 "--seed", "3", "--out", str(out)])
    assert code == 0
    assert "no model column: the models of 2 jobs were drawn from pool v100 (--seed 3" in capsys.readouterr().out
    rows = (out / "none" / "jobs.csv").read_text().splitlines()
    assert rows[0].endswith(",model_source") and all(x.endswith(",drawn") for x in rows[1:])
    assert "models_drawn" in (out / "summary.csv").read_text().splitlines()[0]


@pytest.mark.parametrize("text,needle", [
    ("servers: []\n", "non-empty list"),
    ("servers:\n  - {count: 2, gpus: 0}\n", "gpus must be a positive integer"),
    ("servers:\n  - {count: 2, gpus: 8, nic: fast}\n", "nic must look like"),
    ("servers:\n  - {count: 2, gpus: 8, nics: 5Gbps}\n", "unknown server key"),
    ("servers:\n  - {count: 2, gpus: 8}\nscheduler: x\n", "unknown key"),
    ("servers: [\n", "not valid YAML"),
])
def test_bad_specs_are_named(tmp_path, text, needle):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as e:
        ClusterSpec.load(str(path))
    assert needle in str(e.value) and str(path) in str(e.value)


def test_bandwidth_units():
    assert parse_bandwidth("5Gbps") == 625e6
    assert parse_bandwidth("463MB/s") == 463e6
    assert parse_bandwidth(463) == 463e6
    s = ClusterSpec.load(os.path.join(os.path.dirname(DATA), "..", "..", "wormhole", "presets",
                                      "cluster_testbed_16gpu.yaml"))
    assert s.n_gpus == 16 and s.servers[0].nic_Bps == 625e6 and s.goodput_Bps(0) == pytest.approx(463.125e6)


def test_shipped_pool_is_built_from_the_profiles(pool):
    grad = {m: pool.entry(m).grad_mb for m in pool.names()}
    built = ModelPool.from_mosim_csv(os.path.join(DATA, "itertime_wshark-v100-8gpu-ar-loading-time.csv"),
                                     os.path.join(DATA, "network_ar_v100_8gpu_network_summary.csv"),
                                     os.path.join(DATA, "model_aliases_from_scripts_run.sh.csv"), grad, "v100")
    assert built.names() == pool.names() and len(pool.names()) == 13
    for m in pool.names():
        assert built.entry(m).profiles == pool.entry(m).profiles
    assert pool.profile("workload_02", 8) == Profile(2.22671, 1.24841, 4125.661936, 87.18974456)


def test_bad_pool_is_named(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("models:\n  bert:\n    grad_mb: 10\n    workers:\n      2: {compute_s: -1}\n")
    with pytest.raises(PoolError, match="compute_s of bert x 2 must be non-negative"):
        ModelPool.load(str(path))


# ------------------------------------------------------------------ the command
def test_cluster_command_writes_reports(tmp_path):
    out = tmp_path / "out"
    r = run_cli("cluster", "--trace", TRACE16, "--cluster", "testbed-16gpu", "--policy", "bin-packing",
             "--contention", "none,mosim,flow", "--compare", PERJOB16, "--out", str(out))
    assert r.returncode == 0, r.stderr
    text = (out / "summary.csv").read_text().splitlines()
    assert text[0].startswith("contention,policy,jobs,avg_training") and len(text) == 4
    for m in ("none", "mosim", "flow"):
        assert (out / m / "jobs.csv").exists() and (out / m / "jct.png").stat().st_size > 1000
    rows = (out / "flow" / "jobs.csv").read_text().splitlines()
    assert rows[0].startswith("job_id,model,gpus,placement,arrival,start,end,wait,training,jct") and len(rows) == 31
    # one figure overlays every model's JCT CDF over the measurement; the table names its units
    assert (out / "jct_cdf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for needle in ("avg_jct (s)", "makespan (s)", "mape_avg_jct (%)", "ks_jct (0-1)", "jobs (jobs)"):
        assert needle in r.stdout


def test_cluster_command_bad_input_one_line_exit_2(tmp_path):
    bad = tmp_path / "t.csv"
    bad.write_text("job_id,model,arrival_time,duration,gpu_workers\n0,bert,0,ten,2\n")
    out = tmp_path / "out"
    r = run_cli("cluster", "--trace", str(bad), "--cluster", "testbed-16gpu", "--out", str(out))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "t.csv:2" in r.stderr
    assert not out.exists()
    r = run_cli("cluster", "--trace", TRACE16, "--cluster", "testbed-16gpu", "--contention", "magic",
             "--out", str(out))
    assert r.returncode == 2 and "unknown contention model" in r.stderr and not out.exists()


def test_gpu_free_characterization(tmp_path):
    """Compute = FLOPs / (peak x efficiency); networking = a simulated ring
    all-reduce on one server: with one chunk per segment, 2 (N - 1) steps of
    (latency + segment / NVLink rate)."""
    from wormhole.cluster.characterize import characterize
    from wormhole.workload import alpha_beta_ring
    desc = tmp_path / "jobs.yaml"
    desc.write_text("name: free\ngpu: {peak_tflops: 100, efficiency: 0.5}\nmodels:\n"
                    "  resnet50: {params_m: 5, tflop_per_iter: 0.8, workers: [1, 2, 8], loading_s: 3}\n")
    s = spec()
    pool = characterize(str(desc), s)
    p1, p8 = pool.profile("resnet50", 1), pool.profile("resnet50", 8)
    assert p1 == Profile(0.016, 0.0, 0.0, 3.0) and p8.compute_s == pytest.approx(0.016)
    want = 14 * (1e-6 + 2.5e6 / 16384e6)
    assert p8.network_s == pytest.approx(want, rel=1e-6)
    assert alpha_beta_ring("allreduce", 8, 20e6, 16384e6 * 8, s.latency_ps) / 1e12 == pytest.approx(want)
    assert p8.volume_mbps == pytest.approx(8 * 2 * (2 * 7 / 8 * 20) / p8.network_s)
    # the pool drives a cluster run like a profiled one
    res = ClusterSimulator([Job("a", "resnet50", 0.0, 8, 100.0)], pool, s, make_contention("flow")).run()
    assert res.jobs[0].training == pytest.approx(100.0)
    out = tmp_path / "pool.yaml"
    r = run_cli("cluster-pool", "--describe", str(desc), "--cluster", "testbed-16gpu", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert ModelPool.load(str(out)).profile("resnet50", 2).network_s > 0
