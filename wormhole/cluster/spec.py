"""Cluster specification (YAML): servers, GPUs per server, NIC and intra-server
bandwidth, scheduling policy.

    name: testbed-16gpu
    servers:                      # groups of identical servers; several groups = heterogeneous
      - {count: 2, gpus: 8, nic: 5Gbps, intra: 16384MB/s}
    policy: bin-packing           # or load-balancing, or module:callable
    latency: 1us                  # per fabric link (contention models flow / packet)
    transport: dctcp              # the packet model's congestion control (dctcp, hpcc, dcqcn, timely, tcp, cubic)
    efficiency: 0.741             # goodput of one transfer / line rate (optional; see below)
    buffer: 1.6MiB                # shared buffer of each fabric switch (optional; the transport preset's)
    host:                         # the servers' host I/O shared by co-located jobs (optional; wormhole.cluster.host)
      {gpus_per_switch: 2, uplink: 15.75GB/s, gpus_per_socket: 4, memory: 128GB/s, p2p: false}
    ring: server                  # the order of a job's NCCL ring (optional): server (default) or rank

Rates accept ``Gbps``/``Mbps``/``bps`` or ``GB/s``/``MB/s`` (decimal).  The
spec also builds the fabric the ``flow`` and ``packet`` contention models
simulate on: each GPU is a host on its server's internal switch (``intra``),
each server switch joins one core switch through its NIC (``nic``, the line
rate).  ``transport`` names the congestion control the packet model runs
(default ``hpcc``); ``tcp`` and ``cubic`` are loss-based TCP windows on
Ethernet switches without PFC, where a full buffer drops (their presets in
``wormhole.cc``).  ``buffer`` sizes each fabric switch's shared buffer
(``KB``/``MB`` decimal, ``KiB``/``MiB`` binary; default the transport preset's,
1.6 MiB at 5 Gbps).  ``efficiency`` is a property of the transport on this link:
the goodput one transfer achieves over the line rate (MoSim's testbed: NCCL's
socket transport moves 463 MB/s over its 5 Gbps link, 0.741).  The ``mosim``
model's NIC capacity is the goodput (line rate x efficiency); the fabric models
meet it by sending more wire bytes per payload byte, the factor measured on one
transfer.  Without ``efficiency`` the NIC's goodput is the line rate (mosim)
and whatever the transport achieves (fabric).  ``host`` describes each
server's PCIe switches and CPU sockets (GPU slots per switch and per socket, a
switch uplink's and a socket's memory bandwidth, and ``p2p``: whether workers on
one server reach each other's GPUs directly); with it every contention
model adds the compute contention of jobs sharing those paths
(:mod:`wormhole.cluster.host`); without it there is none.  ``ring`` is how the
cluster's software orders a job's NCCL ring, which the fabric models replay:
``server`` (default), the workers of a server next to each other, as NCCL
orders the GPUs it knows to share a host (one process or pod per server, or
pods that share a host identity); ``rank``, the ring in rank order across the
servers, as NCCL orders ranks it sees as separate hosts (one-GPU pods, each
its own hostname: NCCL's host hash differs, so it links them rank by rank
through its socket transport), so a job whose pods were placed alternately
crosses the NIC on every ring link.
"""
import math
import os
import re
from dataclasses import dataclass

from ..cc import PRESETS, REGISTRY as CC_REGISTRY
from ..errors import WormholeError, read_yaml
from ..topology import Topology
from .. import units
from ..units import NS, US

PRESET_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "presets")

_RATE = re.compile(r"^\s*([0-9.eE+-]+)\s*([GMK]?)(bps|B/s)\s*$")
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


class SpecError(WormholeError):
    """Bad cluster specification."""


