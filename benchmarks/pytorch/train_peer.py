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
layers/models.cpp writes them (1,199,882 and 2,474,506 parameters).

  python3 benchmarks/pytorch/train_peer.py --cpu --threads 2 --models mnist_cnn,cnn3,vgg6,resnet18 --batches 64
"""

import argparse
import gzip
import json
import os
import sys
import tarfile
import time

EPOCH_IMAGES = 50000
MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)
EXPECTED_PARAMETERS = {"vgg6": 3249994, "resnet18": 11173962, "mnist_cnn": 1199882, "cnn3": 2474506}
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


# ----- the models of docs/MODELS.md, verbatim -----

def define_models(torch):
    nn = torch.nn
    F = torch.nn.functional

    class VGG6(nn.Module):
        def __init__(self, in_channels=3, num_classes=10):
            super().__init__()
            layers, c = [], in_channels
            for width in (64, 128, 256):
                for _ in range(2):
                    layers += [nn.Conv2d(c, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(inplace=True)]
                    c = width
                layers.append(nn.MaxPool2d(2))
            self.features = nn.Sequential(*layers)
            self.flatten = nn.Flatten()
            self.classifier = nn.Sequential(
                nn.Linear(4096, 512), nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(512, num_classes))

        def forward(self, x):
            return self.classifier(self.flatten(self.features(x)))

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, in_planes, planes, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.shortcut = nn.Sequential()
            if stride != 1 or in_planes != planes:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(planes))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out = out + self.shortcut(x)
            return F.relu(out)

    class ResNet(nn.Module):
        def __init__(self, block, num_blocks, in_channels=3, num_classes=10):
            super().__init__()
            self.in_planes = 64
            self.conv1 = nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.layer1 = self._make_layer(block, 64, num_blocks[0], stride=1)
            self.layer2 = self._make_layer(block, 128, num_blocks[1], stride=2)
            self.layer3 = self._make_layer(block, 256, num_blocks[2], stride=2)
            self.layer4 = self._make_layer(block, 512, num_blocks[3], stride=2)
            self.linear = nn.Linear(512 * block.expansion, num_classes)

        def _make_layer(self, block, planes, num_blocks, stride):
            layers = []
            for s in [stride] + [1] * (num_blocks - 1):
                layers.append(block(self.in_planes, planes, s))
                self.in_planes = planes * block.expansion
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
            out = F.adaptive_avg_pool2d(out, 1).flatten(1)
            return self.linear(out)

    def resnet18():
        return ResNet(BasicBlock, [2, 2, 2, 2])

    class CNN3(nn.Module):
        def __init__(self, in_channels=3, num_classes=10):
            super().__init__()
            layers, c = [], in_channels
            for width in (64, 128, 256):
                layers += [nn.Conv2d(c, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                           nn.MaxPool2d(2)]
                c = width
            self.features = nn.Sequential(*layers)
            self.flatten = nn.Flatten()
            self.classifier = nn.Sequential(
                nn.Linear(4096, 512), nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(512, num_classes))

        def forward(self, x):
            return self.classifier(self.flatten(self.features(x)))

    class MnistCNN(nn.Module):  # PyTorch examples/mnist Net; logits (CrossEntropyLoss = log_softmax + NLL)
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = F.relu(self.conv2(F.relu(self.conv1(x))))
            x = self.dropout1(F.max_pool2d(x, 2)).flatten(1)
            return self.fc2(self.dropout2(F.relu(self.fc1(x))))

    return {"vgg6": VGG6, "resnet18": resnet18, "cnn3": CNN3, "mnist_cnn": MnistCNN}


def build_model(torch, name):
    model = define_models(torch)[name]()
    count = sum(p.numel() for p in model.parameters())
    if count != EXPECTED_PARAMETERS[name]:
        sys.exit(f"train_peer.py: {name} has {count} parameters, docs/MODELS.md says {EXPECTED_PARAMETERS[name]}")
    return model


# ----- data -----

def cifar_root():
    """CIFAR10_DIR, else where the engine looks by default (data/data_home.h: the user's cache)."""
    cache = os.environ.get("XDG_CACHE_HOME") or ""
    if not cache.startswith("/"):
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("CIFAR10_DIR") or os.path.join(cache, "cnn_engine", "cifar10")


def read_cifar10_binary(root):
    """The 50,000 training images as (uint8 bytes N*3072 in CHW order, labels), or None when absent."""
    names = [f"data_batch_{i}.bin" for i in range(1, 6)]
    for folder in (root, os.path.join(root, "cifar-10-batches-bin")):
        parts = []
        for n in names:
            path = os.path.join(folder, n)
            if os.path.exists(path):
                with open(path, "rb") as f:
                    parts.append(f.read())
            elif os.path.exists(path + ".gz"):
                with gzip.open(path + ".gz", "rb") as f:
                    parts.append(f.read())
        if len(parts) == 5:
            return b"".join(parts)
    for tgz in (root, os.path.join(root, "cifar-10-binary.tar.gz")):
        if os.path.isfile(tgz) and tgz.endswith(".tar.gz"):
            with tarfile.open(tgz, "r:gz") as tar:
                members = {os.path.basename(m.name): m for m in tar.getmembers()}
                if all(n in members for n in names):
                    return b"".join(tar.extractfile(members[n]).read() for n in names)
    return None


def load_data(torch):
    """(images uint8 [N, 3, 32, 32] on the CPU, labels int64 [N], description)."""
    raw = read_cifar10_binary(cifar_root())
    if raw is not None:
        records = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(-1, 3073)
        return records[:, 1:].reshape(-1, 3, 32, 32).clone(), records[:, 0].long().clone(), "cifar10:" + cifar_root()
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (EPOCH_IMAGES, 3, 32, 32), dtype=torch.uint8, generator=g)
    labels = torch.arange(EPOCH_IMAGES) % 10
    return images, labels, "random"


