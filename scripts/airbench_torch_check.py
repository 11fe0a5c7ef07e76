#!/usr/bin/env python3
"""PyTorch as the oracle of the zoo's airbench and of --recipe airbench94's SGD settings (outside CI; run by
tests/cpu/model_airbench_pytorch_test.cpp when a python with torch is found, see tests/common/pytorch_tools.h).

The test writes a safetensors file (float64): the model's initial state dict ("state.<name>"), two batches
("in.x1", "in.labels1", "in.x2", "in.labels2"), and what the engine computed: the first training forward's
logits and mean loss ("out.logits1", "out.loss1"), the first backward's gradients ("out.grad.<name>", of the
MEAN loss), and the state dict after two SGD steps with the recipe's settings ("out.after.<name>").

Here the module of docs/MODELS.md runs airbench94.py's own optimisation: the loss SUMMED over the batch
(label smoothing 0.2), torch.optim.SGD(nesterov, momentum 0.85) with its two groups (BatchNorm biases at lr x 64
with weight_decay wd / lr_biases; the rest at lr with wd / lr), lr = 11.5 / (1024 (1 + 1 / 0.15)),
wd = 0.0153 B / (1024 (1 + 1 / 0.15)), the whitening weight and BatchNorm weights frozen, the schedule factor
given. Agreement checks the network, GELU, the 1/9, BatchNorm's eps and momentum, and the translation of
airbench's summed-loss hyperparameters to the engine's mean loss (apps/train/recipe.h).

Tolerance: both sides compute in float64 (the engine's reference kernels accumulate in double), in different
orders: the worst difference measured (torch 2.15, forward, gradients and two steps) is 5e-14 of the tensor's
largest magnitude. 1e-8 is far above that and below the smallest wrong setting tried: twice the weight decay
shows at 3e-6 after two steps, BatchNorm momentum 0.6 instead of 0.4 at 0.3.

  python3 scripts/airbench_torch_check.py FILE LR_FACTOR
"""

import sys

import torch
from torch import nn
from safetensors.torch import load_file


class Mul(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x * self.scale


class BatchNorm(nn.BatchNorm2d):
    def __init__(self, num_features):
        super().__init__(num_features, eps=1e-12, momentum=1 - 0.6)
        self.weight.requires_grad = False


class ConvGroup(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding="same", bias=False)
        self.pool = nn.MaxPool2d(2)
        self.norm1 = BatchNorm(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding="same", bias=False)
        self.norm2 = BatchNorm(cout)
        self.activ = nn.GELU()

    def forward(self, x):
        x = self.activ(self.norm1(self.pool(self.conv1(x))))
        return self.activ(self.norm2(self.conv2(x)))


def airbench(num_classes=10):
    net = nn.Sequential(
        nn.Conv2d(3, 24, 2, padding=0, bias=True), nn.GELU(),
        ConvGroup(24, 64), ConvGroup(64, 256), ConvGroup(256, 256),
        nn.MaxPool2d(3), nn.Flatten(), nn.Linear(256, num_classes, bias=False), Mul(1 / 9))
    net[0].weight.requires_grad = False
    return net


def close(name, got, want, failures):
    want = want.to(got.dtype)
    scale = max(want.abs().max().item(), 1e-300)
    err = (got - want).abs().max().item() / scale
    if not err <= 1e-8:
        failures.append(f"{name}: max error {err:.3e} of the largest magnitude")
    return err


def main():
    path, lr_factor = sys.argv[1], float(sys.argv[2])
    t = load_file(path)
    torch.manual_seed(0)
    model = airbench().double()
    state = {k[len("state."):]: v for k, v in t.items() if k.startswith("state.")}
    model.load_state_dict(state, strict=True)
    model.train()
    failures, worst = [], 0.0

    batch = t["in.x1"].shape[0]
    momentum = 0.85
    kilostep_scale = 1024 * (1 + 1 / (1 - momentum))
    lr = 11.5 / kilostep_scale
    wd = 0.0153 * batch / kilostep_scale
    lr_biases = lr * 64.0
    named = list(model.named_parameters())
    norm_biases = [p for k, p in named if "norm" in k and p.requires_grad]
    other = [p for k, p in named if "norm" not in k and p.requires_grad]
    opt = torch.optim.SGD([dict(params=norm_biases, lr=lr_biases * lr_factor, weight_decay=wd / lr_biases),
                           dict(params=other, lr=lr * lr_factor, weight_decay=wd / lr)],
                          momentum=momentum, nesterov=True)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.2, reduction="none")

    for step in (1, 2):
        x, labels = t[f"in.x{step}"], t[f"in.labels{step}"].long()
        logits = model(x)
        loss = loss_fn(logits, labels).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if step == 1:
            worst = max(worst, close("logits", logits.detach(), t["out.logits1"], failures))
            worst = max(worst, close("mean loss", (loss / batch).detach().reshape(1), t["out.loss1"].reshape(1),
                                     failures))
            for k, p in named:
                if p.grad is not None:  # the engine's gradient is of the mean loss
                    worst = max(worst, close("grad " + k, p.grad, t["out.grad." + k] * batch, failures))
        opt.step()

    for k, v in model.state_dict().items():
        want = t["out.after." + k]
        if v.dtype == torch.int64:
            if v.item() != want.item():
                failures.append(f"{k}: {v.item()} vs {want.item()}")
        else:
            worst = max(worst, close("after 2 steps " + k, v, want, failures))

    print(f"airbench_torch_check: torch {torch.__version__}, batch {batch}, worst relative error {worst:.3e}")
    for f in failures:
        print("  " + f)
    print("airbench_torch_check: " + ("FAILED" if failures else "OK"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
