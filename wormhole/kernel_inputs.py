"""Typed inputs of ``Kernel.build``, checked once when they are made.

``Fabric.kernel_arrays()`` gives a ``FabricArrays``, ``backend_packet.
kernel_params`` a ``KernelParams`` (with ``Ns3Streams`` and ``AccelParams``
where they apply).  Each is a frozen dataclass: an unknown or missing field
name is a TypeError naming it when the object is made, a wrong type, range or
length a ValueError naming the class and the field; after that the kernel copies
the values without looking them up by name.  The fields of KernelParams marked
``struct`` are those of the kernel's ``Params`` (defs.pxd), copied as one
struct (a field of Params missing here fails the build naming it).  These are
not user input: Config and Topology validated that at the boundary; a failure
here is a fault of the package.
"""
from dataclasses import dataclass, field, fields
from typing import Optional

import numpy as np

_RANGE = {"uint8": (0, 255), "int32": (-2 ** 31, 2 ** 31 - 1), "uint32": (0, 2 ** 32 - 1),
          "int64": (-2 ** 63, 2 ** 63 - 1), "uint64": (0, 2 ** 64 - 1)}


def _c(ctype, struct=False):
    """A scalar field of C type ``ctype`` ('double' or a key of _RANGE); ``struct``: a Params field."""
    return field(metadata={"c": ctype, "struct": struct})


def _check_scalars(obj):
    """Every field declared with _c holds a number of its C type (stored as int or float)."""
    for f in fields(obj):
        c = f.metadata.get("c")
        if c is None:
            continue
        v = getattr(obj, f.name)
        where = "%s.%s" % (type(obj).__name__, f.name)
        if c == "double":
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError("%s must be a number, not %r" % (where, v))
            object.__setattr__(obj, f.name, float(v))
            continue
        if not isinstance(v, (int, np.integer)):
            raise TypeError("%s must be an integer, not %r" % (where, v))
        lo, hi = _RANGE[c]
        if not lo <= int(v) <= hi:
            raise ValueError("%s = %d is outside %s (%d..%d)" % (where, v, c, lo, hi))
        object.__setattr__(obj, f.name, int(v))


def _array(obj, name, dtype, n=None, per=None):
    """Field ``name`` as a contiguous one-dimensional array of ``dtype``, of length ``n`` if given."""
    v = getattr(obj, name)
    where = "%s.%s" % (type(obj).__name__, name)
    a = np.asarray(v)
    if a.ndim != 1:
        raise ValueError("%s must be one-dimensional (shape %s)" % (where, a.shape))
    t = np.dtype(dtype)
    if t.kind in "iu" and a.size:
        if a.dtype.kind not in "iub":
            raise ValueError("%s must hold integers (dtype %s)" % (where, a.dtype))
        info = np.iinfo(t)
        if int(a.min()) < info.min or int(a.max()) > info.max:
            raise ValueError("%s holds values outside %s" % (where, t))
    elif t.kind == "f" and a.size and a.dtype.kind not in "iuf":
        raise ValueError("%s must hold numbers (dtype %s)" % (where, a.dtype))
    a = np.ascontiguousarray(a, dtype=t)
    if n is not None and len(a) != n:
        raise ValueError("%s has %d entries, not %d (one per %s)" % (where, len(a), n, per))
    object.__setattr__(obj, name, a)
    return a


def _index(obj, name, n, what):
    """Every entry of array field ``name`` is an index of ``what`` (0..n-1)."""
    a = getattr(obj, name)
    if a.size and (int(a.min()) < 0 or int(a.max()) >= n):
        raise ValueError("%s.%s holds an entry outside the %d %s" % (type(obj).__name__, name, n, what))


