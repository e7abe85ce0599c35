"""One parameter registry: name, unit, default, doc and the reference
simulator's ``config.txt`` key.  ``Config`` holds values; ``Config.from_file``
reads a reference config; ``docs_markdown`` and ``cli_help`` are generated
from the registry."""
import math
import os
from dataclasses import dataclass

from .errors import ConfigError, read_text
from .units import parse_rate

CC_NAMES = ("none", "dcqcn", "hpcc", "timely", "dctcp")
CC_MODE_CODES = {1: "dcqcn", 3: "hpcc", 7: "timely", 8: "dctcp"}


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
    if code == 0:
        return "none"
    raise ValueError("unsupported CC_MODE %r (1 dcqcn, 3 hpcc, 7 timely, 8 dctcp)" % (v,))


def _str(v):
    return str(v)


def _flow_model(v):
    s = str(v).strip().lower()
    if s not in ("cm02", "maxmin"):
        raise ValueError("flow_model must be 'cm02' or 'maxmin'")
    return s


def _rng_name(v):
    s = str(v).strip().lower()
    if s not in ("splitmix", "ns3"):
        raise ValueError("ecn_rng must be 'splitmix' or 'ns3'")
    return s


def _route_order(v):
    s = str(v).strip().lower()
    if s not in ("reference", "id"):
        raise ValueError("route_order must be 'reference' or 'id'")
    return s


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


def _p(name, unit, default, doc, parse, ref_key=None, lo=None, hi=None):
    return Param(name, unit, default, doc, parse, ref_key, lo, hi)


