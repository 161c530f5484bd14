#!/usr/bin/env python3
"""Writes an ONNX model shaped like PyTorch's export of a network, for timing `ios import` on a machine
without PyTorch: every convolution of an IOS graph file (`ios export --model inception_v3 --out g.json`)
becomes Conv (no bias) + BatchNormalization + Relu with random float32 weights stored as raw_data, pools
and concats become MaxPool / AveragePool / Concat, and a Flatten + Gemm classifier (2048 -> 1000, as
torchvision's) ends it. For Inception V3 that is ~95 MB, the size of torchvision's inception_v3.onnx.

Needs the `onnx` and `numpy` packages:  make_onnx_proxy.py g.json out.onnx
"""
import json
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(graph_file, out_file):
    g = json.load(open(graph_file))
    rng = np.random.default_rng(0)
    nodes, inits = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def value_name(v):
        return "t" + v[0]

    shape0 = g["blocks"][0]["enter_node"]["output_shape"]
    graph_input = helper.make_tensor_value_info("t" + g["blocks"][0]["enter_name"], TensorProto.FLOAT, [1] + shape0)
    last = None
    for block in g["blocks"]:
        for n in block["inner_nodes"] + [block["exit_node"]]:
            terms = [[value_name(v) for v in term] for term in n["inputs"]]
            srcs = []
            for i, term in enumerate(terms):  # a term of several values is their sum
                if len(term) == 1:
                    srcs.append(term[0])
                else:
                    srcs.append(f"t{n['name']}_sum{i}")
                    nodes.append(helper.make_node("Sum", term, [srcs[-1]]))
            x = srcs[0]
            if len(srcs) > 1 and n["type"] != "identity":
                x = f"t{n['name']}_cat"
                nodes.append(helper.make_node("Concat", srcs, [x], axis=1))
            out = "t" + n["name"]
            if n["type"] == "conv":
                cin = sum(v[2] - v[1] for term in n["inputs"] for v in term[:1])
                k, o, gr = n["kernel"], n["out_channels"], n.get("groups", 1)
                w = init(out + "_w", rng.standard_normal((o, cin // gr, k[0], k[1])) * 0.05)
                bn = [init(out + s, rng.random(o) + 0.5) for s in ("_g", "_b", "_m", "_v")]
                nodes.append(helper.make_node("Conv", [x, w], [out + "_c"], kernel_shape=k, strides=n["stride"],
                                              pads=n["padding"] * 2, group=gr))
                nodes.append(helper.make_node("BatchNormalization", [out + "_c"] + bn,
                                              [out + "_bn" if n["act"] == "relu" else out]))
                if n["act"] == "relu":
                    nodes.append(helper.make_node("Relu", [out + "_bn"], [out]))
            elif n["type"] == "pool":
                kind = n["pool_type"]
                if kind.startswith("global"):
                    nodes.append(helper.make_node("GlobalAveragePool" if kind == "global_avg" else "GlobalMaxPool",
                                                  [x], [out]))
                else:
                    op = "MaxPool" if kind == "max" else "AveragePool"
                    extra = {} if kind == "max" else {"count_include_pad": int(n["count_include_pad"])}
                    nodes.append(helper.make_node(op, [x], [out], kernel_shape=n["kernel"], strides=n["stride"],
                                                  pads=n["padding"] * 2, ceil_mode=int(n["ceil_mode"]), **extra))
            elif n["type"] == "identity":
                nodes.append(helper.make_node("Concat", srcs, [out], axis=1) if len(srcs) > 1
                             else helper.make_node("Identity", srcs, [out]))
            else:
                sys.exit(f"make_onnx_proxy.py: op type '{n['type']}' is not handled")
            last = n
    c = last["output_shape"][0]
    nodes.append(helper.make_node("GlobalAveragePool", ["t" + last["name"]], ["pooled"]))
    nodes.append(helper.make_node("Flatten", ["pooled"], ["flat"]))
    nodes.append(helper.make_node("Gemm", ["flat", init("fc_w", rng.standard_normal((1000, c)) * 0.02),
                                           init("fc_b", rng.standard_normal(1000) * 0.01)], ["logits"], transB=1))
    graph = helper.make_graph(nodes, g["name"], [graph_input],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, out_file)
    print(f"wrote {out_file}: {len(nodes)} nodes, {sum(i.ByteSize() for i in inits) / 2**20:.1f} MiB of weights")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
