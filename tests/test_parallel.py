"""The partitioned kernel (threads=N): byte-identical output for any thread count and any
cut of the fabric, equal to the default sequential run (the reference's order of same-time
events, ECN draws from the reference's one stream) and, under tie_order=local, to the
sequential kernel under that order; every reference run through it still equal to the ns;
the tie orders themselves on a hand-computed case; clear errors for what it cannot run."""
import os
import random

import pytest

import wormhole as wh
from wormhole.errors import ApiError, ConfigError

from conftest import DATA, run_cli

# (threads, lps): one process, one thread over several, two threads over the default and
# over a few processes (each a different cut of the fabric)
VARIANTS = [(1, 1), (1, 5), (2, 0), (2, 3)]


def _random_flows(topo, n, seed):
    rnd = random.Random(seed)
    hosts = topo.hosts
    out = []
    for _ in range(n):
        s, d = rnd.sample(hosts, 2)
        out.append((s, d, rnd.choice([3_000, 50_000, 400_000]), rnd.randrange(0, 40) * 1_000_000))
    return out


def _run(topo, flows, cfg):
    net = wh.Network(topo, cfg)
    for s, d, n, t in flows:
        net.send(s, d, n, at=t)
    net.run()
    return net


STATS = ("events", "events_by_kind", "stale_events", "pops_by_kind", "data_packets", "ctrl_packets", "drops",
         "pfc_pauses", "pfc_resumes", "ecn_marks", "nacks", "ns3_draws", "tx_done_unscheduled",
         "nic_wake_unscheduled", "max_queue_bytes", "max_switch_buffer_bytes")


def _check_identical(topo, flows, cfg, local=False):
    """threads=N for every variant against the sequential run: the default one (the reference's
    order), or tie_order=local's."""
    seq = _run(topo, flows, cfg.copy(tie_order="local") if local else cfg)
    assert seq.stats["flows_completed"] == len(flows)
    ref_fct, ref_pfc = seq.fct_lines(), seq.pfc_lines()
    for threads, lps in VARIANTS:
        net = _run(topo, flows, cfg.copy(threads=threads, lps=lps, tie_order="local" if local else "auto"))
        p = net.stats["parallel"]
        assert p["threads"] == threads and p["tie_key"] == ("local" if local else "rank")
        if lps != 1:
            assert p["lps"] > 1 and p["cut_packets"] > 0      # the fabric really was cut
        # per process: its events and cut packets add up to the run's, and each process ran
        pp = p["per_process"]
        assert len(pp) == p["lps"]
        assert sum(q["events"] for q in pp) == net.stats["events"]
        assert sum(q["cut_packets"] for q in pp) == p["cut_packets"]
        assert all(q["events"] > 0 and q["busy_seconds"] > 0 for q in pp)
        assert net.fct_lines() == ref_fct, (threads, lps)
        assert net.pfc_lines() == ref_pfc, (threads, lps)
        for k in STATS:
            assert net.stats[k] == seq.stats[k], (k, threads, lps)
    return seq


@pytest.mark.parametrize("cc", ["dcqcn", "hpcc", "none", "dctcp"])
def test_fat_tree_equal_to_the_default_sequential_run_for_every_thread_count_and_cut(cc):
    """The default configuration (ecn_rng=ns3: DCQCN's marks between Kmin and Kmax draw from the
    reference's one stream, in the sequential order of events; DCTCP marks at one threshold)."""
    topo = wh.fat_tree(4)
    cfg = wh.Config(cc="none") if cc == "none" else wh.Config.preset(cc)
    seq = _check_identical(topo, _random_flows(topo, 40, seed=3), cfg)
    if cc in ("dcqcn", "dctcp"):
        assert seq.stats["ecn_marks"] > 0
    if cc == "dcqcn":
        assert seq.stats["ns3_draws"] > 0
        net = _run(topo, _random_flows(topo, 40, seed=3), cfg.copy(threads=2))
        assert net.stats["parallel"]["deferred_draws"] == seq.stats["ns3_draws"]


@pytest.mark.parametrize("cc", ["dcqcn", "hpcc", "none"])
def test_fat_tree_local_order_identical_for_every_thread_count_and_cut(cc):
    topo = wh.fat_tree(4)
    cfg = (wh.Config(cc="none") if cc == "none" else wh.Config.preset(cc)).copy(ecn_rng="port")
    seq = _check_identical(topo, _random_flows(topo, 40, seed=3), cfg, local=True)
    if cc == "dcqcn":
        assert seq.stats["ecn_marks"] > 0           # the per-port streams were drawn from


