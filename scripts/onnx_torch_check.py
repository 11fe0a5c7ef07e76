"""PyTorch as the client of ONNX import (outside CI; run by tests/cpu/onnx_pytorch_test.cpp when a python with
torch is found, see tests/common/pytorch_tools.h).

  python3 scripts/onnx_torch_check.py export DIR     writes DIR/net.onnx: a CNN that is not in the zoo (a
                                                     residual branch, GELU, global average pooling), exported
                                                     with the lines of README's "Your own model"
  python3 scripts/onnx_torch_check.py compare FILE   FILE (written by the test): the engine's initial state
                                                     ("state.<name>", read from the ONNX initializers), the
                                                     batch ("in.x", "in.labels"), its inference logits
                                                     ("out.logits") and its state after two SGD steps, momentum
                                                     0.9, weight decay 5e-4, lr 0.05 ("out.after.<name>")

The same Net loads the engine's initial state by name (strict: the names must be PyTorch's), computes the
logits and takes the same two steps. Tolerance: both sides compute in float32 in different orders; as
scripts/fused_torch_check.py argues, 1e-4 of each tensor's largest magnitude (BatchNorm's backward amplifies
the dot products' sqrt(K) * 2^-24 roundings by the inverse of the batch's spread).
"""

import sys

import torch
from safetensors.torch import load_file

TOLERANCE = 1e-4


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


def export(out_dir):
    torch.manual_seed(0)
    model = Net()
    x = torch.randn(1, 3, 32, 32)
    # README's "Your own model": eval() and PRESERVE keep BatchNorm as its own node (EVAL would fold it into
    # the convolutions), do_constant_folding=False keeps the state-dict names on the initializers.
    torch.onnx.export(model.eval(), x, f"{out_dir}/net.onnx", opset_version=17, dynamo=False,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    print("onnx_torch_check: exported")


def compare(path):
    t = load_file(path)
    model = Net()
    state = {k[len("state."):]: v for k, v in t.items() if k.startswith("state.")}
    # num_batches_tracked is no ONNX tensor: the engine starts it at 0, as PyTorch does.
    missing, unexpected = model.load_state_dict(state, strict=False)
    failures = [f"not in the engine's state: {m}" for m in missing if not m.endswith("num_batches_tracked")]
    failures += [f"not in PyTorch's state: {u}" for u in unexpected]

    def check(what, got, want):
        got, want = got.detach().double(), want.detach().double()
        if got.shape != want.shape:
            failures.append(f"{what}: shape {tuple(got.shape)} vs {tuple(want.shape)}")
            return
        s = max(want.abs().max().item(), 1e-30)
        worst = (got - want).abs().max().item() / s if got.numel() else 0.0
        if not worst <= TOLERANCE:
            failures.append(f"{what}: worst difference {worst:.3g} of {s:.3g} (tolerance {TOLERANCE})")

    x, labels = t["in.x"], t["in.labels"].long()
    model.eval()
    with torch.no_grad():
        check("inference logits", model(x), t["out.logits"])
    model.train()
    sgd = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
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
    if failures:
        print("onnx_torch_check: FAILED\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("onnx_torch_check: OK")


if __name__ == "__main__":
    {"export": export, "compare": compare}[sys.argv[1]](sys.argv[2])
