"""Topologies: validated node and link lists, from the reference
``topology.txt`` format, from networkx graphs or from builders, compiled to
the kernel's arrays (ports, routing tables, MMU settings) by ``Fabric``.

Routing follows the reference: a BFS from every host over the node graph in
node-id order (hosts never forward); a node's next hops towards a host are
all neighbours one hop closer, in discovery order; a switch chooses among them
with MurmurHash3 of (sip, dip, sport | dport << 16) seeded with its node id.
"""
from dataclasses import dataclass

import numpy as np

from .errors import TopologyError, read_text
from .units import NS, parse_delay_ns, parse_rate


def node_ip(i):
    """Reference addressing: node i has IP 11.0.x.1 (0x0b000001 + ...)."""
    return 0x0B000001 + (i // 256) * 0x10000 + (i % 256) * 0x100


def ip_to_node(ip):
    return (ip >> 8) & 0xFFFF


@dataclass(frozen=True)
class Link:
    a: int
    b: int
    rate_bps: int
    delay_ps: int
    error_rate: float = 0.0


class Topology:
    """Nodes 0..n-1, each a host or a switch, and undirected links with a rate
    (bps), a propagation delay (ps) and an error rate.  Built incrementally
    (``add_host``, ``add_switch``, ``add_link``) with validation at each step."""

    def __init__(self, name="topology"):
        self.name = name
        self.is_switch = []
        self.names = []
        self.links = []
        self._pairs = set()
        self._by_name = {}
        self.gpus_per_server = None     # set by GPU-fabric builders; workloads may assume 8
        self.link_domain = {}           # link index -> name of a separate transport domain ("nvlink"); absent: the fabric
        self.nvlink = None              # the NVSwitch domain (wormhole.nvswitch.NvlinkDomain) when servers have one

    # -- construction -------------------------------------------------------
    def _add(self, switch, name):
        i = len(self.is_switch)
        name = str(i) if name is None else str(name)
        if name in self._by_name:
            raise TopologyError("duplicate node name", value=name)
        self.is_switch.append(bool(switch))
        self.names.append(name)
        self._by_name[name] = i
        return i

    def add_host(self, name=None):
        return self._add(False, name)

    def add_switch(self, name=None):
        return self._add(True, name)

    def add_link(self, a, b, rate_bps, delay_ps, error_rate=0.0, file=None, line=None):
        n = len(self.is_switch)
        for x in (a, b):
            if not isinstance(x, (int, np.integer)) or x < 0 or x >= n:
                raise TopologyError("link to unknown node", file, line, x)
        if a == b:
            raise TopologyError("link from a node to itself", file, line, a)
        key = (min(a, b), max(a, b))
        if key in self._pairs:
            raise TopologyError("duplicate link %d-%d" % key, file, line, key)
        if not isinstance(rate_bps, (int, np.integer)) or rate_bps <= 0:
            raise TopologyError("link rate must be positive", file, line, rate_bps)
        if not isinstance(delay_ps, (int, np.integer)) or delay_ps < 0:
            raise TopologyError("link delay must be a non-negative integer of ps", file, line, delay_ps)
        if not (0.0 <= error_rate <= 1.0):
            raise TopologyError("error rate must be in [0, 1]", file, line, error_rate)
        self._pairs.add(key)
        self.links.append(Link(int(a), int(b), int(rate_bps), int(delay_ps), float(error_rate)))
        return len(self.links) - 1

    # -- queries ------------------------------------------------------------
    @property
    def n_nodes(self):
        return len(self.is_switch)

    @property
    def hosts(self):
        return [i for i, s in enumerate(self.is_switch) if not s]

    @property
    def switches(self):
        return [i for i, s in enumerate(self.is_switch) if s]

    def __repr__(self):
        def rate(r):
            return ("%gGbps" % (r / 1e9)) if r >= 1e9 else ("%gMbps" % (r / 1e6))
        rates = sorted({l.rate_bps for l in self.links})
        delays = sorted({l.delay_ps for l in self.links})
        text = "<Topology %r: %d hosts, %d switches, %d links" % (self.name, len(self.hosts), len(self.switches),
                                                                  len(self.links))
        if rates:
            text += ", %s" % "/".join(rate(r) for r in rates[:4]) + ("/..." if len(rates) > 4 else "")
            text += ", %s" % "/".join("%gus" % (d / 1e6) for d in delays[:4]) + ("/..." if len(delays) > 4 else "")
        return text + ">"

    def node(self, ref):
        """Node id from an id or a name; raises TopologyError if unknown."""
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool):
            if 0 <= ref < self.n_nodes:
                return int(ref)
        elif str(ref) in self._by_name:
            return self._by_name[str(ref)]
        raise TopologyError("unknown node", value=ref)

    def nic_rate(self):
        """Rate of the first host's first link (the reference's NIC rate)."""
        h = self.hosts[0]
        for l in self.links:
            if h in (l.a, l.b):
                return l.rate_bps
        raise TopologyError("host has no link (dangling)", self.name, value=h)

    def to_networkx(self):
        import networkx as nx      # only here: importing it costs a tenth of a second
        g = nx.Graph()
        for i, s in enumerate(self.is_switch):
            g.add_node(i, kind="switch" if s else "host", name=self.names[i])
        for k, l in enumerate(self.links):
            g.add_edge(l.a, l.b, rate=l.rate_bps, delay=l.delay_ps, error_rate=l.error_rate, index=k)
        return g

    @classmethod
    def from_networkx(cls, g, name="graph"):
        """Nodes need ``kind`` ('host' or 'switch'); edges need ``rate`` (bps or
        a string like '100Gbps') and ``delay`` (ps, or a string like '1us');
        ``error_rate`` is optional.  Nodes are numbered in the graph's order."""
        t = cls(name)
        index = {}
        for n, data in g.nodes(data=True):
            kind = data.get("kind")
            if kind not in ("host", "switch"):
                raise TopologyError("node kind must be 'host' or 'switch'", value=(n, kind))
            index[n] = t._add(kind == "switch", n)
        for a, b, data in g.edges(data=True):
            try:
                rate = parse_rate(data["rate"])
                d = data["delay"]
                delay = int(d) if isinstance(d, (int, np.integer)) else parse_delay_ns(d) * NS
            except KeyError as e:
                raise TopologyError("edge without %s" % e, value=(a, b))
            except ValueError as e:
                raise TopologyError(str(e), value=(a, b))
            t.add_link(index[a], index[b], rate, delay, float(data.get("error_rate", 0.0)))
        return t

    def validate(self):
        """Whole-topology checks: at least two hosts, every host linked."""
        if len(self.hosts) < 1:
            raise TopologyError("topology has no host", self.name)
        deg = [0] * self.n_nodes
        for l in self.links:
            deg[l.a] += 1
            deg[l.b] += 1
        for h in self.hosts:
            if deg[h] == 0:
                raise TopologyError("host has no link (dangling)", self.name, value=h)
        return self


