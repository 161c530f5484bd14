"""Small ONNX models built by the tests, and NumPy references for them."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def conv_relu_pool_model(path, seed=0):
    """Conv 3->5 (3x3, pad 1, bias) -> Relu -> MaxPool 2x2 on a 1x3x9x7 input; returns its weights."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(5).astype(np.float32) * 0.1
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
        ],
        "conv_relu_pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5, 4, 3])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return w, b


def conv_relu_pool_reference(x, w, b):
    """The model above in NumPy (float64)."""
    n, c, h, wd = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            patch = xp[:, :, i : i + h, j : j + wd]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.float64))
    out += b.reshape(1, -1, 1, 1)
    out = np.maximum(out, 0)
    hh, ww = h // 2, wd // 2
    return out[:, :, : hh * 2, : ww * 2].reshape(n, -1, hh, 2, ww, 2).max(axis=(3, 5))


def rel_l2(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
