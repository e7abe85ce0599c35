"""The accelerator under contention: the accounting every fidelity report
carries (processed + skipped against the full run, sources of skipped events,
reject reasons, worst messages) and the contended fabrics the suite uses."""
import numpy as np
import pytest

import wormhole as wh
from wormhole.runner import default_fabric, fabric_label, workload_parser
from wormhole.fidelity import compare, format_report, rank_paired
from wormhole.units import gbps

MB = 1_000_000


def _dumbbell_run(accelerate):
    """Two long flows sharing one bottleneck (contended), and a short one."""
    topo = wh.dumbbell(4, 4, rate=gbps(100), bottleneck=gbps(100))
    net = wh.Network(topo, wh.Config.preset("hpcc", accelerate=accelerate))
    for i in range(2):
        net.send(i, 4 + i, 8 * MB)
    net.send(0, 5, 200_000, at=300 * 1000 * 1000)
    net.run()
    return net, 0.0, net.results["fct"].astype(float), None


@pytest.fixture(scope="module")
def runs():
    return _dumbbell_run(False), _dumbbell_run(True)


def test_skipped_events_by_source_add_up(runs):
    _, acc = runs
    st = acc[0].stats
    by = st["events_skipped_by"]
    assert set(by) == {"steady", "memo_replay", "memo_follow", "mirror"}
    assert sum(by.values()) == st["events_skipped"]
    assert st["events_skipped"] > 0
    assert set(st["skip_backs_by"]) == {"flow_start", "post_idle_conn", "dcqcn_increase", "other"}
    assert sum(v for k, v in st["skip_backs_by"].items() if k != "dcqcn_increase") == st["skip_backs"]
    assert all(v >= 0 for v in st["skip_rejects"].values())


def test_report_reconciles_with_the_full_run(runs):
    full, acc = runs
    s, ff, fa = compare(full, acc)
    assert s["events_accounted"] == s["events_accelerated"] + s["events_skipped"]
    assert abs(s["accounted_vs_full_pct"]) < 5
    assert abs(sum(s["skipped_share_pct"].values()) - 100) < 1e-6
    errs = [w["err_pct"] for w in s["worst"]]
    assert 0 < len(errs) <= 10 and errs == sorted(errs, reverse=True)
    assert {"src", "dst", "size", "fct_full_us", "fct_other_us"} <= set(s["worst"][0])
    text = format_report(s)
    assert "accounting" in text and "worst" in text and "skipped from" in text
    assert s["acks_by"]["window_filling"] > 0
    assert "simulated ACKs by why    rate_unsteady" in text       # the largest share first


def test_rank_pairing_ignores_swapped_roles():
    class Run:
        pass
    a = Run()
    a.results = {"size": np.array([10, 10, 10, 20])}
    a.messages = []                               # flows, not messages on connections
    ff = np.array([1.0, 2.0, 3.0, 5.0])
    fa = np.array([3.0, 1.0, 2.0, 5.0])          # the same FCTs of one size, in another order
    assert rank_paired(a, a, ff, fa)["max_pct"] == 0


def test_contended_fabric_options():
    args = workload_parser().parse_args(["gpt13b", "--gpus", "32", "--servers-per-segment", "2",
                                          "--oversubscription", "2"])
    topo = default_fabric(args)
    spines = [n for n in topo.switches if topo.names[n].startswith("spine")]
    assert len(spines) == 1                       # 2 servers per segment / 2:1
    assert "2 servers per segment" in fabric_label(args)
    args = workload_parser().parse_args(["gpt13b", "--gpus", "64", "--fabric", "fattree"])
    assert default_fabric(args).name == "fattree-k8"
    args = workload_parser().parse_args(["gpt13b", "--gpus", "32"])
    assert default_fabric(args).name == wh.rail_optimized(32).name


@pytest.mark.parametrize("opt", [["--rate", "99.9999"], ["--delay", "1001"], ["--fabric", "rail"], ["--servers-per-segment", "2"],
                                 ["--oversubscription", "2"]])
def test_default_fabric_options_are_refused_beside_a_topology_file(opt, capsys):
    """--topology FILE is the fabric: an option of the default fabric beside it would be ignored
    (a noise run at 1 ppm slower links was once the same run), so it is one line and exit 2."""
    with pytest.raises(SystemExit) as e:
        workload_parser().parse_args(["gpt13b", "--topology", "t.txt"] + opt)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and opt[0] in err and "t.txt" in err
    args = workload_parser().parse_args(["gpt13b", "--topology", "t.txt"])
    assert (args.rate, args.delay, args.fabric, args.oversubscription) == (100.0, 1000.0, "rail", 1.0)


def test_contended_pair_without_a_steady_rate_is_not_skipped():
    """DCQCN's rates around a shared bottleneck never settle within theta over a
    window: no flow's window is ever steady, so no skip is even tried (nothing is
    refused), nothing is skipped, and every FCT is the full run's."""
    res = {}
    for acc in (False, True):
        net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset("dcqcn", accelerate=acc))
        for i in range(2):
            net.send(i, 2 + i, 4 * MB)
        net.run()
        res[acc] = (net.results["fct"].tolist(), net.stats)
    assert res[True][0] == res[False][0]
    st = res[True][1]
    assert st["events_skipped"] == 0 and st["events"] == res[False][1]["events"]
    assert st["steady_periods"] == 0 and st["skips"] == 0
    assert not any(st["skip_rejects"].values())


def test_simulated_acks_are_accounted_by_why_they_were_not_skipped(runs):
    """Every ACK the accelerated run simulated (one per data packet here) is counted once, by the state of
    its flow's partition: the short flow keeps no window, each long flow's first l - 1 samples fill its
    window, and a partition refused by a test is counted under that test's name."""
    from wormhole._core.accel import ACKS_BY
    full, acc = runs
    st, net = acc[0].stats, acc[0]
    by = st["acks_by"]
    assert list(by) == list(ACKS_BY)
    assert sum(by.values()) == st["ctrl_packets"] == st["data_packets"]     # no ACK in flight at the skip's start
    assert by["no_window"] >= 200_000 // net.config.mtu          # the 200 KB flow: shorter than a window
    assert by["window_filling"] == 2 * (net.config.steady_window - 1)
    assert by["rate_unsteady"] > 0 and by["skip_began"] == st["skips"] - st["memo_follows"]
    for name, n in by.items():
        if name.startswith("refused_") and n:
            assert st["skip_rejects"][name[len("refused_"):]] > 0, name
    assert not any(full[0].stats["acks_by"].values())
