"""Config steady_committed: the steady window samples the rate HPCC's loop commits (Rc) instead of the
per-ACK sending rate.  On by default; on, the same dumbbell settles earlier and skips more than off."""
import numpy as np

import wormhole as wh


def _run(**kw):
    topo = wh.dumbbell(4, 4)
    net = wh.Network(topo, wh.Config.preset("hpcc", 100, **kw))
    h = topo.hosts
    for i in range(4):
        net.send(h[i], h[4 + i], 30_000_000)
    net.run()
    return net


def test_on_by_default_and_samples_the_committed_rate():
    full = _run(accelerate=False)
    default = _run(accelerate=True)
    off = _run(accelerate=True, steady_committed=False)
    on = _run(accelerate=True, steady_committed=True)
    assert wh.Config.preset("hpcc", 100).steady_committed is True
    # on is the default, event for event
    assert on.stats["events"] == default.stats["events"]
    assert list(on.results["finish"]) == list(default.results["finish"])
    # four flows on one bottleneck: the per-ACK rate scatters by the INT samples' noise and
    # Rc does not, so sampling Rc finds a steady window sooner and skips more of the run
    assert on.stats["events_skipped"] > 10 * off.stats["events_skipped"]
    for net in (off, on):
        st = net.stats
        assert st["events"] + st["events_skipped"] == __import__("pytest").approx(full.stats["events"], rel=0.03)
        f0, f1 = np.array(full.results["finish"], float), np.array(net.results["finish"], float)
        assert (np.abs(f1 - f0) / f0).max() < 0.02
