"""The kernel benchmark's parallel columns (``bench kernel --threads``): the last count's processes are
also run on one thread, which splits the speedup over the sequential run into what the cut costs and what
the threads gain on it."""
import json

from wormhole.bench import kernel_main


def _row(capsys, threads):
    kernel_main(["--only", "fattree8_permutation_1MB", "--cc", "hpcc", "--repeat", "1", "--json",
                 "--no-reference", "--threads", threads])
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_the_cut_runs_on_one_thread_too(capsys):
    r = _row(capsys, "1,2")
    p = r["parallel"]
    assert p["lps"] == 2 and p["fct_identical"]
    o = p["one_thread"]
    assert o["lps"] == 2 and o["wall_seconds"] > 0
    # the two factors are the measured walls' ratios, and their quotient is the speedup over the sequential run
    assert abs(o["work"] - o["wall_seconds"] / r["wall_seconds"]) < 2e-3
    assert abs(o["speedup_same_cut"] - o["wall_seconds"] / p["wall_seconds"]["2"]) < 2e-3
    assert abs(o["speedup_same_cut"] / o["work"] - p["speedup_vs_sequential"]) < 0.01 * p["speedup_vs_sequential"]


def test_one_thread_alone_has_no_cut_to_split(capsys):
    p = _row(capsys, "1")["parallel"]
    assert p["lps"] == 1 and "one_thread" not in p and p["fct_identical"]


def test_the_table_names_the_split(capsys):
    kernel_main(["--only", "fattree8_permutation_1MB", "--cc", "hpcc", "--repeat", "1", "--no-reference",
                 "--threads", "2"])
    lines = capsys.readouterr().out.splitlines()
    head = next(line for line in lines if line.startswith("scenario"))
    row = next(line for line in lines if line.startswith("fattree8_permutation_1MB"))
    assert head.endswith("1 thr s   work  x cut  same")
    one, work, cut, same = row.split()[-4:]
    assert same == "yes" and float(one) > 0
    assert abs(float(cut) / float(work) - float(row.split()[-5])) < 0.02    # x seq = x cut / work
