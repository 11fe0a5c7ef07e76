"""PyTorch as the client of ONNX import (outside CI; run by tests/cpu/onnx_pytorch_test.cpp when a python with
torch is found, see tests/common/pytorch_tools.h).

  python3 scripts/onnx_torch_check.py export DIR NET...
                                                     writes DIR/NET.onnx for each NET: "residual", a CNN that is
                                                     not in the zoo (a residual branch, GELU, global average
                                                     pooling), or "grouped" (grouped, depthwise and dilated
                                                     convolutions, windowed average pooling), or "affine"
                                                     (x * scale + shift per channel, parameters [C, 1, 1] and
                                                     [1, C, 1, 1]), or "se" (squeeze-excite with a
                                                     broadcasting Mul, chunk, cat, mean), or "mobilenet_v2"
                                                     (torchvision's, 10 classes, dropout 0: ReLU6 as ONNX's
                                                     Clip), exported with the lines of README's "Your own model"
  python3 scripts/onnx_torch_check.py compare FILE:NET...
                                                     each FILE (written by the test) against its NET:
                                                     the engine's initial state ("state.<name>", read
                                                     from the ONNX initializers), the batch ("in.x",
                                                     "in.labels"), its inference logits ("out.logits") and
                                                     its state after two SGD steps, momentum 0.9, weight
                                                     decay 5e-4, lr 0.05 ("out.after.<name>")

The same net loads the engine's initial state by name (strict: the names must be PyTorch's), computes the
logits and takes the same two steps.

Tolerance, per tensor, relative to its largest magnitude. Both sides compute in float32, summing in other
orders. A float32 sum of n terms rounds with a relative error that grows like sqrt(n) * u (u = 2^-24) with
overwhelming probability: lambda * sqrt(n) * u bounds it with probability 1 - 2 exp(-lambda^2 / 2) (Higham and
Mary, "A new approach to probabilistic rounding error analysis", 2019); lambda = 3. Errors of the sums along
the network add up, forward and backward, and the second step starts from the first's weights: the
tolerance is 2 steps x lambda x u x (sum of sqrt(n) over the sums of one step), with this net's sums at batch
4 on 32x32 (FORWARD_SUMS, BACKWARD_SUMS below): 3.1e-4. Measured (torch 2.15, CPU): worst 7.8e-6, logits,
initial state and state after the steps. What it tells apart (seen by changing PyTorch's side): momentum 0.8
instead of 0.9 fails at 3.6e-2, weight decay 5e-3 instead of 5e-4 at 6.8e-4; a BatchNorm on the wrong axis, a
missed residual gradient or a wrong initial weight by far more. Weight decay 0 instead of 5e-4 (~7e-5) is
below it: the optimizer tests' business.
"""


import sys

import torch
from safetensors.torch import load_file

# The float32 sums of one step (batch 4, 32x32: 4096 positions per channel). Forward: the stem conv (3 x 3x3),
# BatchNorm's mean and variance, a branch conv (16 x 3x3), BatchNorm, conv, BatchNorm, the global pool (32x32),
# the linear layer (16). Backward: the linear layer's dx (10) and dW (batch), each BatchNorm's two sums, the
# branch convs' dx (16 x 3x3), each conv's dW (over the 4096 positions).
FORWARD_SUMS = [27, 4096, 144, 4096, 144, 4096, 1024, 16]
BACKWARD_SUMS = [10, 4] + [4096] * 6 + [144] * 2 + [4096] * 3
TOLERANCE = 2 * 3 * 2.0**-24 * sum(n**0.5 for n in FORWARD_SUMS + BACKWARD_SUMS)


# GroupedNet's sums, as above (batch 4, 32x32): forward conv1 (3 x 3x3), depthwise (3x3), pointwise (8 / 2
# groups), the two average pools (9, 4), the linear layer (1024); backward the linear layer's dx and dW, the
# pointwise and depthwise dx (8, 9), and the dW and bias gradients of the three convs over 4096 positions.
GROUPED_SUMS = [27, 9, 4, 9, 4, 1024] + [10, 4, 8, 9] + [4096] * 5
GROUPED_TOLERANCE = 2 * 3 * 2.0**-24 * sum(n**0.5 for n in GROUPED_SUMS)


class GroupedNet(torch.nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=2, dilation=2)
        self.depthwise = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.pointwise = torch.nn.Conv2d(8, 16, 1, groups=2)
        self.pool1 = torch.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
        self.pool2 = torch.nn.AvgPool2d(2)
        self.fc = torch.nn.Linear(16 * 8 * 8, classes)

    def forward(self, x):
        x = torch.nn.functional.relu(self.conv1(x))
        x = torch.nn.functional.relu(self.pointwise(self.depthwise(x)))
        return self.fc(torch.flatten(self.pool2(self.pool1(x)), 1))


