#!/usr/bin/env python3
"""PyTorch peer of benchmarks/train/train_bench: the same models, batch sizes, data and schedule, timed the
same way, so `scripts/bench.sh` can print our images/s beside PyTorch's on the same GPU.

Models: vgg6 and resnet18 exactly as docs/MODELS.md writes them (the parameter counts are asserted:
3,249,994 and 11,173,962). Data: CIFAR-10's training split from the binary files when CIFAR10_DIR (or
~/.cache/cnn_engine/cifar10) holds them (the folder cifar-10-batches-bin, a folder containing it, or cifar-10-binary.tar.gz),
else random uint8 images of CIFAR's shape (50,000 x 3 x 32 x 32; the throughput does not depend on the pixels).
Recipe: random crop 32 with padding 4, horizontal flip, normalize with CIFAR's mean/std; CrossEntropyLoss; SGD
lr 0.05, momentum 0.9, weight decay 5e-4, constant lr. `--warmup` untimed steps, then `--steps` timed steps
(or one whole epoch with --epoch), timed by the host clock around a synchronized run (torch.cuda.synchronize
before and after).

Settings:
  tutorial  the pipeline of PyTorch's DDP/CIFAR tutorials: a DataLoader with worker processes running the
            torchvision transforms on PIL images on the CPU, pin_memory, eager mode, default precision. Note
            that PyTorch's default lets cuDNN convolutions use TF32 on Ampere and later
            (torch.backends.cudnn.allow_tf32 = True) while matmuls stay fp32
            (torch.backends.cuda.matmul.allow_tf32 = False); the JSON records the flags in force.
  resident  PyTorch's default precision (as tutorial: TF32 convolutions, fp32 matmuls) on the engine's data
            path: the uint8 dataset resident on the GPU, crop/flip/normalize as batched GPU tensor ops, eager,
            NCHW, fused SGD, cudnn.benchmark = True. The peer of `train_bench --precision tf32`.
  bf16      resident, plus bf16 autocast and channels_last, still eager. The peer of `--precision bf16`.
  best      PyTorch at its best on this workload: bf16, plus torch.compile.

Output: one JSON object per (setting, model, batch) per line on stdout (and appended to --json), plus a
human line on stderr.

  python3 benchmarks/pytorch/train_peer.py --setting tutorial --models vgg6,resnet18 --batches 128,512
  python3 benchmarks/pytorch/train_peer.py --setting best --steps 50 --json out.jsonl
  python3 benchmarks/pytorch/train_peer.py --check-models     (parameter counts only; CPU is enough)

CPU (--cpu, the peer of `train_bench --cpu`): eager PyTorch in float32 on the CPU with --threads intra-op
threads (torch.set_num_threads), default NCHW layout, the uint8 dataset in memory and the crop/flip/normalize
as batched tensor ops in the training thread (the engine's loader does the same in one worker thread), SGD
with foreach. Models mnist_cnn (on random 1x28x28 images: Fashion-MNIST's shape) and cnn3 as well, as
layers/models.cpp writes them (1,199,882 and 2,474,506 parameters), and torchvision's zoo models that run at
32x32 (mobilenet_v2, densenet121, ...: scripts/zoo_table.py's build; the engine trains their ONNX export).

  python3 benchmarks/pytorch/train_peer.py --cpu --threads 2 --models mnist_cnn,cnn3,vgg6,resnet18 --batches 64
"""

import argparse
import json
import os
import sys
import time

from peer_data import EPOCH_IMAGES, PilDataset, gpu_augment, load_data
from peer_models import EXPECTED_PARAMETERS, build_model, zoo_names

MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)
MNIST_MEAN, MNIST_STD = (0.1307,), (0.3081,)
# The GPU settings beyond the tutorial's: (bf16 autocast and channels_last, torch.compile).
SETTINGS = {"tutorial": None, "resident": (False, False), "bf16": (True, False), "best": (True, True)}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--setting", choices=list(SETTINGS), default="tutorial")
    p.add_argument("--models", default="vgg6,resnet18", help="comma-separated: vgg6,resnet18")
    p.add_argument("--batches", default="128,512", help="comma-separated batch sizes")
    p.add_argument("--warmup", type=int, default=15, help="untimed steps first (compilation happens here)")
    p.add_argument("--steps", type=int, default=100, help="timed steps")
    p.add_argument("--epoch", action="store_true", help="time one whole epoch instead of --steps")
    p.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1),
                   help="DataLoader worker processes (tutorial setting)")
    p.add_argument("--json", default="", help="append the JSON lines to this file too")
    p.add_argument("--check-models", action="store_true", help="print the parameter counts and exit")
    p.add_argument("--cpu", action="store_true", help="train on the CPU (eager, float32); see above")
    p.add_argument("--threads", type=int, default=2, help="intra-op threads with --cpu")
    return p.parse_args(argv)


