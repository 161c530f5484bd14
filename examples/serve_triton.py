#!/usr/bin/env python3
"""Serves an IOS engine behind Triton Inference Server (through PyTriton: pip install nvidia-pytriton).

    python examples/serve_triton.py model.plan                 # a plan or batch-buckets file (ios build --save)
    python examples/serve_triton.py model.onnx --batches 1,4,16 --precision fp16   # built first

The model is served as "ios" (HTTP on --http-port, gRPC on --grpc-port, on --address: this machine only
unless told otherwise) with one float32 input "input" of
one sample's shape (C, H, W) and one output "output" (C', H', W'). Triton's dynamic batcher gathers
requests up to the largest batch the engine has; each batch runs on the smallest bucket holding it, padded.
--instances N serves N model instances, each with execution contexts of its own, side by side.
Stops on SIGINT/SIGTERM.
"""

import argparse
import sys

import numpy as np

import ios


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="a plan or batch-buckets file, or a model to build (ONNX, graph file, name)")
    ap.add_argument("--batches", default="1,4,16", help="batch buckets to build a model with (not a plan)")
    ap.add_argument("--precision", default="fp16", help="when building: fp32 | tf32 | fp16 | bf16")
    ap.add_argument("--device", default=None, help="gpu | cpu (the reference executor); default: the GPU if any")
    ap.add_argument("--instances", type=int, default=1, help="model instances (execution contexts) to serve")
    ap.add_argument("--queue-delay-us", type=int, default=100, help="dynamic batcher: longest wait to fill a batch")
    ap.add_argument("--address", default="127.0.0.1", help="where to listen (0.0.0.0: every interface)")
    ap.add_argument("--http-port", type=int, default=8000)
    ap.add_argument("--grpc-port", type=int, default=8001)
    ap.add_argument("--metrics-port", type=int, default=8002)
    args = ap.parse_args()

    from pytriton.decorators import batch
    from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
    from pytriton.triton import Triton, TritonConfig

    try:
        if args.model.endswith((".onnx", ".json")) or "." not in args.model:
            batches = [int(b) for b in args.batches.split(",")]
            loaded = ios.build(args.model, precision=args.precision, device=args.device, batch=batches)
        else:
            loaded = ios.load(args.model, device=args.device)
    except ios.Error as e:
        sys.exit(f"error: {e}")
    engines = loaded.engines if isinstance(loaded, ios.BatchBuckets) else [loaded]
    first = engines[0]
    print(f"serving {first.name}: batches {[e.batch for e in engines]}, {first.precision}, {first.device}, "
          f"{args.instances} instance(s)", flush=True)

    def infer_function(worker):
        @batch
        def infer(input):
            return {"output": np.asarray(worker(input))}

        return infer

    config = TritonConfig(http_address=args.address, http_port=args.http_port, grpc_address=args.address,
                          grpc_port=args.grpc_port, metrics_port=args.metrics_port)
    with Triton(config=config) as triton:
        triton.bind(
            model_name="ios",
            infer_func=[infer_function(ios.BucketsContext(engines)) for _ in range(args.instances)],
            inputs=[Tensor(name="input", dtype=np.float32, shape=tuple(first.input_shape[1:]))],
            outputs=[Tensor(name="output", dtype=np.float32, shape=tuple(first.output_shape[1:]))],
            config=ModelConfig(
                max_batch_size=max(e.batch for e in engines),
                batcher=DynamicBatcher(max_queue_delay_microseconds=args.queue_delay_us),
            ),
            strict=True,
        )
        print("ready", flush=True)
        triton.serve()


if __name__ == "__main__":
    main()
