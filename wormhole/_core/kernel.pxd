# The kernel module's declarations shared with other Cython modules (the
# tests' wrappers in testing.pyx cimport them).
from libc.stdint cimport int32_t, int64_t

from wormhole._core.defs cimport Sim, CcParams, CcOps


# CcParams from the dict cc.kernel_params gives (the kernel's build and the CC rule wrappers)
cdef void _fill_cc_params(CcParams* c, dict cc, int64_t mtu) except *
cdef const CcOps* cc_row(int kind) noexcept nogil     # the CC table's row of algorithm `kind` (CcKind), for tests


cdef class Kernel:
    cdef Sim* s         # the simulation's state (defs.pxd), owned: freed with the Kernel
    cdef _grow_flows(self, int32_t cap)     # room for `cap` flows in every per-flow array
