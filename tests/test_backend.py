"""The Network facade over its backends (issue 17 item 3): one Network class
whatever the backend, a declared backend protocol both implement, what a
backend lacks named as such, and the accelerator's state through the API."""
import ast
import os

import pytest

import wormhole as wh
from wormhole.backend import BACKENDS, Backend, backend_class
from wormhole.units import US, mb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_every_backend_is_behind_one_network_class(name):
    net = wh.Network(wh.star(3), backend=name)
    assert type(net) is wh.Network and isinstance(net, wh.Network)
    assert isinstance(net.backend, Backend) and net.backend.name == name
    assert type(net.backend) is backend_class(name)
    assert not type(net.backend).__abstractmethods__        # it implements the whole protocol


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_fresh_keeps_the_backend_unless_told(name):
    net = wh.Network(wh.star(3), backend=name)
    assert net.fresh().backend.name == name
    other = "flow" if name == "packet" else "packet"
    assert net.fresh(backend=other).backend.name == other


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_schedule_returns_an_id_on_every_backend(name):
    net = wh.Network(wh.star(3), backend=name)
    seen = []
    ids = [net.schedule(t * US, lambda t=t: seen.append((t, net.now))) for t in (3, 1, 2)]
    net.run()
    assert ids == [0, 1, 2]
    assert seen == [(1, 1 * US), (2, 2 * US), (3, 3 * US)]


def test_a_message_callback_may_be_given_for_one_end_only():
    """on_delivered alone, on_done alone: each fires once, at its own time."""
    net = wh.Network(wh.star(3), cc="none")
    conn = net.connect(0, 2)
    log = []
    net.post(conn, mb(1), on_delivered=lambda m: log.append(("d", m.id, net.now)))
    net.post(conn, mb(1), on_done=lambda m: log.append(("a", m.id, net.now)))
    net.run()
    rows = net.messages
    assert log == [("d", 0, rows["delivered"][0]), ("a", 1, rows["done"][1])]


def test_what_the_flow_backend_lacks_is_named():
    net = wh.Network(wh.star(3), backend="flow")
    net.send(0, 2, mb(1))
    net.run()
    assert net.skipping() == []                 # nothing is ever fast-forwarded
    for call in (net.memory, lambda: net.accelerator):
        with pytest.raises(wh.NotAvailableError, match="not available on the flow backend"):
            call()


def test_the_accelerator_state_through_the_api():
    """Per-flow progress and CC state as the memo layer reads them: after a run
    every byte is acknowledged, nothing remains, the CC vector's rate is the
    flow's rate; a bad flow id is an ApiError, not a read out of bounds."""
    net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset("hpcc", accelerate=True))
    a = net.send(0, 2, mb(2))
    b = net.send(1, 3, mb(1))
    net.run(until=20 * US)
    acc = net.accelerator
    (part,) = net.partitions()
    assert part == [a, b]
    sent = [acc.snd_una(f) for f in (a, b)]
    assert all(0 < s < n for s, n in zip(sent, (mb(2), mb(1))))
    assert [acc.remaining(f)[0] for f in (a, b)] == [mb(2) - sent[0], mb(1) - sent[1]]
    net.run()
    assert [acc.snd_una(f) for f in (a, b)] == [mb(2), mb(1)]
    assert [acc.remaining(f)[0] for f in (a, b)] == [0, 0]
    assert acc.cc_vector(a)[0] == net.cc_state(a)["rate"]
    assert acc.memo is not None and acc.memo.misses >= 1
    for bad in (2, -1, True, "0"):
        with pytest.raises(wh.ApiError, match="no such flow"):
            acc.snd_una(bad)
    assert wh.Network(wh.star(3)).accelerator.memo is None


def _sources(*folders):
    for folder in folders:
        for d, _, files in os.walk(os.path.join(ROOT, folder)):
            for f in files:
                if f.endswith(".py"):
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def test_no_module_outside_the_backends_reaches_into_them():
    """The Network API is the only door: outside the two backends no module
    reads another object's _kernel, _messages or _memo, and in the package,
    the benchmarks and the examples only the packet backend imports the kernel
    (its own tests build one directly)."""
    backends = {os.path.join("wormhole", "backend_packet.py"), os.path.join("wormhole", "flowlevel.py")}
    found = []
    for path in _sources("wormhole", "bench", "examples", "tests"):
        if path in backends:
            continue
        with open(os.path.join(ROOT, path)) as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("_kernel", "_messages", "_memo"):
                found.append("%s:%d .%s" % (path, node.lineno, node.attr))
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] \
                if isinstance(node, ast.ImportFrom) else []
            found += ["%s:%d imports %s" % (path, node.lineno, n) for n in names
                      if n.endswith("_core.kernel") and not path.startswith("tests")]
    assert found == []