# The registry.  Order is the order of the generated docs.
PARAMS = (
    _p("cc", "name", "none", "congestion control: none (fixed rate: line rate, window = BDP), "
       "dcqcn, hpcc, timely, dctcp (reference CC_MODE 0, 1, 3, 7, 8)", _cc, "CC_MODE"),
    _p("mtu", "bytes", 1000, "payload bytes per data packet", _int, "PACKET_PAYLOAD_SIZE", 1, 9000),
    _p("ecn", "bool", True, "switches mark ECN (RED at dequeue)", _bool, "ENABLE_QCN"),
    _p("pfc", "bool", True, "PFC frames are sent and honoured; off = drops when the buffer is full",
       _bool, "ENABLE_PFC"),
    _p("dynamic_pfc_threshold", "bool", True, "accepted for compatibility; the reference switch "
       "always uses the dynamic threshold", _bool, "USE_DYNAMIC_PFC_THRESHOLD"),
    _p("buffer_size", "MB", 16, "shared buffer per switch (MiB, as the reference)", _float,
       "BUFFER_SIZE", 0.001, 1 << 20),
    _p("reserve", "bytes", 4096, "per (ingress port, queue) reserve", _int, None, 0, 1 << 30),
    _p("pfc_headroom_floor", "bytes", 0, "lower bound of a port's PFC headroom (0: the reference's 3 x rate "
       "x delay alone, which is less than the frames in flight after a pause on links shorter than about "
       "100 ns at 100 Gb/s, so PFC can then drop; 8 frames covers them)", _int, None, 0, 1 << 30),
    _p("resume_offset", "bytes", 3072, "PFC resume hysteresis below the threshold", _int, None, 0, 1 << 30),
    _p("pause_time", "us", 5.0, "pause time carried by PFC frames (a pause holds until a resume)",
       _float, "PAUSE_TIME", 0, 1e6),
    _p("kmin_map", "rate->KB", None, "ECN Kmin per link rate (default 100*Gbps/25 KB)", _str, "KMIN_MAP"),
    _p("kmax_map", "rate->KB", None, "ECN Kmax per link rate (default 400*Gbps/25 KB)", _str, "KMAX_MAP"),
    _p("pmax_map", "rate->p", None, "ECN Pmax per link rate (default 0.2)", _str, "PMAX_MAP"),
    _p("ack_high_prio", "bool", False, "host NICs send ACK/NACK from a queue that only a pause of "
       "priority 0 (not 3) blocks; as in the reference, switches still queue ACKs by priority group",
       _bool, "ACK_HIGH_PRIO"),
    _p("switch_ack_high_prio", "bool", False, "switches put ACK/NACK in the strict-priority queue 0 "
       "(the reference has this switch attribute but never sets it)", _bool),
    _p("l2_chunk_size", "bytes", 4000, "receiver also ACKs at every chunk boundary", _int,
       "L2_CHUNK_SIZE", 0, 1 << 40),
    _p("l2_ack_interval", "bytes", 1, "ACK every this many in-order bytes (1 = every packet)", _int,
       "L2_ACK_INTERVAL", 1, 1 << 40),
    _p("l2_back_to_zero", "bool", False, "go-back-N restarts at the chunk boundary", _bool, "L2_BACK_TO_ZERO"),
    _p("nack_interval", "us", 500.0, "minimum gap between NACKs for the same hole", _float, None, 0, 1e9),
    _p("route_order", "name", "reference", "order in which the routing BFS visits a node's neighbours, "
       "which fixes the order of ECMP next hops: 'reference' (hosts by id, then switches by decreasing "
       "id: the memory order of the reference's node objects, checked flow by flow against its runs) "
       "or 'id' (increasing node id)", _route_order),
    _p("rto", "us", 0.0, "retransmission timeout: go back to the first unacknowledged byte after this "
       "long without progress, and ACK duplicates again (0 = none, as the reference, where a lost tail "
       "packet or final ACK stalls its flow)",
       _float, None, 0, 1e9),
    _p("has_win", "bool", True, "sender window of one BDP", _bool, "HAS_WIN"),
    _p("global_t", "bool", True, "every flow uses the fabric's max BDP / RTT (else its pair's)", _bool, "GLOBAL_T"),
    _p("var_win", "bool", False, "window scales with rate / line rate", _bool, "VAR_WIN"),
    _p("rate_bound", "bool", True, "pace packets at the flow's rate (else line rate)", _bool, "RATE_BOUND"),
    _p("error_rate_per_link", "prob", 0.0, "packet corruption probability on links whose file entry is 0",
       _float, "ERROR_RATE_PER_LINK", 0.0, 1.0),
    _p("simulator_stop_time", "s", None, "stop the clock at this time (None: run until idle)", _float,
       "SIMULATOR_STOP_TIME", 0, 1e6),
    _p("time_quantum_ps", "ps", 1000, "tx-time resolution: 1000 truncates to whole ns like the "
       "reference; 1 keeps picoseconds", _int, None, 1, 1000),
    _p("seed", "int", 1, "seed of the simulation's random generator (ECN, link errors)", _int, None, 0, 2 ** 63),
    _p("ecn_rng", "name", "ns3", "random draws of probabilistic ECN marking: 'ns3' (the reference's "
       "stream sequence: MRG32k3a streams of seed 1, run ns3_run, so that its runs are reproduced draw for "
       "draw) or 'splitmix' (the simulation's own generator, seeded by `seed`)", _rng_name),
    _p("ns3_run", "int", 1, "with ecn_rng=ns3: the reference's RngRun (another run number, another "
       "realisation)", _int, None, 0, 2 ** 40),
    _p("ns3_stream_base", "int", -1, "with ecn_rng=ns3: stream index of the first draw (-1: derived from "
       "the topology as the reference's set-up consumes streams)", _int, None, -1, 2 ** 62),
    _p("max_flows", "flows", 0, "limit on flows (and connections) a simulation accepts (0 = unlimited); "
       "exceeding it raises ResourceLimitError", _int, None, 0, 2 ** 31 - 1),
    _p("max_packets", "packets", 0, "limit on packets alive at once (0 = unlimited); exceeding it "
       "raises ResourceLimitError", _int, None, 0, 2 ** 31 - 1),
    # --- congestion-control parameters (read now, used by the congestion-control issue)
    _p("alpha_resume_interval", "us", 55.0, "DCQCN alpha update period", _float, "ALPHA_RESUME_INTERVAL", 0, 1e9),
    _p("rate_decrease_interval", "us", 4.0, "DCQCN rate decrease check period", _float,
       "RATE_DECREASE_INTERVAL", 0, 1e9),
    _p("clamp_target_rate", "bool", False, "DCQCN sets Rt = Rc on every cut", _bool, "CLAMP_TARGET_RATE"),
    _p("rp_timer", "us", 1500.0, "DCQCN rate increase timer", _float, "RP_TIMER", 0, 1e9),
    _p("ewma_gain", "ratio", 1.0 / 16, "DCQCN g / DCTCP g", _float, "EWMA_GAIN", 0, 1),
    _p("fast_recovery_times", "int", 5, "DCQCN fast recovery stages", _int, "FAST_RECOVERY_TIMES", 0, 1 << 20),
    _p("rate_ai", "bps", 5_000_000, "additive increase", _rate, "RATE_AI", 0, 1e13),
    _p("rate_hai", "bps", 50_000_000, "hyper additive increase", _rate, "RATE_HAI", 0, 1e13),
    _p("min_rate", "bps", 100_000_000, "lowest sending rate", _rate, "MIN_RATE", 0, 1e13),
    _p("dctcp_rate_ai", "bps", 1_000_000_000, "DCTCP additive increase per RTT", _rate, "DCTCP_RATE_AI", 0, 1e13),
    _p("fast_react", "bool", True, "HPCC per-ACK reaction without committing Rc", _bool, "FAST_REACT"),
    _p("u_target", "ratio", 0.95, "HPCC target utilisation eta", _float, "U_TARGET", 0.01, 1.0),
    _p("mi_thresh", "int", 5, "HPCC additive stages before a multiplicative one", _int, "MI_THRESH", 0, 1 << 20),
    _p("int_multi", "int", 1, "HPCC INT field unit multiplier", _int, "INT_MULTI", 1, 1 << 16),
    _p("multi_rate", "bool", False, "HPCC per-hop rates", _bool, "MULTI_RATE"),
    _p("sample_feedback", "bool", False, "HPCC sampled feedback", _bool, "SAMPLE_FEEDBACK"),
    _p("rate_on_first_cnp", "ratio", 1.0, "DCQCN: Rc multiplier at the first CNP", _float, None, 0.0, 1.0),
    _p("timely_alpha", "ratio", 0.875, "TIMELY EWMA weight of the RTT difference", _float, None, 0.0, 1.0),
    _p("timely_beta", "ratio", 0.8, "TIMELY multiplicative decrease factor", _float, None, 0.0, 1.0),
    _p("timely_t_low", "us", 50.0, "TIMELY: increase below this RTT", _float, None, 0, 1e9),
    _p("timely_t_high", "us", 500.0, "TIMELY: decrease above this RTT", _float, None, 0, 1e9),
    _p("timely_min_rtt", "us", 20.0, "TIMELY: gradient normaliser", _float, None, 0.001, 1e9),
    _p("sample_interval", "us", 0.0, "record every running flow's rate and every non-empty switch queue "
       "this often (0 = off); see Network.samples() and `python -m wormhole plot`", _float, None, 0, 1e9),
    _p("accelerate", "bool", False, "fast-forward steady partitions (the Wormhole method)", _bool),
    _p("steady_window", "samples", 2000, "rate samples per flow in the steady-state test (l)", _int, None, 2,
       1_000_000),
    _p("steady_theta", "ratio", 0.05, "a flow is steady when (max - min) / mean of its window < theta (0: never)",
       _float, None, 0.0, 10.0),
    _p("min_skip", "us", 2.0, "fast-forward only when the next interrupt is at least this far", _float, None,
       0.0, 1e9),
    _p("skip_margin", "bytes", 0, "bytes each flow still simulates packet by packet before an interrupt "
       "(0: 16 packets)", _int, None, 0, 1 << 40),
    _p("steady_check_every", "samples", 8, "re-check a steady flow's partition every this many samples", _int,
       None, 1, 1 << 30),
    _p("memo", "bool", True, "with accelerate: memoize partition convergences (canonical conflict graphs)",
       _bool),
    _p("memo_db", "path", None, "SQLite file of the memo database, reused across runs (None: in memory)",
       _str),
    _p("flow_model", "name", "cm02", "flow backend sharing model: cm02 (SimGrid: latency phase, shares weighted "
       "by 1 / route latency) or maxmin (plain max-min)", _flow_model),
    _p("flow_window", "bytes", 0.0, "flow backend: bound each flow at window / (2 x route latency) (0: none)",
       _float, None, 0.0, 1e15),
    _p("pint_log_base", "ratio", 1.05, "HPCC-PINT log base", _float, "PINT_LOG_BASE", 1.0, 10.0),
    _p("pint_prob", "prob", 1.0, "HPCC-PINT sampling probability", _float, "PINT_PROB", 0.0, 1.0),
)