def test_same_time_ties_across_processes_occur_and_decide_the_result():
    """On this fat-tree the order of same-time events matters: the local order gives other FCTs
    than the reference's (so the comparison above can fail), and events of different processes
    meet at the same picosecond thousands of times (counted where the ranks are merged)."""
    topo = wh.fat_tree(4)
    flows = _random_flows(topo, 40, seed=3)
    cfg = wh.Config.preset("hpcc")
    ref, loc = _run(topo, flows, cfg), _run(topo, flows, cfg.copy(tie_order="local"))
    assert sum(a != b for a, b in zip(ref.fct_lines(), loc.fct_lines())) > 0
    net = _run(topo, flows, cfg.copy(threads=2, lps=4))
    assert net.stats["parallel"]["ties_across"] > 1000
    assert net.fct_lines() == ref.fct_lines()


def test_ecn_marks_decided_at_the_round_end_reach_packets_that_crossed_a_cut():
    """An incast across pods under DCQCN with the reference's stream: marks drawn at core and
    aggregation switches (whose packets leave over cut links in the same round) and at the
    receiver's edge switch, all equal to the sequential run's."""
    topo = wh.fat_tree(4)
    cfg = wh.Config.preset("dcqcn")
    flows = [(h, topo.hosts[0], 1_000_000, 0) for h in topo.hosts[4:]]
    seq = _check_identical(topo, flows, cfg)
    assert seq.stats["ecn_marks"] > 1000 and seq.stats["ns3_draws"] > 10000

def test_incast_with_pfc_identical_for_every_thread_count():
    """16 senders into one host of a fat-tree through small buffers: PFC pauses cross the cuts
    (each frame a draw of the reference's stream, whose count the partitioned kernel keeps)."""
    topo = wh.fat_tree(4)
    cfg = wh.Config(cc="none", buffer_size=0.2)
    flows = [(h, topo.hosts[0], 200_000, 0) for h in topo.hosts[1:]]
    seq = _check_identical(topo, flows, cfg)
    assert seq.stats["pfc_pauses"] > 0


def test_rail_fabric_identical_for_every_thread_count():
    topo = wh.rail_optimized(32, gpus_per_server=4, servers_per_segment=4)
    cfg = wh.Config.preset("hpcc")
    _check_identical(topo, _random_flows(topo, 40, seed=5), cfg)


def test_reference_fixture_identical_across_threads(tmp_path):
    """A reference fixture (fixed rate, PFC, drops) through the CLI: fct.txt and pfc.txt byte for byte."""
    cfg = os.path.join(DATA, "ref_fixed_fattree4_pfc_drops", "config.txt")
    outs = []
    for extra in ([], ["--threads", "1"], ["--threads", "2"], ["--threads", "2", "--set", "lps=4"]):
        out = tmp_path / ("o%d" % len(outs))
        r = run_cli("run", "--config", cfg, "--out", str(out), "--quiet", *extra)
        assert r.returncode == 0, r.stderr
        outs.append(((out / "fct.txt").read_bytes(), (out / "pfc.txt").read_bytes()))
    assert all(o == outs[0] for o in outs)
    assert outs[0][1].count(b"\n") > 100


def test_tie_orders_on_two_packets_at_the_same_picosecond():
    """Hosts 1 and 0 (in that order) each send one 1000-byte packet to host 2 of a star at t=0:
    both reach the switch at the same picosecond, sent at the same picosecond by different
    nodes.  The reference order serves the flow scheduled first (host 1's); the local order
    serves the lower node first (host 0's).  The second waits one serialisation of 1048 bytes
    at 100 Gb/s: 83.84 ns, 83 ns in whole ns."""
    fct = {}
    for tie in ("reference", "local"):
        net = wh.Network(wh.star(3), wh.Config(cc="none", tie_order=tie))
        a = net.send(1, 2, 1000)
        b = net.send(0, 2, 1000)
        net.run()
        fct[tie] = {f: net.results["fct"][f] for f in (a, b)}
    ref, loc = fct["reference"], fct["local"]
    assert ref[1] - ref[0] == 83_000 and loc[0] - loc[1] == 83_000
    assert ref[0] == loc[1]


def _small_net(**over):
    return wh.Network(wh.fat_tree(4), wh.Config(cc="none", ecn_rng="port", threads=2).copy(**over))


