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
    assert T._py_onoff_members([A, B, C, D]) == [True, True, True, True]


def test_a_flow_sharing_a_data_port_is_no_member():
    E = ([12, 8, 9, 13], [14, 15])   # another ring's connection collided with B on the spine (8, 9)
    assert T._py_onoff_members([A, B, C, D, E]) == [True, False, True, True, False]
    # two connections leaving one NIC (port 0) share their first data port
    assert T._py_onoff_members([([0, 5], [1, 4]), ([0, 6], [2, 4])]) == [False, False]
    # ACKs only: a flow whose ACK path crosses another's data path leaves both members
    assert T._py_onoff_members([([0, 5], [1, 4]), ([1, 4], [0, 5])]) == [True, True]


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


def test_off_by_default_and_switched_on_by_config():
    from wormhole import config
    assert config.Config().steady_onoff is False
    assert config.Config(steady_onoff=True).steady_onoff is True
