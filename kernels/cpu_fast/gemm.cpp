#include "kernels/cpu_fast/gemm.h"

#include <atomic>
#include <oneapi/dnnl/dnnl.hpp>

#include "core/error.h"
#include "kernels/cpu_fast/dnnl_runtime.h"

namespace engine::cpu_fast {
namespace {

// Its kernels are made on the first call of the process (dnnl_runtime.h: check_room_for_kernels).
std::atomic<bool> g_gemm_kernels_ready{false};

}  // namespace

void sgemm(Trans trans_a, Trans trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc) {
  ENGINE_CHECK(m >= 0 && n >= 0 && k >= 0, "sgemm: negative size m {}, n {}, k {}", m, n, k);
  if (m == 0 || n == 0) return;
  if (!g_gemm_kernels_ready.load(std::memory_order_acquire))
    dnnl_rt::check_room_for_kernels("dnnl_sgemm's first call");
  const dnnl::status status =
      dnnl::sgemm(trans_a == Trans::Yes ? 'T' : 'N', trans_b == Trans::Yes ? 'T' : 'N', m, n, k, alpha, a,
                  lda, b, ldb, beta, c, ldc);
  // Its packing buffers are oneDNN's own allocation, whose size it does not tell: the operands' sizes say
  // what the product needed (found by scripts/faults.sh under ulimit -v, reported as "status 1").
  ENGINE_CHECK(
      status != dnnl::status::out_of_memory,
      "sgemm: host out of memory inside oneDNN's dnnl_sgemm (its packing buffers for a {} x {} by {} x "
      "{} product: the operands hold {} bytes; the size it asked is not told)",
      m, k, k, n, 4 * (m * k + k * n + m * n));
  ENGINE_CHECK(status == dnnl::status::success,
               "sgemm: oneDNN's dnnl_sgemm failed with status {} (m {}, n {}, k {}, lda {}, ldb {}, ldc {})",
               static_cast<int>(status), m, n, k, lda, ldb, ldc);
  g_gemm_kernels_ready.store(true, std::memory_order_release);
}

}  // namespace engine::cpu_fast
