"""ios.compile: a PyTorch module exported to ONNX, built into an engine, and wrapped as a module.

Plans are cached on disk, keyed by what decides the engine (the module's code and weights, the input
shape, the build options, the GPU and the versions), so a second process loads instead of building.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from typing import Any, Dict, Optional, Sequence, Union

import torch

from . import _ios
from ._context import BatchBuckets, Engine

# Relative L2 between the engine's output and the module's own on the example input, per precision.
# fp32 allows for PyTorch's default TF32 convolutions (torch.backends.cudnn.allow_tf32).
_TOLERANCE = {"fp32": 5e-3, "tf32": 5e-3, "fp16": 1e-2, "bf16": 3e-2}


def default_cache_dir() -> str:
    """$IOS_CACHE_DIR, else $XDG_CACHE_HOME/ios/plans, else ~/.cache/ios/plans."""
    if os.environ.get("IOS_CACHE_DIR"):
        return os.environ["IOS_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ios", "plans")


def _single_input(example_inputs: Any) -> torch.Tensor:
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    if len(inputs) != 1 or not isinstance(inputs[0], torch.Tensor):
        raise _ios.Error(f"ios.compile takes one input tensor (N, C, H, W); got {len(inputs)} inputs")
    x = inputs[0]
    if x.dim() != 4:
        raise _ios.Error(f"ios.compile takes one 4-D input (N, C, H, W); got shape {tuple(x.shape)}")
    return x


def _plan_key(module: torch.nn.Module, x: torch.Tensor, options: Dict[str, Any]) -> str:
    """What decides the engine: a change to any part gives another key (and another plan file)."""
    h = hashlib.sha256()
    device = options.get("device") or ("gpu" if _ios.gpu_present() else "cpu")
    gpu = torch.cuda.get_device_name() if device == "gpu" and torch.cuda.is_available() else ""
    meta = {
        "ios": _ios.__version__,
        "torch": torch.__version__,
        "class": f"{type(module).__module__}.{type(module).__qualname__}",
        "module": repr(module),
        "input": [list(x.shape), str(x.dtype)],
        "options": {k: options[k] for k in sorted(options)},
        "device": device,
        "gpu": gpu,
    }
    h.update(json.dumps(meta, sort_keys=True, default=str).encode())
    for name, tensor in module.state_dict().items():
        t = tensor.detach().contiguous().cpu()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:32]


def _export(module: torch.nn.Module, x: torch.Tensor, path: str) -> None:
    """ONNX with the exporter PyTorch uses by default, in eval mode (BatchNorm's running statistics)."""
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.onnx.export(module, (x,), path)
            if program is not None and hasattr(program, "save"):  # the torch.export-based exporter
                program.save(path)
    finally:
        module.train(was_training)


def _rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().flatten(), b.double().flatten()
    return float(torch.linalg.vector_norm(a - b) / max(float(torch.linalg.vector_norm(b)), 1e-30))


class CompiledModule(torch.nn.Module):
    """The module's forward as an IOS engine: one input of the shape it was compiled for, or, compiled with
    a list of batch sizes, of any batch up to the largest (run on the smallest bucket holding it)."""

    def __init__(
        self,
        engine: Union[Engine, BatchBuckets],
        output_shape: torch.Size,
        plan_path: str,
        rel_l2: Optional[float],
    ):
        super().__init__()
        self.engine = engine
        self.context = engine.create_context()
        self.output_shape = tuple(output_shape)  # of the example input
        self.plan_path = plan_path
        self.rel_l2 = rel_l2  # the engine against the module on the example input (None: not checked)
        first = engine.engines[0] if isinstance(engine, BatchBuckets) else engine
        self._sample_shape = tuple(first.input_shape[1:])
        self._batches = engine.batches if isinstance(engine, BatchBuckets) else [engine.batch]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = int(x.shape[0]) if x.dim() == 4 else -1
        if tuple(x.shape[1:]) != self._sample_shape or n not in range(1, self._batches[-1] + 1) or (
            len(self._batches) == 1 and n != self._batches[0]
        ):
            built = self._batches[0] if len(self._batches) == 1 else f"1 to {self._batches[-1]}"
            raise _ios.Error(
                f"input shape {tuple(x.shape)} is not a shape the engine was built for, ({built},) + "
                f"{self._sample_shape}: compile again with an example of this shape, or with batch=[...]"
            )
        return self.context(x).view((n,) + self.output_shape[1:])


def compile_module(
    module: torch.nn.Module,
    example_inputs: Any,
    *,
    cache_dir: Optional[str] = None,
    rebuild: bool = False,
    check: bool = True,
    **build_options: Any,
) -> CompiledModule:
    x = _single_input(example_inputs)
    build_options.setdefault("batch", int(x.shape[0]))
    batch = build_options["batch"]
    if isinstance(batch, int) and batch != x.shape[0]:
        raise _ios.Error(f"batch={batch} differs from the example input's {x.shape[0]}")
    if not isinstance(batch, int):  # buckets: the example is exported once and checked on its own bucket
        build_options["batch"] = batch = sorted(int(b) for b in batch)
        if not batch or x.shape[0] > batch[-1]:
            raise _ios.Error(f"the example's batch {x.shape[0]} is past the largest of batch={batch}")
    cache_dir = cache_dir or default_cache_dir()
    os.makedirs(cache_dir, exist_ok=True)
    plan_path = os.path.join(cache_dir, _plan_key(module, x, build_options) + ".plan")
    engine = None
    if not rebuild and os.path.exists(plan_path):
        try:
            engine = _load(plan_path, build_options)
        except _ios.Error as e:  # another GPU or library version: build it again here
            warnings.warn(f"ios.compile: rebuilding {plan_path}: {e}")
    if engine is None:
        from . import build

        with tempfile.TemporaryDirectory() as tmp:
            onnx_path = os.path.join(tmp, "model.onnx")
            _export(module, x, onnx_path)
            engine = build(onnx_path, **build_options)
        engine.save(plan_path)
    with torch.no_grad():
        was_training = module.training
        module.eval()
        expected = module(x)
        module.train(was_training)
    if not isinstance(expected, torch.Tensor):
        raise _ios.Error("ios.compile takes modules with one output tensor")
    first = engine.engines[0] if isinstance(engine, BatchBuckets) else engine
    if expected.numel() != x.shape[0] * torch.Size(first.output_shape[1:]).numel():
        raise _ios.Error(
            f"the engine's output {first.output_shape} does not hold the module's {tuple(expected.shape)}"
        )
    compiled = CompiledModule(engine, expected.shape, plan_path, None)
    if check:
        got = compiled(x if first.device == "gpu" else x.cpu())
        compiled.rel_l2 = _rel_l2(got.to(expected.device), expected)
        tolerance = _TOLERANCE.get(first.precision, 1e-2)
        if not compiled.rel_l2 <= tolerance:
            os.remove(plan_path)  # not left for the next compile to load
            raise _ios.Error(
                f"the engine's output differs from the module's: relative L2 {compiled.rel_l2:.3g} > {tolerance} "
                f"({engine.precision})"
            )
    return compiled


def _load(path: str, build_options: Dict[str, Any]) -> Engine:
    from . import load

    return load(path, device=build_options.get("device"), kernel_cache=build_options.get("kernel_cache"))


class _FrozenGraph(torch.nn.Module):
    """A graph dynamo captured, with its lifted parameters and buffers held as buffers (so they are in
    the plan key and exported as weights) and one input left."""

    def __init__(self, gm: torch.nn.Module, constants: Dict[int, torch.Tensor], arity: int):
        super().__init__()
        self.gm = gm
        self.arity = arity
        self.slots = sorted(constants)
        for i in self.slots:
            self.register_buffer(f"constant_{i}", constants[i].detach())

    def extra_repr(self) -> str:
        return getattr(self.gm, "code", "")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        args = [x] * self.arity
        for i in self.slots:
            args[i] = getattr(self, f"constant_{i}")
        out = self.gm(*args)
        return out[0] if isinstance(out, (tuple, list)) else out


def dynamo_backend(gm: torch.fx.GraphModule, example_inputs: Any, options: Optional[Dict[str, Any]] = None):
    """``torch.compile(module, backend="ios", options={...})``: the captured graph as an engine (options
    as ``ios.compile``'s). The graph must have one input besides the module's parameters and buffers."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    constants, inputs = {}, []
    for i, node in enumerate(placeholders):
        source = getattr(node.meta.get("grapharg"), "source", None)
        name = node.name if source is None else source.name if isinstance(source.name, str) else source.name()
        if "_parameters" in name or "_buffers" in name:
            constants[i] = example_inputs[i]
        else:
            inputs.append(i)
    if len(inputs) != 1:
        raise _ios.Error(f"the ios backend takes graphs of one input; this one has {len(inputs)}")
    sample = gm(*example_inputs)
    compiled = compile_module(_FrozenGraph(gm, constants, len(placeholders)), example_inputs[inputs[0]],
                              **dict(options or {}))
    as_tuple = isinstance(sample, (tuple, list))

    def run(*args: Any) -> Any:
        y = compiled(args[inputs[0]])
        return (y,) if as_tuple else y

    return run
