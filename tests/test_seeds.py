"""The seed selects the realisation: under ecn_rng=ns3 (the default) it is the
reference's run number (ns-3 RngRun), so seed 1 reproduces the reference's runs
and another seed gives another realisation of DCQCN's probabilistic marking."""
import os

import pytest

import wormhole as wh
from wormhole.config import docs_markdown
from wormhole.ns3rng import first_draw

from conftest import DATA, parse_fct, run_dir

INCAST8 = os.path.join(DATA, "hpcc-ns3-runs", "incast8_dcqcn")


def incast(seed, n=4, size=1_000_000, **cfg):
    """n:1 DCQCN incast on a star: ECN marks are drawn (RED between Kmin and Kmax)."""
    net = wh.Network(wh.star(n + 1), wh.Config(cc="dcqcn", seed=seed, **cfg))
    for i in range(n):
        net.send(i, n, size)
    net.run()
    return net


def test_another_seed_another_ecn_realisation():
    runs = {s: incast(s) for s in (1, 2, 3)}
    for net in runs.values():
        assert net.stats["ecn_marks"] > 0
        assert net.stats["flows_completed"] == 4
    lines = {s: "".join(net.fct_lines()) for s, net in runs.items()}
    assert len(set(lines.values())) == 3, "three seeds gave identical fct lines"


def test_same_seed_same_bytes():
    a, b = incast(2), incast(2)
    assert "".join(a.fct_lines()) == "".join(b.fct_lines())
    assert a.stats["ecn_marks"] == b.stats["ecn_marks"]
    assert a.stats["events"] == b.stats["events"]


def test_seed_1_is_the_reference_run_and_seed_2_another_realisation():
    ref = parse_fct(os.path.join(INCAST8, "fct.txt"))
    net, ours = run_dir(INCAST8, seed=1)
    assert net.stats["ecn_marks"] > 0
    assert ours == ref
    _, other = run_dir(INCAST8, seed=2)
    assert set(other) == set(ref) and other != ref
    errs = [abs(other[k][2] - v[2]) / v[2] for k, v in ref.items()]
    assert 0 < max(errs) < 0.1           # another realisation of the same dynamics


def test_the_seed_is_the_ns3_run_number():
    assert [first_draw(s, run=2) for s in range(3)] != [first_draw(s, run=1) for s in range(3)]
    splitmix = [incast(s, ecn_rng="splitmix") for s in (1, 2)]
    assert "".join(splitmix[0].fct_lines()) != "".join(splitmix[1].fct_lines())


def test_ns3_run_is_refused_with_a_message_naming_the_seed():
    for make in (lambda: wh.Config(ns3_run=2), lambda: wh.Network(wh.star(2), ns3_run=2),
                 lambda: wh.Config().copy(ns3_run=1)):
        with pytest.raises(wh.ConfigError) as e:
            make()
        assert "seed" in str(e.value) and "ns3_run" in str(e.value)


def test_the_docs_say_what_the_seed_does():
    md = docs_markdown()
    row = next(l for l in md.splitlines() if l.startswith("| `seed` |"))
    assert "RngRun" in row and "reproduces" in row
    assert "`ns3_run`" not in md
