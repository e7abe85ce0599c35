"""Bad flow files and configs give named errors with file, line and value."""
import os

import pytest

import wormhole as wh


def flows_file(tmp_path, text):
    p = tmp_path / "flow.txt"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("text,msg,line", [
    ("3\n0 1 3 100 1000 0.0\n0 1 3 100 1000 0.0\n", "short flow file", 4),
    ("1\n0 1 3 100 -5 0.0\n", "size must be positive", 2),
    ("2\n0 1 3 100 10 0.5\n0 1 3 100 10 0.1\n", "not sorted", 3),
    ("1\n0 7 3 100 10 0.0\n", "not a node", 2),
    ("1\n0 2 3 100 10 0.0\n", "is a switch", 2),
    ("1\n0 1 3 100 ten 0.0\n", "must be integers", 2),
    ("1\n0 1 3 100 10 nan\n", "start time", 2),
    ("x\n", "number of flows", 1),
    ("1\n0 1 3 100 10 0.0\n0 1 3 100 10 0.0\n", "more flows", 3),
    ("1\n0 1 9 100 10 0.0\n", "priority group", 2),
])
def test_bad_flow_file(tmp_path, text, msg, line):
    topo = wh.star(2)
    path = flows_file(tmp_path, text)
    with pytest.raises(wh.FlowFileError) as e:
        wh.read_flows(path, topo)
    assert msg in str(e.value)
    assert e.value.file == path and e.value.line == line


def test_reads_reference_flow_file(data_dir):
    d = os.path.join(data_dir, "hpcc-ns3-runs", "ring_intra_dcqcn")
    topo = wh.read_topology(os.path.join(d, "topology.txt"))
    flows = wh.read_flows(os.path.join(d, "flow.txt"), topo)
    assert len(flows) == 16 and flows[0].size == 4_000_000 and flows[0].pg == 3 and flows[0].dport == 100


def test_reads_reference_config(data_dir):
    cfg = wh.Config.from_file(os.path.join(data_dir, "hpcc-ns3-runs", "incast2_hpcc", "config.txt"))
    assert cfg.cc == "hpcc" and cfg.mtu == 1000 and cfg.buffer_size == 32
    assert cfg.rate_ai == 50_000_000 and cfg.int_multi == 4 and cfg.u_target == 0.95
    assert cfg.rate_map("kmin_map") == {100_000_000_000: 400.0, 400_000_000_000: 1600.0}
    assert cfg.files["TOPOLOGY_FILE"].endswith(os.path.join("incast2_hpcc", "topology.txt"))


@pytest.mark.parametrize("line,msg", [
    ("NOT_A_KEY 1", "unknown config key"),
    ("CC_MODE 42", "CC_MODE"),
    ("PACKET_PAYLOAD_SIZE -3", "out of range"),
    ("U_TARGET abc", "bad value"),
    ("KMIN_MAP 2 100 400", "bad kmin_map"),
    ("HAS_WIN maybe", "bad value"),
    ("LINK_DOWN 5 0 1", "not supported"),
])
def test_bad_config(tmp_path, line, msg):
    p = tmp_path / "config.txt"
    p.write_text("ENABLE_QCN 1\n" + line + "\n")
    with pytest.raises(wh.ConfigError) as e:
        wh.Config.from_file(str(p))
    assert msg in str(e.value)
    assert e.value.line == 2 and e.value.file == str(p)


def test_unknown_cc_name_and_parameter():
    with pytest.raises(wh.ConfigError):
        wh.Config(cc="reno")
    with pytest.raises(wh.ConfigError):
        wh.Config(no_such_param=1)


def test_missing_ecn_map_entry_for_a_link_rate():
    with pytest.raises(wh.ConfigError) as e:
        wh.Network(wh.star(2), kmin_map="1 400000000000 1600", kmax_map="1 400000000000 6400",
                   pmax_map="1 400000000000 0.2")
    assert "100000000000" in str(e.value)


def test_params_docs_are_generated_from_the_registry():
    from wormhole.config import PARAMS, docs_markdown
    md = docs_markdown()
    for p in PARAMS:
        assert "`%s`" % p.name in md


def test_parameter_docs_are_up_to_date():
    from wormhole.config import docs_markdown
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "docs", "parameters.md")) as fh:
        assert fh.read().endswith(docs_markdown()), "regenerate docs/parameters.md (python -m wormhole params)"