def import_torch():
    try:
        import torch
        import torchvision.transforms  # noqa: F401  (imported here so a missing one fails clearly, first)
    except ImportError as e:
        sys.exit(f"train_peer.py: PyTorch and torchvision are needed ({e}). They are on the GPU machine; "
                 "install them with pip (torch, torchvision) to run this elsewhere.")
    return torch


def run_cpu_case(torch, args, name, batch, images, labels, data_desc):
    """Eager float32 on the CPU (bf16 autocast with --setting bf16): the peer of train_bench --cpu (same recipe,
    host clock)."""
    torch.manual_seed(0)
    model = build_model(torch, name)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4, foreach=True)
    mean_std = (MNIST_MEAN, MNIST_STD) if images.shape[1] == 1 else (MEAN, STD)
    mean = torch.tensor(mean_std[0]).view(1, -1, 1, 1)
    std = torch.tensor(mean_std[1]).view(1, -1, 1, 1)
    steps_per_epoch = labels.numel() // batch

    def batches():
        while True:
            perm = torch.randperm(labels.numel())
            for s in range(steps_per_epoch):
                idx = perm[s * batch:(s + 1) * batch]
                yield gpu_augment(torch, images, idx, mean, std, channels_last=False), labels[idx]

    bf16 = args.setting in ("bf16", "best")  # torch.autocast on the CPU: the peer of --precision bf16

    def step(x, y):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    model.train()
    it = batches()
    t0 = time.perf_counter()
    for _ in range(args.warmup):
        step(*next(it))
    warm_s = time.perf_counter() - t0
    timed = args.steps
    loss_sum = 0.0
    start = time.perf_counter()
    for _ in range(timed):
        loss_sum += step(*next(it)).item()
    seconds = time.perf_counter() - start
    return {
        "impl": "pytorch",
        "setting": "cpu bf16 autocast eager" if bf16 else "cpu fp32 eager",
        "model": name,
        "batch": batch,
        "device": "cpu",
        "threads": torch.get_num_threads(),
        "data": data_desc,
        "steps": timed,
        "images_per_s": batch * timed / seconds,
        "epoch_s": EPOCH_IMAGES * seconds / (timed * batch),
        "epoch_measured": False,
        "step_ms": 1e3 * seconds / timed,
        "peak_mem_bytes": 0,
        "warmup_s": warm_s,
        "final_loss": loss_sum / timed,
        "torch": torch.__version__,
        "mkldnn": torch.backends.mkldnn.is_available(),
        "compiled": False,
    }


def main_cpu(torch, args, models):
    torch.set_num_threads(args.threads)
    cifar, cifar_labels, cifar_desc = load_data(torch)
    g = torch.Generator().manual_seed(1)
    mnist = torch.randint(0, 256, (6400, 1, 28, 28), dtype=torch.uint8, generator=g)
    mnist_labels = torch.arange(6400) % 10
    out = open(args.json, "a") if args.json else None
    for name in models:
        for batch in [int(b) for b in args.batches.split(",") if b]:
            data = (mnist, mnist_labels, "random 1x28x28") if name == "mnist_cnn" else (
                cifar, cifar_labels, cifar_desc)
            r = run_cpu_case(torch, args, name, batch, *data)
            line = json.dumps(r)
            print(line, flush=True)
            if out:
                out.write(line + "\n")
                out.flush()
            print(f"pytorch cpu {name:9s} batch {batch:4d}  {r['images_per_s']:9.0f} images/s  "
                  f"step {r['step_ms']:8.3f} ms  ({r['threads']} threads, warm-up {r['warmup_s']:.1f} s)",
                  file=sys.stderr, flush=True)
    return 0


# ----- one case -----