class PilDataset:
    """torchvision.datasets.CIFAR10's behaviour over our arrays: a PIL image per sample, then the transform."""

    def __init__(self, images, labels, transform):
        self.images = images.permute(0, 2, 3, 1).contiguous().numpy()  # HWC, as CIFAR10.data
        self.labels = labels.tolist()
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        from PIL import Image
        return self.transform(Image.fromarray(self.images[i])), self.labels[i]


def gpu_augment(torch, images, idx, mean, std, channels_last=True):
    """Random crop (padding 4) + flip + normalize for a batch gathered from the resident uint8 dataset."""
    F = torch.nn.functional
    b = idx.numel()
    c, size = images.shape[1], images.shape[2]
    x = F.pad(images[idx], (4, 4, 4, 4))  # [B, C, size+8, size+8] uint8, zero padding
    dev = x.device
    dy = torch.randint(0, 9, (b, 1), device=dev)
    dx = torch.randint(0, 9, (b, 1), device=dev)
    flip = torch.rand(b, 1, device=dev) < 0.5
    ar = torch.arange(size, device=dev)
    rows = dy + ar  # [B, size]
    cols = torch.where(flip, dx + ar.flip(0), dx + ar)
    bi = torch.arange(b, device=dev)[:, None, None, None]
    ci = torch.arange(c, device=dev)[None, :, None, None]
    out = x[bi, ci, rows[:, None, :, None], cols[:, None, None, :]]
    out = out.float().div_(255).sub_(mean).div_(std)
    return out.contiguous(memory_format=torch.channels_last) if channels_last else out.contiguous()


def run_cpu_case(torch, args, name, batch, images, labels, data_desc):
    """Eager float32 on the CPU: the peer of train_bench --cpu (same recipe, host clock)."""
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

    def step(x, y):
        optimizer.zero_grad(set_to_none=True)
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
        "setting": "cpu fp32 eager",
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
    for m in models:
        if m not in EXPECTED_PARAMETERS:
            sys.exit(f"train_peer.py: unknown model {m!r}; known: {', '.join(EXPECTED_PARAMETERS)}")
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
