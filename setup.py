"""Build the Cython kernel of wormhole (metadata lives in pyproject.toml)."""
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

CORE = os.path.join("wormhole", "_core")
FLAGS = ["-O3", "-fno-strict-aliasing"]

extensions = [
    Extension(
        "wormhole._core.fluid",
        [os.path.join(CORE, "fluid.pyx")],
        extra_compile_args=FLAGS,
    ),
    # NVLink chains of the ring collectives (workload layer): their recurrence as a C loop
    Extension(
        "wormhole._core.chains",
        [os.path.join(CORE, "chains.pyx")],
        extra_compile_args=FLAGS,
    ),
    Extension(
        "wormhole._core.routing",
        [os.path.join(CORE, "routing.pyx")],
        depends=[os.path.join(CORE, "wh_time.h")],
        include_dirs=[CORE],
        extra_compile_args=FLAGS,
    ),
    # the accelerator: a module of its own, the kernel calls it through the hooks of accel.pxd
    Extension(
        "wormhole._core.accel",
        [os.path.join(CORE, "accel.pyx")],
        depends=[os.path.join(CORE, n) for n in ("accel.pxd", "defs.pxd", "heap.pxd", "vec.pxd", "int_hops.pxd", "accel_window.pxi",
                                                 "accel_partition.pxi", "accel_steady.pxi", "accel_skip.pxi",
                                                 "accel_virtual.pxi", "accel_memo.pxi", "accel_mirror.pxi", "wh_time.h", "wh_heap.h",
                                                 "wh_ns3rng.h")],
        include_dirs=[CORE],
        extra_compile_args=FLAGS,
    ),
    Extension(
        "wormhole._core.kernel",
        [os.path.join(CORE, "kernel.pyx")],
        depends=[os.path.join(CORE, n) for n in ("kernel.pxd", "defs.pxd", "heap.pxd", "vec.pxd", "mmu.pxd", "draws.pxd", "cc.pxd",
                                                 "cc_swift.pxd", "cc_tcp.pxd", "cc_table.pxi", "int_hops.pxd", "accel.pxd", "parallel.pxi",
                                                 "wh_omp.h", "wh_time.h", "wh_heap.h",
                                                 "wh_ns3rng.h")],
        include_dirs=[numpy.get_include(), CORE],
        # OpenMP: the partitioned kernel's rounds run its logical processes on native threads (parallel.pxi)
        extra_compile_args=FLAGS + ["-fopenmp"],
        extra_link_args=["-fopenmp"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    ),
    # the tests' wrappers of the kernel's C rules (no simulation runs through it)
    Extension(
        "wormhole._core.testing",
        [os.path.join(CORE, "testing.pyx")],
        depends=[os.path.join(CORE, n) for n in ("kernel.pxd", "defs.pxd", "mmu.pxd", "draws.pxd", "cc.pxd", "cc_swift.pxd", "cc_tcp.pxd",
                                                 "accel.pxd", "int_hops.pxd", "wh_time.h")],
        include_dirs=[CORE],
        extra_compile_args=FLAGS,
    ),
]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    ),
)
