"""train_peer.py's data: CIFAR-10's training split from the binary files (or random images of its shape), the
tutorial's PIL dataset and the batched GPU augmentation of the resident path."""

import gzip
import os
import tarfile

EPOCH_IMAGES = 50000


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
