import pytest

from small_models import conv_relu_pool_model


@pytest.fixture
def small_model(tmp_path):
    """An ONNX file of Conv -> Relu -> MaxPool, and its weights."""
    path = tmp_path / "conv_relu_pool.onnx"
    w, b = conv_relu_pool_model(path)
    return path, w, b
