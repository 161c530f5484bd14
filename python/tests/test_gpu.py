"""The package on the GPU with PyTorch tensors: zero copy, the caller's stream, errors. Skipped without a
GPU (or without torch)."""

import numpy as np
import pytest

import ios
from small_models import conv_relu_pool_reference, rel_l2

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(
    not (ios.gpu_present() and torch.cuda.is_available()), reason="needs a GPU and the GPU runtime"
)


@pytest.fixture(scope="module")
def fp16_engine(tmp_path_factory):
    from small_models import conv_relu_pool_model

    path = tmp_path_factory.mktemp("gpu") / "conv_relu_pool.onnx"
    w, b = conv_relu_pool_model(path)
    return ios.build(path, precision="fp16", kernel_cache="none"), w, b


def test_enqueue_reads_and_writes_the_callers_tensors_without_a_copy(fp16_engine):
    engine, w, b = fp16_engine
    x = torch.randn(engine.input_shape, device="cuda")
    out = torch.full(engine.output_shape, float("nan"), device="cuda")
    assert ios._ios._data_pointer(x) == x.data_ptr()
    assert ios._ios._data_pointer(out) == out.data_ptr()
    ctx = engine.create_context()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        ctx.enqueue(x, out)  # on the current stream
    stream.synchronize()
    expected = conv_relu_pool_reference(x.cpu().numpy(), w, b)
    assert rel_l2(out.cpu().numpy(), expected) < 1e-2


class CudaArrayOf:
    """A torch tensor seen only through its __cuda_array_interface__, as a Numba device array is."""

    def __init__(self, t):
        self.__cuda_array_interface__ = t.__cuda_array_interface__


def test_enqueue_takes_cuda_array_interface_arrays_without_a_copy(fp16_engine):
    engine, w, b = fp16_engine
    x = torch.randn(engine.input_shape, device="cuda")
    out = torch.full(engine.output_shape, float("nan"), device="cuda")
    ctx = engine.create_context()
    ctx.enqueue(CudaArrayOf(x), CudaArrayOf(out), stream=torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    assert rel_l2(out.cpu().numpy(), conv_relu_pool_reference(x.cpu().numpy(), w, b)) < 1e-2
    with pytest.raises(ios.Error, match="not CUDA device memory"):
        host = np.zeros(engine.input_shape, np.float32)
        ctx._ctx._enqueue_addresses(host.ctypes.data, out.data_ptr(), 0)


def test_call_gives_torch_tensors_on_the_gpu_and_host_arrays_on_the_host(fp16_engine):
    engine, w, b = fp16_engine
    x = torch.randn(engine.input_shape, device="cuda")
    y = engine(x)
    assert y.is_cuda and y.dtype == torch.float32 and tuple(y.shape) == engine.output_shape
    host = engine(x.cpu().numpy())
    assert isinstance(host, np.ndarray)
    torch.cuda.synchronize()
    assert rel_l2(y.cpu().numpy(), host) < 1e-6
    half = engine(x.half())  # converted to float32
    torch.cuda.synchronize()
    assert rel_l2(half.cpu().numpy(), host) < 1e-2


def test_two_contexts_run_side_by_side_with_the_same_result(fp16_engine):
    engine, _, _ = fp16_engine
    x = torch.randn(engine.input_shape, device="cuda")
    a, b = engine.create_context(), engine.create_context()
    ya, yb = a(x), b(x)
    torch.cuda.synchronize()
    assert torch.equal(ya, yb)


def test_bad_tensors_raise_naming_what_differs(fp16_engine):
    engine, _, _ = fp16_engine
    ctx = engine.create_context()
    out = torch.empty(engine.output_shape, device="cuda")
    with pytest.raises(ios.Error, match="input must be float32"):
        ctx.enqueue(torch.zeros(engine.input_shape, device="cuda", dtype=torch.float16), out)
    with pytest.raises(ios.Error, match="input has shape"):
        ctx.enqueue(torch.zeros((2,) + engine.input_shape[1:], device="cuda"), out)
    with pytest.raises(ios.Error, match="not on a CUDA device"):
        ctx.enqueue(torch.zeros(engine.input_shape), out)
    strided = torch.zeros(engine.input_shape[:2] + engine.input_shape[2:][::-1], device="cuda").transpose(2, 3)
    with pytest.raises(ios.Error, match="input must be contiguous"):
        ctx.enqueue(strided, out)
    with pytest.raises(ios.Error, match="input has shape"):
        ctx(torch.zeros((2,) + engine.input_shape[1:], device="cuda"))


def test_compile_matches_the_module_and_loads_its_plan_the_second_time(tmp_path):
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(8, 4),
    ).cuda()
    x = torch.randn(2, 3, 16, 16, device="cuda")
    fast = ios.compile(model, x, precision="fp16", cache_dir=str(tmp_path), kernel_cache="none")
    assert fast.rel_l2 is not None and fast.rel_l2 < 1e-2
    y = fast(x)
    assert tuple(y.shape) == (2, 4)
    again = ios.compile(model, x, precision="fp16", cache_dir=str(tmp_path), kernel_cache="none")
    assert again.plan_path == fast.plan_path
    with pytest.raises(ios.Error, match="not a shape the engine was built for"):
        fast(torch.randn(1, 3, 16, 16, device="cuda"))


def test_torch_compile_backend_runs_the_captured_graph_as_an_engine(tmp_path):
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, padding=1),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
    ).cuda().eval()
    x = torch.randn(1, 3, 12, 12, device="cuda")
    torch.backends.cudnn.allow_tf32 = False  # strict fp32 on both sides
    torch._dynamo.reset()
    fast = torch.compile(model, backend="ios", options={"precision": "fp32", "cache_dir": str(tmp_path),
                                                        "kernel_cache": "none"})
    with torch.no_grad():
        y, expected = fast(x), model(x)
    assert len(list(tmp_path.glob("*.plan"))) == 1  # built by ios
    assert float((y - expected).norm() / expected.norm()) < 1e-4


def test_batch_buckets_pad_cuda_tensors_into_their_bucket(tmp_path):
    from small_models import conv_relu_pool_model

    path = tmp_path / "conv_relu_pool.onnx"
    w, b = conv_relu_pool_model(path)
    buckets = ios.build(path, precision="fp32", batch=[1, 4], kernel_cache="none")
    x = torch.randn(3, 3, 9, 7, device="cuda")
    y = buckets(x)
    assert y.is_cuda and tuple(y.shape) == (3, 5, 4, 3)
    torch.cuda.synchronize()
    assert rel_l2(y.cpu().numpy(), conv_relu_pool_reference(x.cpu().numpy(), w, b)) < 1e-5
