"""examples/serve_triton.py on the CPU reference executor: served by Triton over loopback, answering
concurrent requests as the engine does, then stopped. Skipped without PyTriton (pip install nvidia-pytriton)."""

import concurrent.futures
import pathlib
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import ios
from small_models import rel_l2

pytest.importorskip("pytriton")
from pytriton.client import ModelClient  # noqa: E402

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "serve_triton.py"


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def wait_until_ready(server, log, seconds=240):
    """Until the server prints "ready"; its log is a file, so that a server writing much never blocks."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if "ready" in log.read_text().splitlines():
            return
        assert server.poll() is None, f"the server exited ({server.returncode}):\n{log.read_text()[-3000:]}"
        time.sleep(0.5)
    raise AssertionError(f"the server was not ready in {seconds} s:\n{log.read_text()[-3000:]}")


def test_serves_batch_buckets_to_concurrent_clients_and_stops(small_model, tmp_path):
    path, _, _ = small_model
    buckets = ios.build(path, device="cpu", batch=[1, 4])
    plan = tmp_path / "m.buckets"
    buckets.save(plan)
    http, grpc, metrics = free_ports(3)
    log = tmp_path / "server.log"
    with open(log, "w") as out:
        server = subprocess.Popen(
            [sys.executable, str(EXAMPLE), str(plan), "--device", "cpu", "--instances", "2", "--http-port", str(http),
             "--grpc-port", str(grpc), "--metrics-port", str(metrics)],
            stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until_ready(server, log)
        rng = np.random.default_rng(5)
        samples = [rng.standard_normal((1, 3, 9, 7)).astype(np.float32) for _ in range(24)]
        expected = [buckets(x) for x in samples]

        def ask(i):
            with ModelClient(f"127.0.0.1:{http}", "ios", init_timeout_s=60, inference_timeout_s=60) as client:
                return client.infer_batch(input=samples[i])["output"]

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(ask, range(len(samples))))
        for got, want in zip(answers, expected):
            assert got.shape == want.shape
            assert rel_l2(got, want) < 1e-6
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert "serving conv_relu_pool: batches [1, 4]" in log.read_text(), log.read_text()[-3000:]
