"""On/off members of a steady skip (accel_onoff.pxi): ring connections whose data
shares no port with another flow's data idle and resume inside the skip, at their
measured goodput while they have data, never faster; expectations worked out by hand."""
from wormhole._core import testing as T


# ---------------------------------------------------------------- who may idle and resume in a skip

# A ring of four connections over two rail segments (the segments row's shape):
# ports 0-3 the servers' NIC uplinks, 4-7 the leaves' downlinks to servers 0-3,
# 8/9 and 10/11 the two directions through the spine.
A = ([0, 5], [1, 4])            # server 0 -> 1 in its segment; its ACKs leave server 1 on port 1
B = ([1, 8, 9, 6], [2, 10, 11, 5])  # 1 -> 2 across the spine
C = ([2, 7], [3, 6])            # 2 -> 3
D = ([3, 10, 11, 4], [0, 8, 9, 7])  # 3 -> 0 across the spine


def test_ring_connections_coupled_only_by_acks_are_members():
    # every data port of each connection carries only its own data (and others' ACKs)
    assert T._py_data_alone([A, B, C, D]) == [True, True, True, True]


def test_a_flow_sharing_a_data_port_is_no_member():
    E = ([12, 8, 9, 13], [14, 15])   # another ring's connection collided with B on the spine (8, 9)
    assert T._py_data_alone([A, B, C, D, E]) == [True, False, True, True, False]
    # two connections leaving one NIC (port 0) share their first data port
    assert T._py_data_alone([([0, 5], [1, 4]), ([0, 6], [2, 4])]) == [False, False]
    # ACKs only: a flow whose ACK path crosses another's data path leaves both members
    assert T._py_data_alone([([0, 5], [1, 4]), ([1, 4], [0, 5])]) == [True, True]


# ---------------------------------------------------------------- the ring's cycle

# anchors (time ps, snd_una, idle total ps, resuming connection): connections 5 and 7
# resume in turn; connection 5's last two cycles are [100, 200] and [0, 100] ps
RING = [(0, 0, 0, 5), (60, 50, 0, 7), (100, 100, 0, 5), (160, 150, 0, 7), (200, 200, 0, 5)]


def test_goodput_over_the_last_cycle_of_the_latest_resuming_connection():
    # 100 B over 100 ps in both cycles
    assert T._py_cycle_goodput(RING, 0.05) == (True, 1.0, 0, 0, 0)
    # 10 ps of the last cycle idle: 100 B / 90 busy ps = 1.111 against 1.0 before (11% apart)
    idle = RING[:-1] + [(200, 200, 10, 5)]
    assert T._py_cycle_goodput(idle, 0.05) == (False, 0.0, 0, 1, 0)
    ok, g, _, _, _ = T._py_cycle_goodput(idle, 0.2)
    assert ok and abs(g - 100 / 90) < 1e-12


def test_no_cycle_without_three_resumes_of_one_connection():
    assert T._py_cycle_goodput(RING[1:], 0.05) == (False, 0.0, 1, 0, 0)    # 5 resumed twice only
    assert T._py_cycle_goodput(RING[:2], 0.05) == (False, 0.0, 1, 0, 0)
    # the window keeps the last 12: after ten of 7's, 5 resumes again, but of its three
    # latest resumes only 200 and 420 ps are still kept
    many = RING + [(300 + 10 * k, 300 + 10 * k, 0, 7) for k in range(10)] + [(420, 420, 0, 5)]
    assert T._py_cycle_goodput(many, 0.05) == (False, 0.0, 1, 0, 0)


def test_how_long_a_member_was_idle_in_its_own_last_cycle():
    # the flow is connection 0: it resumed at 0 and 300 ps (idle total 20 -> 65 ps), its
    # neighbour 7 in between; 45 ps idle in its last cycle bound its dry spells in a skip
    own = [(0, 0, 20, 0), (150, 140, 20, 7), (300, 250, 65, 0)]
    assert T._py_cycle_goodput(own, 0.05)[4] == 45
    assert T._py_cycle_goodput(own[1:], 0.05)[4] == 0     # resumed once only


# ---------------------------------------------------------------- its bytes in the skip

