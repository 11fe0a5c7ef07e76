#pragma once
// Row-major float32 GEMM on the host, C = alpha * op(A) * op(B) + beta * C, through oneDNN's dnnl_sgemm
// (its JIT GEMM, the one behind oneDNN's inner product). The one place the fast CPU kernels call a GEMM.
//
// Threads: OpenMP (OMP_NUM_THREADS). Measured against OpenBLAS 0.3.21 (pthreads) on the zoo's linear shapes
// on a shared 2-core AVX2 machine, it was faster on all but one (that one within the noise;
// benchmarks/RESULTS.md), so OpenBLAS is no longer a dependency.

#include <cstdint>

#include "core/dtype.h"

namespace engine::cpu_fast {

enum class Trans : bool { No = false, Yes = true };

// op(A) is M x K, op(B) is K x N, C is M x N; lda/ldb/ldc are the row strides of A, B, C as stored.
void sgemm(Trans trans_a, Trans trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc);

// C = op(A) * op(B) (C += op(A) * op(B) when `accumulate`) on dense row-major bf16 operands (lda, ldb, ldc
// the natural ones), products accumulated in float32, C float32: oneDNN's bf16 matmul (one primitive per
// shape, transposition and accumulate, cached per thread; accumulate is its sum post-op). For hosts that run
// bf16 natively (conv2d.h's native_bf16); elsewhere oneDNN emulates or refuses.
void gemm_bf16(Trans trans_a, Trans trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
               const bfloat16* a, const bfloat16* b, float* c, bool accumulate = false);

}  // namespace engine::cpu_fast
