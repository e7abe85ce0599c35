"""Kernel.build's typed inputs (issue 17 item 4): made once from the fabric and
the configuration, every field named and checked when the object is made."""
import dataclasses
import os
import re

import numpy as np
import pytest

import wormhole as wh
from wormhole import kernel_inputs as ki
from wormhole._core.kernel import Kernel
from wormhole.backend_packet import kernel_params

PXD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "wormhole", "_core", "defs.pxd")


def struct_fields(name):
    """Field names of a ctypedef struct of defs.pxd (the kernel's documented contract)."""
    text = open(PXD).read()
    body = re.search(r"^ctypedef struct %s:\n((?:    .*\n|\s*\n)+)" % name, text, re.M).group(1)
    return [m.group(1) for m in re.finditer(r"^    [\w ]+?\**\s*(\w+)(?:\[\w+\])?\s*(?:#|$)", body, re.M)]


def arrays(topo=None):
    return wh.Fabric(topo or wh.star(3), wh.Config()).kernel_arrays()


def test_the_params_struct_has_exactly_the_kernels_fields():
    p = kernel_params(wh.Network(wh.star(3), ecn_rng="splitmix"))
    assert sorted(p.params_struct()) == sorted(struct_fields("Params"))
    assert p.params_struct()["ns3_rng"] == 0 and p.ns3_rng is None and p.accel is None


def test_a_wrong_field_name_fails_when_made():
    good = dataclasses.asdict(kernel_params(wh.Network(wh.star(3))))
    bad = dict(good, mtuu=good.pop("mtu"))
    with pytest.raises(TypeError, match="mtuu"):
        ki.KernelParams(**bad)
    fab = {f.name: getattr(arrays(), f.name) for f in dataclasses.fields(ki.FabricArrays)}
    fab["port_link"] = fab["port_node"]
    with pytest.raises(TypeError, match="port_link"):
        ki.FabricArrays(**fab)
    with pytest.raises(TypeError, match="margin"):
        ki.AccelParams(l=2000, theta=0.05, min_skip=0, check_every=1, memo=0)


@pytest.mark.parametrize("field,value,match", [
    ("hdr_bytes", 1 << 40, r"KernelParams.hdr_bytes = 1099511627776 is outside int32"),
    ("ecn", -1, r"KernelParams.ecn = -1 is outside uint8"),
    ("rto", 1.5, r"KernelParams.rto must be an integer"),
    ("seed", -3, r"KernelParams.seed = -3 is outside uint64"),
    ("mtu", 0, r"mtu and quantum must be positive"),
    ("cc", {"min_rate": 1}, r"KernelParams.cc must be the dict"),
    ("accel", {"l": 2000}, r"KernelParams.accel must be a AccelParams"),
])
def test_a_value_of_the_wrong_type_or_range_is_named(field, value, match):
    p = kernel_params(wh.Network(wh.star(3)))
    with pytest.raises((TypeError, ValueError), match=match):
        dataclasses.replace(p, **{field: value})


def test_fabric_arrays_are_checked_for_length_type_and_index_range():
    a = arrays()
    assert (len(a.is_switch), len(a.host_nic), len(a.sw_buffer), len(a.port_node)) == (4, 3, 1, 6)
    assert a.port_rate.dtype == np.int64 and a.port_pmax.dtype == np.float64 and a.rt_ports.flags.c_contiguous
    with pytest.raises(ValueError, match=r"FabricArrays.port_delay has 5 entries, not 6 \(one per port\)"):
        dataclasses.replace(a, port_delay=a.port_delay[:5])
    with pytest.raises(ValueError, match=r"FabricArrays.rt_cnt has \d+ entries, not 12 \(one per \(node, host\)"):
        dataclasses.replace(a, rt_cnt=a.rt_cnt[1:])
    with pytest.raises(ValueError, match=r"FabricArrays.port_peer holds an entry outside the 6 ports"):
        dataclasses.replace(a, port_peer=a.port_peer + 1)
    with pytest.raises(ValueError, match=r"FabricArrays.port_ifindex holds values outside int32"):
        dataclasses.replace(a, port_ifindex=a.port_ifindex.astype(np.int64) + (1 << 40))
    with pytest.raises(ValueError, match=r"FabricArrays.port_rate must hold integers"):
        dataclasses.replace(a, port_rate=a.port_rate.astype(float))
    with pytest.raises(ValueError, match=r"FabricArrays.host_nic has 2 entries, not 3 \(one per host\)"):
        dataclasses.replace(a, host_nic=a.host_nic[:2])


def test_a_kernel_is_built_once_from_typed_inputs():
    net = wh.Network(wh.star(3))
    k = Kernel()
    k.build(arrays(), kernel_params(net))
    assert (k.now, k.n_flows, k.pending_events) == (0, 0, 0)
    with pytest.raises(RuntimeError, match="already built"):
        k.build(arrays(), kernel_params(net))
    with pytest.raises(AttributeError):
        Kernel().build({"port_node": []}, kernel_params(net))     # the string-keyed dict is gone


def test_ns3_streams_and_accelerator_parameters_reach_the_inputs():
    net = wh.Network(wh.star(3), ecn_rng="ns3", accelerate=True, steady_window=100)
    p = kernel_params(net)
    assert isinstance(p.ns3_rng, ki.Ns3Streams) and len(p.ns3_rng.base) == 6 and len(p.ns3_rng.r2) == 9
    assert p.params_struct()["ns3_rng"] == 1
    assert p.accel.l == 100 and p.accel.margin == 16 * net.config.mtu
    with pytest.raises(ValueError, match=r"Ns3Streams.j1 must be 9 uint64 values"):
        dataclasses.replace(p.ns3_rng, j1=(1, 2))


def test_a_partitioned_kernel_is_cut_again_only_before_it_runs():
    """set_parallel a second time (the backend's cut by the flows' traffic, before the first
    run) keeps the tie key the flows were scheduled under and is refused once it has run."""
    topo = wh.star(3)
    net = wh.Network(topo)
    k = Kernel()
    k.build(arrays(topo), kernel_params(net))
    n = len(net.fabric.is_switch)
    k.set_parallel(np.zeros(n, dtype=np.int32), 1, True)
    h = topo.hosts
    k.add_flow(h[0], h[1], 5_000, 0, 10000, 100, 3, 0, 0, False, False)
    with pytest.raises(ValueError, match="tie key"):
        k.set_parallel(np.zeros(n, dtype=np.int32), 1, False)
    k.set_parallel(np.arange(n, dtype=np.int32) % 2, 1, True)        # a new cut, of two processes: allowed
    assert k.port_packets().sum() == 20                              # 5 data packets and 5 ACKs, two hops each
    assert k.parallel_stats["lps"] == 2
    k.run(10 ** 12)
    assert k.n_done == 1 and k.port_packets().sum() == 0
    with pytest.raises(RuntimeError, match="its cut stays"):
        k.set_parallel(np.zeros(n, dtype=np.int32), 1, True)
