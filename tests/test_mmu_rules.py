"""The switch MMU's rules (mmu.pxd) against hand-computed thresholds, through
the kernel's own C functions (``_py_mmu``): dynamic threshold, admission,
accounting into reserve / shared pool / headroom, PFC pause and resume, ECN
marking probability.  Semantics: reference notes section 1.6 (switch-mmu.cc)."""
import pytest

from wormhole._core.testing import _py_mmu

RSV = 4096          # per (ingress port, queue) reserve
OFF = 3072          # resume offset (3 KB)
HDRM = 37_500       # headroom of a 100G port with 1 us links: 3 x 100e9 x 1e-6 / 8
# a switch of 1 MB whose ports' headroom sums to 150 KB and reserves to 50 KB:
# 800 KB of shared space; alpha = 1/8 (shift 3) at NIC rate
SW = {"buffer": 1_000_000, "total_hdrm": 150_000, "total_rsrv": 50_000}
Q = 3


def mmu(op, port=None, switch=None, **kw):
    port = dict({"headroom": HDRM, "pfc_shift": 3}, **(port or {}))
    return _py_mmu(op, port, dict(SW, **(switch or {})), reserve=RSV, resume_offset=OFF, q=Q, **kw)


def q(v):
    return {Q: v}


def test_dynamic_threshold():
    assert mmu("threshold")[0] == 800_000 >> 3 == 100_000
    assert mmu("threshold", switch={"shared_used": 200_000})[0] == 600_000 // 8 == 75_000
    assert mmu("threshold", {"pfc_shift": 2}, {"shared_used": 200_000})[0] == 150_000    # 2x the NIC rate
    assert mmu("threshold", switch={"shared_used": 900_000})[0] == 0                      # no free space left


def test_admit_drops_only_when_headroom_is_full_and_the_threshold_exceeded():
    over = {"ingress": q(RSV + 100_000)}                     # shared part at the threshold (100 000)
    assert not mmu("admit", dict(over, hdrm=q(37_000)), size=1000)[0]      # 38 000 > 37 500 and 101 000 > 100 000
    assert mmu("admit", dict(over, hdrm=q(36_500)), size=1000)[0]          # headroom still takes it (37 500)
    assert mmu("admit", {"ingress": q(RSV + 99_000), "hdrm": q(HDRM)}, size=1000)[0]   # 100 000: at, not over
    assert mmu("admit", {"hdrm": q(HDRM)}, size=1000)[0]                    # empty queue: reserve


def test_add_fills_reserve_then_shared_pool_then_headroom():
    _, p0, p1, sw = mmu("add", size=1000)
    assert p0["ingress"][Q] == 1000 and sw["shared_used"] == 0 and p1["egress"][Q] == 1000 and sw["used"] == 1000
    # crossing the reserve: only the 904 bytes above 4096 count as shared
    _, p0, _, sw = mmu("add", {"ingress": q(4000)}, size=1000)
    assert p0["ingress"][Q] == 5000 and p0["hdrm"][Q] == 0 and sw["shared_used"] == 904
    # shared pool 100 000 used: threshold (800 000 - 100 000) >> 3 = 87 500
    full = ({"ingress": q(RSV + 87_000)}, {"shared_used": 100_000})
    _, p0, _, sw = mmu("add", *full, size=500)                 # 87 500: at the threshold, shared
    assert p0["ingress"][Q] == RSV + 87_500 and p0["hdrm"][Q] == 0 and sw["shared_used"] == 100_500
    _, p0, _, sw = mmu("add", *full, size=1000)                # 88 000 > 87 500: headroom
    assert p0["ingress"][Q] == RSV + 87_000 and p0["hdrm"][Q] == 1000 and sw["shared_used"] == 100_000
    assert sw["used"] == 1000


def test_remove_drains_headroom_first_then_shared_then_reserve():
    start = {"ingress": q(RSV + 2000), "hdrm": q(1500)}
    used = {"shared_used": 2000, "used": RSV + 3500}
    _, p0, _, sw = mmu("remove", start, used, size=1000)
    assert p0["hdrm"][Q] == 500 and p0["ingress"][Q] == RSV + 2000 and sw["shared_used"] == 2000
    _, p0, _, sw = mmu("remove", start, used, size=2000)       # 1500 from headroom, 500 from the shared part
    assert p0["hdrm"][Q] == 0 and p0["ingress"][Q] == RSV + 1500 and sw["shared_used"] == 1500
    _, p0, _, sw = mmu("remove", start, used, size=3500 + 100)  # shared part emptied, 100 from the reserve
    assert p0["ingress"][Q] == RSV - 100 and sw["shared_used"] == 0 and sw["used"] == RSV - 100


