#!/usr/bin/env python3
"""By hand, never in CI: PyTorch as an independent oracle for --precision bf16's arithmetic
(kernels/ops/autocast_bf16.h). Needs a PyTorch install (e.g. the venv scripts/install-python-deps.sh makes, scripts/python-env.sh).

Checks, on the CPU:
  1. the rounding rule: core/dtype.h's to_bfloat16 (add 0x7fff + lsb, truncate) equals tensor.to(bfloat16);
  2. forward: torch.autocast("cpu", bfloat16) conv2d/linear equal bf16(float64 op on bf16(x), bf16(w),
     bf16(b)) element for element, up to the fp32 accumulation order (the engine's emulation);
  3. backward: autocast's dx, dW, db are bf16 values (gradients of bf16 copies, cast up). PyTorch's CPU
     (oneDNN) bf16 backward is not within the fp32-accumulation bound of the float64 reference, so it is
     reported, not compared: on a GPU cuDNN accumulates in fp32, which is what the engine emulates.
Exit status 1 when check 1 or 2 fails.
"""
import sys

import torch
import torch.nn.functional as F


def bf16(t):
    return t.to(torch.bfloat16).to(torch.float32)


def engine_rounding(x):
    bits = x.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    lsb = (bits >> 16) & 1
    out = (((bits + 0x7FFF + lsb) >> 16) << 16) & 0xFFFFFFFF
    out = torch.where(out >= 2**31, out - 2**32, out)
    return out.to(torch.int32).view(torch.float32)


def share_equal(a, b):
    return float((a == b).float().mean()) * 100


def main():
    torch.manual_seed(0)
    ok = True
    x = torch.randn(1_000_000) * 10
    mismatches = int((engine_rounding(x) != bf16(x)).sum())
    print(f"rounding rule: {mismatches} mismatches in 1e6 values")
    ok &= mismatches == 0

    for n, c, h, w, k, ks, st, pd in [(3, 5, 9, 7, 6, 3, 2, 1), (2, 17, 11, 13, 9, 3, 1, 1), (4, 64, 16, 16, 64, 3, 1, 1)]:
        X, W, B = torch.randn(n, c, h, w), torch.randn(k, c, ks, ks) * 0.2, torch.randn(k)
        Xg, Wg, Bg = (t.clone().requires_grad_() for t in (X, W, B))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            Y = F.conv2d(Xg, Wg, Bg, st, pd)
        emulated = bf16(F.conv2d(bf16(X).double(), bf16(W).double(), bf16(B).double(), st, pd).float())
        same = share_equal(Y.float(), emulated)
        Y.backward(torch.randn(Y.shape).to(Y.dtype))
        grads_bf16 = all(bool((bf16(g) == g).all()) for g in (Xg.grad, Wg.grad, Bg.grad))
        print(f"conv {n}x{c}x{h}x{w} -> {k}: y equal to the emulation {same:.2f}%; dx, dW, db bf16 values: {grads_bf16}")
        ok &= same > 99.9  # a tie in the accumulation order may flip the last bit of a rare element

    X, W, B = torch.randn(33, 301), torch.randn(11, 301) * 0.1, torch.randn(11)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        Y = F.linear(X, W, B)
    same = share_equal(Y.float(), bf16(F.linear(bf16(X).double(), bf16(W).double(), bf16(B).double()).float()))
    unrounded_bias = share_equal(Y.float(), bf16(F.linear(bf16(X).double(), bf16(W).double(), B.double()).float()))
    print(f"linear 33x301 -> 11: y equal to the emulation {same:.2f}% (with an unrounded bias: {unrounded_bias:.2f}%)")
    ok &= same > 99.9
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
