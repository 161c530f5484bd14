"""IOS: an inference engine for CNNs on NVIDIA GPUs that schedules operators across CUDA streams.

    import ios
    engine = ios.build("resnet50.onnx", precision="fp16")   # search a schedule, tune kernels
    engine.save("resnet50.plan")                             # graph, weights, schedule, kernels
    engine = ios.load("resnet50.plan")                       # another process: no search, no tuning
    y = engine(x)                                            # a CUDA torch tensor in, one out (no copy)

    fast = ios.compile(torch_module, example_input, precision="fp16")   # from PyTorch, plans cached on disk

Without a GPU (or in a build without the cuDNN runtime) engines are built with the analytic cost model
and run on the CPU reference executor: fp32 loops for checking, not a CPU backend.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _ios
from ._ios import Error, gpu_present, has_gpu_runtime
from ._context import BatchBuckets, BucketsContext, Engine, ExecutionContext

__version__: str = _ios.__version__

__all__ = [
    "BatchBuckets",
    "BucketsContext",
    "Engine",
    "Error",
    "ExecutionContext",
    "build",
    "compile",
    "gpu_present",
    "has_gpu_runtime",
    "load",
    "models",
    "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]


def build(
    model: PathLike,
    *,
    device: Optional[str] = None,
    precision: str = "fp32",
    layout: str = "auto",
    policy: str = "ios-both",
    batch: Union[int, Sequence[int]] = 1,
    r: int = 3,
    s: int = 8,
    cost_model: str = "auto",
    exec: str = "auto",
    prefetch_weights: str = "off",
    prefetch_ahead: int = 1,
    concat_writes: str = "in-place",
    cuda_graph: bool = True,
    conv_engine: str = "auto",
    own_kernels: bool = True,
    kernel_cache: Optional[str] = None,
    max_part_size: int = 100,
    search_budget: Optional[int] = None,
    memory_budget: Optional[float] = None,
    stage_timing: Optional[str] = None,
    stage_cache: Optional[PathLike] = None,
    devices: Optional[str] = None,
    workers_per_gpu: Optional[int] = None,
    weights: Optional[PathLike] = None,
    schedule: Optional[PathLike] = None,
    verbose: bool = False,
) -> Union[Engine, BatchBuckets]:
    """Builds an engine: searches a schedule, tunes its kernels and picks how it executes.

    The options are the ``ios build`` command's (``docs/cli.md``), with the same names and checks.

    Args:
      model: an ONNX file (``*.onnx``, its own weights), an IOS graph file (``*.json``) or a built-in
        model's name (``ios.models()``).
      device: ``"gpu"`` or ``"cpu"`` (the CPU reference executor); None: the GPU where there is one.
      precision: ``fp32`` (strict), ``tf32``, ``fp16`` or ``bf16``.
      layout: ``nchw``, ``nhwc`` or ``auto`` (NHWC where tensor cores run).
      policy: ``ios-both``, ``ios-merge``, ``ios-parallel``, ``greedy``, ``sequential`` or ``opara``.
      batch: the batch size the engine runs (its schedule and kernels are specialized to it); a list of
        sizes builds one engine per size, returned as ``BatchBuckets``, which runs a call of n samples on
        the smallest bucket of at least n.
      r, s: IOS's pruning: at most r operators per group, s groups per stage.
      cost_model: ``measured`` (stages timed on the GPU), ``analytic``, or ``auto`` (measured on a GPU).
      exec: ``staged``, ``dataflow``, ``dataflow-ordered``, or ``auto`` (staged and dataflow timed, the
        faster kept).
      prefetch_weights: ``off``, ``on`` or ``auto``: a CUDA graph prefetches the weights of the stages
        ``prefetch_ahead`` ahead into the L2.
      concat_writes: ``in-place``, ``conv-copy`` or ``auto``.
      cuda_graph: replay the whole network as one CUDA graph.
      conv_engine: ``auto``, ``graph``, ``graph-exhaustive``, ``graph-rtc`` or ``legacy``.
      own_kernels: our depthwise and pointwise convolution kernels timed against cuDNN's engines, kept
        where faster.
      kernel_cache: the file of tuned kernels shared between builds; None: ``ios``'s default file;
        ``"none"``: not persisted.
      max_part_size, search_budget, memory_budget: the DP's limits (``ios build --help``).
      stage_timing: how the measured cost model times a stage (``ios build --help``).
      stage_cache: a JSON file keeping the search's stage figures between builds (None: not kept).
      devices, workers_per_gpu: a measured DP search spread over these GPUs (``"all"`` or ``"0,1"``), with
        this many workers on each (None: ``ios build``'s defaults).
      weights: a weights file for a graph file or model name (an ONNX file brings its own).
      schedule: a schedule file to use instead of searching.
      verbose: report each convolution's engine and every fallback on stderr.
    """
    options = dict(
        device=device,
        precision=precision,
        layout=layout,
        policy=policy,
        batch=batch,
        r=r,
        s=s,
        cost_model=cost_model,
        exec=exec,
        prefetch_weights=prefetch_weights,
        prefetch_ahead=prefetch_ahead,
        concat_writes=concat_writes,
        cuda_graph=cuda_graph,
        conv_engine=conv_engine,
        own_kernels=own_kernels,
        kernel_cache=kernel_cache,
        max_part_size=max_part_size,
        search_budget=search_budget,
        memory_budget=memory_budget,
        stage_timing=stage_timing,
        stage_cache=os.fspath(stage_cache) if stage_cache is not None else None,
        devices=devices,
        workers_per_gpu=workers_per_gpu,
        verbose=verbose,
    )
    weights_path = os.fspath(weights) if weights is not None else ""
    if not isinstance(batch, int):
        if schedule is not None:
            raise Error("a schedule file is searched at one batch size: give one batch with it")
        del options["batch"]
        return BatchBuckets(_ios.build_buckets(os.fspath(model), options, list(batch), weights=weights_path))
    handle = _ios.build(
        os.fspath(model),
        options,
        weights=weights_path,
        schedule=os.fspath(schedule) if schedule is not None else "",
    )
    return Engine(handle)


def load(
    path: PathLike, *, device: Optional[str] = None, kernel_cache: Optional[str] = None, verbose: bool = False
) -> Union[Engine, BatchBuckets]:
    """Loads an engine (or batch buckets, whichever the file holds) from a plan file: no search, no tuning.

    On the GPU the plan must have been built on the same GPU model and library versions (``ios.Error``
    says which differ); ``device="cpu"`` runs any plan on the CPU reference executor.
    """
    path = os.fspath(path)
    if _ios.plan_file_kind(path) == "buckets":
        return BatchBuckets(_ios.load_buckets(path, device or "", kernel_cache or "", verbose))
    return Engine(_ios.load(path, device or "", kernel_cache or "", verbose))


def models() -> Sequence[Tuple[str, str]]:
    """The built-in networks, as (name, description) pairs."""
    return _ios.models()


def compile(module: Any, example_inputs: Any, **options: Any) -> Any:
    """A PyTorch module as an IOS engine, in a module whose outputs match the module's.

    Exports ``module`` to ONNX with PyTorch's default exporter, builds an engine (``options`` as
    ``ios.build``'s, plus ``cache_dir``, ``rebuild`` and ``check``) and caches its plan on disk, keyed by
    the module, its weights, the input shape, the options, the GPU and the versions: a second process
    loads the plan instead of building. See ``docs/python.md``.
    """
    from ._torch import compile_module

    return compile_module(module, example_inputs, **options)
