"""wormhole: fast packet-level simulation of AI-training cluster networks.

Public names: ``Network`` (the API), ``Config`` (the parameter registry),
``Topology`` with its readers and builders, the ``units`` helpers and the
``WormholeError`` family.
"""
from . import builders, units
from .builders import dumbbell, fat_tree, leaf_spine, rail_optimized, star
from .config import Config
from .errors import (ConfigError, FlowFileError, NotAvailableError, ResourceLimitError, RoutingError,
                     TopologyError, WormholeError)
from .fabric import Fabric
from .flows import FlowSpec, read_flows
from .network import FlowResult, Network
from .topology import Topology, read_topology, write_topology

__version__ = "0.1.0"

__all__ = [
    "Network", "Config", "Topology", "Fabric", "FlowResult", "FlowSpec",
    "read_topology", "write_topology", "read_flows",
    "star", "dumbbell", "leaf_spine", "fat_tree", "rail_optimized", "builders", "units",
    "WormholeError", "TopologyError", "FlowFileError", "ConfigError", "RoutingError",
    "ResourceLimitError", "NotAvailableError",
]