_BY_NAME = {p.name: p for p in PARAMS}
_BY_KEY = {p.ref_key: p for p in PARAMS if p.ref_key}

# Keys of the reference config that name files or tracing; accepted and kept.
FILE_KEYS = ("TOPOLOGY_FILE", "FLOW_FILE", "TRACE_FILE", "TRACE_OUTPUT_FILE", "FCT_OUTPUT_FILE",
             "PFC_OUTPUT_FILE", "QLEN_MON_FILE")
IGNORED_KEYS = ("QLEN_MON_START", "QLEN_MON_END", "ENABLE_TRACE")


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


class Config:
    """Parameter values over the registry's defaults.

    ``Config(cc="dcqcn", buffer_size=32)``; unknown names raise ConfigError.
    ``files`` holds the reference file keys (TOPOLOGY_FILE, ...) when read from
    a config file, with paths resolved against the file's folder."""

    def __init__(self, **values):
        self._v = {p.name: p.default for p in PARAMS}
        self.files = {}
        self.source = None
        for k, v in values.items():
            self.set(k, v)

    def set(self, name, value, file=None, line=None):
        p = _BY_NAME.get(name)
        if p is None:
            raise ConfigError("unknown parameter %r" % name, file, line, value)
        if value is None:
            self._v[name] = None
            return
        try:
            v = p.parse(value)
        except (ValueError, TypeError) as e:
            raise ConfigError("bad value for %s: %s" % (name, e), file, line, value)
        _check_range(p, v, file, line)
        if name.endswith("_map") and v is not None:
            parse_rate_map(v, name, file, line)
        self._v[name] = v

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

    def copy(self, **overrides):
        c = Config()
        c._v = dict(self._v)
        c.files = dict(self.files)
        c.source = self.source
        for k, v in overrides.items():
            c.set(k, v)
        return c

    def rate_map(self, name):
        v = self._v[name]
        return None if v is None else parse_rate_map(v, name)

    @classmethod
    def preset(cls, name, nic_gbps=100, **overrides):
        """The reference run script's parameters for ``name`` (dcqcn, dcqcn_paper,
        dcqcn_vwin, dcqcn_paper_vwin, hpcc, timely, timely_vwin, dctcp) at a NIC
        rate of ``nic_gbps``, then ``overrides``."""
        from .cc import preset
        values = preset(name, nic_gbps)
        values.update(overrides)
        return cls(**values)

    @classmethod
    def from_file(cls, path):
        """Read a reference ``config.txt`` (KEY value per line).  Unknown keys and
        bad values raise ConfigError naming the file and line."""
        cfg = cls()
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


def docs_markdown():
    """The configuration reference, generated from the registry."""
    lines = ["| name | unit | default | config.txt key | meaning |", "|---|---|---|---|---|"]
    for p in PARAMS:
        lines.append("| `%s` | %s | %s | %s | %s |" % (p.name, p.unit, p.default, p.ref_key or "",
                                                        p.doc.replace("|", "/")))
    return "\n".join(lines) + "\n"


def cli_help():
    return "\n".join("  %-24s %s (default %s %s)" % (p.name, p.doc, p.default, p.unit) for p in PARAMS)
