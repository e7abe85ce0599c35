"""The accelerator: partitions, steady-state fast-forward, skip-back, exactness at theta = 0."""
import random

import networkx as nx
import numpy as np
import pytest

import wormhole as wh
from wormhole.units import US

from conftest import contest_rounds


def scratch_partitions(net, active):
    """Connected components of active flows x directed ports (data and ACK paths)."""
    g = nx.Graph()
    for f in active:
        g.add_node(("f", f))
        for p in net.flow_path(f) + net.flow_path(f, reverse=True):
            g.add_edge(("f", f), ("p", p))
    comps = []
    for c in nx.connected_components(g):
        flows = sorted(x[1] for x in c if x[0] == "f")
        if flows:
            comps.append(flows)
    return sorted(comps)


def test_incremental_partitions_equal_a_from_scratch_computation():
    rnd = random.Random(11)
    topo = wh.fat_tree(4)
    # 8-sample windows: the accelerator looks at its partitions (and makes their split
    # checks) itself; partitions() only looks (it changes nothing: test_partitions_has_no_side_effects)
    net = wh.Network(topo, cc="hpcc", accelerate=True, steady_window=8)
    hosts = topo.hosts
    for _ in range(60):
        a, b = rnd.sample(hosts, 2)
        net.send(a, b, rnd.choice([20_000, 200_000, 1_000_000]), at=rnd.randrange(0, 300) * US)
    checked = 0
    for step in range(1, 80):
        net.run(until=step * 5 * US)
        res = net.results
        active = [int(i) for i in res["id"] if res["start"][i] <= net.now and res["finish"][i] < 0]
        assert sorted(net.partitions()) == scratch_partitions(net, active)
        checked += len(active) > 0
    assert checked > 20
    assert net.stats["partition_merges"] > 0 and net.stats["partition_splits"] > 0


def test_partitions_has_no_side_effects():
    """Looking at the partitions mid-run changes no later result: the same run, stepped
    the same way, with and without net.partitions() at every step (while flows finish
    and their partitions wait for a split check), gives the same FCTs and counters."""
    def run(look):
        net = wh.Network(wh.dumbbell(3, 3), wh.Config.preset("hpcc", accelerate=True, steady_window=200))
        for i, size in enumerate((3_000_000, 6_000_000, 12_000_000)):
            net.send(i, 3 + i, size)
        seen = []
        for step in range(1, 200):
            net.run(until=step * 20 * US)
            if look:
                seen.append(net.partitions())
        net.run()
        return net, seen

    quiet, _ = run(False)
    looked, seen = run(True)
    assert (looked.results["finish"] >= 0).all()
    assert [[0, 1, 2]] in seen and [[1, 2]] in seen and [[2]] in seen    # it looked as flows left
    assert np.array_equal(quiet.results["fct"], looked.results["fct"])
    assert quiet.fct_lines() == looked.fct_lines()
    wall = ("events_per_second", "wall_seconds")
    assert ({k: v for k, v in quiet.stats.items() if k not in wall}
            == {k: v for k, v in looked.stats.items() if k not in wall})
    assert quiet.stats["skips"] > 0 and quiet.stats["partition_splits"] > 0


def long_flows(accelerate, n=2, size=40_000_000, **cfg):
    net = wh.Network(wh.dumbbell(n, n), wh.Config.preset("hpcc", accelerate=accelerate, **cfg))
    ids = [net.send(i, n + i, size) for i in range(n)]
    return net, ids


def test_fast_forward_conserves_bytes_and_stays_accurate():
    full, ids = long_flows(False)
    full.run()
    acc, _ = long_flows(True)
    acc.run()
    st = acc.stats
    assert st["skips"] > 0 and st["events_skipped"] > 0.8 * (st["events"] + st["events_skipped"])
    rcv_nxt, rcv_bytes, retx = acc.delivered()
    assert (rcv_nxt == 40_000_000).all() and (rcv_bytes == 40_000_000).all() and (retx == 0).all()
    f0, f1 = full.results["fct"], acc.results["fct"]
    assert np.all(np.abs(f1 - f0) / f0 < 0.01)


JOIN = 9_500 * US      # three HPCC flows are steady (5% spread over 2000 samples) from about 8.5 ms


