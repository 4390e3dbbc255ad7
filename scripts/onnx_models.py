#!/usr/bin/env python3
"""The ONNX models tessera's graph layer is checked and timed on, and ONNX
Runtime as their reference.  Run it with the Python of the environment that
scripts/python-env.sh makes (.venv/bin/python); docs/MODELS.md has more.

  make MODEL --out DIR [--small] [--seed N]
      Builds MODEL (resnet50 or bert-layer) with random weights and writes
      DIR/NAME.onnx, DIR/NAME.input.bin (the input) and DIR/NAME.ort.bin
      (ONNX Runtime's output on it, one thread), NAME being MODEL or
      MODEL-small.  The same seed gives the same files.
  time MODEL.onnx INPUT.bin --threads N [--warmup W] [--repeat R]
       [--min-seconds S]
      Times ONNX Runtime on the model and prints one line:
      median_ms=... min_ms=... mean_ms=... stddev_ms=... runs=...
  run MODEL.onnx INPUT.bin OUT.bin --threads N
      Writes ONNX Runtime's output for that input.

Every .bin file is raw float32, little-endian, row-major, no header: its
size is the tensor's element count times 4.  Models have one float32 input
named `input` or `hidden` and one float32 output named `output`, all of
fixed shape.  Exit status: 0 done, 1 ONNX Runtime failed or gave a
non-finite output, 2 a bad command line or an unreadable or mismatched file.
"""

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
# ONNX 1.12 brought opset 17 with IR version 8, so every onnxruntime that
# runs opset 17 loads it; the onnx package would otherwise write its newest.
IR_VERSION = 8


class UsageError(Exception):
    """A mistake in the command line or its files: exit status 2."""


# ---------------------------------------------------------------------------
# Building graphs

