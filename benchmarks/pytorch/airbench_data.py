#!/usr/bin/env python3
"""Writes the CIFAR-10 tensors airbench94.py loads, from the binary files we carry, so it runs without network.

airbench94.py (github.com/KellerJordan/cifar10-airbench; not in this repo: benchmarks/time_to_accuracy.sh's
header says how to carry it) reads cifar10/train.pt and cifar10/test.pt relative to its working folder and
downloads through torchvision only when they are missing. Each file is a dict of 'images' (uint8 [N, 32, 32, 3],
HWC as torchvision's CIFAR10.data), 'labels' (int64 [N]) and 'classes' (the ten names).

  python3 benchmarks/pytorch/airbench_data.py --out .whl/airbench    # then: cd .whl/airbench && python3 ../airbench94.py

The source is CIFAR10_DIR (or ~/.cache/cnn_engine/cifar10): the folder cifar-10-batches-bin or the folder holding it.
"""

import argparse
import os
import sys

CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def read_split(root, names):
    for folder in (root, os.path.join(root, "cifar-10-batches-bin")):
        paths = [os.path.join(folder, n) for n in names]
        if all(os.path.exists(p) for p in paths):
            data = b""
            for p in paths:
                with open(p, "rb") as f:
                    data += f.read()
            return data
    sys.exit(f"airbench_data.py: {', '.join(names)} not found in {root} or {root}/cifar-10-batches-bin "
             "(set CIFAR10_DIR; on the GPU machine scripts/gpu-data.sh merges the carried parts)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder to run airbench94.py from (cifar10/ is made in it)")
    args = parser.parse_args()
    import torch

    cache = os.environ.get("XDG_CACHE_HOME") or ""
    if not cache.startswith("/"):  # the engine's default (data/data_home.h)
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    root = os.environ.get("CIFAR10_DIR") or os.path.join(cache, "cnn_engine", "cifar10")
    target = os.path.join(args.out, "cifar10")
    os.makedirs(target, exist_ok=True)
    splits = {"train.pt": [f"data_batch_{i}.bin" for i in range(1, 6)], "test.pt": ["test_batch.bin"]}
    for name, files in splits.items():
        raw = read_split(root, files)
        if len(raw) % 3073 != 0:
            sys.exit(f"airbench_data.py: {files} hold {len(raw)} bytes, not a multiple of a 3073-byte record")
        records = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(-1, 3073)
        images = records[:, 1:].reshape(-1, 3, 32, 32).permute(0, 2, 3, 1).contiguous()
        labels = records[:, 0].long().clone()
        torch.save({"images": images, "labels": labels, "classes": CLASSES}, os.path.join(target, name))
        print(f"airbench_data.py: {os.path.join(target, name)}: {images.shape[0]} images")


if __name__ == "__main__":
    main()