def test_a_member_stops_at_its_posted_data_and_resumes_from_the_post():
    # 1 B/ps, 10 packets posted, 2 in flight (snd_nxt 2000), its receiver 1 packet ahead
    out = T._py_onoff_run(1.0, 10_000, 0, 2_000, 1_000, [
        (5_000, "at"),              # 5 packets: (acked, delivered, skip_bytes at an end here)
        (9_500, "at"),              # 9 whole packets; an end here keeps the 2 in flight: 8000
        (12_000, "at"),             # everything acknowledged (10000), the receiver has its 9000
        (20_000, "post", 6_000),    # dry since 10 000 ps: a new run begins at 20 000 ps
        (23_500, "at"),             # 3 packets of the new run, not 23.5 at the old start
        (24_000, "post", 1_000),    # still sending (14 000 < 16 000): no new run
        (24_000, "note", 17_000, False),    # its sender reaches 17 000: 7000 more from 20 000 ps
        (24_000, "note", 16_500, True),     # its receiver 16 500: 7500 more, whole packets: 8000
        (24_000, "note", 9_000, False),     # had them when the run began
    ])
    assert out == [(5_000, 5_000, 5_000), (9_000, 9_000, 8_000), (10_000, 9_000, 8_000),
                   (13_000, 12_000, 13_000), 27_001, 28_001, -1, 1]


def test_never_faster_than_its_goodput():
    # 0.5 B/ps: whatever the posts, the bytes of each run are at most 0.5 x its time
    steps, t, size = [], 0, 4_000
    for k in range(6):
        t += 3_000 + 1_700 * k
        steps.append((t, "at"))
        steps.append((t, "post", 2_000 + 500 * k))
    out = T._py_onoff_run(0.5, size, 0, 1_000, 0, steps)
    reads = [r for r in out[:-1]]
    acked = [r[0] for r in reads]
    assert acked == sorted(acked)
    # first read at 3000 ps: 1500 B -> one whole packet
    assert acked[0] == 1_000
    # by 7700 ps: 7700 x 0.5 = 3850 B -> 3 whole packets (6000 posted by then)
    assert acked[1] == 3_000
    # at 32 000 ps it has had all 15 000 B posted acknowledged (16 000 at its goodput): it is
    # dry, and the 4000 B posted then start a run: by 43 500 ps at most 0.5 x 11 500 = 5750 B
    # more, all 4000 of them
    assert acked[4] == 15_000 and acked[5] == 19_000
    assert out[-1] == 2                     # and again at 43 500 ps (the last post)
    for r in reads:
        assert r[2] <= r[0]                 # an end gives back, never takes in advance


def test_the_skip_ends_when_a_member_stays_out_of_data_longer_than_its_last_idle_spell():
    # 1 B/ps from (10 000 posted, none acknowledged): dry at 10 001 ps; idle spells of
    # 5000 ps were seen before the skip, so it may stay dry until 15 001 ps
    out = T._py_onoff_run(1.0, 10_000, 0, 0, 0, [(0, "bound")], dry_lim=5_000)
    assert out == [15_001, 0]
    # data posted at 12 000 ps (dry): a new run of 3000 B ends at 15 001, dry until 20 001
    out = T._py_onoff_run(1.0, 10_000, 0, 0, 0, [(12_000, "post", 3_000), (12_000, "bound")], dry_lim=5_000)
    assert out == [20_001, 1]


def test_on_by_default_and_switched_off_by_config():
    from wormhole import config
    assert config.Config().steady_onoff is True
    assert config.Config(steady_onoff=False).steady_onoff is False
    assert config.Config(steady_onoff=True).steady_onoff is True


# ---------------------------------------------------------------- the run under way when a skip begins

# connection 0 resumed at 0, 1000 and 2000 ps, 100 B per cycle and 200 busy ps: a cycle
# goodput of 0.5 B/ps; its current run began at 2000 ps (snd_una 200) with 100 B posted
CYCLES = [(0, 0, 0, 0), (1_000, 100, 800, 0), (2_000, 200, 1_600, 0)]
TB_PS = 8_000_000_000_000           # 1 B/ps