class Builder:
    """Nodes and initializers of one graph.  Every node's single output is
    named after the node unless the caller names it (the graph output)."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.inits = []

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def normal(self, name, shape, std):
        return self.init(name, self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std))

    def uniform(self, name, shape, lo, hi):
        return self.init(name, self.rng.uniform(lo, hi, shape).astype(np.float32))

    def scalar(self, name, value):
        return self.init(name, np.array(value, dtype=np.float32))

    def shape(self, name, dims):
        return self.init(name, np.array(dims, dtype=np.int64))

    def node(self, op, name, inputs, output=None, **attrs):
        out = output or name
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def model(self, graph_name, inp, in_shape, out_shape, doc):
        graph = helper.make_graph(
            self.nodes, graph_name,
            [helper.make_tensor_value_info(inp, TensorProto.FLOAT, in_shape)],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, out_shape)],
            initializer=self.inits)
        model = helper.make_model(graph, producer_name="tessera scripts/onnx_models.py",
                                  opset_imports=[helper.make_opsetid("", OPSET)],
                                  doc_string=doc)
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model)
        return model


# ---------------------------------------------------------------------------
# ResNet-50 v1.5
#
# Random convolution weights with made-up BatchNormalization statistics make
# activations grow block after block (outputs of size 1e3 at the end of
# ResNet-50), since nothing then normalizes what each branch adds to the
# residual sum.
# A trained network's running statistics match the activations they see, so
# the builder runs the network in numpy as it adds each layer and takes each
# BN's running mean and variance from the activations reaching it on the
# model's input, jittered (mean + uniform -0.1..0.1 standard deviations,
# variance * uniform 0.5..1.5) so that no BN is an exact normalization.
# Activations, as numpy arrays, are [C, H, W] (batch 1).

def np_conv(x, w, stride, pad):
    """Cross-correlation of x [C, H, W] with w [K, C, k, k] as ONNX Conv."""
    c = x.shape[0]
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))
    win = win[:, ::stride, ::stride]  # [C, Ho, Wo, k, k]
    ho, wo = win.shape[1:3]
    cols = win.transpose(0, 3, 4, 1, 2).reshape(c * k * k, ho * wo)
    return (w.reshape(w.shape[0], -1) @ cols).reshape(-1, ho, wo)


def np_maxpool(x, k, stride, pad):
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))
    return win[:, ::stride, ::stride].max(axis=(3, 4))


def conv_bn(b, name, bn_name, x, cin, cout, k, stride, gamma=(0.8, 1.2)):
    """Conv (no bias, He-normal) then BatchNormalization, on x = (ONNX name,
    numpy value); returns the same pair for the BN's output.  `gamma` is the
    range of the BN scale, below 1 for the last BN of a residual branch."""
    w = b.rng.standard_normal((cout, cin, k, k), dtype=np.float32)
    w *= np.float32(math.sqrt(2.0 / (cin * k * k)))
    p = k // 2
    y = np_conv(x[1], w, stride, p)
    conv = b.node("Conv", name, [x[0], b.init(name + ".weight", w)], kernel_shape=[k, k],
                  strides=[stride, stride], pads=[p, p, p, p], dilations=[1, 1], group=1)
    scale = b.rng.uniform(*gamma, cout).astype(np.float32)
    bias = b.rng.uniform(-0.1, 0.1, cout).astype(np.float32)
    mean = y.mean(axis=(1, 2))
    var = y.var(axis=(1, 2)) + np.float32(1e-3)
    mean = (mean + b.rng.uniform(-0.1, 0.1, cout) * np.sqrt(var)).astype(np.float32)
    var = (var * b.rng.uniform(0.5, 1.5, cout)).astype(np.float32)
    out = b.node("BatchNormalization", bn_name,
                 [conv, b.init(bn_name + ".weight", scale), b.init(bn_name + ".bias", bias),
                  b.init(bn_name + ".running_mean", mean),
                  b.init(bn_name + ".running_var", var)], epsilon=1e-5)
    inv = scale / np.sqrt(var + np.float32(1e-5))
    return out, (y - mean[:, None, None]) * inv[:, None, None] + bias[:, None, None]


def relu(b, name, x):
    return b.node("Relu", name, [x[0]]), np.maximum(x[1], 0)


def bottleneck(b, name, x, cin, width, stride):
    """torchvision's Bottleneck: 1x1, 3x3 with the stride, 1x1 to 4*width;
    a 1x1 conv + BN shortcut where the shape changes."""
    y = conv_bn(b, name + ".conv1", name + ".bn1", x, cin, width, 1, 1)
    y = relu(b, name + ".relu1", y)
    y = conv_bn(b, name + ".conv2", name + ".bn2", y, width, width, 3, stride)
    y = relu(b, name + ".relu2", y)
    y = conv_bn(b, name + ".conv3", name + ".bn3", y, width, 4 * width, 1, 1, gamma=(0.5, 1.0))
    short = x
    if stride != 1 or cin != 4 * width:
        short = conv_bn(b, name + ".downsample.0", name + ".downsample.1", x, cin, 4 * width,
                        1, stride)
    y = b.node("Add", name + ".add", [y[0], short[0]]), y[1] + short[1]
    return relu(b, name + ".relu3", y)


def resnet50(rng, data, small):
    """ResNet-50 v1.5 at batch 1: 224x224 input, 1000 classes; small: every
    width divided by 8, one block per stage, 64x64 input, 10 classes."""
    div, blocks, classes = (8, [1, 1, 1, 1], 10) if small else (1, [3, 4, 6, 3], 1000)
    b = Builder(rng)
    stem = 64 // div
    # conv_bn pads k//2 = 3 on every side, as the 7x7 stem wants.
    y = conv_bn(b, "conv1", "bn1", ("input", data[0]), 3, stem, 7, 2)
    y = relu(b, "relu", y)
    y = (b.node("MaxPool", "maxpool", [y[0]], kernel_shape=[3, 3], strides=[2, 2],
                pads=[1, 1, 1, 1]), np_maxpool(y[1], 3, 2, 1))
    cin = stem
    for stage, (width, n) in enumerate(zip([64, 128, 256, 512], blocks)):
        width //= div
        for i in range(n):
            stride = 2 if stage > 0 and i == 0 else 1
            y = bottleneck(b, "layer%d.%d" % (stage + 1, i), y, cin, width, stride)
            cin = 4 * width
    pooled = b.node("GlobalAveragePool", "avgpool", [y[0]])
    flat = b.node("Flatten", "flatten", [pooled], axis=1)
    w = b.normal("fc.weight", (classes, cin), math.sqrt(1.0 / cin))
    bias = b.uniform("fc.bias", (classes,), -0.1, 0.1)
    b.node("Gemm", "fc", [flat, w, bias], output="output", transB=1)
    return b.model("resnet50", "input", list(data.shape), [1, classes],
                   "ResNet-50 v1.5%s, random weights" % (" (widths / 8, blocks 1,1,1,1)"
                                                         if small else ""))


# ---------------------------------------------------------------------------
# One BERT encoder layer

def dense(b, name, x, n_in, n_out):
    """MatMul by [n_in, n_out] then Add bias, as PyTorch exports nn.Linear."""
    w = b.normal(name + ".weight", (n_in, n_out), 0.02)
    bias = b.normal(name + ".bias", (n_out,), 0.02)
    y = b.node("MatMul", name, [x, w])
    return b.node("Add", name + ".add_bias", [y, bias])


def layer_norm(b, name, x, hidden, output=None):
    gamma = b.uniform(name + ".weight", (hidden,), 0.9, 1.1)
    beta = b.uniform(name + ".bias", (hidden,), -0.05, 0.05)
    return b.node("LayerNormalization", name, [x, gamma, beta], output=output,
                  axis=-1, epsilon=1e-12)


def bert_layer(rng, data, small):
    """One BERT-base encoder layer (post-norm) at batch 1, sequence 128;
    small: sequence 16, hidden 64, 4 heads, FFN 256."""
    seq, hidden, heads, ffn = (16, 64, 4, 256) if small else (128, 768, 12, 3072)
    assert list(data.shape) == [1, seq, hidden]
    head = hidden // heads
    b = Builder(rng)
    x = "hidden"
    split = b.shape("attn.split_heads_shape", [1, seq, heads, head])
    merge = b.shape("attn.merge_heads_shape", [1, seq, hidden])

    def project(name, perm):
        y = dense(b, name, x, hidden, hidden)
        y = b.node("Reshape", name + ".reshape", [y, split])
        return b.node("Transpose", name + ".transpose", [y], perm=perm)

    q = project("attn.q", [0, 2, 1, 3])
    k = project("attn.k", [0, 2, 3, 1])
    v = project("attn.v", [0, 2, 1, 3])
    s = b.node("MatMul", "attn.scores", [q, k])
    s = b.node("Div", "attn.scale", [s, b.scalar("attn.sqrt_head_dim", math.sqrt(head))])
    p = b.node("Softmax", "attn.softmax", [s], axis=-1)
    c = b.node("MatMul", "attn.context", [p, v])
    c = b.node("Transpose", "attn.context.transpose", [c], perm=[0, 2, 1, 3])
    c = b.node("Reshape", "attn.context.reshape", [c, merge])
    y = dense(b, "attn.out", c, hidden, hidden)
    y = b.node("Add", "attn.residual", [y, x])
    h = layer_norm(b, "attn.norm", y, hidden)

    u = dense(b, "ffn.up", h, hidden, ffn)
    # GELU as PyTorch exports x * 0.5 * (1 + erf(x / sqrt(2))).
    g = b.node("Div", "ffn.gelu.div", [u, b.scalar("ffn.gelu.sqrt2", math.sqrt(2.0))])
    g = b.node("Erf", "ffn.gelu.erf", [g])
    g = b.node("Add", "ffn.gelu.add", [g, b.scalar("ffn.gelu.one", 1.0)])
    g = b.node("Mul", "ffn.gelu.mul", [u, g])
    g = b.node("Mul", "ffn.gelu.mul_half", [g, b.scalar("ffn.gelu.half", 0.5)])
    y = dense(b, "ffn.down", g, ffn, hidden)
    y = b.node("Add", "ffn.residual", [y, h])
    layer_norm(b, "ffn.norm", y, hidden, output="output")
    return b.model("bert_layer", "hidden", [1, seq, hidden], [1, seq, hidden],
                   "BERT-base encoder layer%s, random weights" %
                   (" (seq 16, hidden 64, 4 heads, FFN 256)" if small else ""))


# Each model's builder, called with (rng, input, small) and returning the
# ModelProto, and the shape of its input, full and small.  Inputs are
# standard normal; the builder may look at the input (ResNet-50 does).
MODELS = {
    "resnet50": (resnet50, [1, 3, 224, 224], [1, 3, 64, 64]),
    "bert-layer": (bert_layer, [1, 128, 768], [1, 16, 64]),
}


# ---------------------------------------------------------------------------
# ONNX Runtime

def session(path, threads):
    """An ONNX Runtime CPU session: `threads` intra-op threads, one inter-op,
    sequential execution, all graph optimizations (the default level)."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    if not os.access(path, os.R_OK):
        raise UsageError("%s: cannot read the model" % path)
    try:
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # ORT raises its own exception types
        raise UsageError("%s: ONNX Runtime cannot load it: %s" % (path, e))
    if len(sess.get_inputs()) != 1 or len(sess.get_outputs()) != 1:
        raise UsageError("%s: the model must have one input and one output" % path)
    inp = sess.get_inputs()[0]
    if inp.type != "tensor(float)" or not all(isinstance(d, int) for d in inp.shape):
        raise UsageError("%s: input '%s' must be float32 of fixed shape, not %s %s"
                         % (path, inp.name, inp.type, inp.shape))
    return sess


