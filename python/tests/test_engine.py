"""The package on the CPU reference executor: build, save, load and run, against NumPy."""

import pathlib
import re

import numpy as np
import pytest

import ios
from small_models import conv_relu_pool_reference, rel_l2

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_version_is_the_projects():
    version = re.search(r"project\(ios_scheduler VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    assert ios.__version__ == version


def test_onnx_model_built_saved_loaded_and_run_matches_numpy(small_model, tmp_path):
    path, w, b = small_model
    engine = ios.build(path, device="cpu", policy="ios-both")
    assert engine.device == "cpu"
    assert engine.input_shape == (1, 3, 9, 7)
    assert engine.output_shape == (1, 5, 4, 3)
    assert engine.schedule == "IOS-Both" and engine.stages >= 1
    x = np.random.default_rng(1).standard_normal(engine.input_shape).astype(np.float32)
    y = engine.create_context().run(x)
    assert y.shape == (1, 5, 4, 3) and y.dtype == np.float32
    assert rel_l2(y, conv_relu_pool_reference(x, w, b)) < 1e-6

    plan = tmp_path / "m.plan"
    engine.save(plan)
    loaded = ios.load(plan, device="cpu")
    assert (loaded.name, loaded.input_shape, loaded.schedule) == (engine.name, engine.input_shape, engine.schedule)
    assert np.array_equal(loaded(x), y)  # the default context; the same bits as the building process


def test_float64_and_non_contiguous_host_input_is_converted(small_model):
    path, w, b = small_model
    engine = ios.build(path, device="cpu", policy="sequential")
    x = np.random.default_rng(2).standard_normal((1, 3, 7, 9)).transpose(0, 1, 3, 2)  # float64, strided
    assert rel_l2(engine(x), conv_relu_pool_reference(x, w, b)) < 1e-6


def test_builtin_model_with_every_policy_schedules_and_runs():
    x = None
    outputs = {}
    for policy in ["sequential", "greedy", "ios-both", "opara"]:
        engine = ios.build("ios_sample", device="cpu", policy=policy, cost_model="analytic")
        if x is None:
            x = np.random.default_rng(3).standard_normal(engine.input_shape).astype(np.float32)
        outputs[policy] = engine(x)
    for policy, y in outputs.items():
        assert rel_l2(y, outputs["sequential"]) < 1e-6, policy
    assert "inception_v3" in dict(ios.models())


def test_the_search_keeps_its_stage_figures_in_the_stage_cache_file(tmp_path):
    cache = tmp_path / "stages.json"
    ios.build("ios_sample", device="cpu", cost_model="analytic", stage_cache=cache)
    text = cache.read_text()
    assert '"key":"analytic|' in text and '"stages":{' in text
    with pytest.raises(ios.Error, match="spreads a measured DP search"):
        ios.build("ios_sample", device="cpu", cost_model="analytic", devices="0,1")


def test_batch_is_the_engines():
    engine = ios.build("ios_sample", device="cpu", batch=3)
    assert engine.batch == 3 and engine.input_shape[0] == 3 and engine.output_shape[0] == 3


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(precision="fp8"), "fp8"),
        (dict(policy="fastest"), "unknown policy 'fastest'"),
        (dict(exec="sideways"), "build option 'exec'"),
        (dict(device="tpu"), "build option 'device'"),
        (dict(r=0), "build option 'r' must be in 1..64, got 0"),
        (dict(prefetch_weights="maybe"), "build option 'prefetch_weights': must be off, on or auto"),
        (dict(prefetch_weights="on", cuda_graph=False), "needs cuda_graph=True"),
    ],
)
def test_bad_build_options_raise_naming_them(small_model, options, message):
    with pytest.raises(ios.Error, match=re.escape(message)):
        ios.build(small_model[0], **{"device": "cpu", **options})


