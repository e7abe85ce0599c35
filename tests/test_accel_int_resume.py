"""A skip and HPCC's INT records: the records stamped before a fast-forward (the
flow's previous sample, and those carried by packets and ACKs held through it) move
with the clock and the ports' byte counters (int_hops.pxd), so that the first sample
after the skip measures only time and bytes outside it."""
import wormhole as wh
from wormhole._core import testing as T
from wormhole.units import gbps

MB = 1_000_000


# ---------------------------------------------------------------- the rule, by hand

def test_records_move_by_the_clock_and_each_ports_counter():
    # skip of 2,500,500 ps ending at 10,000,300 ps: the switch clock (ns) went 7,499 -> 10,000
    now, dt = 10_000_300, 2_500_500
    ports = [(1_000_000, 300_000),       # counter 699,904 // 128 = 5,468 units before, 7,812 now: +2,344
             (50_000, 0),                # nothing skipped here: +0
             (2_000_128, 1_000_000)]     # 1,000,128 // 128 = 7,813 -> 15,626: +7,813
    records = [(1_000, 100), (0xFFFFF0, 0xFFFFF), (5, 0xFFFF0)]
    got = T._py_int_hops_shift(records, 3, ports, now, dt)
    assert got == [(1_000 + 2_501, 100 + 2_344),
                   (2_501 - 16, 0xFFFFF),                # the 24-bit ns clock wraps
                   (5 + 2_501, 7_813 - 16)]              # the 20-bit byte counter wraps


def test_a_packet_moves_only_the_records_it_carries():
    ports = [(1_280, 1_280), (2_560, 2_560), (3_840, 3_840)]     # +10, +20, +30 units
    got = T._py_int_hops_shift([(7, 1), (8, 2), (9, 3)], 2, ports, 5_000, 2_000)
    assert got == [(9, 11), (10, 22), (9, 3)]                    # 2 ns; the third hop not yet stamped


def test_records_rewritten_past_five_hops_follow_their_last_writer():
    # seven switch hops: records 0 and 1 were last written by hops 5 and 6
    ports = [(128_000, 128 * (h + 1)) for h in range(7)]         # hop h's counter: +h+1 units
    got = T._py_int_hops_shift([(0, 0)] * 5, 7, ports, 1_000, 0)
    assert got == [(0, 6), (0, 7), (0, 3), (0, 4), (0, 5)]


def test_units_of_the_int_multiplier():
    # int_multi 4: units of 512 bytes; 4,096 // 512 = 8 -> 5,120 // 512 = 10
    assert T._py_int_hops_shift([(0, 0)], 1, [(5_120, 1_024)], 999, 0, int_multi=4) == [(0, 2)]


# ---------------------------------------------------------------- through a simulation

def _dumbbell(accelerate, t_break):
    """Two long HPCC flows sharing a 100 Gb/s bottleneck (steady after ~0.5 ms); a short
    flow starting at t_break on a port of their ACKs ends the skip without contending."""
    net = wh.Network(wh.dumbbell(4, 4, rate=gbps(100), bottleneck=gbps(100)),
                     wh.Config.preset("hpcc", accelerate=accelerate))
    for i in range(2):
        net.send(i, 4 + i, 400 * MB)
    net.send(2, 0, 100_000, at=t_break)     # joins the partition on the ACK path only
    return net


def test_after_a_long_skip_the_records_are_recent_and_the_rate_holds():
    t_break = 30_000_000_000                # 30 ms: the skip outlasts the 2^24 ns INT clock
    net = _dumbbell(True, t_break)
    net.run(until=t_break)
    while net.skipping():
        net.step()
    assert net.stats["time_skipped_ps"] > 20_000_000_000     # one skip longer than 2^24 ns
    st = net.cc_state(0)
    path = net.flow_path(0)
    now_ns = net.now // 1000
    for i, port in enumerate(path[1:]):     # the switch ports, as the records' hops
        time_ns, units = st["hops"][i][:2]
        age = (now_ns - time_ns) & 0xFFFFFF
        assert 0 <= age < 20_000            # stamped within the last RTTs, as in a full run
        behind = ((net.port_state(port)["tx_bytes"] // 512) - units) & 0xFFFFF   # hpcc: int_multi 4
        assert behind < 20_000 * 100 // 8 // 512      # at most 20 us of a 100 Gb/s port
    rate0 = st["rate"]
    for us in (5, 10, 20, 30):              # the packets held through the skip are acked in the first RTTs
        net.run(until=t_break + us * 1_000_000)
        # as in the full run (47.5-48.0 Gb/s, U 0.95 throughout); before the records moved, the
        # first samples spanned the skip: U 1.57 and 29 Gb/s at 10 us, 62 Gb/s at 20 us
        assert abs(net.cc_state(0)["rate"] / rate0 - 1) < 0.05
        assert 0.9 < net.cc_state(0)["u"] < 1.0
