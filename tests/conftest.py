import os

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
