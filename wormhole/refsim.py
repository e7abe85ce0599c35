"""Running the reference simulator (the HPCC fork of ns-3, or any program that reads the same
``config.txt``) on a reference-format input folder, for the kernel benchmark's comparison columns.

The reference is an external program: the user names the command that runs it (for the HPCC fork,
``env LD_LIBRARY_PATH=<build> <build>/scratch/third``); the config file's path is appended. The input
folder is never written: the run happens in a fresh directory whose ``config.txt`` is the folder's own
with its input files made absolute and its outputs (fct.txt, pfc.txt, the trace, the queue monitor)
redirected into that directory.

``set_up_only`` runs the same config stopped 1 ns before its first flow starts, which times what the
reference does before any packet moves (reading the topology, computing routes, installing
applications); the difference to the whole run is its run phase.
"""
import os
import resource
import shlex
import shutil
import subprocess
import tempfile
import time

from .config import FILE_KEYS
from .errors import WormholeError

INPUT_KEYS = ("TOPOLOGY_FILE", "FLOW_FILE", "TRACE_FILE")
OUTPUT_KEYS = tuple(k for k in FILE_KEYS if k not in INPUT_KEYS)


class ReferenceError(WormholeError):
    """The reference command cannot run, or its run failed."""


def parse_command(text):
    """The reference command as an argument list; an error naming it if its program is not found."""
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise ReferenceError("--reference %r: %s" % (text, e))
    if not argv:
        raise ReferenceError("--reference: empty command")
    i = 0
    if argv[0] == "env":                     # env VAR=value ... program
        i = 1
        while i < len(argv) and "=" in argv[i]:
            i += 1
    if i >= len(argv):
        raise ReferenceError("--reference %r: names no program" % text)
    prog = argv[i]
    if shutil.which(prog) is None:
        raise ReferenceError("--reference %r: program %s not found or not executable" % (text, prog))
    return argv


def rewrite_config(text, folder, outdir, stop_s=None):
    """``config.txt``'s text with input files absolute (resolved against ``folder``), outputs under
    ``outdir`` and, if ``stop_s`` is given, SIMULATOR_STOP_TIME replaced by it."""
    out = []
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0] in INPUT_KEYS:
            line = "%s %s" % (parts[0], os.path.abspath(os.path.join(folder, parts[1].strip())))
        elif len(parts) == 2 and parts[0] in OUTPUT_KEYS:
            line = "%s %s" % (parts[0], os.path.join(outdir, os.path.basename(parts[1].strip())))
        elif parts and parts[0] == "SIMULATOR_STOP_TIME" and stop_s is not None:
            line = "SIMULATOR_STOP_TIME %.12f" % stop_s
        out.append(line)
    return "\n".join(out) + "\n"


def fct_name(text):
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0] == "FCT_OUTPUT_FILE":
            return os.path.basename(parts[1].strip())
    raise ReferenceError("config.txt names no FCT_OUTPUT_FILE")


def run(argv, folder, stop_s=None, timeout=None):
    """Run the reference on ``folder`` (its config.txt) and return {wall_seconds, cpu_seconds, fct
    (bytes, or None for a stopped run that wrote none)}. An error naming the folder if it fails."""
    cfg_path = os.path.join(folder, "config.txt")
    with open(cfg_path) as fh:
        text = fh.read()
    name = fct_name(text)
    with tempfile.TemporaryDirectory(prefix="wormhole-ref-") as tmp:
        with open(os.path.join(tmp, "config.txt"), "w") as fh:
            fh.write(rewrite_config(text, folder, tmp, stop_s))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        with open(os.path.join(tmp, "stdout.log"), "wb") as log:
            try:
                rc = subprocess.call(argv + [os.path.join(tmp, "config.txt")], cwd=tmp, stdout=log,
                                     stderr=subprocess.STDOUT, timeout=timeout)
            except subprocess.TimeoutExpired:
                raise ReferenceError("%s: the reference did not finish in %s s" % (cfg_path, timeout))
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if rc != 0:
            with open(os.path.join(tmp, "stdout.log"), "rb") as fh:
                tail = fh.read()[-300:].decode("utf-8", "replace").strip().splitlines()
            raise ReferenceError("%s: the reference exited with status %d%s" % (
                cfg_path, rc, (": " + tail[-1]) if tail else ""))
        fct = None
        if os.path.isfile(os.path.join(tmp, name)):
            with open(os.path.join(tmp, name), "rb") as fh:
                fct = fh.read()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3), "fct": fct}


def first_start_s(flows):
    """One nanosecond before the earliest flow start, in seconds (the set-up-only stop time)."""
    return (min(f.start_ps for f in flows) - 1000) / 1e12
