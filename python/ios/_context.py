"""Engine and ExecutionContext: the extension's objects with Python conveniences (PyTorch tensors,
paths, a default context)."""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from . import _ios


def _torch_module(x: Any) -> Any:
    """torch, where `x` is a torch tensor (torch is never imported by this package otherwise)."""
    t = type(x)
    if t.__module__.startswith("torch") and t.__name__ in ("Tensor", "Parameter"):
        import torch

        return torch
    return None


def _raw_stream(torch: Any, device_index: int) -> int:
    """PyTorch's current stream on the device, as a cudaStream_t int."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what torch.compile's kernels use: cheaper
    return raw(device_index) if raw is not None else torch.cuda.current_stream(device_index).cuda_stream


def _cuda_array_address(x: Any, shape: Tuple[int, ...], what: str, writable: bool) -> int:
    """The device address of an object speaking ``__cuda_array_interface__`` (version 2 or 3), checked to be a
    float32 contiguous array of ``shape``; raises ios.Error naming what differs."""
    cai = x.__cuda_array_interface__
    if cai.get("typestr") != "<f4":
        raise _ios.Error(f"{what} must be float32 (its __cuda_array_interface__ typestr is {cai.get('typestr')!r})")
    got = tuple(int(d) for d in cai.get("shape", ()))
    if got != shape:
        raise _ios.Error(f"{what} has shape {got}, the engine takes {shape} (batch, channels, height, width)")
    strides = cai.get("strides")
    if strides is not None:
        expected, step = [], 4
        for d in reversed(shape):
            expected.append(step)
            step *= d
        if any(s != e for s, e, d in zip(strides, reversed(expected), shape) if d != 1):
            raise _ios.Error(f"{what} must be contiguous (NCHW, row-major)")
    if cai.get("mask") is not None:
        raise _ios.Error(f"{what} is a masked array")
    address, readonly = cai["data"]
    if writable and readonly:
        raise _ios.Error(f"{what} is read-only")
    return int(address)


def _cuda_array_stream(x: Any) -> int:
    """The stream a ``__cuda_array_interface__`` (version 3) names its data ready on; 0 without one. Its
    values 1 and 2 are CUDA's legacy and per-thread default streams, which are those handles."""
    stream = x.__cuda_array_interface__.get("stream")
    return int(stream) if stream else 0


class ExecutionContext:
    """Runs an engine. Inferences of one context share its buffers: use one context per thread, or
    queue them on one stream. Make one with ``Engine.create_context()``."""

    def __init__(self, engine: "Engine", handle: _ios.ExecutionContext):
        self._engine = engine
        self._ctx = handle
        self._input_shape = tuple(engine.input_shape)
        self._output_shape = tuple(engine.output_shape)
        self._gpu = handle.gpu_index

    @property
    def engine(self) -> "Engine":
        return self._engine

    @property
    def device(self) -> str:
        """``gpu`` or ``cpu`` (the reference executor)."""
        return self._ctx.device

    def run(self, input: Any) -> np.ndarray:
        """One inference from host memory (anything NumPy reads: copied to float32), waited for."""
        return self._ctx.run(np.ascontiguousarray(input, dtype=np.float32))

    def enqueue(self, input: Any, output: Any, stream: Optional[int] = None) -> None:
        """One inference queued on a CUDA stream, not waited for; no copy.

        ``input`` and ``output`` are float32 contiguous NCHW tensors of the engine's shapes on the
        context's GPU: PyTorch tensors, CuPy arrays or anything else speaking DLPack or
        ``__cuda_array_interface__`` (Numba, older CuPy). ``stream`` is a ``cudaStream_t`` as an int;
        None: PyTorch's current stream for torch tensors, the input's own stream where its
        ``__cuda_array_interface__`` names one, else the default stream (0).
        """
        if not hasattr(input, "__dlpack__") and hasattr(input, "__cuda_array_interface__"):
            address = _cuda_array_address(input, self._input_shape, "input", writable=False)
            if not hasattr(output, "__cuda_array_interface__"):
                raise _ios.Error("output must speak __cuda_array_interface__ as the input does")
            out = _cuda_array_address(output, self._output_shape, "output", writable=True)
            self._ctx._enqueue_addresses(address, out, _cuda_array_stream(input) if stream is None else int(stream))
            return
        if stream is None:
            torch = _torch_module(input)
            stream = _raw_stream(torch, input.device.index) if torch is not None and input.is_cuda else 0
        self._ctx.enqueue(input, output, int(stream))

    def __call__(self, input: Any) -> Any:
        """One inference. A CUDA torch tensor gives a new CUDA torch tensor, queued on the current stream
        (the input is converted to float32 contiguous where it is not); host arrays and CPU torch tensors
        are copied through ``run`` and give the same kind back."""
        torch = _torch_module(input)
        if torch is not None and input.is_cuda and self._gpu >= 0:
            x = input
            if x.dtype is not torch.float32 or not x.is_contiguous():
                x = x.to(torch.float32).contiguous()
            out = torch.empty(self._output_shape, dtype=torch.float32, device=x.device)
            stream = _raw_stream(torch, x.device.index)
            if x.shape != self._input_shape or x.device.index != self._gpu:
                self._ctx.enqueue(x.detach(), out, stream)  # the checked path: raises, naming what differs
            else:  # checked here: the addresses alone cost less than DLPack's exchange (per-call overhead)
                self._ctx._enqueue_pointers(x.data_ptr(), out.data_ptr(), stream)
            return out
        if torch is not None:
            result = self.run(input.detach().cpu().numpy())
            return torch.from_numpy(result).to(input.device)
        return self.run(input)


