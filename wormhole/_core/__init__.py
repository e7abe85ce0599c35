"""The compiled kernel.  If this package was imported from a source tree whose
extensions were never built (``python -m`` and pytest put the current folder
first on ``sys.path``, so an unbuilt clone shadows an installed copy), say so
and name the fix instead of failing later with a bare ModuleNotFoundError."""
import importlib.machinery
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _built(name):
    return any(os.path.exists(os.path.join(_HERE, name + s)) for s in _SUFFIXES)


if not all(_built(n) for n in ("kernel", "fluid", "routing")):
    _tree = os.path.dirname(os.path.dirname(_HERE))
    raise ImportError(
        "wormhole's compiled kernel is not built in %s (an unbuilt source tree is first on sys.path); "
        "run `pip install -e .` in %s, or run from outside that folder to use an installed copy"
        % (_HERE, _tree))
