"""PyTorch's side of tests/cpu/onnx_softmax_test.cpp: nn.Sequential(nn.Linear(5, 7), nn.Softmax(dim=1))
exported by torch.onnx.export (opset 17, the TorchScript exporter), and its forward and backward in float64
on a fixed input and upstream gradient: argv[1]/model.onnx and argv[1]/expected.json (x, dy, y, and the
gradients of the weight and the bias)."""
import json
import sys

import torch

out = sys.argv[1]
torch.manual_seed(7)
model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Softmax(dim=1))
x = torch.randn(3, 5)
torch.onnx.export(model, (x,), f"{out}/model.onnx", opset_version=17, dynamo=False,
                  input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "N"}})
model = model.double()
xd = x.double()
dy = torch.randn(3, 7, dtype=torch.float64)
y = model(xd)
y.backward(dy)
lin = model[0]
json.dump({"x": xd.flatten().tolist(), "dy": dy.flatten().tolist(), "y": y.detach().flatten().tolist(),
           "dweight": lin.weight.grad.flatten().tolist(), "dbias": lin.bias.grad.flatten().tolist()},
          open(f"{out}/expected.json", "w"))