def test_skip_back_when_a_flow_joins_mid_skip():
    def build(accelerate):
        net, ids = long_flows(accelerate, n=3)
        late = {}
        net.schedule(JOIN, lambda: late.setdefault("id", net.send(2, 5, 5_000_000)))
        return net, late

    full, lf = build(False)
    full.run()
    acc, la = build(True)
    seen_skip = []
    acc.run(until=JOIN - 1)
    seen_skip.append(bool(acc.skipping()))
    acc.run()
    st = acc.stats
    assert seen_skip[0], "the partition should be fast-forwarding when the flow joins"
    assert st["skip_backs"] >= 1
    r_full, r_acc = full.flow(lf["id"]), acc.flow(la["id"])
    assert r_acc.start == JOIN
    # the long flows were extrapolated at their window goodput while the full run kept drifting
    # within the 5% steady band, so the newcomer meets slightly different competitors
    assert abs(r_acc.fct - r_full.fct) / r_full.fct < 0.10
    rcv_nxt, _, _ = acc.delivered()
    assert (rcv_nxt == acc.results["size"]).all()


@pytest.mark.parametrize("cc", ["hpcc", "dcqcn", "none"])
def test_theta_zero_reproduces_the_full_run_exactly(cc):
    def run(accelerate):
        cfg = wh.Config.preset(cc) if cc != "none" else wh.Config()
        net = wh.Network(wh.leaf_spine(2, 4, 2), cfg.copy(accelerate=accelerate, steady_theta=0.0))
        for i in range(8):
            net.send(i, (i + 3) % 8, 2_000_000, at=i * 10 * US)
        net.run()
        return net

    a, b = run(False), run(True)
    assert a.fct_lines() == b.fct_lines()
    assert b.stats["skips"] == 0 and b.stats["events"] == a.stats["events"]


def test_connections_are_fast_forwarded_between_messages():
    def run(accelerate):
        net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset("hpcc", accelerate=accelerate,
                                                                skip_margin=16_000))
        done = []
        for i in range(2):
            c = net.connect(i, 2 + i)
            for _ in range(5):
                net.post(c, 8_000_000, on_done=lambda m: done.append(m))
        net.run()
        return net, done

    full, d0 = run(False)
    acc, d1 = run(True)
    assert len(d0) == len(d1) == 10
    lat0 = np.array([m.latency for m in sorted(d0, key=lambda m: m.id)])
    lat1 = np.array([m.latency for m in sorted(d1, key=lambda m: m.id)])
    err = np.abs(lat1 - lat0) / lat0
    assert err.mean() < 0.01 and err.max() < 0.05
    assert acc.stats["events_skipped"] > 0.9 * (acc.stats["events"] + acc.stats["events_skipped"])


def test_a_skip_runs_through_message_boundaries():
    """A ring of connections where each message's completion posts the next one
    on the following connection (as a pipelined ring collective): message ends
    are reported at their virtual times inside the skip and the posted data
    extends it, so a handful of skips cover the whole run, and every message
    completes when the full run says."""
    def run(accelerate):
        net = wh.Network(wh.star(4), wh.Config.preset("hpcc", accelerate=accelerate))
        conns = [net.connect(i, (i + 1) % 4) for i in range(4)]
        done = []
        left = [24] * 4

        def make(i):
            def on_done(m):
                done.append(m)
                j = (i + 1) % 4
                if left[j] > 0:
                    left[j] -= 1
                    net.post(conns[j], 2_000_000, on_done=make(j))
            return on_done
        for i in range(4):
            for _ in range(2):
                left[i] -= 1
                net.post(conns[i], 2_000_000, on_done=make(i))
        net.run()
        return net, done

    full, d0 = run(False)
    acc, d1 = run(True)
    assert len(d0) == len(d1) == 96
    end0 = np.array([m.done for m in sorted(d0, key=lambda m: m.id)], dtype=float)
    end1 = np.array([m.done for m in sorted(d1, key=lambda m: m.id)], dtype=float)
    assert np.abs(end1 - end0).max() / end0.max() < 0.01
    st = acc.stats
    assert st["skip_extends"] > 20 and st["skips"] <= 8 and st["skip_backs"] == 0
    assert st["events_skipped"] > 0.9 * (st["events"] + st["events_skipped"])
    rcv_nxt, rcv_bytes, retx = acc.delivered()
    assert (rcv_bytes[conns_of(acc)] == 24 * 2_000_000).all()


