"""One congestion-control registry: the configuration's names and CC_MODE codes,
the presets and the kernel's table of operations name the same algorithms."""
import pytest

import wormhole as wh
from wormhole import cc as ccmod
from wormhole import config
from wormhole._core import kernel


def test_the_kernel_table_and_the_registry_name_the_same_algorithms():
    assert list(kernel.CC_KINDS) == list(ccmod.REGISTRY)           # in kind order: kind = row of the table
    assert sorted(kernel.CC_KINDS.values()) == list(range(len(ccmod.REGISTRY)))
    assert config.CC_NAMES == tuple(ccmod.REGISTRY)
    for name, spec in ccmod.REGISTRY.items():
        assert spec.kind == kernel.CC_KINDS[name]
        assert (spec.int_mode, spec.int_bytes) == kernel.CC_WIRE[name]


def test_wire_facts_of_the_reference_algorithms():
    modes = kernel.INT_MODES
    assert ccmod.spec("hpcc").int_mode == modes["hops"] and ccmod.spec("hpcc").int_bytes == 42
    assert ccmod.spec("timely").int_mode == modes["ts"] and ccmod.spec("timely").int_bytes == 8
    for name in ("none", "dcqcn", "dctcp"):
        assert ccmod.spec(name).int_mode == modes["none"] and ccmod.spec(name).int_bytes == 0


def test_cc_mode_codes_come_from_the_registry():
    assert config.CC_MODE_CODES == {0: "none", 1: "dcqcn", 3: "hpcc", 7: "timely", 8: "dctcp"}
    for code, name in config.CC_MODE_CODES.items():
        assert wh.Config.generic(cc=str(code)).cc == name
    with pytest.raises(wh.ConfigError, match="unsupported CC_MODE.*1 dcqcn, 3 hpcc, 7 timely, 8 dctcp"):
        wh.Config(cc="10")


def test_every_algorithm_has_a_preset_and_runs():
    for name in ccmod.REGISTRY:
        if name == "none":
            continue
        assert name in ccmod.PRESETS
        net = wh.Network(wh.star(3), cc=name)
        net.send(0, 2, 200_000)
        net.send(1, 2, 200_000)
        net.run()
        assert net.stats["flows_completed"] == 2