def test_unknown_and_mistyped_options_raise():
    with pytest.raises(ios.Error, match="unknown build option 'precison'"):
        ios._ios.build("ios_sample", {"device": "cpu", "precison": "fp16"})
    with pytest.raises(TypeError, match="build option 'r' must be an int, got str"):
        ios.build("ios_sample", device="cpu", r="3")
    with pytest.raises(TypeError, match="build option 'cuda_graph' must be a bool"):
        ios.build("ios_sample", device="cpu", cuda_graph=1)


def test_bad_models_and_files_raise_naming_them(tmp_path):
    with pytest.raises(ios.Error, match="resnet9000"):
        ios.build("resnet9000", device="cpu")
    with pytest.raises(ios.Error, match="missing.onnx"):
        ios.build(tmp_path / "missing.onnx", device="cpu")
    with pytest.raises(ios.Error, match="missing.plan"):
        ios.load(tmp_path / "missing.plan", device="cpu")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07 not a model")
    with pytest.raises(ios.Error, match="bad.onnx"):
        ios.build(bad, device="cpu")


def test_truncated_plan_raises_and_failed_save_keeps_the_file(small_model, tmp_path):
    engine = ios.build(small_model[0], device="cpu")
    plan = tmp_path / "m.plan"
    engine.save(plan)
    data = plan.read_bytes()
    cut = tmp_path / "cut.plan"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ios.Error, match="cut.plan"):
        ios.load(cut, device="cpu")
    with pytest.raises(ios.Error):
        engine.save(tmp_path / "no_such_folder" / "m.plan")
    assert plan.read_bytes() == data


def test_wrong_input_shape_and_device_raise(small_model):
    engine = ios.build(small_model[0], device="cpu")
    context = engine.create_context()
    with pytest.raises(ios.Error, match=re.escape("input has shape (1, 3, 7, 9), the engine takes (1, 3, 9, 7)")):
        context.run(np.zeros((1, 3, 7, 9), np.float32))
    with pytest.raises(ios.Error, match="runs on the CPU reference"):
        context._ctx.enqueue(np.zeros((1, 3, 9, 7), np.float32), np.zeros((1, 5, 4, 3), np.float32), 0)


class CudaArray:
    """Only a __cuda_array_interface__ (as Numba's device arrays have): its checks need no GPU."""

    def __init__(self, shape, typestr="<f4", strides=None, readonly=False, address=4096, **more):
        self.__cuda_array_interface__ = dict(shape=shape, typestr=typestr, strides=strides,
                                             data=(address, readonly), version=3, **more)


def test_cuda_array_interface_arrays_are_checked_before_their_address_is_used(small_model):
    from ios._context import _cuda_array_address, _cuda_array_stream

    shape = (1, 3, 9, 7)
    assert _cuda_array_address(CudaArray(shape), shape, "input", writable=False) == 4096
    assert _cuda_array_address(CudaArray(shape, strides=(756, 252, 28, 4)), shape, "input", writable=True) == 4096
    with pytest.raises(ios.Error, match=re.escape("input must be float32 (its __cuda_array_interface__ typestr is '<f2')")):
        _cuda_array_address(CudaArray(shape, typestr="<f2"), shape, "input", writable=False)
    with pytest.raises(ios.Error, match=re.escape("input has shape (1, 3, 7, 9), the engine takes (1, 3, 9, 7)")):
        _cuda_array_address(CudaArray((1, 3, 7, 9)), shape, "input", writable=False)
    with pytest.raises(ios.Error, match="input must be contiguous"):
        _cuda_array_address(CudaArray(shape, strides=(756, 4, 84, 12)), shape, "input", writable=False)
    with pytest.raises(ios.Error, match="output is read-only"):
        _cuda_array_address(CudaArray(shape, readonly=True), shape, "output", writable=True)
    with pytest.raises(ios.Error, match="masked"):
        _cuda_array_address(CudaArray(shape, mask=CudaArray(shape)), shape, "input", writable=False)
    assert _cuda_array_stream(CudaArray(shape, stream=2)) == 2 and _cuda_array_stream(CudaArray(shape)) == 0
    context = ios.build(small_model[0], device="cpu").create_context()
    with pytest.raises(ios.Error, match="runs on the CPU reference"):
        context.enqueue(CudaArray(shape), CudaArray((1, 5, 4, 3)))


