"""One meaning per name: ``Config(cc=X)`` in the API, ``--cc X`` in
``python -m wormhole run`` and ``Config.preset(X, nic)`` as the bench builds it
all start from the reference run script's preset for X at the fabric's NIC
rate; a config.txt and ``Config.generic`` keep the registry defaults."""
import pytest

import wormhole as wh
from wormhole import cli
from wormhole.cc import REGISTRY, preset as preset_values
from wormhole.config import PARAMS, docs_markdown, preset_differences
from wormhole.flows import read_flows
from wormhole.topology import read_topology
from wormhole.units import gbps

CCS = tuple(REGISTRY)


@pytest.fixture(scope="module")
def incast_files(tmp_path_factory):
    """A 4:1 incast on a 25 Gb/s star, in the reference formats (a NIC rate other
    than the presets' nominal 100 Gb/s, so that the scaling is checked too)."""
    d = tmp_path_factory.mktemp("incast25")
    n = 5
    links = "".join("%d %d 25Gbps 0.001ms 0\n" % (h, n) for h in range(n))
    (d / "topology.txt").write_text("%d 1 %d\n%d\n%s" % (n + 1, n, n, links))
    flows = "".join("%d %d 3 100 300000 0.000000000\n" % (h, n - 1) for h in range(n - 1))
    (d / "flow.txt").write_text("%d\n%s" % (n - 1, flows))
    return str(d / "topology.txt"), str(d / "flow.txt")


def api_run(topo_path, flows_path, cfg):
    topo = read_topology(topo_path)
    net = wh.Network(topo, cfg)
    for f in read_flows(flows_path, topo):
        net.send(f.src, f.dst, f.size, at=f.start_ps, pg=f.pg, dport=f.dport)
    net.run()
    return net


@pytest.mark.parametrize("cc", CCS)
def test_config_cc_and_cli_cc_give_identical_results(incast_files, tmp_path, cc, capsys):
    topo, flows = incast_files
    out = tmp_path / "out"
    assert cli.main(["run", "--topology", topo, "--flows", flows, "--cc", cc, "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    ours = api_run(topo, flows, wh.Config(cc=cc))
    assert (out / "fct.txt").read_text() == "".join(ours.fct_lines())
    assert len(ours.fct_lines()) == 4
    # the bench's way (Config.preset at the topology's NIC rate) and Network(..., cc=X) mean the same
    if cc != "none":
        bench = api_run(topo, flows, wh.Config.preset(cc, 25))
        assert bench.fct_lines() == ours.fct_lines()
        assert bench.config.key_values() == ours.config.key_values()
    kw = wh.Network(read_topology(topo), cc=cc)
    assert kw.config.key_values() == ours.config.key_values()


def test_the_preset_scales_to_the_fabric_nic_rate():
    at25 = wh.Network(wh.star(2, rate=gbps(25)), cc="hpcc").config
    at100 = wh.Network(wh.star(2), cc="hpcc").config
    assert (at25.rate_ai, at25.int_multi, at25.buffer_size) == (10_000_000, 1, 8.0)
    assert (at100.rate_ai, at100.int_multi, at100.buffer_size) == (40_000_000, 4, 32.0)
    assert at25.nic_gbps == 25 and at100.nic_gbps == 100
    # an explicit value is kept; a fixed preset rate is kept
    assert wh.Network(wh.star(2, rate=gbps(25)), cc="hpcc", rate_ai="7Mb/s").config.rate_ai == 7_000_000
    pinned = wh.Network(wh.star(2, rate=gbps(25)), wh.Config.preset("hpcc", 100)).config
    assert pinned.rate_ai == 40_000_000 and pinned.nic_gbps == 100


def test_the_preset_ecn_maps_cover_every_link_rate():
    """A 40 Gb/s uplink is in neither of the run script's two map entries (bw, 4 bw)."""
    t = wh.leaf_spine(2, 2, 1, rate=gbps(100), uplink_rate=gbps(40))
    net = wh.Network(t, cc="dcqcn")
    assert net.config.rate_map("kmin_map")[40 * 10**9] == 160
    assert net.config.rate_map("kmax_map")[40 * 10**9] == 640
    # on a fabric of bw and 4 bw links the maps are the run script's, entry for entry
    assert wh.Network(wh.star(2), cc="dctcp").config.kmin_map == preset_values("dctcp", 100)["kmin_map"]


def test_from_file_and_generic_keep_the_registry_defaults(tmp_path):
    defaults = {p.name: p.default for p in PARAMS}
    p = tmp_path / "config.txt"
    p.write_text("CC_MODE 3\nRATE_AI 7Mb/s\n")
    f = wh.Config.from_file(str(p))
    assert f.cc == "hpcc" and f.rate_ai == 7_000_000 and f.preset_name is None
    for name in ("rate_hai", "mi_thresh", "int_multi", "buffer_size", "kmin_map", "var_win"):
        assert f[name] == defaults[name]
    # --config f --cc dcqcn replaces CC_MODE only
    g = f.copy(cc="dcqcn")
    assert g.cc == "dcqcn" and g.rate_ai == 7_000_000 and g.rate_hai == defaults["rate_hai"]
    gen = wh.Config.generic(cc="hpcc")
    assert {k: v for k, v in gen.as_dict().items() if k not in ("cc", "preset")} == \
        {k: v for k, v in defaults.items() if k not in ("cc", "preset")}
    assert wh.Config(cc="hpcc", preset=None).as_dict() == gen.as_dict()


def test_one_meaning_differs_from_the_generic_defaults():
    """Config(cc='hpcc') is the preset, not the registry defaults (which differ in
    14 parameters): the two meanings the name used to have give other results."""
    diff = {k for k, v in preset_differences().items() if v["hpcc"] != v["default"]}
    assert {"rate_ai", "rate_hai", "int_multi", "mi_thresh", "buffer_size", "var_win"} <= diff
    assert len(diff) == 14
    t = wh.star(9)

    def incast(cfg):
        net = wh.Network(t, cfg)
        for i in range(8):
            net.send(i, 8, 500_000)
        net.run()
        return net.results["fct"].max()
    assert incast(wh.Config(cc="hpcc")) == incast(wh.Config.preset("hpcc"))
    assert incast(wh.Config(cc="hpcc")) != incast(wh.Config.generic(cc="hpcc"))


def test_preset_names_and_conflicts_are_checked():
    assert wh.Config(preset="dcqcn_paper").cc == "dcqcn"
    assert wh.Config(preset="dcqcn_paper").rp_timer == 55.0
    with pytest.raises(wh.ConfigError) as e:
        wh.Config(preset="dcqcn_paper", cc="hpcc")
    assert "hpcc" in str(e.value) and "dcqcn_paper" in str(e.value)
    with pytest.raises(wh.ConfigError) as e:
        wh.Config(preset="reno")
    assert "reno" in str(e.value)
    with pytest.raises(wh.ConfigError) as e:
        wh.Config(seed=None)
    assert "seed" in str(e.value)


def test_the_docs_list_the_preset_defaults():
    md = docs_markdown()
    assert "## Defaults of `Config(cc=X)` and `--cc X`" in md
    section = md.split("## Defaults of")[1]
    for name, row in preset_differences().items():
        line = next(l for l in section.splitlines() if l.startswith("| `%s` |" % name))
        assert line.split("|")[2].strip() == str(row["default"])
    assert "preset" in cli.cli_help()