def test_pause_when_headroom_is_used_or_shared_reaches_the_threshold():
    s = {"shared_used": 100_000}                                # threshold 87 500
    assert mmu("pause", {"hdrm": q(1)}, s)[0]
    assert mmu("pause", {"ingress": q(RSV + 87_500)}, s)[0]      # shared = threshold
    assert not mmu("pause", {"ingress": q(RSV + 87_499)}, s)[0]
    assert not mmu("pause", {"ingress": q(RSV)}, s)[0]           # reserve only
    assert not mmu("pause", {"hdrm": q(1), "pause_sent": q(1)}, s)[0]   # already paused


def test_resume_when_headroom_is_empty_and_shared_is_offset_below_the_threshold():
    s = {"shared_used": 100_000}                                # threshold 87 500
    paused = {"pause_sent": q(1)}
    assert mmu("resume", paused, s)[0]                           # nothing queued
    assert mmu("resume", dict(paused, ingress=q(RSV + 87_500 - OFF)), s)[0]        # 84 428 + 3072 = 87 500
    assert not mmu("resume", dict(paused, ingress=q(RSV + 87_500 - OFF + 1)), s)[0]
    assert not mmu("resume", dict(paused, hdrm=q(1)), s)[0]                        # headroom in use
    assert not mmu("resume", {}, s)[0]                                              # never paused
    # a full shared pool: threshold 0, so only an empty shared part resumes
    assert mmu("resume", dict(paused, ingress=q(RSV)), {"shared_used": 800_000})[0]
    assert not mmu("resume", dict(paused, ingress=q(RSV + 1)), {"shared_used": 800_000})[0]


@pytest.mark.parametrize("egress,p", [(20_000, 0.0), (20_001, 0.2 / 80_000), (60_000, 0.1), (100_000, 0.2),
                                      (100_001, 1.0), (400_000, 1.0)])
def test_ecn_marking_probability(egress, p):
    """RED on the egress queue: none at or below kmin, pmax (b - kmin) / (kmax -
    kmin) in between, always above kmax; counted over 40 000 draws."""
    n = 40_000
    red = {"kmin": 20_000, "kmax": 100_000, "pmax": 0.2, "egress": q(egress)}
    marks = mmu("mark", red, draws=n, seed=7)[0]
    sd = (n * p * (1 - p)) ** 0.5
    assert abs(marks - n * p) <= 5 * sd + (1 if 0 < p < 1 else 0)
    if p in (0.0, 1.0):
        assert marks == n * p


def test_queue_zero_is_never_marked():
    port = {"kmin": 0, "kmax": 10, "pmax": 1.0, "egress": {0: 1_000_000}}
    assert _py_mmu("mark", dict(port, headroom=HDRM), dict(SW), q=0, draws=100)[0] == 0


# ------------------------------------------------------------------ parameters with one meaning
@pytest.mark.parametrize("name,value,why", [
    ("pause_time", 10.0, "holds until an explicit resume"),
    ("dynamic_pfc_threshold", False, "always uses the dynamic threshold"),
    ("pint_log_base", 1.05, "HPCC-PINT (CC_MODE 10) is not implemented"),
    ("pint_prob", 0.5, "HPCC-PINT (CC_MODE 10) is not implemented"),
])
def test_parameters_without_effect_refuse_other_values(name, value, why, tmp_path):
    """Accepted but ignored would be silent: a value other than the one they
    mean here is refused, in a Config and in a reference config.txt."""
    import wormhole as wh
    from wormhole.config import _BY_NAME
    from wormhole.errors import ConfigError
    with pytest.raises(ConfigError, match=name + ".*" + why.replace("(", r"\(").replace(")", r"\)")):
        wh.Config(**{name: value})
    wh.Config(**{name: _BY_NAME[name].default})
    cfg = tmp_path / "config.txt"
    key = _BY_NAME[name].ref_key
    cfg.write_text("%s %s\n" % (key, int(value) if isinstance(value, bool) else value))
    with pytest.raises(ConfigError, match=name):
        wh.Config.from_file(str(cfg))


def test_reference_configs_setting_them_still_load(data_dir):
    """Every shipped reference config.txt sets USE_DYNAMIC_PFC_THRESHOLD 1,
    PINT_LOG_BASE 1.01 and PINT_PROB 1.0 (run.py's values)."""
    import glob
    import os
    import wormhole as wh
    paths = glob.glob(os.path.join(data_dir, "**", "config.txt"), recursive=True)
    assert len(paths) >= 20
    for p in paths:
        c = wh.Config.from_file(p)
        assert c.dynamic_pfc_threshold is True and c.pint_log_base == 1.01 and c.pint_prob == 1.0, p
