"""torchvision's ImageFolder + DataLoader (PIL) on the folder loader_bench --folder reads, with the same
transforms (RandomResizedCrop(size) + RandomHorizontalFlip + ToTensor + Normalize), batch and workers:
images per second after one warm-up epoch.

    python benchmarks/pytorch/imagefolder_bench.py DIR [--image-size 224] [--batch 64] [--workers 1 2]
"""
import argparse
import time

import torch
import torchvision.datasets as datasets
import torchvision.transforms as T


def main():
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    a = p.parse_args()
    torch.set_num_threads(1)
    tf = T.Compose([T.RandomResizedCrop(a.image_size), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = datasets.ImageFolder(a.folder, tf)
    print(f"torchvision {len(ds)} images from {a.folder}, batch {a.batch}, RandomResizedCrop({a.image_size})")
    for w in a.workers:
        loader = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=w, drop_last=True,
                                             persistent_workers=True)
        for _ in loader:  # warm-up epoch (workers started, files in the page cache)
            pass
        start, n = time.perf_counter(), 0
        for _ in range(a.epochs):
            for images, _ in loader:
                n += images.shape[0]
        ips = n / (time.perf_counter() - start)
        print(f"  torchvision    {w:2d} worker(s) {ips:10.1f} images/s  {ips / w:8.1f} per worker")


if __name__ == "__main__":
    main()
