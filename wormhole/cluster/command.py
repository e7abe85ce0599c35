"""``python -m wormhole cluster`` and ``python -m wormhole cluster-pool``."""
import json
import os
import random
import time

from ..errors import WormholeError
from ..outputs import check_file, check_folder, write_files
from .contention import MODELS, make_contention
from .fabric import COLLECTIVES, OFFSETS, RING_ORDERS, SENDERS, VOLUME_SOURCES
from .metrics import FIGURES, compare, jobs_csv, plot, plot_cdfs, read_measured, summary
from .pool import ModelPool
from .sim import LOADING, ClusterSimulator
from .spec import ClusterSpec
from .trace import read_trace


MODEL_FILES = ("jobs.csv", "summary.json", "jct.png")


def add_arguments(p):
    p.add_argument("--trace", required=True, help="job trace CSV (MoSim, Tiresias, Pollux or Philly format)")
    p.add_argument("--cluster", required=True,
                   help="cluster spec YAML, or a shipped one: testbed-16gpu, testbed-32gpu")
    p.add_argument("--pool", default="v100", help="model pool YAML or a shipped one (default v100)")
    p.add_argument("--policy", help="bin-packing, load-balancing or module:callable (default: the spec's)")
    p.add_argument("--contention", default="mosim",
                   help="one or more of %s, comma-separated, or all, run side by side and overlaid in "
                        "jct_cdf.png (default mosim)" % ", ".join(MODELS))
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output folder (created if missing, in an existing folder; summary.csv and the "
                        "per-model folders' files in it are replaced)")
    p.add_argument("--compare", metavar="MEASURED.csv",
                   help="measured per-job results (the testbed's perjob CSV, rows of the policy; or a jobs.csv)")
    p.add_argument("--fixed-factor", type=float, default=1.1, help="slowdown of the fixed model (default 1.1)")
    p.add_argument("--min-bw", type=float, default=10.0, help="MoSim's MIN_BW in MB/s (default 10)")
    p.add_argument("--volume", default="rate", choices=VOLUME_SOURCES,
                   help="what an iteration sends in the flow/packet models: rate (default: the worker's "
                        "measured rate V_net/N over the profiled iteration less its compute), gradient (ring "
                        "all-reduce of grad_mb), profile (V_net/N x T_net) or ring (the gradient's ring all-reduce, "
                        "at most rate's bytes, after the compute) or rate-ddp (rate's bytes in DDP buckets during the "
                        "backward pass)")
    p.add_argument("--iteration", default="ddp", choices=("ddp", "serial"),
                   help="with --volume gradient or profile: ddp (backward interleaved with 25 MB bucket "
                        "all-reduces, default) or serial (compute, then one all-reduce)")
    p.add_argument("--sender", default="profile", choices=SENDERS,
                   help="flow/packet models: a worker hands its bytes to the connection at its profiled rate "
                        "(profile, default), at its measured rate V_net/N with the rest of the iteration a fixed pause "
                        "(rate) or all at once (transport)")
    p.add_argument("--ring", default=None, choices=RING_ORDERS,
                   help="flow/packet models: ring order server by server (as NCCL orders a node's GPUs) or "
                        "rank (the order the policy placed the workers); default: the cluster spec's ring")
    p.add_argument("--collective", default="flows", choices=COLLECTIVES,
                   help="flow/packet models: a bucket's all-reduce as one message per ring link, the links "
                        "independent (flows, default), or NCCL's 2 (N - 1) ring steps, each waiting for the "
                        "previous step's chunk (ring)")
    p.add_argument("--offsets", default="spread", choices=OFFSETS,
                   help="flow/packet models: the replay starts the jobs at four relative phases, averaged "
                        "(spread, default), or where they are in their iterations (actual)")
    p.add_argument("--loading", default="within", choices=LOADING,
                   help="loading time inside the trace duration (default), extra (MoSim), or none")
    p.add_argument("--fabric-iterations", type=int, default=5,
                   help="iterations measured per co-location in the flow/packet models (default 5)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the model draw for traces without a model column (Philly; Tiresias without "
                        "model_name); a model the pool lacks is an error, never replaced")
    p.add_argument("--tie-seed", type=int, help="break the built-in policies' placement ties at random from this "
                   "seed, as Kubernetes' scheduler picks among equally scored nodes (default: the lowest server index)")
    p.add_argument("--limit", type=int, help="read only the first N jobs of the trace")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--timeline", metavar="FILE", help="write a Chrome/Perfetto trace-event JSON: per contention "
                   "model and server, every job's training span (replaced if it exists; its folder must exist)")


