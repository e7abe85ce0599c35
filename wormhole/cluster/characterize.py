"""GPU-free characterization: a model pool from job descriptions, with no
profiling run.  Compute time comes from the workload layer's GPU model
(FLOPs per iteration / (peak x efficiency)); networking time from our own
simulation of the job alone: NCCL's ring all-reduce of the gradient over the
workers of one server of the cluster spec (``wormhole.workload``'s
collectives on the server's intra-server links); networking volume as MoSim
counts it (TX + RX per worker while synchronising, summed over workers).

Description YAML:

    name: my-pool
    gpu: {peak_tflops: 125, efficiency: 0.35}    # or the name of a workload GPU (a100, h100)
    models:
      resnet50:
        params_m: 25.6        # gradient = 4 bytes per parameter (fp32)
        tflop_per_iter: 0.79  # per GPU: forward + backward of its micro-batch
        workers: [1, 2, 4, 8]
        loading_s: 15         # optional
"""
from ..errors import read_yaml
from ..network import Network
from ..workload.collectives import RingAllReduce, Transport
from ..workload.models import GPUS
from .pool import ModelEntry, ModelPool, PoolError, Profile, _pos


def _num(v, what, path, positive=True):
    return _pos(v, what, (path, None), allow_zero=not positive)


def _gpu_rate(g, path):
    if isinstance(g, str):
        if g.lower() not in GPUS:
            raise PoolError("unknown GPU %r (%s, or {peak_tflops, efficiency})" % (g, ", ".join(GPUS)), path,
                            None, g)
        spec = GPUS[g.lower()]
        return spec.peak_flops * spec.efficiency
    if not isinstance(g, dict):
        raise PoolError("gpu must be a name or {peak_tflops, efficiency}", path, None, g)
    return _num(g.get("peak_tflops"), "gpu peak_tflops", path) * 1e12 * _num(g.get("efficiency"),
                                                                             "gpu efficiency", path)


def allreduce_seconds(spec, workers, nbytes, server=0):
    """Simulated time of one ring all-reduce of ``nbytes`` over ``workers`` GPUs
    of one server (the job alone)."""
    s = spec.servers[server]
    if workers > s.gpus:
        raise PoolError("a job of %d workers does not fit one server of %d GPUs" % (workers, s.gpus),
                        value=workers)
    topo, hosts = spec.fabric([server])
    net = Network(topo, backend="flow")
    tr = Transport(net, gpus_per_server=s.gpus, nvlink_gbps=s.intra_Bps * 8 / 1e9,
                   nvlink_latency_ps=spec.latency_ps)
    ar = RingAllReduce(tr, [hosts[(server, g)] for g in range(workers)], int(nbytes)).start()
    net.run()
    return ar.duration / 1e12


def characterize(path, spec):
    """A ModelPool from a job description YAML, simulated on ``spec``."""
    doc = read_yaml(path, PoolError, "job descriptions")
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), dict) or not doc["models"]:
        raise PoolError("job descriptions need 'gpu' and a 'models' mapping", path)
    rate = _gpu_rate(doc.get("gpu"), path)
    models = {}
    for name, m in doc["models"].items():
        if not isinstance(m, dict):
            raise PoolError("model %r needs params_m, tflop_per_iter, workers" % name, path, None, m)
        grad = _num(m.get("params_m"), "params_m of %s" % name, path) * 4.0      # MB of fp32 gradient
        comp = _num(m.get("tflop_per_iter"), "tflop_per_iter of %s" % name, path) * 1e12 / rate
        load = _num(m.get("loading_s", 0.0), "loading_s of %s" % name, path, positive=False)
        ws = m.get("workers")
        if not isinstance(ws, list) or not ws or any(isinstance(w, bool) or not isinstance(w, int) or w < 1
                                                     for w in ws):
            raise PoolError("workers of %s must be a list of positive integers" % name, path, None, ws)
        profs = {}
        for n in ws:
            if n == 1:
                profs[n] = Profile(comp, 0.0, 0.0, load)
                continue
            t = allreduce_seconds(spec, n, grad * 1e6)
            per_worker = 2.0 * (n - 1) / n * grad            # MB sent (and received) per worker
            profs[n] = Profile(comp, t, n * 2.0 * per_worker / t, load)
        models[str(name)] = ModelEntry(str(name), grad, profs)
    return ModelPool(models, str(doc.get("name", "gpu-free")), path)