def run_case(torch, args, setting, name, batch, images, labels, data_desc):
    import torchvision.transforms as T
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = build_model(torch, name).to(dev)
    criterion = torch.nn.CrossEntropyLoss()
    steps_per_epoch = EPOCH_IMAGES // batch
    timed = steps_per_epoch if args.epoch else args.steps
    torch.cuda.reset_peak_memory_stats()

    if setting == "tutorial":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
        transform = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                               T.Normalize(MEAN, STD)])
        loader = torch.utils.data.DataLoader(PilDataset(images, labels, transform), batch_size=batch,
                                             shuffle=True, drop_last=True, num_workers=args.workers,
                                             pin_memory=True, persistent_workers=args.workers > 0)

        def batches():
            while True:
                for x, y in loader:
                    yield x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)

        def step(x, y):
            optimizer.zero_grad(set_to_none=True)
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            return loss
    else:
        bf16, compile_ = SETTINGS[setting]
        torch.backends.cudnn.benchmark = True
        if bf16:
            model = model.to(memory_format=torch.channels_last)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4, fused=True)
        gimages, glabels = images.to(dev), labels.to(dev)
        mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1)
        std = torch.tensor(STD, device=dev).view(1, 3, 1, 1)
        forward = torch.compile(model) if compile_ else model

        def batches():
            while True:
                perm = torch.randperm(glabels.numel(), device=dev)
                for s in range(steps_per_epoch):
                    idx = perm[s * batch:(s + 1) * batch]
                    yield gpu_augment(torch, gimages, idx, mean, std, channels_last=bf16), glabels[idx]

        def step(x, y):
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                loss = criterion(forward(x), y)
            loss.backward()
            optimizer.step()
            return loss

    model.train()
    it = batches()
    t0 = time.perf_counter()
    for _ in range(args.warmup):
        step(*next(it))
    torch.cuda.synchronize()
    warm_s = time.perf_counter() - t0
    loss_sum = torch.zeros((), device=dev)
    start = time.perf_counter()
    for _ in range(timed):
        loss_sum += step(*next(it)).detach().float()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    final_loss = (loss_sum / timed).item()
    return {
        "impl": "pytorch",
        "setting": setting,
        "model": name,
        "batch": batch,
        "device": torch.cuda.get_device_name(0),
        "data": data_desc,
        "steps": timed,
        "images_per_s": batch * timed / seconds,
        "epoch_s": seconds if args.epoch else steps_per_epoch * seconds / timed,
        "epoch_measured": bool(args.epoch),
        "step_ms": 1e3 * seconds / timed,
        "peak_mem_bytes": torch.cuda.max_memory_allocated(),
        "warmup_s": warm_s,
        "final_loss": final_loss,
        "torch": torch.__version__,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "precision": ("bf16 autocast" if setting in ("bf16", "best")
                      else "fp32 (cuDNN TF32 per cudnn_allow_tf32)"),
        "channels_last": setting in ("bf16", "best"),
        "compiled": setting == "best",
        "workers": args.workers if setting == "tutorial" else 0,
    }


def main(argv):
    args = parse_args(argv)
    torch = import_torch()
    models = [m for m in args.models.split(",") if m]
    known = list(EXPECTED_PARAMETERS) + zoo_names()
    for m in models:
        if m not in known:
            sys.exit(f"train_peer.py: unknown model {m!r}; known: {', '.join(known)}")
    if args.check_models:
        for m in models:
            print(f"{m}: {sum(p.numel() for p in build_model(torch, m).parameters())} parameters")
        return 0
    if args.cpu:
        return main_cpu(torch, args, models)
    if not torch.cuda.is_available():
        sys.exit("train_peer.py: no CUDA device visible")
    images, labels, data_desc = load_data(torch)
    out = open(args.json, "a") if args.json else None
    for name in models:
        for batch in [int(b) for b in args.batches.split(",") if b]:
            r = run_case(torch, args, args.setting, name, batch, images, labels, data_desc)
            line = json.dumps(r)
            print(line, flush=True)
            if out:
                out.write(line + "\n")
                out.flush()
            print(f"pytorch {args.setting:8s} {name:9s} batch {batch:4d}  {r['images_per_s']:9.0f} images/s  "
                  f"epoch {r['epoch_s']:7.2f} s  peak {r['peak_mem_bytes'] / 1e6:7.0f} MB  "
                  f"(warm-up {r['warmup_s']:.1f} s)", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