@dataclass(frozen=True)
class FabricArrays:
    """The compiled fabric (wormhole.fabric.Fabric) as the kernel copies it in;
    every array is one-dimensional, indexed by node, host, port or switch."""
    is_switch: np.ndarray       # uint8 per node: 1 switch, 0 host
    host_idx: np.ndarray        # int32 per node: host index, -1 for switches
    sw_idx: np.ndarray          # int32 per node: switch index, -1 for hosts
    node_ip: np.ndarray         # uint32 per node: the reference's address
    seed: np.ndarray            # uint32 per node: ECMP hash seed
    host_nic: np.ndarray        # int32 per host: its first NIC port
    port_node: np.ndarray       # int32 per port: the node that owns it
    port_peer: np.ndarray       # int32 per port: the port at the other end of its link
    port_ifindex: np.ndarray    # int32 per port: device index on its node, from 1
    port_rate: np.ndarray       # int64 per port: line rate, bps
    port_delay: np.ndarray      # int64 per port: propagation delay to the peer, ps
    port_error: np.ndarray      # float64 per port: probability an arriving packet is corrupted
    port_headroom: np.ndarray   # int64 per port: PFC headroom per ingress queue, bytes
    port_pfc_shift: np.ndarray  # int32 per port: dynamic threshold = free shared space >> shift
    port_kmin: np.ndarray       # int64 per port: ECN, no mark at or below (bytes)
    port_kmax: np.ndarray       # int64 per port: ECN, always mark above (bytes)
    port_pmax: np.ndarray       # float64 per port: ECN mark probability at kmax
    sw_buffer: np.ndarray       # int64 per switch: shared buffer, bytes
    sw_total_hdrm: np.ndarray   # int64 per switch: sum of its ports' headroom
    sw_total_rsrv: np.ndarray   # int64 per switch: sum of its ports' reserve
    rt_start: np.ndarray        # int32 per (node, host), node-major: first next hop in rt_ports
    rt_cnt: np.ndarray          # int32 per (node, host): number of ECMP next hops
    rt_ports: np.ndarray        # int32: egress ports of all next hops

    def __post_init__(self):
        nn = len(_array(self, "is_switch", np.uint8))
        for name in ("host_idx", "sw_idx"):
            _array(self, name, np.int32, nn, "node")
        for name in ("node_ip", "seed"):
            _array(self, name, np.uint32, nn, "node")
        npt = len(_array(self, "port_node", np.int32))
        for name, dt in (("port_peer", np.int32), ("port_ifindex", np.int32), ("port_rate", np.int64),
                         ("port_delay", np.int64), ("port_error", np.float64), ("port_headroom", np.int64),
                         ("port_pfc_shift", np.int32), ("port_kmin", np.int64), ("port_kmax", np.int64),
                         ("port_pmax", np.float64)):
            _array(self, name, dt, npt, "port")
        nh = int(np.count_nonzero(self.is_switch == 0))
        _array(self, "host_nic", np.int32, nh, "host")
        nsw = nn - nh
        for name in ("sw_buffer", "sw_total_hdrm", "sw_total_rsrv"):
            _array(self, name, np.int64, nsw, "switch")
        for name in ("rt_start", "rt_cnt"):
            _array(self, name, np.int32, nn * nh, "(node, host) pair")
        _array(self, "rt_ports", np.int32)
        _index(self, "port_node", nn, "nodes")
        for name in ("port_peer", "host_nic", "rt_ports"):
            _index(self, name, npt, "ports")


@dataclass(frozen=True)
class Ns3Streams:
    """The reference's random-stream sequence (wormhole.ns3rng.stream_params)."""
    base: tuple     # 6 uint64: state of the next stream before the run jump
    j1: tuple       # 9 uint64: A1^(2^127) mod m1
    j2: tuple       # 9 uint64: A2^(2^127) mod m2
    r1: tuple       # 9 uint64: A1^(run * 2^76) mod m1
    r2: tuple       # 9 uint64: A2^(run * 2^76) mod m2

    def __post_init__(self):
        for f in fields(self):
            v = tuple(int(x) for x in getattr(self, f.name))
            n = 6 if f.name == "base" else 9
            if len(v) != n or not all(0 <= x < 2 ** 64 for x in v):
                raise ValueError("Ns3Streams.%s must be %d uint64 values" % (f.name, n))
            object.__setattr__(self, f.name, v)


