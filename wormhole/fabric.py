"""A validated topology compiled to arrays: ports, shortest-path ECMP tables,
switch MMU settings (headroom, PFC shift, ECN thresholds) and the per-host-pair
base RTT, bandwidth and BDP that the reference derives from its BFS."""
import numpy as np

from ._core.routing import shortest_path_routes
from .config import Config
from .errors import ConfigError
from .topology import node_ip
from .units import NS


class Fabric:
    """Compiled form of (topology, config).  Arrays only; built once."""

    def __init__(self, topo, config=None):
        topo.validate()
        self.topo = topo
        self.config = config if config is not None else Config()
        self._ports()
        self._routes()
        self._mmu()

    # -- ports -------------------------------------------------------------
    def _ports(self):
        t = self.topo
        n = t.n_nodes
        nl = len(t.links)
        self.port_node = np.empty(2 * nl, np.int32)
        self.port_peer = np.empty(2 * nl, np.int32)
        self.port_ifindex = np.empty(2 * nl, np.int32)
        self.port_link = np.empty(2 * nl, np.int32)
        self.port_rate = np.empty(2 * nl, np.int64)
        self.port_delay = np.empty(2 * nl, np.int64)
        self.port_error = np.empty(2 * nl, np.float64)
        next_if = [1] * n
        self.node_ports = [[] for _ in range(n)]
        # neighbour -> port, per node (the reference keeps one interface per neighbour)
        self.nbr_port = [dict() for _ in range(n)]
        default_err = float(self.config.error_rate_per_link)
        for k, l in enumerate(t.links):
            for side, (u, v) in enumerate(((l.a, l.b), (l.b, l.a))):
                p = 2 * k + side
                self.port_node[p] = u
                self.port_peer[p] = 2 * k + (1 - side)
                self.port_ifindex[p] = next_if[u]
                next_if[u] += 1
                self.port_link[p] = k
                self.port_rate[p] = l.rate_bps
                self.port_delay[p] = l.delay_ps
                self.port_error[p] = l.error_rate if l.error_rate > 0 else default_err
                self.node_ports[u].append(p)
                self.nbr_port[u][v] = p
        self.is_switch = np.array(t.is_switch, dtype=np.uint8)
        self.hosts = np.array(t.hosts, dtype=np.int32)
        self.switches = np.array(t.switches, dtype=np.int32)
        self.host_idx = np.full(n, -1, np.int32)
        self.host_idx[self.hosts] = np.arange(len(self.hosts), dtype=np.int32)
        self.sw_idx = np.full(n, -1, np.int32)
        self.sw_idx[self.switches] = np.arange(len(self.switches), dtype=np.int32)
        self.node_ip = np.array([node_ip(i) for i in range(n)], dtype=np.uint32)
        self.seed = np.arange(n, dtype=np.uint32)
        self.host_nic = np.array([self.node_ports[h][0] for h in self.hosts], dtype=np.int32)
        # NIC rate: the reference takes the first host's first device
        self.nic_rate = int(self.port_rate[self.host_nic[0]])

    # -- routing -----------------------------------------------------------
    def adjacency(self):
        """The node graph in CSR form, each node's neighbours in the order the
        routing BFS visits them: (start, neighbour, port towards it, its port
        back).  'reference' order: hosts by increasing id, then switches by
        decreasing id (the memory order of the reference's node objects);
        'id' order: increasing id."""
        n = self.topo.n_nodes
        u = self.port_node
        v = self.port_node[self.port_peer]
        if self.config.route_order == "reference":
            key = np.where(self.is_switch[v] != 0, 2 * n - v.astype(np.int64), v)
        else:
            key = v.astype(np.int64)
        order = np.lexsort((key, u))
        start = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(u, minlength=n), out=start[1:])
        ports = order.astype(np.int32)
        return start, v[order].astype(np.int32), ports, self.port_peer[ports].astype(np.int32)

    def _routes(self):
        """BFS from every host, as the reference's CalculateRoute (see
        ``wormhole._core.routing``): only switches expand, next hops in
        discovery order.  Also the per-pair delay, tx delay (one MTU per hop)
        and bottleneck."""
        start, nbr, port, back = self.adjacency()
        r = shortest_path_routes(start, nbr, port, back, self.is_switch, self.hosts,
                                 np.ascontiguousarray(self.port_rate), np.ascontiguousarray(self.port_delay),
                                 int(self.config.mtu), NS)
        self.rt_start, self.rt_cnt, self.rt_ports = r["rt_start"], r["rt_cnt"], r["rt_ports"]
        self.pair_delay_ns = r["pair_delay_ns"]     # [src_h, dst_h]
        self.pair_txdelay_ns = r["pair_txdelay_ns"]
        self.pair_bw = r["pair_bw"]
        self.pair_hops = r["pair_hops"]
        self.pair_rtt_ns = self.pair_delay_ns * 2 + self.pair_txdelay_ns
        self.pair_bdp = self.pair_rtt_ns * self.pair_bw // 1000000000 // 8
        reach = self.pair_hops >= 0
        self.max_rtt_ns = int(self.pair_rtt_ns[reach].max()) if reach.any() else 0
        self.max_bdp = int(self.pair_bdp[reach].max()) if reach.any() else 0
        self._domains(reach)

    def _domains(self, reach):
        """Window domains: a topology whose links name a separate transport (``Topology.link_domain``, e.g.
        the NVSwitch of each server) gives each host pair the domain of its route's first link; under
        global_t a flow gets the largest BDP and base RTT of its own domain (``global_window``), so NVLink's
        BDP does not become the NICs' window.  ``max_bdp`` / ``max_rtt_ns`` are the fabric's (domain 0)."""
        self.domain_names = ["fabric"]
        self.pair_domain = None
        self.domain_bdp = [self.max_bdp]
        self.domain_rtt_ns = [self.max_rtt_ns]
        named = self.topo.link_domain
        if not named:
            return
        self.domain_names += sorted(set(named.values()))
        code = {n: i for i, n in enumerate(self.domain_names)}
        link_dom = np.zeros(len(self.topo.links), np.int32)
        for k, name in named.items():
            link_dom[k] = code[name]
        h = len(self.hosts)
        rows = self.hosts.astype(np.int64)[:, None] * h + np.arange(h, dtype=np.int64)[None, :]
        first = np.asarray(self.rt_ports, np.int64)[np.minimum(np.asarray(self.rt_start, np.int64)[rows],
                                                              max(0, len(self.rt_ports) - 1))]
        self.pair_domain = np.where(reach, link_dom[self.port_link[first]], 0).astype(np.int32)
        self.domain_bdp, self.domain_rtt_ns = [], []
        for d in range(len(self.domain_names)):
            m = reach & (self.pair_domain == d)
            self.domain_bdp.append(int(self.pair_bdp[m].max()) if m.any() else self.max_bdp)
            self.domain_rtt_ns.append(int(self.pair_rtt_ns[m].max()) if m.any() else self.max_rtt_ns)
        self.max_bdp, self.max_rtt_ns = self.domain_bdp[0], self.domain_rtt_ns[0]

    def global_window(self, hs, hd):
        """(window bytes, base RTT ns) of a flow between host indices ``hs`` and ``hd`` under global_t: the
        maxima over the pairs of its domain (the whole fabric when there is one domain)."""
        if self.pair_domain is None:
            return self.max_bdp, self.max_rtt_ns
        d = int(self.pair_domain[hs, hd])
        return self.domain_bdp[d], self.domain_rtt_ns[d]

    # -- switch buffers ----------------------------------------------------
    def _mmu(self):
        c = self.config
        np_ = len(self.port_node)
        self.port_headroom = np.zeros(np_, np.int64)
        self.port_pfc_shift = np.zeros(np_, np.int32)
        self.port_kmin = np.zeros(np_, np.int64)
        self.port_kmax = np.zeros(np_, np.int64)
        self.port_pmax = np.zeros(np_, np.float64)
        kmin_map, kmax_map, pmax_map = c.rate_map("kmin_map"), c.rate_map("kmax_map"), c.rate_map("pmax_map")
        nsw = len(self.switches)
        self.sw_buffer = np.full(nsw, int(c.buffer_size * 1024 * 1024), np.int64)
        self.sw_total_hdrm = np.zeros(nsw, np.int64)
        self.sw_total_rsrv = np.zeros(nsw, np.int64)
        for s_i, sw in enumerate(self.switches):
            for p in self.node_ports[sw]:
                rate = int(self.port_rate[p])
                gb = rate / 1e9
                self.port_kmin[p] = 1000 * int(self._lookup(kmin_map, rate, "KMIN_MAP", 100 * gb / 25))
                self.port_kmax[p] = 1000 * int(self._lookup(kmax_map, rate, "KMAX_MAP", 400 * gb / 25))
                self.port_pmax[p] = self._lookup(pmax_map, rate, "PMAX_MAP", 0.2)
                delay_ns = int(self.port_delay[p]) // NS
                self.port_headroom[p] = max(rate * delay_ns // 8 // 1000000000 * 3, int(c.pfc_headroom_floor))
                shift = 3
                r = rate
                while r > self.nic_rate and shift > 0:
                    shift -= 1
                    r //= 2
                self.port_pfc_shift[p] = shift
                self.sw_total_hdrm[s_i] += self.port_headroom[p]
                self.sw_total_rsrv[s_i] += int(c.reserve)

    def _lookup(self, m, rate, key, default):
        if m is None:
            return default
        if rate not in m:
            raise ConfigError("%s has no entry for link rate %d bps" % (key, rate),
                              self.config.source, value=rate)
        return m[rate]

    def kernel_arrays(self):
        """The arrays ``Kernel.build`` copies in, checked (``kernel_inputs.FabricArrays``)."""
        from .kernel_inputs import FabricArrays
        return FabricArrays(
            is_switch=self.is_switch, host_idx=self.host_idx, sw_idx=self.sw_idx, node_ip=self.node_ip,
            seed=self.seed, host_nic=self.host_nic, port_node=self.port_node, port_peer=self.port_peer,
            port_ifindex=self.port_ifindex, port_rate=self.port_rate, port_delay=self.port_delay,
            port_error=self.port_error, port_headroom=self.port_headroom, port_pfc_shift=self.port_pfc_shift,
            port_kmin=self.port_kmin, port_kmax=self.port_kmax, port_pmax=self.port_pmax,
            sw_buffer=self.sw_buffer, sw_total_hdrm=self.sw_total_hdrm, sw_total_rsrv=self.sw_total_rsrv,
            rt_start=self.rt_start, rt_cnt=self.rt_cnt, rt_ports=self.rt_ports)
