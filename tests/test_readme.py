"""The README's Network API example runs as written."""
import os
import re

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def test_readme_api_example_runs(capsys):
    text = open(README).read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README lost its Python example"
    ns = {}
    exec(compile(blocks[0], "README.md", "exec"), ns)
    log = ns["log"]
    assert [x[0] for x in log] == ["reduce", "bcast"]
    assert all(x[-1] > 0 for x in log)
    res = ns["net"].results
    assert res["start"][1] == res["finish"][0] + 5 * 1000 * 1000
