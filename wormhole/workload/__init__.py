"""Workloads: collectives and training iterations turned into flows with
dependencies, driven through the Network API."""
from .collectives import (AllGather, AllToAll, Broadcast, COLLECTIVES, ReduceScatter, RingAllReduce, SendRecv,
                          Transport, alpha_beta_ring, ring_order)
from .models import GPUS, GpuSpec, ModelSpec, Parallel, load_preset, preset_names
from .nvls import NvlsAllGather, NvlsAllReduce, NvlsReduceScatter, NvlsTreeAllReduce
from .simai import SimAIIteration, read_simai
from .training import TrainingJob
from .chakra import ChakraError, ChakraRun, ChakraTrace, run_chakra, write_training
from .htsim import HtsimError, HtsimRun, read_cm, run_cm

__all__ = ["AllGather", "AllToAll", "Broadcast", "COLLECTIVES", "ReduceScatter", "RingAllReduce", "SendRecv",
           "Transport", "alpha_beta_ring", "ring_order", "GPUS", "GpuSpec", "ModelSpec", "Parallel",
           "load_preset", "preset_names", "SimAIIteration", "read_simai", "TrainingJob",
           "ChakraError", "ChakraRun", "ChakraTrace", "run_chakra", "write_training",
           "HtsimError", "HtsimRun", "read_cm", "run_cm",
           "NvlsAllGather", "NvlsAllReduce", "NvlsReduceScatter", "NvlsTreeAllReduce"]
