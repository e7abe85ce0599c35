"""What the commands print can be trusted: the flow backend says what it is
(never "accelerated"), run takes --backend and --mode as the bench spells them
and reports what accelerated mode skipped, TP traffic over NVLink is counted,
and fidelity.png names what it shows."""
import json
import os
import numpy as np
import pytest

from conftest import run_cli

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
RUNS = os.path.join(DATA, "hpcc-ns3-runs")
SMALL = ["gpt13b", "--gpus", "16", "--layers", "2", "--no-progress"]          # a fraction of a second


class _Done:
    def __init__(self, returncode, out, err):
        self.returncode, self.stdout, self.stderr = returncode, out, err


def _in_process(capsys, main):
    def call(*args):
        capsys.readouterr()
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return _Done(code, out, err)
    return call


@pytest.fixture
def run_bench(capsys):
    """``python -m wormhole.bench ARGS`` in this process (its main(), as the command runs it)."""
    from wormhole.bench import main
    return _in_process(capsys, main)


@pytest.fixture
def cli(capsys):
    """``python -m wormhole ARGS`` in this process (run_cli runs one of each in a new interpreter)."""
    from wormhole.cli import main
    return _in_process(capsys, main)


def _one_line_exit_2(p, needle):
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    assert needle in p.stderr, p.stderr


# ------------------------------------------------------------------ item 6: the flow backend says what it is
def test_bench_labels_flow_backend_runs(run_bench):
    p = run_bench(*SMALL, "--backend", "flow")
    assert p.returncode == 0, p.stderr
    assert "flow backend (packet" in p.stdout and "accelerated" not in p.stdout and "hpcc" not in p.stdout
    assert "flow-level events" in p.stdout and "skipped" not in p.stdout
    rep = json.loads(run_bench(*SMALL, "--backend", "flow", "--json").stdout)
    assert rep["backend"] == "flow" and rep["mode"] is None and rep["cc"] is None
    assert "events_skipped" not in rep and "skips" not in rep and rep["flow_model"] == "packet"
    _one_line_exit_2(run_bench(*SMALL, "--backend", "flow", "--mode", "accelerated"),
                     "--mode accelerated applies to the packet backend")
    packet = run_bench(*SMALL)
    assert packet.returncode == 0 and "packet level, hpcc, accelerated mode" in packet.stdout


def test_fidelity_keys_name_the_flow_backend(tmp_path, cli):
    cfg = os.path.join(RUNS, "incast8_hpcc", "config.txt")
    out = tmp_path / "f"
    p = run_cli("fidelity", "--config", cfg, "--backend", "flow", "--out", str(out))
    assert p.returncode == 0, p.stderr
    s = json.loads((out / "summary.json").read_text())
    assert not [k for k in s if "accelerated" in k]
    assert {"events_flow", "wall_flow_s"} <= set(s) and s["compared"] == "flow backend (packet) vs full packet"
    assert s["skipped_pct"] is None and "events_skipped" not in s
    assert (out / "fidelity.csv").read_text().startswith("id,fct_full_ps,fct_flow_ps,error\n")
    assert "incast8_hpcc/config.txt" in s["workload"]
    p = cli("fidelity", "--config", cfg, "--out", str(tmp_path / "a"))
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert s["compared"] == "accelerated packet vs full packet" and "events_accelerated" in s
    assert s["skipped_pct"] is not None


def test_run_takes_backend_and_mode(tmp_path, cli):
    d = os.path.join(RUNS, "incast2_hpcc")
    base = ["run", "--config", os.path.join(d, "config.txt")]
    p = run_cli(*base, "--backend", "flow", "--out", str(tmp_path / "flow"), "--stats-json", str(tmp_path / "f.json"))
    assert p.returncode == 0, p.stderr
    assert "backend    flow (packet" in p.stdout and "\npackets" not in p.stdout and "\ncc " not in p.stdout
    assert sorted(os.listdir(tmp_path / "flow")) == ["fct.txt"]          # no PFC log: the backend has no PFC
    assert len((tmp_path / "flow" / "fct.txt").read_text().splitlines()) == 2
    st = json.loads((tmp_path / "f.json").read_text())
    assert st["backend"] == "flow" and "data_packets" not in st and st["flows_completed"] == 2
    for extra, needle in ((["--mode", "accelerated"], "--mode applies to the packet backend"),
                          (["--trace", str(tmp_path / "t")], "--trace applies to the packet backend"),
                          (["--cc", "hpcc"], "--cc applies to the packet backend")):
        _one_line_exit_2(cli(*base, "--backend", "flow", "--out", str(tmp_path / "x"), *extra), needle)
    assert not (tmp_path / "x").exists()
    # --mode, as the bench spells it; accelerated mode reports what it skipped (item 9)
    full = cli(*base, "--mode", "full", "--out", str(tmp_path / "full"), "--stats-json", str(tmp_path / "u.json"))
    acc = cli(*base, "--mode", "accelerated", "--out", str(tmp_path / "acc"), "--stats-json",
                  str(tmp_path / "a.json"))
    assert full.returncode == 0 and acc.returncode == 0, acc.stderr
    assert "mode       full" in full.stdout and "skipped " not in full.stdout
    assert "mode       accelerated" in acc.stdout and "skipped    " in acc.stdout
    u, a = json.loads((tmp_path / "u.json").read_text()), json.loads((tmp_path / "a.json").read_text())
    assert u["mode"] == "full" and a["mode"] == "accelerated" and a["events_skipped"] > 0 and a["skips"] >= 1
    assert a["data_packets"] < u["data_packets"] and a["bytes_skipped"] > 0
    line = [l for l in acc.stdout.splitlines() if l.startswith("skipped")][0]
    assert ("%d events of %d" % (a["events_skipped"], a["events"] + a["events_skipped"])) in line
    assert "%d payload bytes" % a["bytes_skipped"] in line