def test_a_message_on_an_idle_connection_ends_the_skip():
    """Data posted to a connection that sends through a skip extends it, but a
    message on a connection of the partition that was idle changes its traffic:
    the skip ends there (skip-back) and the message runs as in a full run."""
    def run(accelerate):
        net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset("hpcc", accelerate=accelerate))
        busy, idle = net.connect(0, 2), net.connect(1, 3)
        net.post(busy, 40_000_000)
        late = []
        net.schedule(POST, lambda: late.append(net.post(idle, 4_000_000)))
        net.run(until=POST - 1)
        skipping = bool(net.skipping()) if accelerate else None
        net.run()
        return net, late[0], skipping

    full, m0, _ = run(False)
    acc, m1, skipping = run(True)
    assert skipping, "the busy connection should be fast-forwarding when the message arrives"
    assert acc.stats["skip_backs"] >= 1
    a, b = full.message(m0), acc.message(m1)
    assert b.posted == POST and abs(b.latency - a.latency) / a.latency < 0.10


POST = 2_000 * US       # the busy connection alone is steady well before (its 40 MB last 3.3 ms)


def conns_of(net):
    return [f for f in range(len(net.results)) if net.results["size"][f] > 1]


# ---------------------------------------------------------------- memoization

def random_graph(rnd, n):
    colours = [(rnd.choice([8, 16, 32]), 100, rnd.choice([2, 4])) for _ in range(n)]
    edges = {}
    for i in range(n):
        for j in range(i + 1, n):
            if rnd.random() < 0.4:
                edges[(i, j)] = rnd.choice([1, 2, 3])
    return colours, edges


def relabel(colours, edges, perm):
    inv = {old: new for new, old in enumerate(perm)}
    c2 = [None] * len(colours)
    for old, c in enumerate(colours):
        c2[inv[old]] = c
    e2 = {}
    for (i, j), w in edges.items():
        a, b = sorted((inv[i], inv[j]))
        e2[(a, b)] = w
    return c2, e2


def test_canonical_keys_match_isomorphic_and_differ_otherwise():
    from wormhole.accel import canonical_key
    rnd = random.Random(5)
    for _ in range(30):
        n = rnd.randrange(2, 9)
        c, e = random_graph(rnd, n)
        key, order = canonical_key(c, e, "hpcc")
        perm = list(range(n))
        rnd.shuffle(perm)
        c2, e2 = relabel(c, e, perm)
        key2, order2 = canonical_key(c2, e2, "hpcc")
        assert key == key2
        # the canonical orders map the vertices onto each other with the same colours
        assert [c[v] for v in order] == [c2[v] for v in order2]
        assert canonical_key(c, e, "dcqcn")[0] != key              # another algorithm, another key
        if e:
            (i, j), w = next(iter(e.items()))
            e3 = dict(e)
            e3[(i, j)] = w + 7                                     # another edge weight
            assert canonical_key(c, e3, "hpcc")[0] != key
        c4 = list(c)
        c4[0] = (99,) + c4[0][1:]                                  # another rate colour
        assert canonical_key(c4, e, "hpcc")[0] != key


def contests(accelerate, rounds=4, memo_db=None, **cfg):
    net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset("hpcc", accelerate=accelerate, memo_db=memo_db, **cfg))
    return contest_rounds(net, 20_000_000, rounds)


def test_memo_hits_on_repeated_convergences_and_stays_accurate(tmp_path):
    full = contests(False)
    db = str(tmp_path / "memo.sqlite")
    acc = contests(True, memo_db=db)
    st = acc.stats
    assert st["memo_stored"] >= 1 and st["memo_hits"] >= 2 and st["memo_applied"] == st["memo_hits"]
    f0, f1 = full.results["fct"], acc.results["fct"]
    err = np.abs(f1 - f0) / f0
    assert err.mean() < 0.01 and err.max() < 0.05
    rcv_nxt, _, _ = acc.delivered()
    assert (rcv_nxt == 20_000_000).all()
    # a second run with the same database hits from the first round on and processes fewer events
    again = contests(True, memo_db=db)
    assert again.stats["memo_hits"] > st["memo_hits"] - 1 and again.stats["memo_hits"] >= 3
    assert again.stats["events"] <= st["events"]