def test_cpu_torch_tensors_give_torch_tensors(small_model):
    torch = pytest.importorskip("torch")
    path, w, b = small_model
    engine = ios.build(path, device="cpu")
    x = torch.randn(1, 3, 9, 7)
    y = engine(x)
    assert isinstance(y, torch.Tensor) and y.shape == (1, 5, 4, 3)
    assert rel_l2(y.numpy(), conv_relu_pool_reference(x.numpy(), w, b)) < 1e-6


def test_compile_with_batch_buckets_runs_any_batch_up_to_the_largest(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(8, 4),
    ).eval()
    x = torch.randn(3, 3, 16, 16)
    fast = ios.compile(model, x, device="cpu", batch=[4, 1], cache_dir=str(tmp_path))
    assert isinstance(fast.engine, ios.BatchBuckets) and fast.engine.batches == [1, 4]
    assert fast.rel_l2 is not None and fast.rel_l2 < 1e-5
    with torch.no_grad():
        for n in (1, 2, 4):
            xs = torch.randn(n, 3, 16, 16)
            y = fast(xs)
            assert tuple(y.shape) == (n, 4)
            assert rel_l2(y.numpy(), model(xs).numpy()) < 1e-5
    with pytest.raises(ios.Error, match="not a shape the engine was built for"):
        fast(torch.randn(5, 3, 16, 16))
    again = ios.compile(model, x, device="cpu", batch=[1, 4], cache_dir=str(tmp_path))
    assert again.plan_path == fast.plan_path and isinstance(again.engine, ios.BatchBuckets)
    with pytest.raises(ios.Error, match="past the largest"):
        ios.compile(model, torch.randn(8, 3, 16, 16), device="cpu", batch=[1, 4], cache_dir=str(tmp_path))
    one = ios.compile(model, x, device="cpu", cache_dir=str(tmp_path))
    assert one.engine.batch == 3 and tuple(one(x).shape) == (3, 4)
    with pytest.raises(ios.Error, match="not a shape the engine was built for"):
        one(x[:1])


def test_batch_buckets_run_each_call_on_the_smallest_bucket_holding_it(small_model, tmp_path):
    path, w, b = small_model
    buckets = ios.build(path, device="cpu", batch=[4, 1])
    assert isinstance(buckets, ios.BatchBuckets) and buckets.batches == [1, 4]
    assert [e.batch for e in buckets.engines] == [1, 4] and buckets.engine_for(2).batch == 4
    x = np.random.default_rng(4).standard_normal((3, 3, 9, 7)).astype(np.float32)
    y = buckets(x)  # three samples, padded into the bucket of four
    assert y.shape == (3, 5, 4, 3)
    assert rel_l2(y, conv_relu_pool_reference(x, w, b)) < 1e-6
    assert np.array_equal(buckets(x[:1]), y[:1])
    with pytest.raises(ios.Error, match=re.escape("a batch of 5 samples: the largest of the engine's batch buckets")):
        buckets(np.zeros((5, 3, 9, 7), np.float32))
    file = tmp_path / "m.buckets"
    buckets.save(file)
    loaded = ios.load(file, device="cpu")
    assert isinstance(loaded, ios.BatchBuckets) and loaded.batches == [1, 4]
    assert np.array_equal(loaded(x), y)
    with pytest.raises(ios.Error, match="given twice"):
        ios.build(path, device="cpu", batch=[2, 2])
    with pytest.raises(ios.Error, match="neither an engine plan nor a file of batch buckets"):
        ios.load(path, device="cpu")  # an ONNX file