# AffineNet's sums, as above: forward conv (3 x 3x3), the average pool (4), the linear layer (8 * 16 * 16);
# backward the linear layer's dx and dW, the scale's and shift's sums and the conv's dW and bias over 4096
# positions.
AFFINE_SUMS = [27, 4, 2048] + [10, 4] + [4096] * 4
AFFINE_TOLERANCE = 2 * 3 * 2.0**-24 * sum(n**0.5 for n in AFFINE_SUMS)


class Affine(torch.nn.Module):
    """x * scale + shift, one value per channel: ONNX's Mul and Add by broadcasting constants."""

    def __init__(self, channels):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.linspace(0.5, 1.5, channels).reshape(channels, 1, 1))
        self.shift = torch.nn.Parameter(torch.linspace(-0.2, 0.3, channels).reshape(1, channels, 1, 1))

    def forward(self, x):
        return x * self.scale + self.shift


class AffineNet(torch.nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.affine = Affine(8)
        self.pool = torch.nn.AvgPool2d(2)
        self.fc = torch.nn.Linear(8 * 16 * 16, classes)

    def forward(self, x):
        x = torch.nn.functional.relu(self.affine(self.conv(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def float32_sums(model, batch=4, size=32):
    """The float32 sums of one training step of `model` (batch 4, size x size), found by running it once:
    per convolution its dot products forward (C_in / groups x k x k) and for dx (C_out / groups x k x k) and
    its dW over the output positions (N x H x W); per BatchNorm its two sums forward and backward over
    N x H x W; per Linear in_features, out_features and the batch. (A global pool after these nets' last
    stride-32 stage averages a 1 x 1 map: no sum.)"""
    sums = []

    def hook(module, inputs, output):
        x = inputs[0]
        if isinstance(module, torch.nn.Conv2d):
            k = module.kernel_size[0] * module.kernel_size[1]
            positions = output.shape[0] * output.shape[2] * output.shape[3]
            sums.extend([module.in_channels // module.groups * k, module.out_channels // module.groups * k,
                         positions])
            if module.bias is not None:
                sums.append(positions)
        elif isinstance(module, torch.nn.BatchNorm2d):
            sums.extend([x.shape[0] * x.shape[2] * x.shape[3]] * 4)
        elif isinstance(module, torch.nn.Linear):
            sums.extend([module.in_features, module.out_features, x.shape[0]])

    handles = [m.register_forward_hook(hook) for m in model.modules()]
    with torch.no_grad():
        model.eval()(torch.zeros(batch, 3, size, size))
    for h in handles:
        h.remove()
    return sums


def mobilenet_v2():
    import torchvision
    torch.manual_seed(0)
    return torchvision.models.mobilenet_v2(num_classes=10, dropout=0.0)


# torchvision's MobileNetV2 (52 convolutions, 52 BatchNorms, ReLU6): the same bound, its sums counted by
# float32_sums. The final feature map is 1 x 1 at 32 x 32, so BatchNorm there sums over the batch only.
def mobilenet_v2_tolerance(batch):
    return 2 * 3 * 2.0**-24 * sum(n**0.5 for n in float32_sums(mobilenet_v2(), batch))


# SqueezeExciteNet's sums, as above: forward conv (3 x 3x3), the global pools (1024, 256), the excite convs (8,
# 4), the linear layer (8); backward the linear layer's dx and dW, the pools' and the gate's broadcast sums
# (1024 each), the excite convs' dx and dW (4, 8, batch) and the conv's dW and bias over 4096 positions.
SE_SUMS = [27, 1024, 256, 8, 4, 8] + [10, 4, 1024, 1024, 4, 8, 4, 4] + [4096] * 2
SE_TOLERANCE = 2 * 3 * 2.0**-24 * sum(n**0.5 for n in SE_SUMS)


class SqueezeExciteNet(torch.nn.Module):
    """torchvision's SqueezeExcitation with a ReLU gate (the Sigmoid is another layer's): AdaptiveAvgPool2d(1)
    keeps [N, C, 1, 1] (ONNX's GlobalAveragePool), 1x1 convs read it, and the gate multiplies [N, C, H, W] by
    broadcasting; then torch.cat of two branches, a channel chunk and x.mean([2, 3]) (ReduceMean)."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc1 = torch.nn.Conv2d(8, 4, 1)
        self.fc2 = torch.nn.Conv2d(4, 8, 1)
        self.pool = torch.nn.AvgPool2d(2)
        self.fc = torch.nn.Linear(8, classes)

    def forward(self, x):
        x = torch.nn.functional.relu(self.conv(x))
        scale = torch.nn.functional.relu(self.fc2(torch.nn.functional.relu(self.fc1(
            torch.nn.functional.adaptive_avg_pool2d(x, 1)))))
        x = self.pool(x * scale)
        a, b = x.chunk(2, dim=1)
        x = torch.cat([b, a - b], dim=1)
        return self.fc(x.mean([2, 3]))


NETS = {"grouped": (lambda: GroupedNet(), lambda batch: GROUPED_TOLERANCE),
        "se": (lambda: SqueezeExciteNet(), lambda batch: SE_TOLERANCE),
        "mobilenet_v2": (mobilenet_v2, mobilenet_v2_tolerance),
        "affine": (lambda: AffineNet(), lambda batch: AFFINE_TOLERANCE),
        "residual": (lambda: Net(), lambda batch: TOLERANCE)}


class Net(torch.nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1, bias=False), torch.nn.BatchNorm2d(16))
        self.branch = torch.nn.Sequential(
            torch.nn.Conv2d(16, 16, 3, padding=1, bias=False), torch.nn.BatchNorm2d(16), torch.nn.GELU(),
            torch.nn.Conv2d(16, 16, 3, padding=1, bias=False), torch.nn.BatchNorm2d(16))
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(16, classes)

    def forward(self, x):
        x = torch.nn.functional.gelu(self.stem(x))
        x = torch.nn.functional.relu(x + self.branch(x))
        return self.fc(torch.flatten(self.pool(x), 1))


def export(out_dir, *nets):
    for net in nets:
        export_one(out_dir, net)


def export_one(out_dir, net):
    torch.manual_seed(0)
    model = NETS[net][0]()
    x = torch.randn(1, 3, 32, 32)
    # README's "Your own model": eval() and PRESERVE keep BatchNorm as its own node (EVAL would fold it into
    # the convolutions), do_constant_folding=False keeps the state-dict names on the initializers.
    torch.onnx.export(model.eval(), x, f"{out_dir}/{net}.onnx", opset_version=17, dynamo=False,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    print(f"onnx_torch_check: exported {net}")


def compare(*pairs):
    failed = [pair for pair in pairs if not compare_one(*pair.rsplit(":", 1))]
    if failed:
        print("onnx_torch_check: FAILED: " + ", ".join(failed))
        sys.exit(1)
    print("onnx_torch_check: OK")


# Returns whether the engine's FILE matches PyTorch's NET.
def compare_one(path, net):
    t = load_file(path)
    model = NETS[net][0]()
    tolerance = NETS[net][1](t["in.x"].shape[0])
    state = {k[len("state."):]: v for k, v in t.items() if k.startswith("state.")}
    # num_batches_tracked is no ONNX tensor: the engine starts it at 0, as PyTorch does.
    missing, unexpected = model.load_state_dict(state, strict=False)
    failures = [f"not in the engine's state: {m}" for m in missing if not m.endswith("num_batches_tracked")]
    failures += [f"not in PyTorch's state: {u}" for u in unexpected]

    worst_seen = [0.0]

    def check(what, got, want):
        got, want = got.detach().double(), want.detach().double()
        if got.shape != want.shape:
            failures.append(f"{what}: shape {tuple(got.shape)} vs {tuple(want.shape)}")
            return
        s = max(want.abs().max().item(), 1e-30)
        worst = (got - want).abs().max().item() / s if got.numel() else 0.0
        worst_seen[0] = max(worst_seen[0], worst)
        if not worst <= tolerance:
            failures.append(f"{what}: worst difference {worst:.3g} of {s:.3g} (tolerance {tolerance})")

    x, labels = t["in.x"].float(), t["in.labels"].long()  # PyTorch runs float32 (the engine may not)
    model.eval()
    with torch.no_grad():
        check("inference logits", model(x), t["out.logits"])
    model.train()
    lr = t["in.lr"].item() if "in.lr" in t else 0.05  # the engine's learning rate, when it wrote one
    sgd = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    for _ in range(2):
        sgd.zero_grad()
        torch.nn.functional.cross_entropy(model(x), labels).backward()
        sgd.step()
    for name, value in model.state_dict().items():
        key = "out.after." + name
        if key in t:
            check(name, value, t[key])
        elif not name.endswith("num_batches_tracked"):
            failures.append(f"{name}: not in the engine's state after the steps")
    print(f"onnx_torch_check: {net}: worst difference {worst_seen[0]:.3g} of a tensor's largest magnitude "
          f"(tolerance {tolerance:.3g})")
    if failures:
        print(f"onnx_torch_check: {net} FAILED\n  " + "\n  ".join(failures))
    return not failures


if __name__ == "__main__":
    {"export": export, "compare": compare}[sys.argv[1]](*sys.argv[2:])