class Engine:
    """A built engine: graph, weights, schedule, execution and tuned kernels. Make one with
    ``ios.build`` or ``ios.load``."""

    def __init__(self, handle: _ios.Engine):
        self._e = handle
        self._default: Optional[ExecutionContext] = None

    name = property(lambda self: self._e.name, doc="the network's name")
    input_shape: Tuple[int, int, int, int] = property(  # type: ignore[assignment]
        lambda self: self._e.input_shape, doc="(batch, channels, height, width) of the input"
    )
    output_shape: Tuple[int, int, int, int] = property(  # type: ignore[assignment]
        lambda self: self._e.output_shape, doc="(batch, channels, height, width) of the output"
    )
    batch = property(lambda self: self._e.batch, doc="the batch size the engine runs")
    precision = property(lambda self: self._e.precision, doc="fp32, tf32, fp16 or bf16")
    layout = property(lambda self: self._e.layout, doc="nchw or nhwc")
    device = property(lambda self: self._e.device, doc="gpu, or cpu (the reference executor)")
    schedule = property(lambda self: self._e.schedule, doc="the policy that made the schedule")
    stages = property(lambda self: self._e.stages, doc="stages of the schedule")
    execution = property(lambda self: self._e.execution, doc="how the schedule executes (staged, dataflow...)")
    kernel_choices = property(lambda self: self._e.kernel_choices, doc="tuned convolution kernels in the plan")
    built_for = property(lambda self: self._e.built_for, doc="the GPU the kernels were tuned on ('' if none)")

    def save(self, path: "os.PathLike[str] | str") -> None:
        """Writes the plan file (atomically: a failed write leaves an existing file as it was)."""
        self._e.save(os.fspath(path))

    def create_context(self) -> ExecutionContext:
        """A context with buffers (and on the GPU streams and a CUDA graph) of its own; contexts of one
        engine run side by side."""
        return ExecutionContext(self, self._e.create_context())

    def __call__(self, input: Any) -> Any:
        """One inference on the engine's default context (made on first use); see
        ``ExecutionContext.__call__``."""
        if self._default is None:
            self._default = self.create_context()
        return self._default(input)

    def __repr__(self) -> str:
        return (
            f"<ios.Engine {self.name}: {self.schedule}, {self.stages} stages, {self.precision} {self.layout}, "
            f"batch {self.batch}, {self.device}, input {self.input_shape}, output {self.output_shape}>"
        )


def _smallest_holding(engines: Sequence["Engine"], n: int) -> "Engine":
    """Of engines by increasing batch, the first that holds n samples (``ios.Error`` where none does)."""
    if n < 1:
        raise _ios.Error(f"a batch of {n} samples")
    for e in engines:
        if e.batch >= n:
            return e
    raise _ios.Error(
        f"a batch of {n} samples: the largest of the engine's batch buckets "
        f"({', '.join(str(e.batch) for e in engines)}) is {engines[-1].batch}"
    )


class BucketsContext:
    """Execution contexts of engines of one network at several batch sizes, one context each: a call of n
    samples runs on the smallest engine of at least n, the rows past n zeros, and gives n rows. Like an
    ExecutionContext, use one per thread (a Triton model instance holds one)."""

    def __init__(self, engines: Sequence["Engine"]):
        self._engines = sorted(engines, key=lambda e: e.batch)
        self._contexts = {e.batch: e.create_context() for e in self._engines}

    def __call__(self, input: Any) -> Any:
        """One inference of ``len(input)`` samples; see ``ExecutionContext.__call__``."""
        n = int(input.shape[0])
        engine = _smallest_holding(self._engines, n)
        context = self._contexts[engine.batch]
        if engine.batch == n:
            return context(input)
        torch = _torch_module(input)
        if torch is not None:
            padded = torch.zeros((engine.batch,) + tuple(input.shape[1:]), dtype=torch.float32, device=input.device)
            padded[:n] = input
        else:
            input = np.asarray(input, dtype=np.float32)
            padded = np.zeros((engine.batch,) + input.shape[1:], dtype=np.float32)
            padded[:n] = input
        return context(padded)[:n]


class BatchBuckets:
    """Engines of one network for several batch sizes (TensorRT's optimization profiles): each is searched,
    tuned and timed at its batch, since IOS specializes a schedule to it. A call of n samples runs on the
    smallest bucket of at least n; the rows past n are zeros, and the output has n rows. Make them with
    ``ios.build(model, batch=[1, 4, 16])`` or ``ios.load``."""

    def __init__(self, handle: _ios.BatchBuckets):
        self._b = handle
        self.engines = [Engine(e) for e in handle.engines]
        self._default: Optional[BucketsContext] = None

    @property
    def batches(self) -> list:
        """The buckets' batch sizes, increasing."""
        return [e.batch for e in self.engines]

    def engine_for(self, n: int) -> Engine:
        """The engine of the smallest bucket that holds n samples (``ios.Error`` where none does)."""
        return _smallest_holding(self.engines, int(n))

    def save(self, path: "os.PathLike[str] | str") -> None:
        """Writes every bucket's plan into one file (atomically)."""
        self._b.save(os.fspath(path))

    def create_context(self) -> BucketsContext:
        """A context per bucket, for one thread."""
        return BucketsContext(self.engines)

    def __call__(self, input: Any) -> Any:
        """One inference of ``len(input)`` samples on the default contexts (made on first use)."""
        if self._default is None:
            self._default = self.create_context()
        return self._default(input)

    def __repr__(self) -> str:
        e = self.engines[0]
        return f"<ios.BatchBuckets {e.name}: batches {self.batches}, {e.precision} {e.layout}, {e.device}>"