def run_cluster(args):
    """Run every requested contention model, write the reports; return (rows, columns)."""
    models = list(MODELS) if args.contention.strip() == "all" else [
        m.strip() for m in args.contention.split(",") if m.strip()]
    for m in models:
        if m not in MODELS:
            raise WormholeError("unknown contention model %r (%s)" % (m, ", ".join(MODELS)), value=m)
    if len(set(models)) != len(models):
        raise WormholeError("a contention model is named twice", value=args.contention)
    check_folder(args.out, "--out", ["summary.csv", "jct_cdf.png"] + [os.path.join(m, n) for m in models for n in MODEL_FILES])
    if getattr(args, "timeline", None):
        check_file(args.timeline, "--timeline", [args.out])
    spec = ClusterSpec.load(args.cluster)
    pool = ModelPool.load(args.pool)
    jobs = read_trace(args.trace, args.limit)
    policy = args.policy or spec.policy
    measured = read_measured(args.compare, policy) if args.compare else None
    if args.fabric_iterations < 1:
        raise WormholeError("--fabric-iterations must be at least 1", value=args.fabric_iterations)
    rows, per_model = [], []
    for m in models:
        c = make_contention(m, fixed_factor=args.fixed_factor, min_bw_mbps=args.min_bw, volume=args.volume,
                            fabric_iterations=args.fabric_iterations, overlap=args.iteration == "ddp",
                            sender=args.sender, ring=args.ring, collective=args.collective, offsets=args.offsets)
        t0 = time.perf_counter()
        res = ClusterSimulator(jobs, pool, spec, c, policy=policy, loading=args.loading,
                               model_rng=random.Random(args.seed), tie_seed=getattr(args, "tie_seed", None)).run()
        row = {"contention": m, "policy": policy, "wall_s": time.perf_counter() - t0}
        row.update(summary(res.jobs))
        row["models_drawn"] = res.stats["models_drawn"]
        if hasattr(c, "simulated"):
            row.update(scenarios_simulated=c.simulated, scenario_memo_hits=c.hits, fabric_events=c.events)
        if measured is not None:
            row.update({k: v for k, v in compare(res.jobs, measured).items() if k != "measured"})
        rows.append(row)
        per_model.append((m, res.jobs, row))
    cols = ["contention", "policy", "jobs", "avg_training", "avg_jct", "median_jct", "p99_jct", "makespan",
            "avg_wait", "wall_s"]
    if measured is not None:
        cols += ["mape_" + f for f in FIGURES] + ["ks_jct", "wasserstein_jct_s"]
    if any(r["models_drawn"] for r in rows):
        cols.append("models_drawn")
    text = ",".join(cols) + "\n" + "".join(
        ",".join(("%.6g" % r[c]) if isinstance(r[c], float) else str(r[c]) for c in cols) + "\n" for r in rows)
    files = {os.path.join(args.out, "summary.csv"): text}
    for m, js, row in per_model:          # everything is computed: now write, all or nothing
        d = os.path.join(args.out, m)
        files[os.path.join(d, "jobs.csv")] = jobs_csv(js)
        files[os.path.join(d, "summary.json")] = json.dumps(row, sort_keys=True, indent=1) + "\n"
        files[os.path.join(d, "jct.png")] = plot(js, measured, None, "%s, %s contention" % (policy, m))
    files[os.path.join(args.out, "jct_cdf.png")] = plot_cdfs(
        [(m, js) for m, js, _ in per_model], measured, "%s on %s, %s: JCT CDF" % (
            os.path.basename(args.trace), spec.name, policy))
    if getattr(args, "timeline", None):
        from ..timeline import cluster_timeline
        files[args.timeline] = cluster_timeline([(m, js) for m, js, _ in per_model],
                                                "python -m wormhole cluster %s" % args.trace).to_json()
    write_files(files)
    return rows, cols