def resuming_connections(rounds=8, **cfg):
    """Two connections through one bottleneck; each round posts 10 MB on both,
    and the next round starts 20 us after both are done (they idle between)."""
    net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset("hpcc", **cfg))
    conns = [net.connect(i, 2 + i) for i in range(2)]
    state = {"left": 0, "round": 0}
    done = []

    def start_round():
        state["round"] += 1
        state["left"] = 2
        for c in conns:
            net.post(c, 10_000_000, on_done=finished)

    def finished(m):
        done.append(m)
        state["left"] -= 1
        if state["left"] == 0 and state["round"] < rounds:
            net.schedule(20 * US, start_round)

    net.schedule(0, start_round)
    net.run()
    return net, np.array([m.latency for m in sorted(done, key=lambda m: m.id)])


def test_resumed_connections_replay_the_memo_then_fast_forward(tmp_path):
    """Connections that get data again form their partition anew: it is looked
    up in the memo, and after a replayed convergence the partition is fast-
    forwarded at once at the stored steady goodputs.  A key holds each flow's exact
    congestion-control state (memo.start_state): within one run of ten rounds the two
    connections resume each round in another state (88/48, 48/88, 87/48 Gb/s ...), so
    every lookup misses and the run is the memo-less run, event for event; the same
    rounds run again on the first run's database start in the state the first run
    stored its first convergence from, and replay it: that round's messages end as in
    the run it was recorded from.  (The later rounds resume from a replay's end, not
    from a simulated one, and drift as any perturbation drifts these alternating
    rates: up to 5% on one message of round 10, as the first run's are up to 1.9%.)"""
    full, lat0 = resuming_connections(10, accelerate=False)
    db = str(tmp_path / "memo.sqlite")
    first, lat_first = resuming_connections(10, accelerate=True, memo_db=db)
    nomemo, lat_nomemo = resuming_connections(10, accelerate=True, memo=False)
    st = first.stats
    assert st["memo_misses"] >= 10 and st["memo_hits"] == 0 and st["memo_stored"] >= 3
    assert st["memo_miss_new_key"] == st["memo_misses"]
    assert (lat_first == lat_nomemo).all() and st["events"] == nomemo.stats["events"]
    acc, lat1 = resuming_connections(10, accelerate=True, memo_db=db)
    st = acc.stats
    assert st["memo_hits"] >= 1 and st["memo_follows"] == st["memo_hits"]
    assert (np.abs(lat1[:2] - lat_first[:2]) / lat_first[:2]).max() < 0.01
    err = np.abs(lat_first - lat0) / lat0
    assert err.mean() < 0.01 and err.max() < 0.05
    # counted honestly: what was processed plus what was skipped is what the full run processed,
    # NIC wake-ups of the paced HPCC senders included.  (Not asserted of the rerun: its replay at
    # t = 0 counts its packets' events at the ports' unmeasured starting costs, every transmission
    # end an event, and comes out 4% over.)
    assert full.stats["events_by_kind"]["nic_wake"] > 0
    st = first.stats
    assert st["events"] + st["events_skipped"] == pytest.approx(full.stats["events"], rel=0.03)


def test_a_newcomer_on_the_nic_is_measured_before_a_skip():
    """A connection sends alone, then a second one from the same NIC joins: the
    first one's rate does not change (HPCC at line rate, the NIC is the
    bottleneck) but its goodput halves.  The skip after the join must use the
    new goodputs, measured since the join."""
    def run(accelerate):
        net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset("dcqcn", accelerate=accelerate))
        a, b = net.connect(0, 2), net.connect(0, 3)
        done = []
        net.post(a, 40_000_000, on_done=done.append)
        net.schedule(1000 * US, lambda: net.post(b, 20_000_000, on_done=done.append))
        net.run()
        return net, np.array([m.latency for m in sorted(done, key=lambda m: m.id)])

    full, lat0 = run(False)
    acc, lat1 = run(True)
    assert acc.stats["skips"] >= 2
    assert np.abs(lat1 - lat0).max() / lat0.min() < 0.01


