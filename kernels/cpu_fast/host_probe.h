#pragma once
// What the CPU device runs on, measured once: the instruction set oneDNN dispatches its kernels for, the
// threads (OMP_NUM_THREADS) and the fp32 and bf16 multiply-add peaks of those threads (GFLOP/s), the
// ceilings the CPU benchmarks report the convolutions' share of.
//
// The peaks are timed loops of independent multiply-adds, one per 8 registers' worth of accumulators: fp32
// `vfmadd231ps` on zmm (AVX-512) or ymm (AVX2) registers, 2 flops per lane; bf16 `vdpbf16ps` (avx512_bf16),
// 4 flops per fp32 lane (two bf16 products and their sum). 0 where the host lacks the instructions. A loaded
// machine measures less than its peak: the figures say what the threads got while measured.

#include <string>

namespace engine::cpu_fast {

struct HostProbe {
  std::string isa;  // dnnl_runtime.h's isa_name()
  int threads = 1;
  double fp32_gflops = 0.0;    // all the threads at once
  double fp32_gflops_1 = 0.0;  // one thread: what a quiet core gives, the cleaner figure on a busy host
  double bf16_gflops = 0.0;    // 0 without avx512_bf16
  double bf16_gflops_1 = 0.0;
};

// The instruction set oneDNN dispatches for ("avx2", "avx512_core", "avx512_core_bf16", ...; lowered by
// ONEDNN_MAX_CPU_ISA): free, unlike the peaks.
const char* onednn_isa();

// Measured on the first call (~50 ms), then kept.
const HostProbe& host_probe();

// "oneDNN avx512_core_bf16, 2 threads, peak fp32 620 GFLOP/s (one thread 320), bf16 1042 (521)"
std::string host_probe_line(const HostProbe& p);

}  // namespace engine::cpu_fast