def test_a_run_under_way_keeps_the_pace_its_cycle_ends_it_at():
    # at 2050 ps it has 10 B acknowledged (a slow start): a run of that cycle ends at
    # 2000 + 100 / 0.5 = 2200 ps, so the other 90 B move at 90 / 150 = 0.6 B/ps, not at 0.5
    # (which would count the slow start twice and end it at 2230)
    assert T._py_first_run_rate(CYCLES, 300, 210, 1_600, 2_050, 0.5, TB_PS) == __import__("pytest").approx(0.6)
    # never above its port's line rate (0.5 B/ps here), never below its cycle goodput
    assert T._py_first_run_rate(CYCLES, 300, 210, 1_600, 2_050, 0.5, TB_PS // 2) == 0.5
    assert T._py_first_run_rate(CYCLES, 300, 290, 1_600, 2_050, 0.5, TB_PS) == 0.5       # ahead of the pace
    # idle since its last resume, or idle now: no run under way from it, the cycle goodput
    assert T._py_first_run_rate(CYCLES, 300, 210, 1_700, 2_050, 0.5, TB_PS) == 0.5
    assert T._py_first_run_rate(CYCLES, 300, 210, 1_600, 2_050, 0.5, TB_PS, idle_since=2_040) == 0.5
    # past the pace's end it may go at line rate
    assert T._py_first_run_rate(CYCLES, 300, 210, 1_600, 2_300, 0.5, TB_PS) == 1.0


def test_cycle_anchors_keep_real_time_through_a_skip():
    # a skip moved it 60 B in 40 ps and ended before 2060 ps: the anchors stay where they
    # were taken, so the run from 2000 ps (snd_una 200) counts the skip's bytes: 30 B
    # acknowledged, 70 to go by 2200 ps: 0.5 B/ps.  (Anchors moved with the rate window, to
    # 2040 ps and 260 B, made the run 30 B short of its start and sent the rest at line rate.)
    assert T._py_first_run_rate(CYCLES, 300, 230, 1_600, 2_060, 0.5, TB_PS, shift=[60, 40]) == 0.5


def test_a_lone_connection_cycling_through_idle_spells_keeps_its_message_times():
    """One connection posts 2.5 MB five times with idle spells between (TIMELY): with on/off
    members its fourth and fifth messages were skipped at a cycle goodput measured without
    the skip inside the cycle (the anchors moved with the rate window) and applied to what
    was left of a run begun before the skip, 6.8% and 6.6% late; now each within 0.1%."""
    import wormhole as wh
    from wormhole.units import US

    def run(acc, **kw):
        net = wh.Network(wh.star(4), wh.Config.preset("timely", 100, accelerate=acc, **kw))
        c = net.connect(0, 2)
        mids = []
        for t in (0, 1500, 3000, 10000, 17000):
            net.schedule(t * US, lambda: mids.append(net.post(c, 2_621_440)))
        net.run()
        return net, [net.message(m).fct for m in mids]

    _, full = run(False)
    acc, fast = run(True, steady_onoff=True)
    assert acc.stats["events_skipped_by"]["steady"] > 0 and acc.stats["onoff_resumes"] >= 1
    assert len(fast) == len(full) == 5
    for a, f in zip(fast, full):
        assert abs(a - f) / f < 0.001


def test_data_joining_a_faster_first_run_and_later_runs_go_at_the_cycle_goodput():
    # the run under way moves at 1 B/ps (its pace), the cycle goodput is 0.5 B/ps
    out = T._py_onoff_run(1.0, 10_000, 0, 0, 0, [
        (4_000, "at"),              # 4000 B at the first run's pace
        (4_000, "post", 2_000),     # still sending: the rest and the new data at 0.5 B/ps from here
        (8_000, "at"),              # 4000 + 0.5 x 4000 (not 8000)
        (30_000, "post", 1_000),    # dry since 20 000 ps: a new run, at 0.5 B/ps
        (32_000, "at"),             # 12 000 + 1000
    ], cycle=0.5)
    assert out == [(4_000, 4_000, 4_000), (6_000, 6_000, 6_000), (13_000, 13_000, 13_000), 1]
