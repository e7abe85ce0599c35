"""Output paths: every command checks them before it simulates (one line, exit
2, nothing written), writes all its files or none, and creates them with the
mode the umask gives."""
import json
import os
import stat
import sys

import pytest

from wormhole.errors import WormholeError
from wormhole.outputs import OutputError, check_file, check_folder, write_files

from conftest import run_cli

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
RUN = os.path.join(DATA, "hpcc-ns3-runs", "incast2_hpcc")
TRACE16 = os.path.join(DATA, "cluster", "testbed-trace-16gpu.csv")
UNWRITABLE = "/proc/wormhole-test"          # a parent nobody, root included, can create files in


def _tree(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def _one_line_exit_2(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stdout == ""                    # no summary: nothing ran
    for n in needles:
        assert n in p.stderr, p.stderr


class _Done:
    def __init__(self, returncode, out, err):
        self.returncode, self.stdout, self.stderr = returncode, out, err


@pytest.fixture
def cli(capsys):
    """``python -m wormhole ARGS`` (or ``wormhole.bench`` with bench=True) in this
    process: the same main() as run_cli's, without a new interpreter per case."""
    def call(*args, bench=False):
        from wormhole import bench as bench_mod, cli as cli_mod
        capsys.readouterr()
        code = (bench_mod.main if bench else cli_mod.main)([str(a) for a in args])
        out, err = capsys.readouterr()
        return _Done(code, out, err)
    return call


# ------------------------------------------------------------------ the checks
def test_check_folder_cases(tmp_path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "fct.txt").mkdir()
    assert check_folder(str(tmp_path / "new"), "--out", ["a.txt"]) == [str(tmp_path / "new" / "a.txt")]
    check_folder(str(tmp_path), "--out", ["f"])                 # an existing folder, a file in it is replaced
    with pytest.raises(OutputError, match="--out is an existing file; it needs a folder"):
        check_folder(str(tmp_path / "f"), "--out")
    with pytest.raises(OutputError, match="parent folder of the folder does not exist"):
        check_folder(str(tmp_path / "missing" / "out"), "--out")
    with pytest.raises(OutputError, match="fct.txt is a folder in the way"):
        check_folder(str(tmp_path / "d"), "--out", ["fct.txt"])
    with pytest.raises(OutputError, match="f is a file in the way of an output folder"):
        check_folder(str(tmp_path), "--out", ["f/jobs.csv"])
    with pytest.raises(OutputError, match="a part of the path is a file"):
        check_folder(str(tmp_path / "f" / "out"), "--out")
    if sys.platform.startswith("linux"):
        with pytest.raises(OutputError, match="cannot create files in /proc") as e:
            check_folder(UNWRITABLE, "--out")
        assert e.value.file == UNWRITABLE
    assert _tree(str(tmp_path)) == ["f"]                        # the checks wrote nothing


def test_check_file_cases(tmp_path):
    (tmp_path / "f").write_text("x")
    assert check_file(str(tmp_path / "f"), "--stats-json") == str(tmp_path / "f")     # replaced
    check_file(str(tmp_path / "new.json"), "--stats-json")
    check_file(str(tmp_path / "out" / "s.json"), "--stats-json", folders=[str(tmp_path / "out")])
    for bad, needle in ((tmp_path, "is an existing folder; it needs a file"),
                        (str(tmp_path / "x") + os.sep, "names a folder"),
                        (tmp_path / "missing" / "s.json", "parent folder of the file does not exist"),
                        (tmp_path / "f" / "s.json", "a part of the path is a file"),
                        ("", "empty path"), ("a\0b", "NUL byte")):
        with pytest.raises(OutputError, match=needle):
            check_file(str(bad), "--stats-json")
    os.symlink(str(tmp_path / "gone"), str(tmp_path / "link"))
    with pytest.raises(OutputError, match="broken symbolic link"):
        check_file(str(tmp_path / "link"), "--stats-json")
    assert issubclass(OutputError, WormholeError)


def test_write_files_all_or_nothing_and_umask(tmp_path):
    (tmp_path / "old.txt").write_text("old")
    (tmp_path / "blocker").mkdir()              # a folder where a file must go: the last rename fails
    files = {str(tmp_path / "a" / "b" / "new.txt"): "new", str(tmp_path / "old.txt"): b"replaced",
             str(tmp_path / "blocker"): "x"}
    with pytest.raises(OutputError, match="nothing was written"):
        write_files(files)
    assert _tree(str(tmp_path)) == ["old.txt"] and (tmp_path / "old.txt").read_text() == "old"
    assert not (tmp_path / "a").exists()
    old = os.umask(0o027)
    try:
        write_files({str(tmp_path / "a" / "new.txt"): "new", str(tmp_path / "old.txt"): b"replaced"})
    finally:
        os.umask(old)
    assert (tmp_path / "old.txt").read_text() == "replaced" and (tmp_path / "a" / "new.txt").read_text() == "new"
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "new.txt").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "old.txt").st_mode) == 0o640
    assert _tree(str(tmp_path)) == ["a/new.txt", "old.txt"]


def test_random_output_paths(tmp_path):
    """bench/fuzz.py runs thousands of these."""
    from wormhole.testing.fuzzing import fuzz_outputs
    cases, refused, unexpected = fuzz_outputs(150, str(tmp_path), seed=1)
    assert unexpected == []
    assert 0 < refused < cases


