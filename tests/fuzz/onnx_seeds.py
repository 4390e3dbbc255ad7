#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_onnx (tests/fuzz/corpus/fuzz_onnx): tiny
ONNX models, each a few nodes over small shapes, that together use every
operator and attribute the importer reads, so that the fuzzer starts from
models that import and compile.  Run with the environment of
scripts/python-env.sh:  .venv/bin/python tests/fuzz/onnx_seeds.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_onnx")
rng = np.random.default_rng(7)


def weight(name, *shape):
    return numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def value(name, *shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def model(nodes, inputs, outputs, inits, opset=17):
    g = helper.make_graph(nodes, "seed", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


N = helper.make_node
seeds = {
    # conv, bias, batch norm, relu, pooling, flatten, gemm, softmax
    "cnn": model(
        [N("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1]),
         N("BatchNormalization", ["c", "s", "t", "m", "v"], ["bn"], name="bn", epsilon=1e-5),
         N("Relu", ["bn"], ["r"], name="relu"),
         N("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
         N("GlobalAveragePool", ["p"], ["gp"], name="gap"),
         N("Flatten", ["gp"], ["f"], name="flat", axis=1),
         N("Gemm", ["f", "fw", "fb"], ["g"], name="fc", transB=1),
         N("Softmax", ["g"], ["y"], name="sm", axis=-1)],
        [value("x", 1, 3, 6, 6)], [value("y", 1, 5)],
        [weight("w", 8, 3, 3, 3), weight("b", 8), weight("s", 8), weight("t", 8), weight("m", 8),
         numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "v"),
         weight("fw", 5, 8), weight("fb", 5)]),
    # grouped and strided, dilated convolution, average pooling
    "groups": model(
        [N("Conv", ["x", "w"], ["c"], name="dw", group=4, pads=[1, 0, 1, 2], dilations=[1, 2]),
         N("AveragePool", ["c"], ["p"], name="ap", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
           strides=[2, 1], count_include_pad=0),
         N("Conv", ["p", "w2"], ["y"], name="pw", strides=[2, 2], auto_pad="VALID")],
        [value("x", 1, 4, 7, 7)], [value("y", 1, 2, 2, 2)],
        [weight("w", 4, 1, 3, 3), weight("w2", 2, 4, 1, 1)]),
    # a transformer-like block: matmul, layer norm, gelu, residual
    "block": model(
        [N("MatMul", ["x", "w1"], ["h"], name="mm1"),
         N("Add", ["h", "b1"], ["hb"], name="bias1"),
         N("Gelu", ["hb"], ["a"], name="gelu", approximate="tanh"),
         N("MatMul", ["a", "w2"], ["o"], name="mm2"),
         N("Add", ["o", "x"], ["res"], name="res"),
         N("LayerNormalization", ["res", "g", "be"], ["y"], name="ln", axis=-1, epsilon=1e-5)],
        [value("x", 2, 3, 4)], [value("y", 2, 3, 4)],
        [weight("w1", 4, 8), weight("b1", 8), weight("w2", 8, 4), weight("g", 4), weight("be", 4)],
        opset=20),
    # shapes: transpose, reshape (a Constant shape through Identity), concat
    "shapes": model(
        [N("Constant", [], ["shape"], name="k", value_ints=[0, -1]),
         N("Identity", ["shape"], ["shape2"], name="id"),
         N("Transpose", ["x"], ["t"], name="tr", perm=[0, 2, 1]),
         N("Reshape", ["t", "shape2"], ["r"], name="rs"),
         N("Concat", ["r", "r2"], ["c"], name="cat", axis=1),
         N("Sigmoid", ["c"], ["y"], name="sig")],
        [value("x", 2, 3, 4), value("r2", 2, 5)], [value("y", 2, 17)], []),
    # elementwise chains with broadcasting and scalar constants
    "eltwise": model(
        [N("Constant", [], ["two"], name="two", value_float=2.0),
         N("Pow", ["x", "two"], ["p"], name="pow"),
         N("Sub", ["p", "y0"], ["s"], name="sub"),
         N("Div", ["s", "d"], ["q"], name="div"),
         N("Clip", ["q", "lo", "hi"], ["c"], name="clip"),
         N("Tanh", ["c"], ["t"], name="tanh"),
         N("Erf", ["t"], ["e"], name="erf"),
         N("Exp", ["e"], ["ex"], name="exp"),
         N("Sqrt", ["ex"], ["sq"], name="sqrt"),
         N("Neg", ["sq"], ["n"], name="neg"),
         N("Mul", ["n", "x"], ["y"], name="mul"),
         N("Dropout", ["y"], ["out"], name="drop")],
        [value("x", 3, 4), value("y0", 1, 4)], [value("out", 3, 4)],
        [weight("d", 3, 1), numpy_helper.from_array(np.array(-0.5, dtype=np.float32), "lo"),
         numpy_helper.from_array(np.array(0.5, dtype=np.float32), "hi")]),
    # batched matmul, transposed gemm, several outputs
    "batched": model(
        [N("MatMul", ["a", "b"], ["ab"], name="bmm"),
         N("Flatten", ["ab"], ["f"], name="flat", axis=2),
         N("Gemm", ["f", "w", "c"], ["g"], name="gemm", transA=1, alpha=0.5, beta=2.0),
         N("Relu", ["g"], ["y"], name="relu")],
        [value("a", 2, 3, 4), value("b", 2, 4, 5)], [value("y", 5, 6), value("ab", 2, 3, 5)],
        [weight("w", 6, 6), weight("c", 6)]),
    # Softmax of opset 11 over the last axis; Clip with no bounds
    "opset11": model(
        [N("Softmax", ["x"], ["s"], name="sm", axis=1),
         N("Clip", ["s"], ["y"], name="clip")],
        [value("x", 3, 5)], [value("y", 3, 5)], [], opset=11),
    # an output that is an input and one that is an initializer
    "passthrough": model(
        [N("Identity", ["x"], ["y"], name="id")],
        [value("x", 4)], [value("y", 4), value("x", 4), value("k", 2)],
        [weight("k", 2)]),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in sorted(seeds.items()):
        onnx.checker.check_model(onnx.load_from_string(data))
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
