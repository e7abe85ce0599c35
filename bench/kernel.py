#!/usr/bin/env python
"""Packet-kernel speed: events, events/s and wall-clock for (a) a 16:1 incast of
10 MB flows and (b) a k=8 fat-tree permutation of 1 MB flows, fixed-rate mode.

    python bench/kernel.py [--repeat 3] [--json]

The scenarios live in wormhole.bench (also ``python -m wormhole.bench kernel``).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from wormhole.bench import kernel_main  # noqa: E402

if __name__ == "__main__":
    kernel_main()