def incast_groups(accelerate, groups=4, late=None, shift=0, **cfg):
    """Groups of four hosts on one switch, two sending 40 MB to the fourth at
    t = 0: identical partitions that form at the same moment.  With ``late`` =
    g, the third host of group g joins at 30 us (+ ``shift`` ps), while the
    convergence is under way."""
    net = wh.Network(wh.star(4 * groups), wh.Config.preset("hpcc", accelerate=accelerate, **cfg))
    for g in range(groups):
        for s in range(2):
            net.send(4 * g + s, 4 * g + 3, 40_000_000)
    if late is not None:
        net.send(4 * late + 2, 4 * late + 3, 40_000_000, at=30 * US + shift)
    net.run()
    return net


@pytest.mark.parametrize("late", [None, 0, 1])
def test_twins_forming_together_are_simulated_once(late):
    """Partitions that form at the same moment with the same key and the same
    state evolve alike: one (group 0, the first to form) is simulated, the
    others mirror it until it converges (then fast-forward at its goodputs), or
    until it changes (then they go on from its state).  A flow joining a mirror
    ends that mirror only (a skip-back)."""
    full = incast_groups(False, late=late)
    acc = incast_groups(True, late=late, memo_mirrors=True)
    st = acc.stats
    assert st["memo_mirrors"] == 3
    if late == 0:       # the leader changed before converging: its mirrors went on by themselves
        assert st["memo_mirrors_done"] == 0 and st["skip_backs"] == 0
    elif late == 1:     # one mirror was interrupted, the two others followed the leader to the end
        assert st["memo_mirrors_done"] == 2 and st["skip_backs"] == 1
    else:
        assert st["memo_mirrors_done"] == 3 and st["memo_follows"] == 3
    f0, f1 = full.results["fct"], acc.results["fct"]
    err = np.abs(f1 - f0) / f0
    if late == 1:
        # A join into a mirrored group is chaotic in the full run itself: shifting it by 4 ns moves the
        # late flow's FCT from 6.55 to 8.84 ms (full against full: 5% mean, 35% max error).  The flows
        # of the other groups are held to the usual bounds; those of the joined group (its two flows and
        # the late one) must lie within the spread of full runs joining 0, 4 and 8 ns later.  (The
        # accelerated run also resumes the ended mirror with an empty pipeline, no queue and no ACKs in flight, which costs it
        # one RTT of feedback: see the accelerator issue.)
        hit = np.zeros(len(f0), dtype=bool)
        hit[[2, 3, len(f0) - 1]] = True
        assert err[~hit].mean() < 0.01 and err[~hit].max() < 0.05
        runs = [f0] + [incast_groups(False, late=late, shift=ps).results["fct"] for ps in (4000, 8000)]
        lo, hi = np.min(runs, axis=0), np.max(runs, axis=0)
        assert ((f1[hit] >= 0.99 * lo[hit]) & (f1[hit] <= 1.01 * hi[hit])).all()
    else:
        assert err.mean() < 0.01 and err.max() < 0.05
    rcv_nxt, _, _ = acc.delivered()
    assert (rcv_nxt == 40_000_000).all()
    if late is None:
        assert st["events"] < 0.5 * incast_groups(True, memo=False).stats["events"]


def test_twins_are_simulated_alone_when_mirrors_are_off():
    """With memo_mirrors off (they are on by default) the twin groups are
    simulated each on its own, as accurate as without the memo."""
    full = incast_groups(False)
    acc = incast_groups(True, memo_mirrors=False)
    alone = incast_groups(True, memo=False)
    assert acc.stats["memo_mirrors"] == 0
    assert incast_groups(True).stats["memo_mirrors"] > 0        # the default mirrors them
    f0 = full.results["fct"]
    err = np.abs(acc.results["fct"] - f0) / f0
    err_alone = np.abs(alone.results["fct"] - f0) / f0
    assert err.mean() <= err_alone.mean() + 1e-9 and err.max() < 0.05


