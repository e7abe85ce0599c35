"""The README runs as written: every Python block, and its two set-up commands
from the root of a fresh clone."""
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
INNER = "WORMHOLE_README_INNER"     # set in the fresh clone's own test run, so it does not recurse


def _blocks(kind):
    return re.findall(r"```%s\n(.*?)```" % kind, open(README).read(), re.S)


def test_readme_api_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ns = {}
    exec(compile(_blocks("python")[0], "README.md", "exec"), ns)
    log = ns["log"]
    assert [x[0] for x in log] == ["message"] * 3 + ["delivered", "acked", "bcast done"]
    assert all(x[-1] > 0 for x in log)
    net = ns["net"]
    res, msg = net.results, net.messages
    assert res["delivered"][0] < res["finish"][0]           # delivered before acknowledged
    assert res["start"][2] == res["delivered"][0] + 5 * 1000 * 1000
    assert list(msg["delivered"]) == [x[2] for x in log[:3]] and (msg["delivered"] < msg["done"]).all()


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_every_readme_python_block_runs_as_written(index, tmp_path):
    """Each block on its own, in a fresh interpreter (a reader copies one block), with a time limit."""
    code = _blocks("python")[index]
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, "README python block %d failed:\n%s" % (index, r.stderr[-2000:])


def readme_commands():
    """The two commands of the README's first block, comments removed."""
    first = _blocks("bash")[0]
    cmds = [ln.split("  #")[0].strip() for ln in first.splitlines() if ln.strip()]
    return cmds


def test_readme_starts_with_the_two_commands():
    assert open(README).read().lstrip().startswith("```bash")
    cmds = readme_commands()
    assert len(cmds) == 2
    assert "wormhole.bench gpt13b --gpus 128" in cmds[0] and "pytest" in cmds[1]


@pytest.mark.skipif(os.environ.get(INNER) == "1", reason="inside the fresh clone's own run of the suite")
@pytest.mark.skipif(shutil.which("git") is None or not os.path.isdir(os.path.join(ROOT, ".git")),
                    reason="needs git and a git checkout to clone")
def test_readme_commands_from_a_fresh_clone(tmp_path):
    """git clone, a new virtual environment, then the README's two commands as written, from the clone's
    root (where `python -m` and pytest put the source tree first on sys.path).  Packages come from the
    registry (pip's cache makes that quick after the first time).  Tests the committed HEAD."""
    clone = tmp_path / "wormhole"
    subprocess.run(["git", "clone", "--quiet", ROOT, str(clone)], check=True, timeout=120)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = str(venv / "bin") + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = str(venv)
    env[INNER] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    bench, suite = readme_commands()
    r = subprocess.run(["bash", "-c", bench], cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, "README's first command failed:\n%s\n%s" % (r.stdout[-3000:], r.stderr[-3000:])
    assert "iteration" in r.stdout and "GPT" in r.stdout.upper(), r.stdout[-2000:]
    r = subprocess.run(["bash", "-c", suite], cwd=clone, env=env, capture_output=True, text=True, timeout=1500)
    assert r.returncode == 0, "README's second command failed:\n%s\n%s" % (r.stdout[-3000:], r.stderr[-3000:])
    assert re.search(r"\d+ passed", r.stdout), r.stdout[-2000:]
