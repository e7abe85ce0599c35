"""The bench's report says why an accelerated run skipped what it did: skipped events by source, the
partitions refused by the test that blocked them, skip-backs and mirror partings by cause, and the
ACKs it simulated by why their partitions were not skipped."""
import json

from wormhole.bench import main

ARGS = ["gpt13b", "--gpus", "32", "--layers", "1", "--no-progress"]


def test_json_accounts_for_every_skipped_event(capsys):
    assert main(ARGS + ["--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    by = rep["events_skipped_by"]
    assert rep["events_skipped"] > 0 and sum(by.values()) == rep["events_skipped"]
    assert by.get("mirror", 0) > 0          # the rail-local rings: seven rails mirror the first
    assert rep["skip_rejects"] and all(v > 0 for v in rep["skip_rejects"].values())
    assert all(v > 0 for d in ("skip_backs_by", "mirror_parts_by") for v in rep[d].values())
    why = rep["acks_by"]
    assert why and all(v > 0 for v in why.values())
    assert sum(why.values()) <= rep["packets"]          # (packets: data and control sent, simulated)


def test_text_report_names_sources_and_refusals(capsys):
    assert main(ARGS) == 0
    out = capsys.readouterr().out
    src = [ln for ln in out.splitlines() if ln.strip().startswith("skipped by")]
    assert len(src) == 1 and "mirror" in src[0] and "%" in src[0]
    ref = [ln for ln in out.splitlines() if ln.strip().startswith("refused by")]
    assert len(ref) == 1 and "skip-backs by" in ref[0] and "mirrors parted by" in ref[0]
    acks = [ln for ln in out.splitlines() if ln.strip().startswith("simulated ACKs by why")]
    assert len(acks) == 1 and "window_filling" in acks[0] and "%" in acks[0]


def test_full_run_has_no_accounting(capsys):
    assert main(["gpt13b", "--gpus", "16", "--layers", "1", "--no-progress", "--mode", "full", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["events_skipped"] == 0 and rep["events_skipped_by"] == {} and rep["skip_rejects"] == {}
    assert rep["acks_by"] == {}
    assert main(["gpt13b", "--gpus", "16", "--layers", "1", "--no-progress", "--mode", "full"]) == 0
    assert "skipped by" not in capsys.readouterr().out
