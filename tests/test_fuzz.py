"""Corrupted inputs to every reader give a WormholeError with the file, or a
valid result; never another exception (bench/fuzz.py runs 10,000 of them)."""
from conftest import DATA
from wormhole.testing.fuzzing import fuzz


def test_corrupted_inputs_give_named_errors(tmp_path):
    cases, unexpected = fuzz(300, str(tmp_path), DATA, seed=1)
    assert cases == 3000
    assert unexpected == []