def test_unsupported_combinations_are_refused_clearly():
    with pytest.raises(ConfigError, match="accelerator"):
        _small_net(accelerate=True)
    with pytest.raises(ConfigError, match="ecn_rng"):
        wh.Network(wh.fat_tree(4), wh.Config.preset("dcqcn").copy(threads=2, tie_order="local"))
    with pytest.raises(ConfigError, match="link errors"):
        wh.Network(wh.fat_tree(4), wh.Config(cc="none", threads=2, error_rate_per_link=0.01))
    with pytest.raises(ConfigError, match="sample"):
        _small_net(sample_interval=1.0)
    with pytest.raises(ConfigError, match="max_packets"):
        _small_net(max_packets=1000)
    with pytest.raises(ConfigError, match="flow backend"):
        wh.Network(wh.fat_tree(4), wh.Config(threads=2), backend="flow")
    net = _small_net()
    with pytest.raises(ApiError, match="threads"):
        net.send(0, 1, 1000, on_done=lambda r: None)
    with pytest.raises(ApiError, match="threads"):
        net.schedule(10, lambda: None)
    net.send(0, 1, 1000)
    with pytest.raises(ApiError, match="threads"):
        net.step()


def test_cli_threads_error_is_one_line(tmp_path):
    cfg = os.path.join(DATA, "hpcc-ns3-runs", "incast8_dcqcn", "config.txt")
    r = run_cli("run", "--config", cfg, "--out", str(tmp_path / "o"), "--threads", "2", "--set", "tie_order=local")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "ecn_rng" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("run", "--config", cfg, "--out", str(tmp_path / "o"), "--threads", "2", "--mode", "accelerated",
                "--set", "ecn_rng=port")
    assert r.returncode == 2 and "accelerator" in r.stderr and r.stderr.count("\n") == 1


def test_a_run_in_slices_equals_one_run():
    """run(until=...) several times (the progress bar's 50 us slices): rounds end at each bound, the
    processes keep their state between calls, and the output is the same as one run's."""
    topo = wh.fat_tree(4)
    cfg = wh.Config.preset("dcqcn").copy(threads=2)
    flows = _random_flows(topo, 30, seed=11)
    whole = _run(topo, flows, cfg)
    net = wh.Network(topo, cfg)
    for s, d, n, t in flows:
        net.send(s, d, n, at=t)
    t = 0
    while net.stats["flows_completed"] < len(flows):
        t += 7_000_000
        net.run(until=t)
        assert net.now == t
    net.run()
    assert net.fct_lines() == whole.fct_lines()
    assert net.stats["events"] == whole.stats["events"]


REF = [os.path.join(DATA, "hpcc-ns3-runs", c) for c in sorted(os.listdir(os.path.join(DATA, "hpcc-ns3-runs")))
       if os.path.isdir(os.path.join(DATA, "hpcc-ns3-runs", c))]
REF += [os.path.join(DATA, "ref_join", c) for c in sorted(os.listdir(os.path.join(DATA, "ref_join")))
        if os.path.isdir(os.path.join(DATA, "ref_join", c))]
REF += [os.path.join(DATA, c) for c in ("ref_dcqcn_fattree4", "ref_fixed_fattree4_pfc_drops", "ref_fixed_incast16_pfc")]


@pytest.mark.parametrize("d", REF, ids=os.path.basename)
def test_every_reference_run_on_two_threads_equal_to_the_ns(d):
    """Every reference run of the suite with threads=2 (cut into up to 4 processes where its
    fabric has more than one switch group): fct.txt equal to the reference's, line for line."""
    from conftest import parse_fct, run_dir
    net, ours = run_dir(d, threads=2, lps=4)
    assert net.stats["parallel"]["tie_key"] == "rank"
    assert ours == parse_fct(os.path.join(d, "fct.txt"))
    if os.path.exists(os.path.join(d, "pfc.txt")) and "fixed" in d:
        with open(os.path.join(d, "pfc.txt")) as fh:
            assert [l.rstrip("\n") for l in net.pfc_lines()] == fh.read().splitlines()


def test_every_packet_event_is_counted_on_one_port_with_threads():
    """Per-port event counts (port_state: events) add up to the packet events with threads as in
    the sequential run: an arrival over a cut link counts on the receiving process's port, not on
    the sending port another thread owns."""
    topo = wh.fat_tree(4)
    flows = _random_flows(topo, 40, seed=3)
    for cfg in (wh.Config.preset("hpcc"), wh.Config.preset("hpcc").copy(threads=2, lps=4)):
        net = _run(topo, flows, cfg)
        by = net.stats["events_by_kind"]
        total = sum(net.port_state(p)["events"] for p in range(len(net.ports)))
        assert total == by["tx_done"] + by["arrive"] + by["nic_wake"]
