"""wormhole.cluster.perjob: a run's error split by job class, by hand."""
import os
import subprocess
import sys

import pytest

from wormhole.cluster import read_measured
from wormhole.cluster.perjob import by_model, classify, decompose, read_ours
from wormhole.cluster.trace import TraceError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS = ("job_id,model,gpus,placement,arrival,start,end,wait,training,jct,standalone,mean_factor,model_source\n"
        "1,bert,4,0:2 1:2,0,0,300,0,300,300,100,3,pool\n"           # ours 3.0x, hardware 0.9x: A
        "2,inception3,4,3:4,0,0,100,0,100,100,100,1,pool\n"         # ours 1.0x, hardware 4.0x: B
        "3,vgg16,8,0:4 1:4,0,0,250,0,250,250,100,2,pool\n"          # ours 2.5x, hardware 2.0x: C
        "4,resnet44,2,2:2,0,0,100,0,100,100,100,1,pool\n")          # both 1.0x: D
MEASURED = ("job_id,arrival_times,wait_times,training_time,jcts\n"
            "id1,0,0,90,90\nid2,0,0,400,400\nid3,0,0,200,200\nid4,0,0,95,95\n")


def write(tmp_path, ours=OURS, measured=MEASURED):
    a, b = tmp_path / "jobs.csv", tmp_path / "m.csv"
    a.write_text(ours)
    b.write_text(measured)
    return str(a), str(b)


def test_classes_and_sums_by_hand(tmp_path):
    """|errors| 210, 300, 50, 5 s (sum 565); biases +210, -300, +50, +5;
    MAPE per class 210 / 90, 300 / 400, 50 / 200, 5 / 95."""
    a, b = write(tmp_path)
    classes, rows = decompose(read_ours(a), read_measured(b))
    assert [r[1] for r in sorted(rows)] == ["A", "B", "C", "D"]
    for k, err, bias, mape in (("A", 210, 210, 210 / 90), ("B", 300, -300, 300 / 400), ("C", 50, 50, 50 / 200),
                               ("D", 5, 5, 5 / 95)):
        c = classes[k]
        assert c["jobs"] == 1 and c["abs_s"] == pytest.approx(err) and c["signed_s"] == pytest.approx(bias)
        assert c["share"] == pytest.approx(err / 565) and c["mape"] == pytest.approx(100 * mape)
    ours = read_ours(a)
    assert by_model(ours, rows) == {"inception3": (1, pytest.approx(4.0)), "vgg16": (1, pytest.approx(0.8))}


def test_thresholds():
    assert classify(1.06, 1.0) == "A" and classify(1.05, 1.0) == "D"      # ours must exceed 1.05
    assert classify(1.01, 1.31) == "B" and classify(1.01, 1.3) == "D"
    assert classify(1.2, 1.2) == "C" and classify(1.0, 1.0) == "D"


def test_bad_files_are_named(tmp_path):
    a, b = write(tmp_path, ours=OURS.replace("300,300,100,3", "300,300,x,3"))
    with pytest.raises(TraceError) as e:
        read_ours(a)
    assert "jobs.csv:2:" in str(e.value) and "x" in str(e.value)
    a, b = write(tmp_path, measured=MEASURED.replace("id4,0,0,95,95\n", ""))
    with pytest.raises(TraceError) as e:
        decompose(read_ours(a), read_measured(b))
    assert "only one of the two files: 4" in str(e.value)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "cluster_perjob.py"), "--jobs", b,
                        "--measured", b], capture_output=True, text=True)
    assert p.returncode != 0 and "cluster_perjob: error" in p.stderr and "Traceback" not in p.stderr
