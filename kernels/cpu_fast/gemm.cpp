#include "kernels/cpu_fast/gemm.h"

#include <cblas.h>

#include "core/error.h"

namespace engine::cpu_fast {

void sgemm(Trans trans_a, Trans trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc) {
  constexpr std::int64_t kMax = 0x7fffffff;  // cblas takes int (blasint) sizes
  ENGINE_CHECK(m >= 0 && n >= 0 && k >= 0 && m <= kMax && n <= kMax && k <= kMax && lda <= kMax &&
                   ldb <= kMax && ldc <= kMax,
               "sgemm: sizes m {}, n {}, k {} (lda {}, ldb {}, ldc {}) out of range", m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a == Trans::Yes ? CblasTrans : CblasNoTrans,
              trans_b == Trans::Yes ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

}  // namespace engine::cpu_fast
