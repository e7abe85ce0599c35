"""The congestion-control registry and the per-algorithm presets of the
reference's run script (``simulation/run.py``), selectable by name.

``REGISTRY`` is the one list of algorithm names: the configuration's ``cc``
values and the reference's CC_MODE codes (``wormhole.config``), the presets and
the CLI's choices derive from it.  Each name is a row of the kernel's table of
operations (``CC_TABLE`` in ``_core/cc_table.pxi``), which holds the kernel's
side of the algorithm (its enum value, the feedback it needs in packets);
``kernel_table`` checks that the two name the same algorithms."""
import importlib
import math
from dataclasses import dataclass

from .errors import ConfigError
from .units import NS, ns3_fixed_point


def _per_rtt(c, rtt_ps):
    return rtt_ps


def _dcqcn_loop(c, rtt_ps):
    return max(rtt_ps, _us_to_ps(c.rp_timer), _us_to_ps(c.alpha_resume_interval))


def _no_bounded_loop(c, rtt_ps):
    return None


@dataclass(frozen=True)
class CcSpec:
    name: str
    ref_code: int       # the reference's CC_MODE (None: not an algorithm of the reference)
    doc: str
    # (config, base RTT ps) -> the period of the algorithm's slowest control loop, ps, or None when its
    # oscillation under contention has no period bounded by its parameters; the accelerator's goodput
    # test needs a rate window spanning eight of them
    loop_period: object = _per_rtt

    @property
    def kind(self):
        """The kernel's CcKind (its row of the table of operations)."""
        return kernel_table()[0][self.name]

    @property
    def int_mode(self):
        """The kernel's IntMode: the feedback the algorithm reads from ACKs."""
        return kernel_table()[1][self.name][0]

    @property
    def int_bytes(self):
        """INT header bytes in every data packet, echoed in the ACK."""
        return kernel_table()[1][self.name][1]


REGISTRY = {s.name: s for s in (
    CcSpec("none", 0, "fixed rate: line rate, window = BDP (no reaction)"),
    CcSpec("dcqcn", 1, "DCQCN, Mellanox flavour: ECN-echo ACKs as CNPs, alpha/decrease/increase timers",
           _dcqcn_loop),
    CcSpec("hpcc", 3, "HPCC: INT hop records, window and rate from the normalised inflight"),
    # TIMELY's rate under contention swings on the RTT gradient's own time scale (measured: 2 flows on one
    # bottleneck finished 5.8% early with the goodput test on), so it has none
    CcSpec("timely", 7, "TIMELY: RTT gradient, HAI after 5 increases", _no_bounded_loop),
    CcSpec("dctcp", 8, "DCTCP, rate-based: alpha per window, one cut per window of ECN"),
    # Swift's windows even out at a pace set by the excess delay, not by its parameters (measured: two flows
    # of ~160 packets on one 100 Gb/s bottleneck, above the flow-scaling range, still 60/35 after 28 ms), so
    # it has none
    CcSpec("swift", None, "Swift (SIGCOMM 2020): a window steered to a target delay (flow and hop scaling), "
           "AIMD with one decrease per RTT, paced below one packet", _no_bounded_loop),
    # a loss-based window's sawtooth lasts as long as it takes to fill the buffer again (its period grows with
    # the buffer and the window, not bounded by the parameters)
    CcSpec("tcp", None, "TCP NewReno: a loss-based window, slow start from 10 packets, +1 packet per window, "
           "halved once per window on a loss (a NACK), 1 packet after a timeout", _no_bounded_loop),
    CcSpec("cubic", None, "TCP CUBIC (Linux's default): as tcp with W(t) = C (t - K)^3 + W_max growth and its "
           "Reno-friendly floor, x0.7 on a loss", _no_bounded_loop),
)}

_TABLE = []


def kernel_table():
    """({name: CcKind}, {name: (IntMode, INT bytes)}, {IntMode name: value}) of
    the kernel's table of operations and its INT modes, checked once against
    REGISTRY (loads the kernel on first use)."""
    if not _TABLE:
        k = importlib.import_module("._core.kernel", __package__)
        if set(k.CC_KINDS) != set(REGISTRY):
            raise RuntimeError("the kernel's congestion-control table (%s) and wormhole.cc.REGISTRY (%s) differ"
                               % (", ".join(k.CC_KINDS), ", ".join(REGISTRY)))
        _TABLE.append((dict(k.CC_KINDS), dict(k.CC_WIRE), dict(k.INT_MODES)))
    return _TABLE[0]


def spec(name):
    try:
        return REGISTRY[name]
    except KeyError:
        raise ConfigError("unknown congestion control %r (one of %s)" % (name, ", ".join(REGISTRY)), value=name)


def ref_codes():
    """{reference CC_MODE: name} of the algorithms the reference has."""
    return {s.ref_code: s.name for s in REGISTRY.values() if s.ref_code is not None}