@pytest.mark.parametrize("short,long", [(6_000_000, 20_000_000), (3_000_000, 30_000_000)])
def test_dcqcn_rate_increase_timer_interrupts_a_skip(short, long):
    """Two DCQCN senders into one host: after the first CNPs the rate stays put
    (no more CNPs, and DCQCN's rate-increase timer only fires rp_timer = 1.5 ms
    after the last cut), so the partition counts as steady.  When the short
    flow is done, that timer is what lets the long flow recover; it keeps its
    absolute time in a skip and ends it (before: the long flow stayed slow,
    7.6% and 16.7% longer FCTs)."""
    def run(accelerate):
        net = wh.Network(wh.star(3), wh.Config.preset("dcqcn", accelerate=accelerate))
        net.send(0, 2, short)
        net.send(1, 2, long)
        net.run()
        return net
    full, acc = run(False), run(True)
    f0, f1 = full.results["fct"], acc.results["fct"]
    assert acc.stats["skips"] >= 2
    assert (np.abs(f1 - f0) / f0).max() < 0.005


def test_memo_key_leaves_idle_connections_out():
    """An idle connection has nothing in flight and no part in a convergence:
    it leaves its partition (so it couples no flows), a flow next to an idle
    connection finds the entry of the same flow alone, and a second sending
    flow changes the key."""
    def key_of(post_second):
        net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset("hpcc", accelerate=True))
        first, second = net.connect(0, 2), net.connect(1, 3)
        net.post(second, 1_000 if not post_second else 4_000_000)
        net.run(until=50 * US)          # the small message is done: an idle connection
        net.post(first, 4_000_000)
        net.run(until=51 * US)
        (flows,) = [p for p in net.partitions() if first in p]
        key, canon, idle = net.accelerator.memo.key(flows)
        return key, canon, idle, first, second

    alone, canon_a, idle_a, first, second = key_of(False)
    both, canon_b, idle_b, _, _ = key_of(True)
    assert canon_a == [first] and idle_a == []       # the idle connection is in no partition
    assert sorted(canon_b) == [first, second] and idle_b == []
    assert both != alone
    # the same flow with no idle neighbour at all
    net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset("hpcc", accelerate=True))
    f = net.connect(0, 2)
    net.run(until=50 * US)
    net.post(f, 4_000_000)
    net.run(until=51 * US)
    assert net.accelerator.memo.key(net.partitions()[0])[0] == alone


def test_memo_database_is_versioned(tmp_path):
    import sqlite3
    from wormhole.accel import MemoDB
    p = str(tmp_path / "m.sqlite")
    MemoDB(p).put("k", {"dt": 1})
    assert MemoDB(p).get("k") == {"dt": 1}
    con = sqlite3.connect(p)
    con.execute("UPDATE meta SET v = '999' WHERE k = 'version'")
    con.commit()
    con.close()
    with pytest.raises(wh.WormholeError):
        MemoDB(p)
    bad = tmp_path / "junk.sqlite"
    bad.write_bytes(b"not a database at all" * 100)
    with pytest.raises(wh.WormholeError):
        MemoDB(str(bad))


def test_fidelity_pairs_messages_by_connection_size_and_position():
    """Two collectives sharing a connection may interleave differently in two
    runs (by which step is ready first): the fidelity report pairs the k-th
    message of a given size on a connection, not message ids."""
    from types import SimpleNamespace

    from wormhole.fidelity import message_fct
    us = 1_000_000
    one = [[0, 100, 0, 10 * us], [0, 200, 1 * us, 30 * us], [1, 100, 0, 12 * us], [0, 100, 2 * us, 40 * us]]
    # the other run: the 200-byte message was posted first on connection 0, and ids differ
    two = [[1, 100, 0, 12 * us], [0, 200, 0, 20 * us], [0, 100, 1 * us, 31 * us], [0, 100, 2 * us, 40 * us]]
    def table(rows):
        return [dict(connection=c, size=n, posted=p, done=d) for c, n, p, d in rows]
    a = message_fct(SimpleNamespace(messages=table(one)))
    b = message_fct(SimpleNamespace(messages=table(two)))
    # (conn 0, 100 B) #0, #1, (conn 0, 200 B) #0, (conn 1, 100 B) #0
    assert list(a) == [10 * us, 10 * us, 20 * us, 12 * us]
    assert list(b) == [11 * us, 9 * us, 20 * us, 12 * us]