# ------------------------------------------------------------------ every command
def _run_args(out, *extra):
    return ["run", "--topology", os.path.join(RUN, "topology.txt"), "--flows", os.path.join(RUN, "flow.txt"),
            "--out", str(out), *extra]


@pytest.mark.parametrize("case", ["out_is_file", "stats_is_folder", "stats_parent_missing", "out_unwritable",
                                  "trace_is_file", "stats_is_fct"])
def test_run_checks_outputs_before_simulating(tmp_path, case, cli):
    (tmp_path / "file").write_text("x")
    out, extra, needle = tmp_path / "o", [], None
    if case == "out_is_file":
        out, needle = tmp_path / "file", "--out is an existing file"
    elif case == "stats_is_folder":
        extra, needle = ["--stats-json", str(tmp_path)], "--stats-json is an existing folder"
    elif case == "stats_parent_missing":
        extra, needle = ["--stats-json", str(tmp_path / "no" / "s.json")], "parent folder of the file does not exist"
    elif case == "out_unwritable":
        if not sys.platform.startswith("linux"):
            pytest.skip("needs /proc")
        out, needle = UNWRITABLE, "cannot create files in /proc"
    elif case == "trace_is_file":
        extra, needle = ["--trace", str(tmp_path / "file")], "--trace is an existing file"
    else:
        extra, needle = ["--stats-json", str(out / "fct.txt")], "--out and --stats-json name the same file"
    _one_line_exit_2(cli(*_run_args(out, *extra)), needle)
    assert _tree(str(tmp_path)) == ["file"]


def test_run_writes_every_output_with_the_umask_mode(tmp_path):
    p = run_cli(*_run_args(tmp_path / "o", "--stats-json", str(tmp_path / "o" / "stats.json"), "--trace",
                           str(tmp_path / "t")))
    assert p.returncode == 0, p.stderr
    assert _tree(str(tmp_path)) == ["o/fct.txt", "o/pfc.txt", "o/stats.json", "t/queues.csv", "t/rates.csv"]
    mask = os.umask(0)
    os.umask(mask)
    for f in ("o/fct.txt", "o/stats.json", "t/rates.csv"):
        assert stat.S_IMODE(os.stat(tmp_path / f).st_mode) == 0o666 & ~mask
    json.loads((tmp_path / "o" / "stats.json").read_text())


def test_other_commands_check_outputs_first(tmp_path, cli):
    (tmp_path / "file").write_text("x")
    cfg = os.path.join(DATA, "hpcc-ns3-runs", "incast8_hpcc", "config.txt")
    _one_line_exit_2(run_cli("fidelity", "--config", cfg, "--out", str(tmp_path / "file")),
                     "--out is an existing file")
    _one_line_exit_2(cli("fidelity", "--out", tmp_path / "f", "--bench", "gpt7b", "--gpus", "16",
                         "--memo-db", tmp_path / "no" / "m.db"), "--memo-db", "does not exist")
    _one_line_exit_2(cli("cluster", "--trace", TRACE16, "--cluster", "testbed-16gpu", "--contention",
                         "none,flow", "--out", tmp_path / "no" / "out"), "parent folder")
    os.makedirs(tmp_path / "c" / "flow" / "jct.png")
    _one_line_exit_2(cli("cluster", "--trace", TRACE16, "--cluster", "testbed-16gpu", "--contention",
                         "none,flow", "--out", tmp_path / "c"), "jct.png is a folder in the way")
    os.removedirs(tmp_path / "c" / "flow" / "jct.png")
    _one_line_exit_2(cli("cluster-pool", "--describe", "x.yaml", "--cluster", "testbed-16gpu", "--out",
                         tmp_path), "--out is an existing folder")
    _one_line_exit_2(cli("plot", "--trace", tmp_path, "--out", tmp_path / "file"), "--out is an existing file")
    _one_line_exit_2(cli("gpt7b", "--gpus", "16", "--memo-db", tmp_path, bench=True),
                     "--memo-db is an existing folder")
    assert _tree(str(tmp_path)) == ["file"] and os.listdir(tmp_path) == ["file"]


def test_cluster_writes_all_reports_or_none(tmp_path, monkeypatch):
    """A failure while writing (here the last file: a folder appears in its way
    during the simulation) leaves no file behind."""
    import argparse

    import wormhole.cluster.command as command
    ap = argparse.ArgumentParser()
    command.add_arguments(ap)
    out = tmp_path / "out"
    args = ap.parse_args(["--trace", TRACE16, "--cluster", "testbed-16gpu", "--contention", "none,fixed",
                          "--limit", "4", "--out", str(out)])
    real = command.plot

    def plot_then_block(jobs, measured, path, title):
        if "fixed" in title:
            os.makedirs(out / "fixed" / "jct.png")
        return real(jobs, measured, path, title)
    monkeypatch.setattr(command, "plot", plot_then_block)
    with pytest.raises(OutputError, match="nothing was written"):
        command.run_cluster(args)
    assert _tree(str(tmp_path)) == []
    os.rmdir(out / "fixed" / "jct.png")
    monkeypatch.setattr(command, "plot", real)
    command.run_cluster(args)
    assert _tree(str(out)) == ["fixed/jct.png", "fixed/jobs.csv", "fixed/summary.json", "jct_cdf.png",
                               "none/jct.png", "none/jobs.csv", "none/summary.json", "summary.csv"]