def read_input(sess, path):
    """The file at `path` as the session's input, checked against its size."""
    inp = sess.get_inputs()[0]
    numel = math.prod(inp.shape)
    try:
        size = os.path.getsize(path)
        if size != numel * 4:
            raise UsageError("%s: %d bytes, but input '%s' %s needs %d (%d float32 values)"
                             % (path, size, inp.name, list(inp.shape), numel * 4, numel))
        data = np.fromfile(path, dtype="<f4")
    except OSError as e:
        raise UsageError("%s: cannot read the input: %s" % (path, e.strerror))
    return {inp.name: data.astype(np.float32).reshape(inp.shape)}


def infer(sess, feed):
    out = sess.run(None, feed)[0]
    if out.dtype != np.float32:
        raise RuntimeError("output '%s' is %s, not float32" % (sess.get_outputs()[0].name,
                                                               out.dtype))
    if not np.all(np.isfinite(out)):
        raise RuntimeError("output has %d non-finite values" % np.sum(~np.isfinite(out)))
    return out


def write_f32(path, array):
    np.ascontiguousarray(array, dtype="<f4").tofile(path)


# ---------------------------------------------------------------------------
# Subcommands

def cmd_make(args):
    build, full_shape, small_shape = MODELS[args.model]
    weights_seed, input_seed = np.random.SeedSequence(args.seed).spawn(2)
    x = np.random.default_rng(input_seed).standard_normal(
        small_shape if args.small else full_shape, dtype=np.float32)
    model = build(np.random.default_rng(weights_seed), x, args.small)
    name = args.model + ("-small" if args.small else "")
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, name)

    graph = model.graph
    in_shape = [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim]
    out_shape = [d.dim_value for d in graph.output[0].type.tensor_type.shape.dim]
    params = sum(math.prod(t.dims) for t in graph.initializer)
    onnx.save(model, base + ".onnx")
    print("%s.onnx: input '%s' %s -> output 'output' %s, %d nodes, %d parameters"
          % (base, graph.input[0].name, in_shape, out_shape, len(graph.node), params))

    write_f32(base + ".input.bin", x)
    print("%s.input.bin: float32 %s" % (base, in_shape))

    sess = session(base + ".onnx", 1)
    y = infer(sess, {graph.input[0].name: x})
    write_f32(base + ".ort.bin", y)
    print("%s.ort.bin: float32 %s min=%.4g max=%.4g std=%.4g"
          % (base, list(y.shape), y.min(), y.max(), y.std()))


