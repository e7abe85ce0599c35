"""One parameter registry: name, unit, default, doc and the reference
simulator's ``config.txt`` key.  ``Config`` holds values; ``Config.from_file``
reads a reference config; ``docs_markdown`` and ``cli_help`` are generated
from the registry."""
import math
import os
from dataclasses import dataclass

from .cc import ALIASES as _CC_ALIASES, PRESETS, REGISTRY as _CC, preset as _preset_values, ref_codes as _cc_codes
from .errors import ConfigError, read_text
from .units import parse_rate, parse_size, parse_time

CC_NAMES = tuple(_CC)                  # the registry's names (wormhole.cc.REGISTRY)
CC_MODE_CODES = _cc_codes()             # the reference's CC_MODE -> name


def _bool(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise ValueError("not a boolean: %r" % (v,))


def _int(v):
    if isinstance(v, bool):
        raise ValueError("not an integer: %r" % (v,))
    if isinstance(v, float):
        if not math.isfinite(v) or v != int(v):
            raise ValueError("not an integer: %r" % (v,))
        return int(v)
    return int(str(v).strip(), 10)


def _float(v):
    x = float(v)
    if not math.isfinite(x):
        raise ValueError("not a finite number: %r" % (v,))
    return x


def _rate(v):
    return parse_rate(v)


def _cc(v):
    s = str(v).strip().lower()
    if s in CC_NAMES:
        return s
    try:
        code = int(s)
    except ValueError:
        raise ValueError("unknown congestion control %r (one of %s)" % (v, ", ".join(CC_NAMES)))
    if code in CC_MODE_CODES:
        return CC_MODE_CODES[code]
    raise ValueError("unsupported CC_MODE %r (%s)" % (v, ", ".join("%d %s" % (c, n) for c, n in
                                                                 sorted(CC_MODE_CODES.items()) if c)))


def _str(v):
    return str(v)


def _flow_model(v):
    s = str(v).strip().lower()
    if s not in ("packet", "maxmin", "cm02", "lv08"):
        raise ValueError("flow_model must be 'packet', 'maxmin', 'cm02' or 'lv08'")
    return s


def _rng_name(v):
    s = str(v).strip().lower()
    if s not in ("splitmix", "ns3", "port"):
        raise ValueError("ecn_rng must be 'splitmix', 'ns3' or 'port'")
    return s


def _tie_order(v):
    s = str(v).strip().lower()
    if s not in ("auto", "reference", "local"):
        raise ValueError("tie_order must be 'auto', 'reference' or 'local'")
    return s


def _event_queue(v):
    s = str(v).strip().lower()
    if s not in ("calendar", "heap"):
        raise ValueError("event_queue must be 'calendar' or 'heap', not %r" % (v,))
    return s


def _route_order(v):
    s = str(v).strip().lower()
    if s not in ("reference", "id"):
        raise ValueError("route_order must be 'reference' or 'id'")
    return s


def _preset_name(v):
    s = str(v).strip().lower()
    s = _CC_ALIASES.get(s, s)
    if s in ("auto", "none") or s in PRESETS:
        return s
    raise ValueError("unknown preset %r (auto, none, %s)" % (v, ", ".join(PRESETS)))


@dataclass(frozen=True)
class Param:
    name: str
    unit: str
    default: object
    doc: str
    parse: object
    ref_key: str = None
    lo: float = None
    hi: float = None
    # True: the value can change what a simulation computes (packet dynamics, or
    # the trajectory of an accelerated run), so it is part of the memo key
    # (wormhole.accel.memo).  False: it cannot (limits, outputs, other backends,
    # knobs without effect).  Every parameter states it (_p has no default).
    dynamics: bool = None


def _p(name, unit, default, doc, parse, ref_key=None, lo=None, hi=None, *, dynamics):
    if not isinstance(dynamics, bool):
        raise TypeError("parameter %s: dynamics must be True or False" % name)
    return Param(name, unit, default, doc, parse, ref_key, lo, hi, dynamics)


NOMINAL_GBPS = 100      # NIC rate a preset is shown at before a Network scales it to its fabric

# Swift (not in the reference), with the defaults of htsim's Swift (csg-htsim sim/swift.cpp): name (after
# swift_), unit, default, range, meaning
_SWIFT_PARAMS = tuple(_p("swift_" + name, unit, default, "Swift: " + doc, _int if unit == "int" else _float, None,
                         lo, hi, dynamics=True) for name, unit, default, lo, hi, doc in (
    ("base_target", "us", 20.0, 0.001, 1e6, "base target delay (RTT) of a flow"),
    ("hop_scale", "us", 3.0534, 0.0, 1e6, "target delay added per switch on the flow's path (htsim: base target "
     "/ 6.55)"),
    ("fs_range", "us", 100.0, 0.0, 1e6, "flow scaling adds alpha / sqrt(cwnd) + beta, clamped to [0, fs_range], "
     "to the target (htsim: 5 x base target)"),
    ("fs_min_cwnd", "packets", 0.1, 1e-6, 1e6, "window at which flow scaling adds fs_range"),
    ("fs_max_cwnd", "packets", 100.0, 1e-6, 1e9, "window at which flow scaling adds nothing"),
    ("ai", "packets", 1.0, 0.0, 1e6, "additive increase per RTT below the target"),
    ("beta", "ratio", 0.8, 0.0, 1e3, "multiplicative decrease per unit of relative excess delay (cwnd x= 1 - "
     "beta (delay - target) / delay)"),
    ("max_mdf", "ratio", 0.5, 0.0, 0.999, "largest multiplicative decrease at once (also on a loss or a "
     "retransmission timeout)"),
    ("min_cwnd", "packets", 0.01, 1e-6, 1e6, "smallest window (below 1 packet the flow is paced at one packet "
     "per srtt / cwnd; htsim: 10 bytes)"),
    ("max_cwnd", "packets", 1000.0, 1e-6, 1e9, "largest window"),
    ("init_cwnd", "packets", 0.0, 0.0, 1e9, "initial window (0: the flow's bandwidth-delay product, a line-rate "
     "start as the other algorithms)"),
    ("retx_reset", "int", 5, 1, 1 << 20, "retransmission timeouts in a row that reset the window to "
     "swift_min_cwnd"),
))

# Loss-based TCP (not in the reference), NewReno and CUBIC, with Linux's defaults: name, unit, default, range,
# meaning.  The kernel's fixed `rto` stays behind the algorithm's own loss timer (presets: 200 ms)
_TCP_PARAMS = tuple(_p(name, unit, default, doc, _float, None, lo, hi, dynamics=True)
                    for name, unit, default, lo, hi, doc in (
    ("tcp_init_cwnd", "packets", 10.0, 1.0, 1e9, "TCP (tcp, cubic): initial window (RFC 6928, Linux's "
     "TCP_INIT_CWND)"),
    ("tcp_min_ssthresh", "packets", 2.0, 1.0, 1e9, "TCP: smallest slow-start threshold after a loss (RFC 5681, "
     "Linux's tcp_reno_ssthresh)"),
    ("tcp_max_window", "bytes", 4194304.0, 1.0, 1e15, "TCP: largest window (Linux's largest send buffer, "
     "net.ipv4.tcp_wmem's 4 MiB, bounds the bytes in flight)"),
    ("tcp_beta", "ratio", 0.5, 0.01, 0.99, "TCP NewReno: window kept on a loss (ssthresh = beta x cwnd, once per "
     "window)"),
    ("cubic_beta", "ratio", 0.7, 0.01, 0.99, "TCP CUBIC: window kept on a loss (RFC 8312; Linux 717/1024)"),
    ("tcp_pto_min", "us", 10000.0, 0.001, 1e9, "TCP: smallest probe timeout (tail-loss probe: back to the first "
     "unacknowledged byte after max(2 srtt, this) without progress; Linux 4.x's 10 ms floor)"),
    ("tcp_rto_min", "us", 200000.0, 0.001, 1e9, "TCP: smallest retransmission timeout of the loss timer "
     "(max(this, srtt + 4 rttvar), doubled per timeout in a row; Linux's TCP_RTO_MIN, 200 ms)"),
    ("cubic_c", "packets/s^3", 0.4, 1e-6, 1e9, "TCP CUBIC: the constant C of W(t) = C (t - K)^3 + W_max "
     "(RFC 8312)"),
))

# The registry.  Order is the order of the generated docs.
PARAMS = (
    _p("cc", "name", "none", "congestion control: " + ", ".join(
        "%s (%s)" % (s.name, "not in the reference" if s.ref_code is None else "CC_MODE %d" % s.ref_code)
        for s in _CC.values()) + "; none is a fixed rate (line rate, window = BDP); `Config(cc=X)` starts from "
       "the preset of X (see `preset`)", _cc, "CC_MODE", dynamics=True),
    _p("preset", "name", "auto", "base of every parameter not given explicitly: 'auto' (the reference run "
       "script's preset of `cc`; cc=none has none: the registry defaults), 'none' (the registry "
       "defaults, the reference's C++ defaults; `Config.from_file` and `Config.generic` use it: a config.txt "
       "is the complete truth) or a preset name: " + ", ".join(PRESETS) + " (its cc unless `cc` is given, "
       "which must then be the preset's algorithm)", _preset_name, dynamics=False),
    _p("preset_gbps", "Gb/s", 0, "NIC rate the preset's rate-dependent values (rate_ai, rate_hai, "
       "int_multi, buffer_size, ECN maps) are computed for; 0: the fabric's NIC rate (its first host's "
       "link, rounded to Gb/s, as `--cc` in the CLI), set when a Network is built (shown at %d until then)"
       % NOMINAL_GBPS, _int, None, 0, 1 << 20, dynamics=False),
    _p("mtu", "bytes", 1000, "payload bytes per data packet", _int, "PACKET_PAYLOAD_SIZE", 1, 9000,
       dynamics=True),
    _p("ecn", "bool", True, "switches mark ECN (RED at dequeue)", _bool, "ENABLE_QCN", dynamics=True),
    _p("pfc", "bool", True, "PFC frames are sent and honoured; off = drops when the buffer is full",
       _bool, "ENABLE_PFC", dynamics=True),
    _p("dynamic_pfc_threshold", "bool", True, "the switch's PFC threshold is dynamic (free shared space >> "
       "shift), as the reference switch's always is; only the default is accepted (a static threshold is not "
       "implemented)", _bool, "USE_DYNAMIC_PFC_THRESHOLD", dynamics=False),
    _p("buffer_size", "MiB", 16, "shared buffer per switch (MiB = 2^20 bytes, as the reference's MB)", _float,
       "BUFFER_SIZE", 0.001, 1 << 20, dynamics=True),
    _p("reserve", "bytes", 4096, "per (ingress port, queue) reserve", _int, None, 0, 1 << 30, dynamics=True),
    _p("pfc_headroom_floor", "bytes", 0, "lower bound of a port's PFC headroom (0: the reference's 3 x rate "
       "x delay alone, which is less than the frames in flight after a pause on links shorter than about "
       "100 ns at 100 Gb/s, so PFC can then drop; 8 frames covers them)", _int, None, 0, 1 << 30,
       dynamics=True),
    _p("resume_offset", "bytes", 3072, "PFC resume hysteresis below the threshold", _int, None, 0, 1 << 30,
       dynamics=True),
    _p("pause_time", "us", 5.0, "the pause time a PFC frame carries; a pause holds until an explicit "
       "resume, as in the reference, so only the default is accepted", _float, "PAUSE_TIME", 0, 1e6,
       dynamics=False),
    _p("kmin_map", "rate->KB", None, "ECN Kmin per link rate (default 100*Gbps/25 KB)", _str, "KMIN_MAP",
       dynamics=True),
    _p("kmax_map", "rate->KB", None, "ECN Kmax per link rate (default 400*Gbps/25 KB)", _str, "KMAX_MAP",
       dynamics=True),
    _p("pmax_map", "rate->p", None, "ECN Pmax per link rate (default 0.2)", _str, "PMAX_MAP", dynamics=True),
    _p("ack_high_prio", "bool", False, "host NICs send ACK/NACK from a queue that only a pause of "
       "priority 0 (not 3) blocks; as in the reference, switches still queue ACKs by priority group",
       _bool, "ACK_HIGH_PRIO", dynamics=True),
    _p("switch_ack_high_prio", "bool", False, "switches put ACK/NACK in the strict-priority queue 0 "
       "(the reference has this switch attribute but never sets it)", _bool, dynamics=True),
    _p("l2_chunk_size", "bytes", 4000, "receiver also ACKs at every chunk boundary", _int,
       "L2_CHUNK_SIZE", 0, 1 << 40, dynamics=True),
    _p("l2_ack_interval", "bytes", 1, "ACK every this many in-order bytes (1 = every packet)", _int,
       "L2_ACK_INTERVAL", 1, 1 << 40, dynamics=True),
    _p("l2_back_to_zero", "bool", False, "go-back-N restarts at the chunk boundary", _bool, "L2_BACK_TO_ZERO",
       dynamics=True),
    _p("nack_interval", "us", 500.0, "minimum gap between NACKs for the same hole", _float, None, 0, 1e9,
       dynamics=True),
    _p("route_order", "name", "reference", "order in which the routing BFS visits a node's neighbours, "
       "which fixes the order of ECMP next hops: 'reference' (hosts by id, then switches by decreasing "
       "id: the memory order of the reference's node objects, checked flow by flow against its runs) "
       "or 'id' (increasing node id)", _route_order, dynamics=True),
    _p("rto", "us", 0.0, "retransmission timeout: go back to the first unacknowledged byte after this "
       "long without progress, and ACK duplicates again (0 = none, as the reference, where a lost tail "
       "packet or final ACK stalls its flow)", _float, None, 0, 1e9, dynamics=True),
    _p("has_win", "bool", True, "sender window of one BDP", _bool, "HAS_WIN", dynamics=True),
    _p("global_t", "bool", True, "every flow uses the fabric's max BDP / RTT (else its pair's)", _bool,
       "GLOBAL_T", dynamics=True),
    _p("var_win", "bool", False, "window scales with rate / line rate", _bool, "VAR_WIN", dynamics=True),
    _p("rate_bound", "bool", True, "pace packets at the flow's rate (else line rate)", _bool, "RATE_BOUND",
       dynamics=True),
    _p("error_rate_per_link", "prob", 0.0, "packet corruption probability on links whose file entry is 0",
       _float, "ERROR_RATE_PER_LINK", 0.0, 1.0, dynamics=True),
    _p("simulator_stop_time", "s", None, "stop the clock at this time (None: run until idle)", _float,
       "SIMULATOR_STOP_TIME", 0, 1e6, dynamics=False),
    _p("time_quantum_ps", "ps", 1000, "tx-time resolution: 1000 truncates to whole ns like the "
       "reference; 1 keeps picoseconds", _int, None, 1, 1000, dynamics=True),
    _p("seed", "int", 1, "the run's realisation of every random choice: with ecn_rng=ns3 (the default) it is "
       "the reference's run number (ns-3 RngRun; 1, the reference's default, reproduces its runs), with "
       "ecn_rng=splitmix the seed of the simulation's own generator; link errors draw from that generator "
       "seeded by it in both cases.  Another seed, another realisation of probabilistic ECN marking and "
       "link errors; a run without either is the same for every seed", _int, None, 0, 2 ** 63,
       dynamics=True),
    _p("ecn_rng", "name", "ns3", "random draws of probabilistic ECN marking: 'ns3' (the reference's "
       "stream sequence: MRG32k3a streams of ns-3 seed 1 and run `seed`, so that its runs are reproduced "
       "draw for draw), 'splitmix' (the simulation's own generator, seeded by `seed`) or 'port' (one "
       "generator per port, seeded by `seed` and the port, drawing also that port's link errors: draws that "
       "do not depend on the order of events at different ports, as the partitioned kernel (threads) needs)", _rng_name,
       dynamics=True),
    _p("ns3_stream_base", "int", -1, "with ecn_rng=ns3: stream index of the first draw (-1: derived from "
       "the topology as the reference's set-up consumes streams)", _int, None, -1, 2 ** 62, dynamics=True),
    _p("max_flows", "flows", 0, "limit on flows (and connections) a simulation accepts (0 = unlimited); "
       "exceeding it raises ResourceLimitError", _int, None, 0, 2 ** 31 - 1, dynamics=False),
    _p("max_packets", "packets", 0, "limit on packets alive at once (0 = unlimited); exceeding it "
       "raises ResourceLimitError", _int, None, 0, 2 ** 31 - 1, dynamics=False),
    # --- congestion-control parameters
    _p("alpha_resume_interval", "us", 55.0, "DCQCN alpha update period", _float, "ALPHA_RESUME_INTERVAL", 0,
       1e9, dynamics=True),
    _p("rate_decrease_interval", "us", 4.0, "DCQCN rate decrease check period", _float,
       "RATE_DECREASE_INTERVAL", 0, 1e9, dynamics=True),
    _p("clamp_target_rate", "bool", False, "DCQCN sets Rt = Rc on every cut", _bool, "CLAMP_TARGET_RATE",
       dynamics=True),
    _p("rp_timer", "us", 1500.0, "DCQCN rate increase timer", _float, "RP_TIMER", 0, 1e9, dynamics=True),
    _p("ewma_gain", "ratio", 1.0 / 16, "DCQCN g / DCTCP g", _float, "EWMA_GAIN", 0, 1, dynamics=True),
    _p("fast_recovery_times", "int", 5, "DCQCN fast recovery stages", _int, "FAST_RECOVERY_TIMES", 0, 1 << 20,
       dynamics=True),
    _p("rate_ai", "bps", 5_000_000, "additive increase", _rate, "RATE_AI", 0, 1e13, dynamics=True),
    _p("rate_hai", "bps", 50_000_000, "hyper additive increase", _rate, "RATE_HAI", 0, 1e13, dynamics=True),
    _p("min_rate", "bps", 100_000_000, "lowest sending rate", _rate, "MIN_RATE", 0, 1e13, dynamics=True),
    _p("dctcp_rate_ai", "bps", 1_000_000_000, "DCTCP additive increase per RTT", _rate, "DCTCP_RATE_AI", 0,
       1e13, dynamics=True),
    _p("fast_react", "bool", True, "HPCC per-ACK reaction without committing Rc", _bool, "FAST_REACT",
       dynamics=True),
    _p("u_target", "ratio", 0.95, "HPCC target utilisation eta", _float, "U_TARGET", 0.01, 1.0, dynamics=True),
    _p("mi_thresh", "int", 5, "HPCC additive stages before a multiplicative one", _int, "MI_THRESH", 0, 1 << 20,
       dynamics=True),
    _p("int_multi", "int", 1, "HPCC INT field unit multiplier", _int, "INT_MULTI", 1, 1 << 16, dynamics=True),
    _p("multi_rate", "bool", False, "HPCC per-hop rates", _bool, "MULTI_RATE", dynamics=True),
    _p("sample_feedback", "bool", False, "HPCC sampled feedback", _bool, "SAMPLE_FEEDBACK", dynamics=True),
    _p("rate_on_first_cnp", "ratio", 1.0, "DCQCN: Rc multiplier at the first CNP", _float, None, 0.0, 1.0,
       dynamics=True),
    _p("timely_alpha", "ratio", 0.875, "TIMELY EWMA weight of the RTT difference", _float, None, 0.0, 1.0,
       dynamics=True),
    _p("timely_beta", "ratio", 0.8, "TIMELY multiplicative decrease factor", _float, None, 0.0, 1.0,
       dynamics=True),
    _p("timely_t_low", "us", 50.0, "TIMELY: increase below this RTT", _float, None, 0, 1e9, dynamics=True),
    _p("timely_t_high", "us", 500.0, "TIMELY: decrease above this RTT", _float, None, 0, 1e9, dynamics=True),
    _p("timely_min_rtt", "us", 20.0, "TIMELY: gradient normaliser", _float, None, 0.001, 1e9, dynamics=True),
    *_SWIFT_PARAMS,
    *_TCP_PARAMS,
    _p("sample_interval", "us", 0.0, "record every running flow's rate and every non-empty switch queue "
       "this often (0 = off); see Network.samples() and `python -m wormhole plot`", _float, None, 0, 1e9,
       dynamics=False),
    # --- the partitioned kernel (parallel full mode): the same run for every value of both
    _p("threads", "threads", 0, "full packet mode on this many native threads: the fabric cut into logical "
       "processes at links with delay (the smallest gives the lookahead), run in conservative rounds; "
       "same-time events keep the sequential kernel's order (each round's events ranked in the order a "
       "sequential run processes them; ECN draws of the one random stream taken in that order at the "
       "round's end), so the output is byte-identical to the sequential run (0, the default) for any thread "
       "and process count.  Link errors need ecn_rng='port'; no accelerator, callbacks or user events",
       _int, None, 0, 1024, dynamics=False),
    _p("tie_order", "name", "auto", "order of events due at the same picosecond: 'reference' (the order they "
       "were scheduled in, as the reference: the sequential kernel's, and with threads the partitioned "
       "kernel's), 'local' (by scheduling time, scheduling node and that node's own count: computed by each "
       "node alone, so with threads no ranking is needed, and a sequential run with it equals every "
       "threads=N run with it; needs ecn_rng='port' when switches mark) or 'auto' (reference)", _tie_order,
       dynamics=False),
    _p("event_queue", "name", "calendar", "the kernel's pending events: 'calendar' (events due "
       "within 8.2 us in nanosecond buckets in front of a binary heap, with threads one per logical process; a tx-time "
       "quantum finer than 1 ns keeps the heap alone; net.stats['event_queue'] says which ran) or 'heap' (the binary heap alone): the same order, so the same results; "
       "only the cost differs", _event_queue, dynamics=False),
    _p("lps", "processes", 0, "with threads: logical processes to cut the fabric into (0: 1 for one thread, "
       "else 1 per thread in the reference order, whose ranking and cut packets grow with the count, 8 per "
       "thread with tie_order=local; at most one per switch group; METIS splits the groups)", _int, None, 0,
       1 << 20, dynamics=False),
    # --- the accelerator: all but the on/off switches change an accelerated run's trajectory, and so
    # the state in which convergences are stored: they are part of the memo key
    _p("accelerate", "bool", False, "fast-forward steady partitions (the Wormhole method)", _bool,
       dynamics=False),
    _p("steady_window", "samples", 2000, "rate samples per flow in the steady-state test (l; each flow's window "
       "holds six rings of the least power of two at least l)", _int, None, 2, 1_000_000, dynamics=True),
    _p("steady_theta", "ratio", 0.05, "a flow is steady when (max - min) / mean of its window < theta (0: never)",
       _float, None, 0.0, 10.0, dynamics=True),
    _p("min_skip", "us", 2.0, "fast-forward only when the next interrupt is at least this far", _float, None,
       0.0, 1e9, dynamics=True),
    _p("skip_margin", "bytes", 0, "bytes each flow still simulates packet by packet before an interrupt "
       "(0: 16 packets)", _int, None, 0, 1 << 40, dynamics=True),
    _p("steady_goodput", "bool", False, "also call a flow steady when the goodputs (acknowledged bytes per busy "
       "time) of its window's four quarters agree within theta with no trend, its rate oscillating around a "
       "share, provided the window spans eight periods of its congestion control's slowest loop (HPCC, DCTCP: "
       "the base RTT; DCQCN: its rate-increase timer; TIMELY: none, so never).  Off by default: it skips more "
       "of contended rows, but it can freeze two HPCC flows' split before they reach fairness (7.6% on a "
       "2-flow incast resumed from a mirror)", _bool, dynamics=True),
    _p("steady_goodput_alone", "bool", True, "the quarter-goodput test of steady_goodput for the flows whose data "
       "shares no port with another flow's data (only ACKs: e.g. a ring's connections): such a flow has no share "
       "of a bottleneck still being split with others that a skip could freeze, so its rate oscillating around "
       "what its own loop settles at (HPCC against the ACK load on its ports) is a steady state; a rate that "
       "settled within theta over the window's later half is left to the spread test (the window may still "
       "hold the transient's tail), and such a flow is no on/off member of a skip (its goodput is an average "
       "over its swing while it sends).  On by default: on gpt13b (HPCC, 1 layer, 64 GPUs) it skips 98.98% "
       "instead of 98.85% on 2:1 rail segments (FCT 0.24 / 2.90%, iteration 0.107%) and aicb-mistral-8x7b "
       "(EP 8) 62.7% instead of 3.7% (FCT 0.14 / 1.10%); the other rows of bench/accel_fidelity.py keep their "
       "figures (DCQCN's loop outlasts the window, TIMELY has no bounded one).  Carried through idle spells, "
       "such flows kept a DP ring's leader in a skip planned 1 ms ahead through its idle spell on moe at 128 GPUs, its mirrors parted "
       "at the all-to-all's posts, and the run took 1.11 G events instead of 70.7 M", _bool,
       dynamics=True),
    _p("steady_committed", "bool", True, "the steady window samples the rate the congestion control's loop "
       "commits (HPCC's Rc, set once per RTT) instead of the per-ACK sending rate, which with fast react "
       "scatters around it (the others: the same rate).  On by default: on gpt13b 2:1 rail segments (HPCC, "
       "1 layer) it skips 99.58% instead of 98.76% at 32 GPUs and 97.04% instead of 94.02% at 64, FCT p99 "
       "0.30% and 0.50%; the stale EP share it once let skip on moe at 128 GPUs (FCT p99 18.5%) no longer "
       "occurs (p99 0.06% either way)", _bool, dynamics=True),
    _p("steady_onoff", "bool", True, "a steady skip carries the partition's connections whose data shares no "
       "port with another of its flows' data (a ring's connections, coupled to the others only by ACKs) "
       "through their idle spells: such a connection that has moved all its posted data stops, and data "
       "posted to it starts a new run at its measured goodput at the moment of the post, for at most its last "
       "idle spell out of data, every flow of the skip at its goodput over the ring's last steady cycle, "
       "instead of the skip ending before it runs short (a run under way when the skip begins keeps its "
       "cycle's pace).  On by default: on gpt13b on 2:1 rail segments (HPCC, 64 GPUs, 1 layer) it skips 98.85% "
       "instead of 97.04% at FCT 0.24 / 3.13% (0.11 / 0.50% without) and iteration error 0.143% (0.044%); "
       "gpt13b --gpus 128 --tp 1 processes 4.0 M events instead of 16.0 M for the same iteration; the other "
       "rows of bench/accel_fidelity.py keep their figures", _bool,
       dynamics=True),
    _p("steady_cycle", "bool", False, "with steady_onoff, a ring connection whose rate window is not steady "
       "(each message's ramp after an idle spell keeps it from ever settling when its messages are shorter than "
       "the window) may still join a steady skip as an on/off member when its data shares no port with another "
       "flow's and the goodputs of its own last two cycles (bytes over busy time from one resume to the next, "
       "ramp included) agree within theta and carry the bytes of the run under way, and that run is on the cycle's "
       "schedule (it ends when a run of the cycle begun at its resume would, at most (1 + theta) times the cycle's "
       "goodput); later runs move at that cycle's goodput; not in a partition some mirror follows, and such a "
       "skip stores no memo entry.  Off by default: without that last condition it took gpt13b on 2:1 rail segments (HPCC, "
       "64 GPUs, 1 layer) from 98.98% to 99.06% skipped at FCT 0.20 / 0.93% (0.24 / 2.90%), but moe --gpus 128 "
       "lost its mirrors (1.11 G events instead of 70.6 M, iteration 0.9% long); with it, no row of "
       "bench/accel_fidelity.py moves by more than 0.01 point of skipped events", _bool, dynamics=True),
    _p("steady_check_every", "samples", 8, "re-check a steady flow's partition every this many samples", _int,
       None, 1, 1 << 30, dynamics=True),
    _p("memo", "bool", True, "with accelerate: memoize partition convergences (canonical conflict graphs)",
       _bool, dynamics=False),
    _p("memo_mirrors", "bool", True, "with memo: partitions that form at the same moment as an identical twin "
       "follow it instead of being simulated (mirrors).  A mirror follows its twin through message ends, "
       "deliveries, data the workload posts to both at the same moment (in either order) and idle spells, "
       "and ends exactly "
       "in its state when everything of the twin is acknowledged (congestion control with HPCC's INT records, "
       "its ports' counters, the rate window); flows that join the twin while their own twins join the "
       "mirror at the same moment are followed too, and a mirror of connections follows its twin through "
       "its steady skips.  On moe 128 GPUs: 692.8 M -> 71.3 M events, the same iteration as without "
       "mirrors, 14 s instead of 117 s; gpt175b on 1,024 GPUs (TP 8, PP 8, one micro-batch, four rail "
       "segments) 232.5 M events, 126 s (360.8 M, 134 s without).  On by default.  Not exact everywhere: a mirror that parts (a flow "
       "joins its twin alone, data are posted to one and not the other) resumes with its own pipeline, not "
       "the twin's, and twins that share a switch interact through its buffer; against the full run at 32 "
       "GPUs, 1 layer, HPCC, the iteration error with mirrors is 0.032% on 2:1 rail segments (0.047% "
       "without); gpt13b TP 2 (0.007%, 99.88% skipped), moe TP 2 EP 4 (0.009%, 99.84%), the rail-local rows "
       "and the 128-GPU headline give the same iteration with or without",
       _bool, dynamics=False),
    _p("memo_db", "path", None, "SQLite file of the memo database, reused across runs (None: in memory); "
       "entries are keyed by the conflict graph, every parameter that changes dynamics and the fabric-wide "
       "window and base RTT, so one file can serve several configurations and fabrics", _str, dynamics=False),
    _p("flow_model", "name", "packet", "flow backend sharing model: packet (calibrated to the packet kernel: "
       "payload capacities, latency phase, shares weighted by 1 / route latency), maxmin (plain max-min on payload "
       "capacities), cm02 or lv08 (SimGrid 3.32's models of those names: line-rate capacities, payload bytes, "
       "latency and bandwidth factors, weight-S, TCP-gamma bound, cross-traffic)", _flow_model, dynamics=False),
    _p("flow_window", "bytes", 0.0, "flow backend, packet and maxmin models: bound each flow at window / (2 x route "
       "latency) (0: none)", _float, None, 0.0, 1e15, dynamics=False),
    _p("flow_tcp_gamma", "bytes", 4194304.0, "flow backend, cm02 and lv08 models: SimGrid's network/TCP-gamma, "
       "each flow bounded at gamma / (2 x route latency) (0: none)", _float, None, 0.0, 1e15, dynamics=False),
    _p("flow_crosstraffic", "bool", True, "flow backend, cm02 and lv08 models: SimGrid's network/crosstraffic, "
       "a flow also uses 0.05 x its share on its reverse route", _bool, dynamics=False),
    _p("pint_log_base", "ratio", 1.01, "HPCC-PINT (CC_MODE 10) log base; HPCC-PINT is not implemented, so "
       "only the value the reference's run.py writes into every config.txt is accepted", _float,
       "PINT_LOG_BASE", 1.0, 10.0, dynamics=False),
    _p("pint_prob", "prob", 1.0, "HPCC-PINT (CC_MODE 10) sampling probability; HPCC-PINT is not implemented, "
       "so only the default is accepted", _float, "PINT_PROB", 0.0, 1.0, dynamics=False),
)

# Names that meant something once; setting them says what replaced them.
REMOVED = {
    "ns3_run": "ns3_run was removed: with ecn_rng=ns3 the seed is the reference's run number (RngRun); "
               "give seed=N instead",
}

# Parameters the reference's config.txt carries that have one meaning here: any
# other value would be accepted and silently do nothing, so it is refused.
ONLY_DEFAULT = {
    "pause_time": "a PFC pause holds until an explicit resume, as in the reference (qbb-net-device.cc), "
                  "so the pause time has no effect",
    "dynamic_pfc_threshold": "the reference switch always uses the dynamic threshold (switch-mmu.cc); "
                             "a static PFC threshold is not implemented",
    "pint_log_base": "HPCC-PINT (CC_MODE 10) is not implemented",
    "pint_prob": "HPCC-PINT (CC_MODE 10) is not implemented",
}

_BY_NAME = {p.name: p for p in PARAMS}
_BY_KEY = {p.ref_key: p for p in PARAMS if p.ref_key}

# Keys of the reference config that name files or tracing; accepted and kept.
FILE_KEYS = ("TOPOLOGY_FILE", "FLOW_FILE", "TRACE_FILE", "TRACE_OUTPUT_FILE", "FCT_OUTPUT_FILE",
             "PFC_OUTPUT_FILE", "QLEN_MON_FILE")
IGNORED_KEYS = ("QLEN_MON_START", "QLEN_MON_END", "ENABLE_TRACE")


# A string carrying its unit ("5us", "32MB", "100Gbps") given for a parameter of
# one of these units becomes a number in the parameter's unit; a bare number
# keeps meaning the registry's unit.
_UNIT_OF = {
    "us": lambda s: parse_time(s) / 1e6, "s": lambda s: parse_time(s) / 1e12, "ps": parse_time,
    "bytes": parse_size, "MiB": lambda s: parse_size(s) / 2 ** 20,
    "Gb/s": lambda s: parse_rate(s) / 1e9,
}


def _with_unit(p, value):
    conv = _UNIT_OF.get(p.unit)
    if conv is None or not isinstance(value, str):
        return value
    text = value.strip()
    if not text or not (text[-1].isalpha() or text[-1] == "/"):
        return value
    return conv(text)


def _check_range(p, v, file=None, line=None):
    if v is None or isinstance(v, (str, bool)):
        return
    if p.lo is not None and v < p.lo or p.hi is not None and v > p.hi:
        raise ConfigError("%s out of range [%s, %s]" % (p.name, p.lo, p.hi), file, line, v)


def parse_rate_map(text, what, file=None, line=None):
    """'2 100000000000 400 400000000000 1600' -> {rate_bps: value}."""
    parts = str(text).split()
    try:
        n = _int(parts[0])
        if n < 0 or len(parts) != 1 + 2 * n:
            raise ValueError
        out = {}
        for i in range(n):
            rate = _int(parts[1 + 2 * i])
            val = _float(parts[2 + 2 * i])
            if rate <= 0 or val < 0:
                raise ValueError
            out[rate] = val
        return out
    except (ValueError, IndexError):
        raise ConfigError("bad %s: expected 'N rate value ...'" % what, file, line, text)


def _preset_of(given):
    """The preset that ``given`` (explicit values) selects as its base, or None."""
    name = given.get("preset", "auto")
    cc = given.get("cc")
    if name == "none":
        return None
    if name == "auto":
        return cc if cc in PRESETS else None         # cc=none has no preset
    own = _preset_values(name, NOMINAL_GBPS)["cc"]
    if cc is not None and cc != own:
        raise ConfigError("cc %r conflicts with preset %r, a preset of %s (give preset='auto' to start from the "
                          "preset of %s, or preset='none' for the registry defaults)" % (cc, name, own, cc),
                          value=cc)
    return name


def _resolve(given, fabric=None):
    """Every parameter's value: registry defaults, then the preset, then ``given``.
    ``fabric`` is (NIC Gb/s, link rates bps) of the topology the Config was
    prepared for (``Config.for_topology``), or None."""
    v = {p.name: p.default for p in PARAMS}
    name = _preset_of(given)
    if name is not None:
        gbps, rates = fabric if fabric is not None else (NOMINAL_GBPS, ())
        for k, x in _preset_values(name, given.get("preset_gbps") or gbps, rates).items():
            v[k] = _BY_NAME[k].parse(x)
    v.update(given)
    return v


class Config:
    """Parameter values: the explicitly given ones over a base.

    ``Config(cc="dcqcn", buffer_size=32)``: every parameter not given comes from the
    reference run script's preset of the algorithm (``preset='auto'``), at the NIC
    rate of the fabric it is used on (``preset_gbps``), as ``--cc dcqcn`` in the
    CLI; ``cc="none"`` has no preset and uses the registry defaults.
    ``Config.generic(cc=...)`` (``preset='none'``) and ``Config.from_file`` start
    from the registry defaults (the reference's C++ defaults) instead.
    Unknown names and bad values raise ConfigError.  ``files`` holds the reference
    file keys (TOPOLOGY_FILE, ...) when read from a config file, with paths
    resolved against the file's folder."""

    def __init__(self, **values):
        self._given = {}
        self._fabric = None
        self._v = _resolve(self._given)
        self.files = {}
        self.source = None
        self._update(values)

    @staticmethod
    def _parse(name, value, file=None, line=None):
        p = _BY_NAME.get(name)
        if p is None:
            if name in REMOVED:
                raise ConfigError(REMOVED[name], file, line, value)
            raise ConfigError("unknown parameter %r" % name, file, line, value)
        if value is None:
            if name == "preset":
                return "none"
            if p.default is not None:
                raise ConfigError("%s cannot be None (default %s)" % (name, p.default), file, line, value)
            return None
        try:
            v = p.parse(_with_unit(p, value))
        except (ValueError, TypeError) as e:
            raise ConfigError("bad value for %s: %s" % (name, e), file, line, value)
        _check_range(p, v, file, line)
        if name in ONLY_DEFAULT and v != p.default:
            raise ConfigError("%s must be %s (its default): %s" % (name, p.default, ONLY_DEFAULT[name]),
                              file, line, value)
        if name.endswith("_map"):
            parse_rate_map(v, name, file, line)
        return v

    def _update(self, values, file=None, line=None):
        given = dict(self._given)
        for k, v in values.items():
            given[k] = self._parse(k, v, file, line)
        try:
            v = _resolve(given, self._fabric)
        except ConfigError as e:
            if file is not None and e.file is None:
                raise ConfigError(e.message, file, line, e.value)
            raise
        self._given, self._v = given, v

    def set(self, name, value, file=None, line=None):
        """Give ``name`` explicitly (it no longer follows the preset)."""
        self._update({name: value}, file, line)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._v[name]
        except KeyError:
            raise AttributeError(name)

    def __getitem__(self, name):
        return self._v[name]

    def as_dict(self):
        return dict(self._v)

    @property
    def explicit(self):
        """The explicitly given values (the rest come from the preset or the registry)."""
        return dict(self._given)

    @property
    def preset_name(self):
        """The preset the values not given come from (None: the registry defaults)."""
        return _preset_of(self._given)

    def copy(self, **overrides):
        """A copy with ``overrides`` given explicitly on top; the base stays (a
        preset follows a changed ``cc`` under preset='auto')."""
        c = Config.__new__(Config)
        c._given = dict(self._given)
        c._fabric = self._fabric
        c._v = dict(self._v)
        c.files = dict(self.files)
        c.source = self.source
        c._update(overrides)
        return c

    def for_topology(self, topology):
        """The Config a Network on ``topology`` uses: its preset (if any) at the
        topology's NIC rate unless ``preset_gbps`` fixes one (as the CLI's ``--cc``
        computes it: ``round(nic_rate / 1e9)``, at least 1), with ECN map entries
        for every link rate of the topology by the run script's rule."""
        if self.preset_name is None:
            return self
        gbps = max(1, round(topology.nic_rate() / 1e9)) if len(topology.hosts) else NOMINAL_GBPS
        c = self.copy()
        c._fabric = (gbps, tuple(sorted({int(l.rate_bps) for l in topology.links})))
        c._v = _resolve(c._given, c._fabric)
        return c

    @property
    def nic_gbps(self):
        """NIC rate (Gb/s) the preset's values are computed for (None without a preset)."""
        if self.preset_name is None:
            return None
        return self._v["preset_gbps"] or (self._fabric[0] if self._fabric else NOMINAL_GBPS)

    def rate_map(self, name):
        v = self._v[name]
        return None if v is None else parse_rate_map(v, name)

    def key_values(self):
        """[(name, value)] of every parameter that changes dynamics (the
        registry's ``dynamics`` flag), in registry order, with rate maps in a
        canonical form: what a memoized convergence depends on beyond the graph."""
        out = []
        for p in PARAMS:
            if p.dynamics:
                v = self._v[p.name]
                if p.name.endswith("_map") and v is not None:
                    v = sorted(parse_rate_map(v, p.name).items())
                out.append((p.name, v))
        return out

    @classmethod
    def generic(cls, **values):
        """Registry defaults (the reference's C++ defaults) for every parameter not
        in ``values``, whatever the algorithm: ``Config(preset='none', ...)``."""
        values.setdefault("preset", "none")
        return cls(**values)

    @classmethod
    def preset(cls, name, nic_gbps=None, **overrides):
        """The reference run script's parameters for ``name`` (dcqcn, dcqcn_paper,
        dcqcn_vwin, dcqcn_paper_vwin, hpcc, timely, timely_vwin, dctcp) at a NIC
        rate of ``nic_gbps`` (None: the fabric's, when a Network is built), then
        ``overrides``.  ``Config.preset('hpcc')`` is ``Config(cc='hpcc')``."""
        values = {"preset": name}
        if nic_gbps is not None:
            values["preset_gbps"] = nic_gbps
        values.update(overrides)
        return cls(**values)

    @classmethod
    def from_file(cls, path):
        """Read a reference ``config.txt`` (KEY value per line): the registry
        defaults (preset='none') for keys it omits, since the file is the whole
        configuration.  Unknown keys and bad values raise ConfigError naming the
        file and line."""
        cfg = cls(preset="none")
        cfg.source = str(path)
        base = os.path.dirname(os.path.abspath(path))
        text = read_text(path, ConfigError, "config")
        seen = set()
        for no, line in enumerate(text.splitlines(), 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            parts = s.split(None, 1)
            key = parts[0]
            val = parts[1].strip() if len(parts) > 1 else ""
            if val == "":
                raise ConfigError("key %s has no value" % key, path, no, s)
            if key in seen:
                raise ConfigError("duplicate key %s" % key, path, no, key)
            seen.add(key)
            if key in FILE_KEYS:
                cfg.files[key] = os.path.join(base, val)
            elif key in IGNORED_KEYS:
                continue
            elif key == "LINK_DOWN":
                vals = val.split()
                if len(vals) != 3 or any(not x.isdigit() for x in vals):
                    raise ConfigError("LINK_DOWN needs 'time a b'", path, no, val)
                if int(vals[0]) != 0:
                    raise ConfigError("LINK_DOWN (link failure) is not supported", path, no, val)
            elif key in _BY_KEY:
                cfg.set(_BY_KEY[key].name, val, path, no)
            else:
                raise ConfigError("unknown config key %s" % key, path, no, key)
        return cfg


def preset_differences(gbps=NOMINAL_GBPS):
    """{name: {"default": registry default, cc: value of Config(cc=cc)}} for every
    parameter where the preset of some algorithm differs from the registry."""
    algs = [c for c in CC_NAMES if c in PRESETS]
    base = {p.name: p.default for p in PARAMS}
    per = {c: Config(cc=c, preset_gbps=gbps).as_dict() for c in algs}
    out = {}
    for p in PARAMS:
        if p.name in ("cc", "preset", "preset_gbps"):
            continue
        if any(per[c][p.name] != base[p.name] for c in algs):
            out[p.name] = dict({"default": base[p.name]}, **{c: per[c][p.name] for c in algs})
    return out


def _presets_markdown():
    algs = [c for c in CC_NAMES if c in PRESETS]
    lines = ["", "## Defaults of `Config(cc=X)` and `--cc X`", "",
             "`Config(cc=X)`, `Network(topology, cc=X)`, `Config.preset(X)`, `python -m wormhole run --cc X` "
             "(without `--config`) and `python -m wormhole.bench --cc X` all mean one thing: every parameter not "
             "given explicitly comes from the reference run script's preset for X (`preset=auto`), scaled to the "
             "fabric's NIC rate when the Network is built.  `cc=none` has no preset: the registry defaults above.  "
             "`Config.from_file` (a reference config.txt, which is the whole configuration; `--config`, where "
             "`--cc` then replaces CC_MODE only) and `Config.generic(cc=X)` (`preset=none`) use the registry "
             "defaults of the table above for what they do not set.  Where the presets differ from the registry "
             "defaults (at %d Gb/s; rate_ai, rate_hai, int_multi, buffer_size and the ECN maps scale with the "
             "NIC rate):" % NOMINAL_GBPS, "",
             "| name | registry default (`Config.generic`, config.txt) | " + " | ".join(algs) + " |",
             "|---|---|" + "---|" * len(algs)]
    for name, row in preset_differences().items():
        lines.append("| `%s` | %s | %s |" % (name, row["default"], " | ".join(str(row[c]) for c in algs)))
    return lines


def docs_markdown():
    """The configuration reference, generated from the registry."""
    lines = ["| name | unit | default | config.txt key | meaning |", "|---|---|---|---|---|"]
    for p in PARAMS:
        lines.append("| `%s` | %s | %s | %s | %s |" % (p.name, p.unit, p.default, p.ref_key or "",
                                                        p.doc.replace("|", "/")))
    lines += _presets_markdown()
    return "\n".join(lines) + "\n"


def cli_help():
    rows = ["  %-24s %s (default %s %s)" % (p.name, p.doc, p.default, p.unit) for p in PARAMS]
    rows.append("")
    rows.append("defaults: --cc X (without --config) starts every parameter not set from the reference run "
                "script's preset for X at the topology's NIC rate, as Config(cc=X) in the API; the defaults above "
                "are the registry's (--cc none, --config files, Config.generic). `python -m wormhole params` "
                "lists where the presets differ.")
    return "\n".join(rows)
