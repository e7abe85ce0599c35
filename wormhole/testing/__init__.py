"""Helpers shared by the tests and the long benchmarks (bench/fuzz.py,
bench/soak.py): random fabrics, workloads and run invariants (``properties``),
random corruptions of inputs and output paths (``fuzzing``).  Not imported by
the package itself; they use the public API only."""
