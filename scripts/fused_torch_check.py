#!/usr/bin/env python3
"""PyTorch as the oracle of the engine's fused float32 training step (outside CI; run by
tests/cpu/model_fused_pytorch_test.cpp when a python with torch is found, see tests/common/pytorch_tools.h).

The engine trains its float32 zoo models with BatchNorm+ReLU fused into one kernel per pass and each conv
bias that a BatchNorm follows folded into that BatchNorm (the bias is not added; its gradient is the exact 0
it is in exact arithmetic; the BatchNorm adds it to the batch mean in its running-mean update). Here the
unfused module of docs/MODELS.md (benchmarks/pytorch/peer_models.py) runs the same step in float32: the test's
file holds the initial state dict ("state.<name>"), the batch ("in.x", "in.labels"), the engine's dropout
mask, scaled ("in.dropout_mask", applied in place of classifier.2), and what the engine computed: the
training forward's logits and mean loss ("out.logits", "out.loss"), the gradients ("out.grad.<name>") and the
state dict after one SGD step, momentum 0.9, weight decay 5e-4, lr given ("out.after.<name>").

Tolerances. Both sides compute in float32 (oneDNN here, PyTorch's CPU kernels there) in different orders.
A dot product of K terms rounds with a relative error of about sqrt(K) * 2^-24 typically (K = 2304 for a 3x3
conv over 256 channels: ~3e-6), and one step through BatchNorm's backward amplifies that by the inverse of
the batch's spread; the GPU tests bound one float32 vgg6 step's layout change at 1e-4 of the largest
magnitude, and so does this check, per tensor. Measured (torch 2.15, batch 4): worst 1.1e-6 (cnn3) and
2.8e-6 (vgg6) of the largest magnitude, forward, gradients and after the step. What it tells apart (seen: a
fold whose running mean ignores the bias fails at 2e-2 to 1 of the running means): a fold that forgets the bias in the running mean (off by
momentum * bias, ~1e-2 of it), a fused ReLU mask in the wrong place (O(1) in the gradients), a wrong
weight-decay or momentum (O(lr * wd) ~ 1e-5 relative after a step: below this tolerance, so those are the
optimizer tests' business, not this one's).
Folded conv biases: the engine's gradient must be exactly 0, and PyTorch's, the float32 sum of a BatchNorm
input gradient that sums to 0 in exact arithmetic, must be noise: within 1e-4 of the model's largest
gradient.

  python3 scripts/fused_torch_check.py FILE MODEL LR
"""

import os
import sys

import torch
from safetensors.torch import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks", "pytorch"))
import peer_models  # noqa: E402  (the models of docs/MODELS.md)

TOLERANCE = 1e-4


class MaskedDropout(torch.nn.Module):
    """The engine's dropout draw: x * mask, mask already scaled by 1 / (1 - p)."""

    def __init__(self, mask):
        super().__init__()
        self.mask = mask

    def forward(self, x):
        return x * self.mask


def folded_conv_biases(model):
    """Names of the conv biases the engine folds: a Conv2d followed directly by a BatchNorm2d."""
    names = []
    for prefix, module in model.named_modules():
        if isinstance(module, torch.nn.Sequential):
            children = list(module.named_children())
            for (name, a), (_, b) in zip(children, children[1:]):
                if isinstance(a, torch.nn.Conv2d) and a.bias is not None and isinstance(b, torch.nn.BatchNorm2d):
                    names.append(f"{prefix}.{name}.bias" if prefix else f"{name}.bias")
    return names


def main():
    path, name, lr = sys.argv[1], sys.argv[2], float(sys.argv[3])
    torch.manual_seed(0)
    t = load_file(path)
    model = peer_models.define_models(torch)[name]()
    state = {k[len("state."):]: v for k, v in t.items() if k.startswith("state.")}
    model.load_state_dict(state, strict=True)
    model.classifier[2] = MaskedDropout(t["in.dropout_mask"])
    model.train()

    failures = []

    def check(what, got, want, scale=None):
        got, want = got.detach().double(), want.detach().double()
        if got.shape != want.shape:
            failures.append(f"{what}: shape {tuple(got.shape)} vs {tuple(want.shape)}")
            return 0.0
        s = scale if scale is not None else max(want.abs().max().item(), 1e-30)
        worst = (got - want).abs().max().item() / s if got.numel() else 0.0
        if not worst <= TOLERANCE:
            failures.append(f"{what}: worst difference {worst:.3g} of {s:.3g} (tolerance {TOLERANCE})")
        return worst

    logits = model(t["in.x"])
    loss = torch.nn.functional.cross_entropy(logits, t["in.labels"].long())
    loss.backward()
    worst = {"forward": max(check("logits", logits, t["out.logits"]), check("loss", loss.reshape(-1), t["out.loss"].reshape(-1)))}

    folded = set(folded_conv_biases(model))
    grads = dict(model.named_parameters())
    largest = max(p.grad.abs().max().item() for p in grads.values())
    worst["gradients"] = 0.0
    for n, p in grads.items():
        engine = t["out.grad." + n]
        if n in folded:
            if engine.abs().max().item() != 0.0:
                failures.append(f"grad {n}: a folded bias's gradient must be exactly 0, got {engine.abs().max().item():.3g}")
            noise = p.grad.abs().max().item() / largest
            if not noise <= TOLERANCE:
                failures.append(f"grad {n}: PyTorch's {noise:.3g} of the largest gradient is not float32 noise")
            continue
        worst["gradients"] = max(worst["gradients"], check("grad " + n, engine, p.grad))
    if len(folded) == 0:
        failures.append(f"{name}: no conv bias followed by a BatchNorm: the check would test no fold")

    torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4).step()
    worst["after step"] = 0.0
    for n, v in model.state_dict().items():
        engine = t["out.after." + n]
        if n.endswith("num_batches_tracked"):
            if int(engine) != int(v):
                failures.append(f"{n}: {int(engine)} vs {int(v)}")
            continue
        worst["after step"] = max(worst["after step"], check(n + " after the step", engine, v))

    for k, v in worst.items():
        print(f"fused_torch_check {name}: worst {k} difference {v:.3g} of the largest magnitude (tolerance {TOLERANCE})")
    print(f"fused_torch_check {name}: {len(folded)} folded conv biases: {', '.join(sorted(folded))}")
    for f in failures:
        print("FAILED " + f)
    print("fused_torch_check: " + ("OK" if not failures else "FAILED"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