def _us_to_ps(v):
    """MicroSeconds(double) of the reference, in ps."""
    return ns3_fixed_point(float(v), 1000) * NS


def _swift_scaling(c):
    """Swift's flow-scaling alpha and beta (ps) from its range and the windows
    (packets) at which the term is fs_range and 0."""
    lo, hi = float(c.swift_fs_min_cwnd), float(c.swift_fs_max_cwnd)
    if not lo < hi:
        raise ConfigError("swift_fs_min_cwnd (%g) must be below swift_fs_max_cwnd (%g)" % (lo, hi), value=lo)
    if float(c.swift_min_cwnd) > float(c.swift_max_cwnd):
        raise ConfigError("swift_min_cwnd (%g) must not exceed swift_max_cwnd (%g)"
                          % (c.swift_min_cwnd, c.swift_max_cwnd), value=c.swift_min_cwnd)
    fs_range = float(c.swift_fs_range) * 1e6
    alpha = fs_range / (1 / math.sqrt(lo) - 1 / math.sqrt(hi))
    return fs_range, alpha, -alpha / math.sqrt(hi)


def kernel_params(c):
    """The kernel's CcParams from a Config."""
    fs_range, fs_alpha, fs_beta = _swift_scaling(c)
    return {
        "name": c.cc,
        "min_rate": int(c.min_rate),
        "rai": int(c.rate_ai),
        "rhai": int(c.rate_hai),
        "dctcp_rai": int(c.dctcp_rate_ai),
        "g": float(c.ewma_gain),
        "rate_on_first_cnp": float(c.rate_on_first_cnp),
        "clamp_target": int(c.clamp_target_rate),
        "fast_react": int(c.fast_react),
        "multi_rate": int(c.multi_rate),
        "sample_feedback": int(c.sample_feedback),
        "fast_recovery_times": int(c.fast_recovery_times),
        "mi_thresh": int(c.mi_thresh),
        "int_multi": int(c.int_multi),
        "t_alpha": _us_to_ps(c.alpha_resume_interval),
        "t_decrease": _us_to_ps(c.rate_decrease_interval),
        "t_increase": _us_to_ps(c.rp_timer),
        "u_target": float(c.u_target),
        "tmly_alpha": float(c.timely_alpha),
        "tmly_beta": float(c.timely_beta),
        "tmly_tlow": ns3_fixed_point(float(c.timely_t_low), 1000),
        "tmly_thigh": ns3_fixed_point(float(c.timely_t_high), 1000),
        "tmly_min_rtt": ns3_fixed_point(float(c.timely_min_rtt), 1000),
        "sw_base_target": int(round(float(c.swift_base_target) * 1e6)),
        "sw_hop_scale": int(round(float(c.swift_hop_scale) * 1e6)),
        "sw_fs_range": fs_range,
        "sw_fs_alpha": fs_alpha,
        "sw_fs_beta": fs_beta,
        "sw_ai": float(c.swift_ai),
        "sw_beta": float(c.swift_beta),
        "sw_max_mdf": float(c.swift_max_mdf),
        "sw_min_cwnd": float(c.swift_min_cwnd),
        "sw_max_cwnd": float(c.swift_max_cwnd),
        "sw_init_cwnd": float(c.swift_init_cwnd),
        "sw_retx_reset": int(c.swift_retx_reset),
        "tcp_init_cwnd": float(c.tcp_init_cwnd),
        "tcp_min_ssthresh": float(c.tcp_min_ssthresh),
        "tcp_max_cwnd": max(1.0, float(c.tcp_max_window) / float(c.mtu)),
        "tcp_beta": float(c.tcp_beta),
        "cubic_beta": float(c.cubic_beta),
        "cubic_c": float(c.cubic_c),
        "tcp_pto_min": int(round(float(c.tcp_pto_min) * 1e6)),
        "tcp_rto_min": int(round(float(c.tcp_rto_min) * 1e6)),
    }


def _common(bw):
    return {
        "ecn": True, "mtu": 1000, "clamp_target_rate": False, "fast_recovery_times": 1, "min_rate": "1000Mb/s",
        "error_rate_per_link": 0.0, "l2_chunk_size": 4000, "l2_ack_interval": 1, "l2_back_to_zero": False,
        "global_t": True, "multi_rate": False, "sample_feedback": False, "rate_bound": True,
        "buffer_size": 16 * bw / 50,
        "alpha_resume_interval": 1, "rate_decrease_interval": 4, "rp_timer": 300, "ewma_gain": 0.00390625,
        "dctcp_rate_ai": "1000Mb/s", "u_target": 0.95, "mi_thresh": 0, "int_multi": 1,
    }


