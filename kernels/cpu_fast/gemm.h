#pragma once
// Row-major float32 GEMM on the host, C = alpha * op(A) * op(B) + beta * C, through OpenBLAS (cblas_sgemm).
// The one place the fast CPU kernels touch the BLAS, so its header and threading stay out of every other
// file.
//
// Threads: OpenBLAS's own pool (OPENBLAS_NUM_THREADS, default: every core). It splits the output among its
// threads, never the reduction, so a run is bitwise repeatable for a fixed thread count.

#include <cstdint>

namespace engine::cpu_fast {

enum class Trans : bool { No = false, Yes = true };

// op(A) is M x K, op(B) is K x N, C is M x N; lda/ldb/ldc are the row strides of A, B, C as stored.
void sgemm(Trans trans_a, Trans trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc);

}  // namespace engine::cpu_fast