@pytest.mark.parametrize("cc", ["hpcc", "dcqcn"])
def test_skipped_events_are_what_the_full_run_processed(cc):
    """A single 20 MB transfer (6 events per packet in full mode: 4 arrivals, one
    transmission end, one NIC wake-up; the other 3 transmission ends are not
    scheduled) skips most of its packets; processed + skipped equals the full
    run's count.  The per-port means of transmission ends and wake-ups per packet
    that price a skipped packet start from the first packets' plain mean, not
    from a start value that takes thousands of packets to forget (it counted
    about 4% too many)."""
    def run(acc):
        net = wh.Network(wh.star(3), wh.Config.preset(cc, accelerate=acc))
        net.send(0, 1, 20_000_000)
        net.run()
        return net.stats
    full, acc = run(False), run(True)
    assert full["events"] == pytest.approx(6 * 20_000, rel=0.005)
    assert acc["events_skipped"] > 0.8 * full["events"]
    assert acc["events"] + acc["events_skipped"] == pytest.approx(full["events"], rel=0.002)


@pytest.mark.parametrize("cc,rel", [("dcqcn", 0.0005), ("timely", 0.0005), ("hpcc", 0.002)])
def test_a_skip_prices_its_packets_by_the_traffic_it_skips(cc, rel):
    """A port's share of transmissions that end with an event is measured afresh when its
    traffic changes (a flow through it joins, leaves, idles or resumes): the switch's port to
    h1 first carries the ACKs of h1's own flow alone (almost none of them queue behind
    another), then data to h1 beside those ACKs (almost all do); a skip of the second phase
    priced by a mean that still held the first counted too few events (rail-local-pp DCQCN:
    1.7% short, 15% on such ports; here DCQCN and TIMELY 0.156% and HPCC 0.235% short, now
    0.000% and 0.153%).  Processed + skipped is the full run's count."""
    from wormhole.units import US

    def run(acc):
        topo = wh.star(3)
        net = wh.Network(topo, wh.Config.preset(cc, accelerate=acc))
        h = topo.hosts
        net.send(h[1], h[2], 20_000_000)
        net.send(h[0], h[1], 20_000_000, at=2000 * US)
        net.send(h[1], h[0], 20_000_000, at=2000 * US)
        net.run()
        return net.stats
    full, acc = run(False), run(True)
    assert acc["events_skipped"] > 0.8 * full["events"]
    assert acc["events"] + acc["events_skipped"] == pytest.approx(full["events"], rel=rel)


def test_a_run_stopped_inside_a_skip_counts_what_the_skip_has_skipped_so_far():
    """A fast-forward counts its skipped events when it ends; a run stopped while one is
    under way (a workload stops when its job is done) reports what it has skipped so far
    (stats events_skipped_under_way, in events_skipped): processed + skipped is then the
    full run's count up to the same moment within 0.1% (without it, 28% and 55% short here)."""
    from wormhole.units import US

    def upto(acc, t):
        topo = wh.dumbbell(4, 4)
        net = wh.Network(topo, wh.Config.preset("hpcc", 100, accelerate=acc))
        h = topo.hosts
        for i in range(4):
            net.send(h[i], h[4 + i], 30_000_000)
        net.run(until=t)
        return net

    for t in (5000 * US, 8000 * US):
        full, acc = upto(False, t), upto(True, t)
        st = acc.stats
        assert acc.skipping() and st["events_skipped_under_way"] > 0
        total = st["events"] + st["events_skipped"]
        assert abs(total - full.stats["events"]) <= 0.002 * full.stats["events"]
        assert abs(sum(st["events_skipped_by"].values()) - st["events_skipped"]) <= 4     # (each rounded)
        # and each port holds its share (port_state: what it had counted plus the skip's so far)
        ports = sum(acc.port_state(p)["events_skipped"] for p in range(len(acc.ports)))
        assert abs(ports - st["events_skipped"]) <= 2
