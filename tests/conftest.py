import os
import subprocess
import sys

import pytest

DATA = os.path.join(os.path.dirname(__file__), "data")


@pytest.fixture
def data_dir():
    return DATA


def parse_fct(path):
    """fct.txt -> {(sip, dip, sport, dport): (size, start_ns, fct_ns, standalone_ns)}."""
    out = {}
    with open(path) as fh:
        for line in fh:
            p = line.split()
            out[tuple(p[:4])] = tuple(int(x) for x in p[4:8])
    return out


def run_dir(d, **over):
    """Run a reference-format folder (config.txt naming TOPOLOGY_FILE and FLOW_FILE) with parameter
    overrides; (network, {(sip, dip, sport, dport): (size, start_ns, fct_ns, standalone_ns)})."""
    import wormhole as wh
    cfg = wh.Config.from_file(os.path.join(d, "config.txt")).copy(**over)
    net = wh.Network(cfg.files["TOPOLOGY_FILE"], cfg)
    for f in wh.read_flows(cfg.files["FLOW_FILE"], net.topology):
        net.send(f.src, f.dst, f.size, at=f.start_ps, pg=f.pg, dport=f.dport)
    net.run()
    return net, {tuple(l.split()[:4]): tuple(int(x) for x in l.split()[4:]) for l in net.fct_lines()}


def contest_rounds(net, nbytes, rounds):
    """Rounds of two flows (hosts 0 -> 2 and 1 -> 3) through a dumbbell's bottleneck, the next round 10 us
    after both finished: each round forms the same partition again (a memo hit after the first)."""
    state = {"left": 0, "round": 0}

    def start_round():
        state["round"] += 1
        state["left"] = 2
        for i in range(2):
            net.send(i, 2 + i, nbytes, on_done=finished)

    def finished(r):
        state["left"] -= 1
        if state["left"] == 0 and state["round"] < rounds:
            net.schedule(10 * 1000 * 1000, start_round)

    net.schedule(0, start_round)
    net.run()
    return net


def run_cli(*args, timeout=300):
    """Run `python -m wormhole ARGS` with the wormhole the tests import
    (installed or built in place), from outside the source tree so that an
    unbuilt checkout cannot shadow an installed package."""
    import wormhole
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(wormhole.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run([sys.executable, "-m", "wormhole", *args], capture_output=True, text=True,
                          env=env, cwd=os.path.dirname(root), timeout=timeout)


def stand_in(tmp_path, monkeypatch, name, text):
    """An executable script ``name`` in tmp_path (a stand-in for an outside simulator), with FAKE_LOG
    pointing at tmp_path/log.txt for it to write what it saw."""
    import stat
    prog = tmp_path / name
    prog.write_text(text)
    prog.chmod(prog.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "log.txt"))
    return prog
