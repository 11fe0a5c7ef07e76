#!/usr/bin/env python3
"""The last table of scripts/bench.sh: our training throughput beside PyTorch's, per model and batch.

Reads the JSON lines of train_bench (--json, one run per --precision) and of train_peer.py (its four settings)
and prints, per (model, batch): our images/s per precision, PyTorch's per setting, and the ratios ours /
theirs (above 1 means we are faster). With --markdown it prints the same table as Markdown, headed by the date, the commit and
the GPU, ready to paste into benchmarks/RESULTS.md. Needs no PyTorch.

  python3 benchmarks/pytorch/report.py --ours train.jsonl --pytorch pytorch.jsonl [--kernels kernels.json]
"""

import argparse
import datetime
import json
import os
import subprocess
import sys


def read_lines(path):
    rows = []
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    rows.append(json.loads(line))
    return rows


def commit():
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def fmt_rate(r):
    return f"{r['images_per_s']:.0f}" if r else "-"


def fmt_ratio(a, b):
    return f"{a['images_per_s'] / b['images_per_s']:.2f}" if a and b and b["images_per_s"] > 0 else "-"


PRECISIONS = ("fp32", "tf32", "bf16")          # train_bench --precision: its JSON "setting" starts with it
PEER_SETTINGS = ("tutorial", "resident", "bf16", "best")  # train_peer.py --setting


# train_bench variants beside the NCHW eager runs (scripts/bench.sh with VARIANTS=1): column name, precision,
# layout, CUDA graph. Shown only when some run has one.
VARIANTS = (("ours tf32 nhwc img/s", "tf32", "nhwc", False), ("ours bf16 nhwc img/s", "bf16", "nhwc", False),
            ("ours tf32 graph img/s", "tf32", "nchw", True), ("ours bf16 graph img/s", "bf16", "nchw", True))


def is_variant(r, precision, layout, graph):
    return (r.get("setting", "").split(" ")[0] == precision and r.get("layout", "nchw") == layout
            and bool(r.get("cuda_graph", False)) == graph)


def table(ours, theirs):
    keys = []
    for r in ours + theirs:
        k = (r["model"], int(r["batch"]))
        if k not in keys:
            keys.append(k)
    variants = [v for v in VARIANTS if any(is_variant(r, *v[1:]) for r in ours)]
    header = (["model", "batch"] + [f"ours {p} img/s" for p in PRECISIONS] + [v[0] for v in variants]
              + ["ours tf32 epoch s", "ours tf32 peak MB", "ours tf32 host ms/step", "ours tf32 kernels/step"]
              + [f"torch {s} img/s" for s in PEER_SETTINGS]
              + ["tf32/tutorial", "tf32/resident", "bf16/torch bf16", "ours best/torch best"])
    rows = []
    for model, batch in keys:
        def pick(rows_, accept):
            for r in rows_:
                if r["model"] == model and int(r["batch"]) == batch and accept(r):
                    return r
            return None
        # The precision columns are the NCHW eager runs; the variants have their own columns.
        mine = {p: pick(ours, lambda r, p=p: is_variant(r, p, "nchw", False)) for p in PRECISIONS}
        extra = [pick(ours, lambda r, v=v: is_variant(r, *v[1:])) for v in variants]
        peer = {s: pick(theirs, lambda r, s=s: r.get("setting", "") == s) for s in PEER_SETTINGS}
        fastest = max((r for r in list(mine.values()) + extra if r), key=lambda r: r["images_per_s"], default=None)
        t32 = mine["tf32"]
        rows.append([model, str(batch)] + [fmt_rate(mine[p]) for p in PRECISIONS] + [fmt_rate(r) for r in extra]
                    + [f"{t32['epoch_s']:.2f}" if t32 else "-", f"{t32['peak_mem_bytes'] / 1e6:.0f}" if t32 else "-",
                       f"{t32['host_ms_per_step']:.3f}" if t32 and "host_ms_per_step" in t32 else "-",
                       str(t32["kernels_per_step"]) if t32 and t32.get("kernels_per_step") is not None else "-"]
                    + [fmt_rate(peer[s]) for s in PEER_SETTINGS]
                    + [fmt_ratio(t32, peer["tutorial"]), fmt_ratio(t32, peer["resident"]),
                       fmt_ratio(mine["bf16"], peer["bf16"]), fmt_ratio(fastest, peer["best"])])
    return header, rows


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ours", required=True, help="train_bench --json output (JSON lines)")
    p.add_argument("--pytorch", required=True, help="train_peer.py --json output (JSON lines)")
    p.add_argument("--kernels", default="", help="kernel_bench --json output, for the ceilings line")
    p.add_argument("--markdown", action="store_true", help="Markdown with date, commit and GPU")
    a = p.parse_args(argv)
    ours, theirs = read_lines(a.ours), read_lines(a.pytorch)
    header, rows = table(ours, theirs)
    gpu = next((r.get("device") for r in ours + theirs if r.get("device")), "unknown GPU")
    ceilings = ""
    if a.kernels and os.path.exists(a.kernels):
        c = json.load(open(a.kernels)).get("ceilings", {})
        ceilings = (f"measured ceilings: copy {c.get('copy_gb_s', 0):.0f} GB/s, fp32 {c.get('fp32_tflop_s', 0):.1f}, "
                    f"tf32 {c.get('tf32_tflop_s', 0):.1f}, bf16 {c.get('bf16_tflop_s', 0):.1f} TFLOP/s")
    ours_setting = ", ".join(sorted({r.get("setting", "?") for r in ours})) or "?"
    tut = next((r for r in theirs if r["setting"] == "tutorial"), None)
    notes = [f"ours: {ours_setting}, GPU-resident loader, steps {ours[0]['steps'] if ours else '-'}",
             "torch tutorial: DataLoader workers + torchvision CPU transforms, eager, default precision"
             + (f" (cudnn.allow_tf32={tut['cudnn_allow_tf32']}, matmul.allow_tf32={tut['matmul_allow_tf32']})"
                if tut else ""),
             "torch resident: GPU-resident data and augmentation, eager, default precision, fused SGD "
             "(the peer of ours in tf32, the engine's default); torch bf16: that + bf16 autocast + channels_last",
             "torch best: torch bf16 + torch.compile; 'ours best': the fastest of our runs (variants included)",
             "ratios > 1: ours faster (issue 17's aims: tf32 >= 1.2x PyTorch's default, ours best >= 1.5x torch best)"]
    if a.markdown:
        print(f"### {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, commit {commit()}, {gpu}\n")
        if ceilings:
            print(ceilings + "\n")
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
        print()
        for n in notes:
            print(f"- {n}")
        return 0
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    print(f"\n== training throughput on {gpu}: ours vs PyTorch (same GPU, same command)")
    if ceilings:
        print(ceilings)
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    for n in notes:
        print("  " + n)
    if not rows:
        print("  (no results: see the logs)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
