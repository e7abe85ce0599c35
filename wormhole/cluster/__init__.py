"""Cluster layer: trace-driven GPU-cluster simulation (the MoSim model) with
contention models from none to the packet level.

    pool = ModelPool.load("v100")
    spec = ClusterSpec.load("cluster.yaml")
    jobs = read_trace("trace.csv")
    result = ClusterSimulator(jobs, pool, spec, make_contention("flow")).run()
"""
from .contention import MODELS, make_contention
from .metrics import compare, read_measured, summary
from .policies import POLICIES, bin_packing, load_balancing
from .pool import ModelPool, Profile
from .sim import ClusterSimulator
from .spec import ClusterSpec
from .trace import Job, read_trace

__all__ = ["MODELS", "make_contention", "compare", "read_measured", "summary", "POLICIES", "bin_packing",
           "load_balancing", "ModelPool", "Profile", "ClusterSimulator", "ClusterSpec", "Job", "read_trace"]