def drawn_note(rows, args):
    """The line that says models were drawn (the trace has no model column), or None."""
    n = max(r["models_drawn"] for r in rows)
    if not n:
        return None
    return ("models     the trace has no model column: the models of %d jobs were drawn from pool %s "
            "(--seed %d; jobs.csv column model_source)" % (n, args.pool, args.seed))


def unit(col):
    """The unit of a summary column, as printed."""
    if col.startswith("mape_"):
        return "%"
    if col in ("avg_training", "avg_jct", "median_jct", "p99_jct", "makespan", "avg_wait", "wall_s",
               "wasserstein_jct_s"):
        return "s"
    if col == "ks_jct":
        return "0-1"
    if col in ("jobs", "models_drawn"):
        return "jobs"
    return ""


def print_rows(rows, cols, as_json):
    if as_json:
        print(json.dumps(rows if len(rows) > 1 else rows[0], sort_keys=True))
        return
    names = ["%s (%s)" % (c, unit(c)) if unit(c) else c for c in cols]
    w = max(len(c) for c in names)
    for c, name in zip(cols, names):
        print("%-*s " % (w, name) + " ".join(_cell(r[c]) for r in rows))


def _cell(v):
    """A table cell: seconds and errors in fixed point, small values to 4 digits."""
    if not isinstance(v, float):
        return "%12s" % v
    return ("%12.1f" % v) if abs(v) >= 100 else ("%12.4g" % v)


def add_pool_arguments(p):
    src = p.add_argument_group("from MoSim's profile CSVs")
    src.add_argument("--iteration-csv", help="MoSim itertime CSV (model_name, gpu_workers, "
                     "iteration_computing_time, iteration_networking_time, loading_time)")
    src.add_argument("--network-csv", help="MoSim network summary CSV (Model, Number of Workers, "
                     "Sum of Max TX+RX (MB/s))")
    src.add_argument("--aliases", help="CSV model,workload_id")
    src.add_argument("--grad-from", help="a MoSim trace whose tensorsizes column gives grad_mb per model")
    src.add_argument("--grad", action="append", default=[], metavar="MODEL=MB", help="gradient size of a model")
    free = p.add_argument_group("GPU-free, simulated")
    free.add_argument("--describe", metavar="JOBS.yaml",
                      help="job descriptions (params_m, tflop_per_iter, workers per model; gpu)")
    free.add_argument("--cluster", help="cluster spec whose server the all-reduces run on (with --describe)")
    p.add_argument("--name", default="pool")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="pool YAML to write (replaced if it exists; its folder must exist)")


def make_pool(args):
    check_file(args.out, "--out")
    if args.describe:
        if not args.cluster:
            raise WormholeError("--describe needs --cluster (the servers the jobs are simulated on)")
        from .characterize import characterize
        pool = characterize(args.describe, ClusterSpec.load(args.cluster))
    else:
        if not (args.iteration_csv and args.network_csv and args.aliases):
            raise WormholeError("give --describe and --cluster, or --iteration-csv, --network-csv and --aliases")
        grad = {}
        if args.grad_from:
            for j in read_trace(args.grad_from):
                if "grad_mb" in j.extra:
                    grad[j.model] = j.extra["grad_mb"]
        for item in args.grad:
            if "=" not in item:
                raise WormholeError("--grad expects MODEL=MB", value=item)
            k, v = item.split("=", 1)
            try:
                grad[k.strip()] = float(v)
            except ValueError:
                raise WormholeError("--grad size is not a number", value=item)
        pool = ModelPool.from_mosim_csv(args.iteration_csv, args.network_csv, args.aliases, grad, args.name)
    write_files({args.out: pool.to_yaml()})
    return pool
