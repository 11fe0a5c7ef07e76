#pragma once
// Row-major float32 GEMM on the host, C = alpha * op(A) * op(B) + beta * C, through oneDNN's dnnl_sgemm
// (its JIT GEMM, the one behind oneDNN's inner product). The one place the fast CPU kernels call a GEMM.
//
// Threads: OpenMP (OMP_NUM_THREADS). Measured against OpenBLAS 0.3.21 (pthreads) on the zoo's linear shapes
// on a shared 2-core AVX2 machine, it was faster on all but one (that one within the noise;
// benchmarks/RESULTS.md), so OpenBLAS is no longer a dependency.

#include <cstdint>

namespace engine::cpu_fast {

enum class Trans : bool { No = false, Yes = true };

// op(A) is M x K, op(B) is K x N, C is M x N; lda/ldb/ldc are the row strides of A, B, C as stored.
void sgemm(Trans trans_a, Trans trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc);

}  // namespace engine::cpu_fast
