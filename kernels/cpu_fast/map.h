#pragma once
// The fast CPU loop of every elementwise op: out[i] = f(a[i]) or f(a[i], b[i]) with a functor of
// kernels/elementwise_math.h, the one the CUDA launch_map (kernels/cuda/elementwise.cuh) applies, so both
// devices compute the same float formula. One OpenMP-threaded pass (kParallelMinElements), vectorised where
// f allows. `op` names the caller in errors. out may alias a or b. The operands are float or bfloat16
// (bf16_io.h: read widened, f in float, each output rounded once to its storage).
//
// The build targets x86-64's baseline (SSE2, 4 floats a vector); on x86-64 GCC also compiles each loop for
// AVX2 and AVX-512 and picks one at load time by the CPU (target_clones, glibc's ifunc), so a polynomial
// activation runs 8 or 16 lanes wide as PyTorch's own kernels do. Results may differ from the SSE2 clone's in
// the last bit where a clone fuses a multiply-add: every test bounds them against the reference, never
// against one clone.

#include <cstdint>

#include "core/error.h"
#include "kernels/cpu_fast/bf16_io.h"
#include "kernels/cpu_fast/parallel.h"
#include "kernels/elementwise_math.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ENGINE_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ENGINE_CPU_CLONES
#endif

namespace engine::cpu_fast {

template <typename F, typename A, typename O>
ENGINE_CPU_CLONES void map(const char* op, F f, const A* a, O* out, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "{}: element count must be non-negative, got {}", op, n);
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) out[i] = stored<O>(f(loaded(a[i])));
}

template <typename F, typename A, typename B, typename O>
ENGINE_CPU_CLONES void map(const char* op, F f, const A* a, const B* b, O* out, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "{}: element count must be non-negative, got {}", op, n);
#pragma omp parallel for simd if (n >= kParallelMinElements) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) out[i] = stored<O>(f(loaded(a[i]), loaded(b[i])));
}

}  // namespace engine::cpu_fast