def cmd_time(args):
    sess = session(args.model, args.threads)
    feed = read_input(sess, args.input)
    for _ in range(args.warmup):
        infer(sess, feed)
    times = []
    start = time.perf_counter()
    while len(times) < args.repeat or time.perf_counter() - start < args.min_seconds:
        t0 = time.perf_counter()
        out = sess.run(None, feed)[0]
        times.append((time.perf_counter() - t0) * 1e3)
    if not np.all(np.isfinite(out)):
        raise RuntimeError("output has %d non-finite values" % np.sum(~np.isfinite(out)))
    sd = statistics.stdev(times) if len(times) > 1 else 0.0
    print("median_ms=%.4f min_ms=%.4f mean_ms=%.4f stddev_ms=%.4f runs=%d"
          % (statistics.median(times), min(times), statistics.fmean(times), sd, len(times)))


def cmd_run(args):
    sess = session(args.model, args.threads)
    write_f32(args.output, infer(sess, read_input(sess, args.input)))


def positive(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError("'%s' is not a positive integer" % text)
    return n


def non_negative(kind):
    def parse(text):
        try:
            n = kind(text)
        except ValueError:
            n = -1
        if not n >= 0:  # also rejects NaN
            raise argparse.ArgumentTypeError("'%s' is not a non-negative number" % text)
        return n
    return parse


def parser():
    p = argparse.ArgumentParser(
        prog="onnx_models.py",
        description="ONNX models for tessera and ONNX Runtime as their reference "
                    "(docs/MODELS.md).")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    m = sub.add_parser("make", help="build a model with random weights, its input and "
                                    "ONNX Runtime's output")
    m.add_argument("model", choices=sorted(MODELS), metavar="MODEL",
                   help="resnet50 or bert-layer")
    m.add_argument("--out", required=True, metavar="DIR", help="directory to write into")
    m.add_argument("--small", action="store_true", help="the reduced model, for tests")
    m.add_argument("--seed", type=non_negative(int), default=0,
                   help="random seed of weights and input (default 0)")
    m.set_defaults(func=cmd_make)

    t = sub.add_parser("time", help="time ONNX Runtime on a model")
    t.add_argument("model", metavar="MODEL.onnx")
    t.add_argument("input", metavar="INPUT.bin")
    t.add_argument("--threads", type=positive, required=True, metavar="N",
                   help="ONNX Runtime's intra-op threads")
    t.add_argument("--warmup", type=non_negative(int), default=5, metavar="W",
                   help="untimed runs first (default 5)")
    t.add_argument("--repeat", type=positive, default=20, metavar="R",
                   help="at least this many timed runs (default 20)")
    t.add_argument("--min-seconds", type=non_negative(float), default=2.0, metavar="S",
                   help="and at least this long in timed runs (default 2)")
    t.set_defaults(func=cmd_time)

    r = sub.add_parser("run", help="write ONNX Runtime's output for an input")
    r.add_argument("model", metavar="MODEL.onnx")
    r.add_argument("input", metavar="INPUT.bin")
    r.add_argument("output", metavar="OUT.bin")
    r.add_argument("--threads", type=positive, required=True, metavar="N",
                   help="ONNX Runtime's intra-op threads")
    r.set_defaults(func=cmd_run)
    return p


def main(argv):
    args = parser().parse_args(argv)  # exits 2 on a bad command line
    try:
        args.func(args)
    except UsageError as e:
        print("onnx_models.py %s: %s" % (args.command, e), file=sys.stderr)
        return 2
    except OSError as e:  # writing a file of --out or OUT.bin
        print("onnx_models.py %s: %s: %s" % (args.command, e.filename, e.strerror),
              file=sys.stderr)
        return 2
    except RuntimeError as e:
        print("onnx_models.py %s: %s" % (args.command, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