@dataclass(frozen=True)
class AccelParams:
    """The accelerator's parameters (Accel in defs.pxd); present only when it is on."""
    l: int = _c("int32")                # samples per steady window
    theta: float = _c("double")         # steady when (max - min) / mean < theta
    min_skip: int = _c("int64")         # skip only if the next interrupt is at least this far, ps
    margin: int = _c("int64")           # bytes each flow still simulates before an interrupt
    check_every: int = _c("int32")      # re-check a steady flow's partition every this many samples
    gp_span: int = _c("int64")          # the quarter-goodput steady test once a window spans this long, ps
                                        # (-1: that test off)
    quarters_all: int = _c("uint8")     # that test for every flow (steady_goodput), else only for flows whose
                                        # data shares no port with another flow's (steady_goodput_alone)
    memo: int = _c("uint8")             # the memo database looks partitions up
    committed: int = _c("uint8")        # the steady window samples the CC's committed rate (steady_committed)
    onoff: int = _c("uint8")            # steady skips carry ring connections that idle and resume (steady_onoff)
    cycle: int = _c("uint8")            # such a connection may also join a skip by its own steady cycles
                                        # (steady_cycle; only with onoff: cycle members are on/off members)

    def __post_init__(self):
        _check_scalars(self)
        if self.l < 2 or self.check_every < 1:
            raise ValueError("AccelParams: l must be >= 2 and check_every >= 1 (l=%d, check_every=%d)"
                             % (self.l, self.check_every))


@dataclass(frozen=True)
class KernelParams:
    """The kernel's behaviour parameters: Params (defs.pxd) and what goes beside it."""
    mtu: int = _c("int64", True)            # payload bytes per packet
    hdr_bytes: int = _c("int32", True)      # data header bytes (48 + INT)
    ack_bytes: int = _c("int32", True)      # ACK/NACK bytes on the wire
    pfc_bytes: int = _c("int32", True)      # PFC frame bytes
    int_mode: int = _c("int32", True)       # IntMode of the congestion control
    ack_qidx: int = _c("int32", True)       # host: queue whose pause blocks ACKs (0 high prio, else 3)
    ack_high_prio: int = _c("uint8", True)  # switch: ACK/NACK go to strict-priority queue 0
    ecn: int = _c("uint8", True)            # switches mark ECN
    pfc: int = _c("uint8", True)            # PFC frames are honoured
    rate_bound: int = _c("uint8", True)     # pace data at the QP rate (else at line rate)
    back_to_zero: int = _c("uint8", True)   # go-back to the chunk boundary
    chunk: int = _c("int64", True)          # L2 chunk size, bytes
    ack_interval: int = _c("int64", True)   # ACK every this many bytes
    nack_interval: int = _c("int64", True)  # minimum gap between NACKs for the same hole, ps
    reserve: int = _c("int64", True)        # per ingress queue reserve, bytes
    resume_offset: int = _c("int64", True)  # PFC resume hysteresis, bytes
    quantum: int = _c("int64", True)        # tx-time quantum, ps (1000 = the reference's ns truncation)
    max_packets: int = _c("int64", True)    # live packet limit (0 = none)
    rto: int = _c("int64", True)            # retransmission timeout, ps (0 = none, as the reference)
    seed: int = _c("uint64")                # the simulation's random seed
    sample_interval: int = _c("int64")      # ps between rate / queue samples (0 = off)
    port_rng: int = _c("uint8")             # 1: ECN draws and link errors from one stream per port (ecn_rng='port')
    calendar: int = _c("uint8")             # 1: near events in the calendar before the heap (heap.pxd; with threads, each process's)
    cc: dict = field()                      # CcParams by name, as cc.kernel_params gives them (the CC registry's)
    ns3_rng: Optional[Ns3Streams] = None    # ECN draws (and PFC frames) consume the reference's streams
    accel: Optional[AccelParams] = None     # the accelerator, None when off

    def __post_init__(self):
        _check_scalars(self)
        if self.mtu <= 0 or self.quantum <= 0 or self.sample_interval < 0:
            raise ValueError("KernelParams: mtu and quantum must be positive, sample_interval >= 0")
        if not isinstance(self.cc, dict) or "name" not in self.cc:
            raise TypeError("KernelParams.cc must be the dict of cc.kernel_params (with a 'name')")
        for name, cls in (("ns3_rng", Ns3Streams), ("accel", AccelParams)):
            v = getattr(self, name)
            if v is not None and not isinstance(v, cls):
                raise TypeError("KernelParams.%s must be a %s or None, not %r" % (name, cls.__name__, v))

    def params_struct(self):
        """The kernel's Params struct as a dict of its fields."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get("struct")}
        out["ns3_rng"] = int(self.ns3_rng is not None)
        return out
