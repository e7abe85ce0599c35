import os
import sys

# wormhole does no BLAS work (no matmul, no linalg), but NumPy's OpenBLAS starts
# one thread per CPU when NumPy is imported: 30-100 ms of a short command's start
# on a busy machine.  One thread unless the user asked otherwise; set before
# anything imports NumPy (``import wormhole`` does not).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .cli import main  # noqa: E402

sys.exit(main())
