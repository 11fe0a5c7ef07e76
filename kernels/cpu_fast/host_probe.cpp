#include "kernels/cpu_fast/host_probe.h"

#include <chrono>
#include <cstdint>
#include <immintrin.h>
#include <omp.h>

#include <fmt/format.h>

#include "kernels/cpu_fast/dnnl_runtime.h"

namespace engine::cpu_fast {
namespace {

constexpr int kAccumulators = 12;  // enough independent chains to cover the FMA latency of two pipes
constexpr std::int64_t kIterations = 1 << 21;  // ~0.8 G flops per thread: a few milliseconds

// Each returns the sum of its accumulators, so the loop cannot be dropped.
__attribute__((target("avx512f"))) float fma_zmm(float seed) {
  __m512 acc[kAccumulators];
#pragma GCC unroll 12
  for (auto& a : acc) a = _mm512_set1_ps(seed);
  const __m512 m = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-7f);
  for (std::int64_t i = 0; i < kIterations; ++i)
#pragma GCC unroll 12  // all in registers: no spill between the multiply-adds
    for (auto& a : acc) a = _mm512_fmadd_ps(a, m, add);
  __m512 s = acc[0];
#pragma GCC unroll 12
  for (int j = 1; j < kAccumulators; ++j) s = _mm512_add_ps(s, acc[j]);
  alignas(64) float out[16];  // not _mm512_reduce_add_ps: gcc 12 -O3 warns inside it (-Wuninitialized)
  _mm512_store_ps(out, s);
  return out[0] + out[15];
}

__attribute__((target("avx2,fma"))) float fma_ymm(float seed) {
  __m256 acc[kAccumulators];
#pragma GCC unroll 12
  for (auto& a : acc) a = _mm256_set1_ps(seed);
  const __m256 m = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-7f);
  for (std::int64_t i = 0; i < kIterations; ++i)
#pragma GCC unroll 12  // all in registers: no spill between the multiply-adds
    for (auto& a : acc) a = _mm256_fmadd_ps(a, m, add);
  __m256 s = acc[0];
#pragma GCC unroll 12
  for (int j = 1; j < kAccumulators; ++j) s = _mm256_add_ps(s, acc[j]);
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  return out[0] + out[7];
}

__attribute__((target("avx512f,avx512bf16"))) float dpbf16_zmm(float seed) {
  __m512 acc[kAccumulators];
#pragma GCC unroll 12
  for (auto& a : acc) a = _mm512_set1_ps(seed);
  const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  for (std::int64_t i = 0; i < kIterations; ++i)
#pragma GCC unroll 12  // all in registers: no spill between the multiply-adds
    for (auto& a : acc) a = _mm512_dpbf16_ps(a, x, x);
  __m512 s = acc[0];
#pragma GCC unroll 12
  for (int j = 1; j < kAccumulators; ++j) s = _mm512_add_ps(s, acc[j]);
  alignas(64) float out[16];  // not _mm512_reduce_add_ps: gcc 12 -O3 warns inside it (-Wuninitialized)
  _mm512_store_ps(out, s);
  return out[0] + out[15];
}

// The flops per second of `kernel` run by every OpenMP thread at once (flops_per_op per instruction): the
// best of 5 rounds, so a round another process interrupted does not count.
template <typename Kernel>
double measure(Kernel kernel, double flops_per_op, int team) {
  volatile float sink = 0.0f;
  sink = sink + kernel(1.0f);  // warm: the frequency steps up, the code is paged in
  double best = 0.0;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    int threads = 1;
#pragma omp parallel num_threads(team)
    {
#pragma omp single
      threads = omp_get_num_threads();
      const float r = kernel(static_cast<float>(omp_get_thread_num()));
#pragma omp critical
      sink = sink + r;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double flops =
        static_cast<double>(threads) * static_cast<double>(kIterations) * kAccumulators * flops_per_op;
    if (flops / s > best) best = flops / s;
  }
  return best;
}

HostProbe measure_host() {
  HostProbe p;
  p.isa = dnnl_rt::isa_name();
  p.threads = omp_get_max_threads();
  const auto both = [&](auto kernel, double flops_per_op, double& all, double& one) {
    all = measure(kernel, flops_per_op, p.threads) / 1e9;
    one = measure(kernel, flops_per_op, 1) / 1e9;
  };
  if (__builtin_cpu_supports("avx512f")) {
    both(fma_zmm, 16 * 2, p.fp32_gflops, p.fp32_gflops_1);
    if (__builtin_cpu_supports("avx512bf16")) both(dpbf16_zmm, 16 * 4, p.bf16_gflops, p.bf16_gflops_1);
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    both(fma_ymm, 8 * 2, p.fp32_gflops, p.fp32_gflops_1);
  }
  return p;
}

}  // namespace

const char* onednn_isa() { return dnnl_rt::isa_name(); }

const HostProbe& host_probe() {
  static const HostProbe probe = measure_host();
  return probe;
}

std::string host_probe_line(const HostProbe& p) {
  std::string line = fmt::format("oneDNN {}, {} thread{}, peak fp32 {:.0f} GFLOP/s (one thread {:.0f})",
                                 p.isa, p.threads, p.threads == 1 ? "" : "s", p.fp32_gflops, p.fp32_gflops_1);
  if (p.bf16_gflops > 0) line += fmt::format(", bf16 {:.0f} ({:.0f})", p.bf16_gflops, p.bf16_gflops_1);
  return line;
}

}  // namespace engine::cpu_fast