def parse_bandwidth(text, where=(None, None), what="bandwidth"):
    """'5Gbps' / '463MB/s' / a number of MB/s -> bytes per second."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        v = float(text) * 1e6
    else:
        m = _RATE.match(str(text))
        if not m:
            raise SpecError("%s must look like 5Gbps or 463MB/s" % what, where[0], where[1], text)
        try:
            v = float(m.group(1)) * _SCALE[m.group(2)]
        except ValueError:
            raise SpecError("%s is not a number" % what, where[0], where[1], text)
        if m.group(3) == "bps":
            v /= 8.0
    if not math.isfinite(v) or v <= 0:
        raise SpecError("%s must be positive" % what, where[0], where[1], text)
    return v


def parse_size(text, where=(None, None), what="buffer"):
    """'1.6MiB' / '9MB' / '512KB' -> bytes (an int, rounded; units.parse_size)."""
    try:
        v = units.parse_size(str(text), whole=False)
    except ValueError as e:
        raise SpecError("%s must look like 9MB, 1.6MiB or 512KB (%s)" % (what, e), where[0], where[1], text)
    if v < 1:
        raise SpecError("%s must be at least one byte" % what, where[0], where[1], text)
    return v


def parse_latency(text, where=(None, None)):
    m = re.match(r"^\s*([0-9.]+)\s*(ns|us)\s*$", str(text))
    if not m:
        raise SpecError("latency must look like 1us or 500ns", where[0], where[1], text)
    return int(round(float(m.group(1)) * (US if m.group(2) == "us" else NS)))


@dataclass(frozen=True)
class Server:
    gpus: int
    nic_Bps: float       # bytes/s of the server's NIC (each direction)
    intra_Bps: float     # bytes/s of each GPU's link inside the server


TRANSPORTS = tuple(n for n in CC_REGISTRY if n in PRESETS)   # the registry's algorithms with a preset (wormhole.cc)
# the order of a job's ring (``ring``): ``server``, server by server; ``rank``, the ranks' order (see the module)
RING_ORDERS = ("server", "rank")


class ClusterSpec:
    def __init__(self, servers, policy="bin-packing", latency_ps=US, name="cluster", source=None,
                 transport="hpcc", efficiency=None, buffer_bytes=None, host=None, ring="server"):
        if not servers:
            raise SpecError("a cluster needs at least one server", source)
        if transport not in TRANSPORTS:
            raise SpecError("transport must be one of %s" % ", ".join(TRANSPORTS), source, None, transport)
        if efficiency is not None and (isinstance(efficiency, bool) or not isinstance(efficiency, (int, float))
                                       or not 0 < efficiency <= 1):
            raise SpecError("efficiency must be a number in (0, 1]", source, None, efficiency)
        if buffer_bytes is not None and (isinstance(buffer_bytes, bool) or not isinstance(buffer_bytes, int)
                                         or buffer_bytes < 1):
            raise SpecError("buffer must be a positive number of bytes", source, None, buffer_bytes)
        if ring not in RING_ORDERS:
            raise SpecError("ring must be one of %s" % ", ".join(RING_ORDERS), source, None, ring)
        self.ring = ring                      # order of a job's ring: server or rank (RING_ORDERS)
        self.transport = transport
        self.host = host                      # HostSpec (wormhole.cluster.host) or None: no host contention
        self.buffer_bytes = buffer_bytes      # shared buffer per fabric switch, bytes (None: the preset's)
        self.efficiency = None if efficiency is None else float(efficiency)
        self.servers = list(servers)
        self.policy = policy
        self.latency_ps = latency_ps
        self.name = name
        self.source = source

    def goodput_Bps(self, server):
        """Payload bytes/s one transfer achieves on the server's NIC."""
        return self.servers[server].nic_Bps * (self.efficiency or 1.0)

    @property
    def n_gpus(self):
        return sum(s.gpus for s in self.servers)

    @classmethod
    def uniform(cls, n_servers, gpus, nic="5Gbps", intra="16384MB/s", **kw):
        """``n_servers`` identical servers (keywords: policy, latency_ps, name,
        transport, efficiency, buffer_bytes, host, ring)."""
        s = Server(gpus, parse_bandwidth(nic), parse_bandwidth(intra))
        return cls([s] * n_servers, **kw)

    @classmethod
    def load(cls, path):
        """A cluster spec YAML file, or the name of a shipped one (``testbed-16gpu``)."""
        shipped = os.path.join(PRESET_DIR, "cluster_%s.yaml" % str(path).replace("-", "_"))
        if not os.path.exists(path) and os.path.exists(shipped):
            path = shipped
        doc = read_yaml(path, SpecError, "cluster spec")
        if not isinstance(doc, dict):
            raise SpecError("a cluster spec is a mapping with 'servers'", path)
        unknown = sorted(map(str, set(doc) - {"name", "servers", "policy", "latency", "transport", "efficiency", "buffer",
                                                "host", "ring"}))
        if unknown:
            raise SpecError("unknown key(s) %s" % ", ".join(unknown), path, None, unknown)
        groups = doc.get("servers")
        if not isinstance(groups, list) or not groups:
            raise SpecError("'servers' must be a non-empty list of server groups", path, None, groups)
        servers = []
        for g in groups:
            where = (path, None)
            if not isinstance(g, dict):
                raise SpecError("a server group is a mapping (count, gpus, nic, intra)", path, None, g)
            bad = sorted(map(str, set(g) - {"count", "gpus", "nic", "intra"}))
            if bad:
                raise SpecError("unknown server key(s) %s" % ", ".join(bad), path, None, bad)
            count, gpus = g.get("count", 1), g.get("gpus")
            for what, v in (("count", count), ("gpus", gpus)):
                if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                    raise SpecError("server %s must be a positive integer" % what, path, None, v)
            s = Server(gpus, parse_bandwidth(g.get("nic", "5Gbps"), where, "nic"),
                       parse_bandwidth(g.get("intra", "16384MB/s"), where, "intra"))
            servers.extend([s] * count)
        lat = parse_latency(doc.get("latency", "1us"), (path, None))
        pol = doc.get("policy", "bin-packing")
        if not isinstance(pol, str):
            raise SpecError("policy must be a name", path, None, pol)
        buf = doc.get("buffer")
        host = None
        if doc.get("host") is not None:
            from .host import parse_host        # host imports this module
            host = parse_host(doc["host"], path)
        return cls(servers, pol, lat, str(doc.get("name", os.path.basename(path))), path,
                   doc.get("transport", "hpcc"), doc.get("efficiency"),
                   None if buf is None else parse_size(buf, (path, None)), host, doc.get("ring", "server"))

    def fabric(self, servers=None, nic_scale=1.0):
        """Topology of the given servers (all by default): returns (topology,
        {(server, gpu): host id}); ``nic_scale`` multiplies the NIC line rate
        (1: the spec's rate, what the contention models use)."""
        servers = range(len(self.servers)) if servers is None else servers
        t = Topology("cluster-" + self.name)
        hosts = {}
        for i in servers:
            for g in range(self.servers[i].gpus):
                hosts[(i, g)] = t.add_host()
        core = t.add_switch("core")
        for i in servers:
            s = self.servers[i]
            sw = t.add_switch("server%d" % i)
            for g in range(s.gpus):
                t.add_link(hosts[(i, g)], sw, int(round(s.intra_Bps * 8)), self.latency_ps)
            t.add_link(sw, core, int(round(s.nic_Bps * 8 * nic_scale)), self.latency_ps)
        return t, hosts