# ------------------------------------------------------------------ item 9: counts people read
def _tiny(gpus=16, tp=8, pp=1, micro_batches=1):
    from dataclasses import replace

    from wormhole.workload import load_preset
    pre = load_preset("gpt13b", gpus=gpus, tp=tp, pp=pp, micro_batches=micro_batches)
    pre.model = replace(pre.model, layers=2 * pp, hidden=1024, ffn=4096, seq=256, vocab=1000)
    return pre


@pytest.mark.parametrize("tp,pp,mb", [(8, 1, 1), (4, 2, 2)])
def test_tp_allreduces_are_counted_on_nvlink(tp, pp, mb):
    """Megatron: 2 all-reduces of the activation per layer forward, 2 backward,
    each moving 2 (TP - 1) / TP of it per GPU and taking the ring's time on the
    busiest GPU; the backward has 2, not 4 (it was compute x 2 with its
    all-reduces inside)."""
    import wormhole as wh
    from wormhole.workload import TrainingJob
    pre = _tiny(32, tp, pp, mb)
    net = wh.Network(wh.rail_optimized(32), wh.Config(cc="none"))
    job = TrainingJob(net, pre)
    job.start()
    net.run()
    s = job.summary()
    par, act = job.par, job.act_bytes
    n_ar = par.pp * par.dp * job.layers_per_stage * par.micro_batches * 4
    assert act == 256 * 1024 * 2 and s["tp_activation_bytes"] == act
    assert s["tp_allreduces"] == n_ar and s["tp_allreduce_bytes"] == n_ar * 2 * (tp - 1) * act
    assert s["nvlink_bytes"] >= s["tp_allreduce_bytes"] > 0
    ring = 2 * (tp - 1) * job.t.nvlink_time(act / tp)
    assert job.tp_ar == ring
    assert s["tp_allreduce_time_ps"] == job.layers_per_stage * par.micro_batches * 4 * ring
    f, b = job.compute_per_mb[0]
    assert b - 2 * f == -2 * job.layers_per_stage * ring             # backward: 2 x compute + 2 all-reduces
    assert s["compute_time_ps"] + s["tp_allreduce_time_ps"] == job.results[0].compute
    assert s["compute_time_ps"] + s["tp_allreduce_time_ps"] + s["exposed_comm_ps"] == s["iteration_time_ps"]


def test_bench_shows_tp_traffic(run_bench):
    p = run_bench(*SMALL)
    assert p.returncode == 0, p.stderr
    assert "0.000 GB over NVLink" not in p.stdout
    nv = [l for l in p.stdout.splitlines() if l.strip().startswith("NVLink")][0]
    # 2 layers x 2 replicas x 4 all-reduces x 2 (8 - 1) x 20.97 MB activations
    assert "%.3f GB of it in 16 TP all-reduces of 21.0 MB" % (16 * 14 * 2048 * 5120 * 2 / 1e9) in nv
    assert "TP all-reduces over NVLink" in p.stdout


def test_fidelity_png_names_the_workload_and_uses_a_log_axis():
    from wormhole.fidelity import plot_figure
    summary = {"compared": "accelerated packet vs full packet", "workload": "python -m wormhole.bench gpt7b",
               "fct_err_mean_pct": 0.5, "fct_err_p99_pct": 2.0, "fct_err_max_pct": 3.0, "wall_full_s": 10.0,
               "wall_accelerated_s": 0.5, "wall_ratio": 20.0, "event_ratio": 900.0, "skipped_pct": 99.9,
               "iteration_full_ms": 12.5, "iteration_err_pct": 0.02}
    ff = np.array([100.0, 200.0, 300.0])
    fig = plot_figure(summary, ff, np.array([100.0, 201.0, 306.0]), "accelerated")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_title() == "python -m wormhole.bench gpt7b"
    text = "\n".join(t.get_text() for t in ax.texts)
    assert "iteration time: 12.500 ms full, error 0.02%" in text and "speedup: 20.0x wall-clock" in text
    assert "99.90% of packet events skipped" in text and "messages" in ax.get_ylabel()
    assert fig._suptitle.get_text() == "accelerated packet vs full packet"
