"""PyTorch eager's side of benchmarks/cpu_op_peer.sh: the rows of cpu_op_bench (benchmarks/kernels/cpu_op_bench.cpp),
the same ops at the same shapes (batch 64, the zoo's maps at 32x32), forward under no_grad and backward as
torch.autograd.grad of a kept graph (its engine's overhead included: that is what a training step pays).

    python op_peer.py --row dwconv7_s1 --threads 2     one JSON line {row, fwd_ms, bwd_ms, torch, onednn}
"""
import argparse
import json
import re
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def conv(c, hw, k, groups):
    m = torch.nn.Conv2d(c, c, k, padding=k // 2, groups=groups)
    x = torch.randn(64, c, hw, hw, requires_grad=True)
    return (lambda: m(x)), [x, m.weight, m.bias]


def pointwise(c, hw, k):  # regnet's and resnet50's 1x1 convolutions
    m = torch.nn.Conv2d(c, k, 1)
    x = torch.randn(64, c, hw, hw, requires_grad=True)
    return (lambda: m(x)), [x, m.weight, m.bias]


def channel_linear(c, hw, k):  # convnext_tiny's nn.Linear on its channels-last activations
    m = torch.nn.Linear(c, k)
    x = torch.randn(64, hw, hw, c, requires_grad=True)
    return (lambda: m(x)), [x, m.weight, m.bias]


def unary(f, shape=(64, 144, 8, 8)):
    x = torch.randn(*shape, requires_grad=True)
    return (lambda: f(x)), [x]


def mul_broadcast():
    a = torch.randn(64, 144, 8, 8, requires_grad=True)
    b = torch.randn(64, 144, 1, 1, requires_grad=True)
    return (lambda: a * b), [a, b]


def add_broadcast():
    a = torch.randn(64, 144, 8, 8, requires_grad=True)
    b = torch.randn(64, 144, 1, 1, requires_grad=True)
    return (lambda: a + b), [a, b]


def split():  # shufflenet_v2_x1_0's x.chunk(2, dim=1): views forward, their gradients put back together
    x = torch.randn(64, 116, 4, 4, requires_grad=True)
    return (lambda: x.chunk(2, dim=1)), [x]


def channel_shuffle():  # torchvision's shufflenetv2.channel_shuffle, 2 groups
    x = torch.randn(64, 116, 4, 4, requires_grad=True)
    return (lambda: x.view(64, 2, 58, 4, 4).transpose(1, 2).contiguous().view(64, 116, 4, 4)), [x]


def channel_layernorm():  # torchvision's LayerNorm2d: permute, layer_norm over the last axis, permute back
    x = torch.randn(64, 96, 8, 8, requires_grad=True)
    w = torch.ones(96, requires_grad=True)
    b = torch.zeros(96, requires_grad=True)
    return (lambda: F.layer_norm(x.permute(0, 2, 3, 1), (96,), w, b, 1e-6).permute(0, 3, 1, 2)), [x, w, b]


def concat():
    a = torch.randn(64, 128, 8, 8, requires_grad=True)
    b = torch.randn(64, 32, 8, 8, requires_grad=True)
    return (lambda: torch.cat([a, b], 1)), [a, b]


ROWS = {
    "dwconv7_s1": lambda: conv(96, 8, 7, 96),
    "dwconv7_s3": lambda: conv(384, 2, 7, 384),
    "dwconv7_s4": lambda: conv(768, 1, 7, 768),
    "dwconv5_2x2": lambda: conv(672, 2, 5, 672),
    "dwconv3_16x16": lambda: conv(32, 16, 3, 32),
    "gconv3_2x2": lambda: conv(208, 2, 3, 26),
    "gconv3_4x4": lambda: conv(104, 4, 3, 13),
    "gconv3_8x8": lambda: conv(48, 8, 3, 6),
    "pw_s1": lambda: channel_linear(96, 8, 384),
    "pw_s2": lambda: channel_linear(192, 4, 768),
    "pw_s3": lambda: channel_linear(384, 2, 1536),
    "pw_s4": lambda: channel_linear(768, 1, 3072),
    "pw_regnet": lambda: pointwise(400, 1, 400),
    "pw_regnet4": lambda: pointwise(64, 4, 64),
    "pw_r50": lambda: pointwise(256, 8, 64),
    "gelu": lambda: unary(F.gelu, (64, 384, 8, 8)),
    "sigmoid": lambda: unary(torch.sigmoid),
    "silu": lambda: unary(F.silu),
    "hardswish": lambda: unary(F.hardswish),
    "hardsigmoid": lambda: unary(F.hardsigmoid),
    "clip": lambda: unary(lambda x: torch.clamp(x, 0.0, 6.0)),
    "tanh": lambda: unary(torch.tanh),
    "leakyrelu": lambda: unary(lambda x: F.leaky_relu(x, 0.01)),
    "mul_broadcast": mul_broadcast,
    "add_broadcast": add_broadcast,
    "global_avgpool": lambda: unary(lambda x: x.mean((2, 3))),
    "channel_layernorm": channel_layernorm,
    "softmax": lambda: unary(lambda x: F.softmax(x, 1), (64, 1000)),
    "concat": concat,
    "split": split,
    "channel_shuffle": channel_shuffle,
}


def median_ms(f, warmup, repeats):
    for _ in range(warmup):
        f()
    t = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--row", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=21)
    a = ap.parse_args()
    if a.row not in ROWS:
        sys.exit(f"op_peer.py: --row '{a.row}': one of {', '.join(ROWS)}")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    fwd, inputs = ROWS[a.row]()
    with torch.no_grad():
        fwd_ms = median_ms(fwd, a.warmup, a.repeats)
    y = fwd()
    dy = tuple(map(torch.randn_like, y)) if isinstance(y, tuple) else torch.randn_like(y)  # Split: several
    bwd_ms = median_ms(lambda: torch.autograd.grad(y, inputs, dy, retain_graph=True), a.warmup, a.repeats)
    onednn = re.search(r"MKL-DNN v[\d.]+", torch.__config__.show())
    print(json.dumps({"row": a.row, "fwd_ms": fwd_ms, "bwd_ms": bwd_ms, "torch": torch.__version__,
                      "onednn": onednn.group(0).replace("MKL-DNN", "oneDNN") if onednn else "?"}))


if __name__ == "__main__":
    main()
