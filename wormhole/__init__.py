"""wormhole: fast packet-level simulation of AI-training cluster networks.

Public names: ``Network`` (the API), ``Config`` (the parameter registry),
``Topology`` with its readers and builders, the ``units`` helpers and the
``WormholeError`` family (``ApiError`` for misuse of the API), and the
result types ``FlowResult`` / ``MessageResult`` / ``PortInfo``.

The names are loaded on first use (module ``__getattr__``), so that
``import wormhole`` or a command that needs only part of the package does not
pay for NumPy and the compiled kernel up front; ``wormhole.X`` and
``from wormhole import X`` work as if everything had been imported.
"""
import importlib

__version__ = "0.1.0"

# public name -> module that defines it (a module itself where the name is the module)
_NAMES = {
    "Network": "network", "FlowResult": "network", "MessageResult": "network", "PortInfo": "network",
    "Config": "config",
    "Topology": "topology", "read_topology": "topology", "write_topology": "topology",
    "Fabric": "fabric",
    "FlowSpec": "flows", "read_flows": "flows",
    "star": "builders", "dumbbell": "builders", "leaf_spine": "builders", "fat_tree": "builders",
    "rail_optimized": "builders", "add_nvswitches": "nvswitch",
    "WormholeError": "errors", "TopologyError": "errors", "FlowFileError": "errors", "ConfigError": "errors",
    "RoutingError": "errors", "ResourceLimitError": "errors", "NotAvailableError": "errors", "ApiError": "errors",
}

__all__ = [
    "Network", "Config", "Topology", "Fabric", "FlowResult", "MessageResult", "PortInfo", "FlowSpec",
    "read_topology", "write_topology", "read_flows",
    "star", "dumbbell", "leaf_spine", "fat_tree", "rail_optimized", "add_nvswitches", "builders", "units",
    "WormholeError", "TopologyError", "FlowFileError", "ConfigError", "RoutingError",
    "ResourceLimitError", "NotAvailableError", "ApiError",
]


def __getattr__(name):
    """Load a public name, or a submodule (``wormhole.network``, ...), on first use."""
    if name in _NAMES:
        value = getattr(importlib.import_module("." + _NAMES[name], __name__), name)
    elif not name.startswith("__"):
        try:
            value = importlib.import_module("." + name, __name__)
        except ModuleNotFoundError as e:
            if e.name != __name__ + "." + name:
                raise
            raise AttributeError("module %r has no attribute %r" % (__name__, name)) from None
    else:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