def read_topology(path):
    """Read the reference format: ``N_nodes N_switches N_links``, the switch
    ids, then ``a b rate delay error_rate`` per link."""
    text = read_text(path, TopologyError, "topology")
    lines = [(no, ln.split()) for no, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if not lines:
        raise TopologyError("empty topology file", path, 1)
    no, head = lines[0]
    if len(head) != 3:
        raise TopologyError("first line must be 'N_nodes N_switches N_links'", path, no, " ".join(head))
    try:
        n_nodes, n_sw, n_links = (int(x) for x in head)
    except ValueError:
        raise TopologyError("first line must hold three integers", path, no, " ".join(head))
    if n_nodes <= 0 or n_sw < 0 or n_sw > n_nodes or n_links < 0 or n_nodes > 1 << 20:
        raise TopologyError("impossible node, switch or link count", path, no, " ".join(head))
    sw_ids = []
    k = 1
    if n_sw > 0:
        while len(sw_ids) < n_sw:
            if k >= len(lines):
                raise TopologyError("file ends before the %d switch ids" % n_sw, path, no + 1)
            no, parts = lines[k]
            k += 1
            for x in parts:
                try:
                    v = int(x)
                except ValueError:
                    raise TopologyError("switch id is not an integer", path, no, x)
                if v < 0 or v >= n_nodes:
                    raise TopologyError("switch id is not a node", path, no, v)
                if v in sw_ids:
                    raise TopologyError("switch id listed twice", path, no, v)
                sw_ids.append(v)
            if len(sw_ids) > n_sw:
                raise TopologyError("more switch ids than announced", path, no, " ".join(parts))
    sws = set(sw_ids)
    body = lines[k:]
    if len(body) < n_links:
        last = body[-1][0] + 1 if body else (lines[-1][0] + 1)
        raise TopologyError("file ends after %d of %d links" % (len(body), n_links), path, last)
    if len(body) > n_links:
        no, parts = body[n_links]
        raise TopologyError("more links than the %d announced" % n_links, path, no, " ".join(parts))
    t = Topology(str(path))
    for i in range(n_nodes):
        t._add(i in sws, i)
    for no, parts in body:
        if len(parts) != 5:
            raise TopologyError("link line must be 'a b rate delay error_rate'", path, no, " ".join(parts))
        try:
            a, b = int(parts[0]), int(parts[1])
        except ValueError:
            raise TopologyError("link endpoint is not an integer", path, no, " ".join(parts[:2]))
        try:
            rate = parse_rate(parts[2])
        except ValueError:
            raise TopologyError("bad link rate", path, no, parts[2])
        try:
            delay_ns = parse_delay_ns(parts[3])
        except ValueError:
            raise TopologyError("bad link delay", path, no, parts[3])
        try:
            err = float(parts[4])
        except ValueError:
            raise TopologyError("bad error rate", path, no, parts[4])
        if err != err:
            raise TopologyError("bad error rate", path, no, parts[4])
        t.add_link(a, b, rate, delay_ns * NS, err, path, no)
    return t.validate()


def write_topology(topo, path):
    """Write the reference format (rates in bps, delays in ns)."""
    with open(path, "w") as fh:
        fh.write("%d %d %d\n" % (topo.n_nodes, len(topo.switches), len(topo.links)))
        fh.write(" ".join(str(s) for s in topo.switches) + "\n")
        for l in topo.links:
            fh.write("%d %d %dbps %dns %g\n" % (l.a, l.b, l.rate_bps, l.delay_ps // NS, l.error_rate))
