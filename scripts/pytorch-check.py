#!/usr/bin/env python3
"""PyTorch as the oracle of a cnn_train checkpoint, both ways (the GPU plan's call 3, scripts/gpu-check.sh cifar):

 1. engine -> PyTorch: the checkpoint cnn_train wrote, loaded strictly into the module of docs/MODELS.md (as
    benchmarks/pytorch/train_peer.py defines it), evaluated on CIFAR-10's test set with cnn_train's
    normalization, gives the test accuracy and loss of `cnn_train --eval-only` on the same file.
 2. PyTorch -> engine: one PyTorch SGD step (lr 0.05, momentum 0.9, weight decay 5e-4, train mode) on 256
    training images changes every weight and the BatchNorm statistics; that state dict, written by
    safetensors.torch.save_file, evaluated by `cnn_train --eval-only`, gives PyTorch's accuracy and loss.

Strictness. Every tensor of the file (but the optimizer's "optim." entries) has the name, shape and dtype of
PyTorch's state dict (fp32, num_batches_tracked int64), whatever --precision or --layout wrote it: PyTorch's
load_state_dict(strict=True) checks names and shapes but casts dtypes, so the dtypes are checked here.

Tolerances. Both sides compute in fp32 (TF32 off in PyTorch, cnn_train --precision fp32), in different orders.
A logit is a chain of dot products of up to K = 4096 terms; fp32 summation in any order is within K * 2^-24
(2.4e-4) of the sum of the terms' magnitudes, and typically sqrt(K) * 2^-24 (4e-6). MARGIN_RELATIVE = 1e-3 of
an image's largest |logit| leaves a factor of 4 over the worst case and 250 over the typical one for
cancellation in the sums; only an image whose two top logits (in PyTorch) are closer than that, a near tie,
can be predicted differently: the accuracies may differ by the near ties (counted on the set evaluated,
printed) plus half of the 2 decimals cnn_train prints.
A fixed bound in points would not do: on a few hundred images one image is 0.2-0.5 points, on 10,000 0.01.
The mean loss differs by about as little as the logits; 1e-3 relative is far above that and far below what a
wrong weight layout or normalization gives (O(1)), and above the 4 decimals cnn_train prints. Prints one line
per check and "pytorch-check: OK" or "FAILED" last (exit 1).

  python3 scripts/pytorch-check.py --cnn-train build-gpu/apps/cnn_train --checkpoint CKPT --data-dir CIFAR10_DIR
  ... --cpu --limit-test 500     (a rehearsal on the CPU: both sides on the CPU, the first 500 test images)
  ... --model cnn3 --layout nhwc  (a cnn3 checkpoint; cnn_train evaluates it in NHWC: an NHWC run's file must
                                   mean the same to an NHWC model as to PyTorch; tests/cpu/
                                   cnn_train_pytorch_checkpoint_test.cpp, on a small CIFAR-format set)
"""

import argparse
import gzip
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks", "pytorch"))
import train_peer  # noqa: E402  (the models of docs/MODELS.md, and CIFAR-10's mean/std)

MARGIN_RELATIVE = 1e-3  # a near tie: top two logits closer than this of the largest |logit| (docstring)
PRINTED_ACCURACY = 0.005  # half of the 2 decimals of cnn_train's "Test Acc"
LOSS_RELATIVE = 1e-3


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cnn-train", required=True, help="the cnn_train binary")
    p.add_argument("--checkpoint", required=True, help="a cnn_train checkpoint of --model")
    p.add_argument("--data-dir", required=True, help="CIFAR-10 (the folder holding cifar-10-batches-bin)")
    p.add_argument("--model", default="vgg6", choices=["vgg6", "resnet18", "cnn3"])
    p.add_argument("--layout", default="nchw", choices=["nchw", "nhwc"],
                   help="the layout cnn_train evaluates in (fp32 either way); the file is PyTorch's either way")
    p.add_argument("--limit-test", type=int, default=0, help="only the first N test images (0: all)")
    p.add_argument("--cpu", action="store_true", help="both sides on the CPU")
    return p.parse_args()


def read_batch(data_dir, name):
    """(images uint8 [N, 3, 32, 32], labels int64 [N]) of one CIFAR-10 binary batch."""
    import torch
    for folder in (data_dir, os.path.join(data_dir, "cifar-10-batches-bin")):
        for path, opener in ((os.path.join(folder, name), open), (os.path.join(folder, name + ".gz"), gzip.open)):
            if os.path.exists(path):
                with opener(path, "rb") as f:
                    records = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).view(-1, 3073)
                return records[:, 1:].reshape(-1, 3, 32, 32).clone(), records[:, 0].long().clone()
    sys.exit(f"pytorch-check: {name} not found in {data_dir}")