def ecn_maps(dctcp, bw, link_rates=()):
    """The run script's KMAX_MAP, KMIN_MAP and PMAX_MAP at a NIC rate of ``bw``
    Gb/s: entries for bw and 4 x bw (as the script writes them), and by the same
    rule for every rate (bps) of ``link_rates``, so that a fabric with other link
    rates has an entry for each."""
    rates = sorted({bw * 10**9, bw * 4 * 10**9} | {int(r) for r in link_rates})
    if dctcp:
        kmax = kmin = [30 * r // (10 * 10**9) for r in rates]
        pmax = "1.0"
    else:
        kmax = [400 * r // (25 * 10**9) for r in rates]
        kmin = [100 * r // (25 * 10**9) for r in rates]
        pmax = "0.2"

    def text(vals):
        return " ".join([str(len(rates))] + ["%d %s" % (r, v) for r, v in zip(rates, vals)])
    return {"kmax_map": text(kmax), "kmin_map": text(kmin), "pmax_map": text([pmax] * len(rates))}


def _dcqcn(bw, paper=False, vwin=False):
    v = dict(cc="dcqcn", rate_ai="%gMb/s" % (5 * bw / 25), rate_hai="%gMb/s" % (50 * bw / 25), has_win=False,
             var_win=False, fast_react=False, ack_high_prio=True)
    if paper:
        v.update(alpha_resume_interval=50, rate_decrease_interval=50, rp_timer=55)
    if vwin:
        v.update(has_win=True, var_win=True, ack_high_prio=False)
    return v


def _hpcc(bw):
    return dict(cc="hpcc", rate_ai="%gMb/s" % (10 * bw / 25), rate_hai="%gMb/s" % (10 * bw / 25), has_win=True,
                var_win=True, fast_react=True, int_multi=max(1, bw // 25), ack_high_prio=False)


def _timely(bw, vwin=False):
    return dict(cc="timely", rate_ai="%gMb/s" % (10 * bw / 10), rate_hai="%gMb/s" % (50 * bw / 10), has_win=vwin,
                var_win=vwin, fast_react=False, ack_high_prio=True)


def _dctcp(bw):
    return dict(cc="dctcp", rate_ai="10Mb/s", rate_hai="10Mb/s", dctcp_rate_ai="615Mb/s", ewma_gain=0.0625,
                has_win=True, var_win=True, fast_react=False, ack_high_prio=False, dctcp_ecn=True)


def _swift(bw):
    # not a preset of the reference's run script: its common values (buffer, ECN maps, PFC) with Swift's own
    # window (the registry's swift_* defaults)
    return dict(cc="swift", has_win=True, var_win=False, fast_react=False, ack_high_prio=False)


def _tcp(name):
    # not a preset of the reference's run script: a loss-based TCP on Ethernet switches (its common values
    # except): no PFC (a full buffer drops), no ECN (Linux does not ask for it by default), ACKs queued with the
    # data, 1448 payload bytes per packet (a 1500-byte MTU less the IP, TCP and timestamp headers); the kernel's
    # fixed timeout (behind the algorithm's own loss timer: a burst none of whose packets arrives) at Linux's
    # 200 ms minimum (TCP_RTO_MIN)
    return dict(cc=name, has_win=True, var_win=False, fast_react=False, ack_high_prio=False, pfc=False, ecn=False,
                rto=200000.0, mtu=1448)


# preset name -> its values over the common ones at a NIC rate of bw Gb/s ("dctcp_ecn": DCTCP's ECN maps)
_PRESETS = {
    "dcqcn": _dcqcn,
    "dcqcn_paper": lambda bw: _dcqcn(bw, paper=True),
    "dcqcn_vwin": lambda bw: _dcqcn(bw, vwin=True),
    "dcqcn_paper_vwin": lambda bw: _dcqcn(bw, paper=True, vwin=True),
    "hpcc": _hpcc,
    "timely": _timely,
    "timely_vwin": lambda bw: _timely(bw, vwin=True),
    "dctcp": _dctcp,
    "swift": _swift,
    "tcp": lambda bw: _tcp("tcp"),
    "cubic": lambda bw: _tcp("cubic"),
}
PRESETS = tuple(_PRESETS)
ALIASES = {"hp": "hpcc"}


def preset(name, nic_gbps=100, link_rates=()):
    """Parameter values of the reference's run.py for ``name`` at a NIC rate of
    ``nic_gbps`` (Gb/s): one of PRESETS (swift's is ours: the reference has no
    Swift).  The ECN maps also cover ``link_rates`` (bps)."""
    bw = int(nic_gbps)
    if bw <= 0:
        raise ConfigError("NIC rate must be positive", value=nic_gbps)
    values = _PRESETS.get(ALIASES.get(name, name))
    if values is None:
        raise ConfigError("unknown preset %r (%s)" % (name, ", ".join(PRESETS)), value=name)
    own = values(bw)
    v = _common(bw)
    v.update(ecn_maps(own.pop("dctcp_ecn", False), bw, link_rates))
    v.update(own)
    return v