def normalize(torch, images, device):
    mean = torch.tensor(train_peer.MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(train_peer.STD, device=device).view(1, 3, 1, 1)
    return (images.to(device).float() / 255.0 - mean) / std


def torch_eval(torch, model, images, labels, device):
    """(accuracy in %, mean cross-entropy, near ties) in eval mode, fp32; near ties: images whose two top logits
    are within MARGIN_RELATIVE of their largest |logit|, which fp32 rounding elsewhere may order otherwise."""
    model.eval()
    correct, loss_sum, near_ties = 0, 0.0, 0
    with torch.no_grad():
        for i in range(0, len(labels), 500):
            x = normalize(torch, images[i:i + 500], device)
            y = labels[i:i + 500].to(device)
            logits = model(x)
            loss_sum += torch.nn.functional.cross_entropy(logits, y, reduction="sum").double().item()
            correct += (logits.argmax(1) == y).sum().item()
            top2 = logits.topk(2, dim=1).values
            margin = top2[:, 0] - top2[:, 1]
            near_ties += (margin <= MARGIN_RELATIVE * logits.abs().amax(1)).sum().item()
    return 100.0 * correct / len(labels), loss_sum / len(labels), near_ties


def engine_eval(args, checkpoint):
    """(accuracy in %, loss) from cnn_train --eval-only's "Eval |" line."""
    command = [args.cnn_train, "--dataset", "cifar10", "--data-dir", args.data_dir, "--model", args.model,
               "--eval-only", checkpoint, "--checkpoint-dir", "", "--precision", "fp32", "--layout", args.layout]
    if args.cpu:
        command.append("--cpu")
    if args.limit_test:
        command += ["--limit-test", str(args.limit_test)]
    run = subprocess.run(command, capture_output=True, text=True)
    out = run.stdout + run.stderr
    m = re.search(r"Test Loss: ([0-9.]+) \| Test Acc: ([0-9.]+)%", out)
    if run.returncode != 0 or not m:
        sys.exit(f"pytorch-check: {' '.join(command)} failed (status {run.returncode}):\n{out}")
    return float(m.group(2)), float(m.group(1))


def compare(what, ours, theirs, count):
    """One line; True when accuracy and loss agree within the tolerances (docstring). theirs: PyTorch's
    (accuracy, loss, near ties) on `count` images."""
    accuracy_bound = 100.0 * theirs[2] / count + PRINTED_ACCURACY
    acc_ok = abs(ours[0] - theirs[0]) <= accuracy_bound + 1e-9
    loss_ok = abs(ours[1] - theirs[1]) <= LOSS_RELATIVE * abs(theirs[1]) + 5e-5  # + half of the 4th decimal
    print(f"{what}: cnn_train {ours[0]:.2f}% loss {ours[1]:.4f}, PyTorch {theirs[0]:.2f}% loss {theirs[1]:.4f}: "
          f"{'ok' if acc_ok and loss_ok else 'DIFFERENT'} (within {accuracy_bound:.3f} points: {theirs[2]} near "
          f"ties of {count} images; loss {LOSS_RELATIVE:g} relative)")
    return acc_ok and loss_ok


def check_dtypes(model, file_state):
    """True when every tensor of the file has the dtype of PyTorch's (load_state_dict would cast it)."""
    expected = model.state_dict()
    wrong = [f"{k} {v.dtype} (PyTorch: {expected[k].dtype})" for k, v in file_state.items()
             if k in expected and v.dtype != expected[k].dtype]
    for line in wrong:
        print(f"pytorch-check: dtype of {line}")
    return not wrong


def main():
    args = parse_args()
    torch = train_peer.import_torch()
    from safetensors.torch import load_file, save_file
    device = "cpu" if args.cpu or not torch.cuda.is_available() else "cuda"
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False

    images, labels = read_batch(args.data_dir, "test_batch.bin")
    if args.limit_test:
        images, labels = images[:args.limit_test], labels[:args.limit_test]

    model = train_peer.build_model(torch, args.model).to(device)
    state = {k: v for k, v in load_file(args.checkpoint).items() if not k.startswith("optim.")}
    dtypes_ok = check_dtypes(model, state)
    model.load_state_dict(state, strict=True)  # every name and shape as PyTorch has them
    print(f"pytorch-check: {args.checkpoint} loads strictly into PyTorch's {args.model} ({len(state)} tensors"
          f"{', dtypes as PyTorch' if dtypes_ok else ', OTHER DTYPES'}) on {device}; cnn_train evaluates in "
          f"{args.layout}")
    ok = compare("1. cnn_train checkpoint", engine_eval(args, args.checkpoint),
                 torch_eval(torch, model, images, labels, device), len(labels)) and dtypes_ok

    # 2. One PyTorch step moves every weight and the BatchNorm statistics; cnn_train must read them all.
    train_images, train_labels = read_batch(args.data_dir, "data_batch_1.bin")
    torch.manual_seed(0)  # the step's dropout mask: the same lines every run
    model.train()
    sgd = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    loss = torch.nn.functional.cross_entropy(model(normalize(torch, train_images[:256], device)),
                                             train_labels[:256].to(device))
    sgd.zero_grad()
    loss.backward()
    sgd.step()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "pytorch_step.safetensors")
        save_file({k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}, path)
        ok = compare("2. PyTorch state dict", engine_eval(args, path),
                     torch_eval(torch, model, images, labels, device), len(labels)) and ok
    print("pytorch-check: " + ("OK" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
