#include "kernels/cpu_fast/gemm.h"

#include <atomic>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>

#include "core/error.h"
#include "kernels/cpu_fast/dnnl_runtime.h"

namespace engine::cpu_fast {
namespace {

// Its kernels are made on the first call of the process (dnnl_runtime.h: check_room_for_kernels).
std::atomic<bool> g_gemm_kernels_ready{false};

using Dims = dnnl::memory::dims;
using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, bool, bool, bool>;

// A row-major rows x cols operand, stored transposed (cols x rows) when `trans`.
dnnl::memory::desc bf16_operand(std::int64_t rows, std::int64_t cols, Trans trans) {
  return {Dims{rows, cols}, dnnl::memory::data_type::bf16,
          trans == Trans::Yes ? dnnl::memory::format_tag::ba : dnnl::memory::format_tag::ab};
}

}  // namespace

void gemm_bf16(Trans trans_a, Trans trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
               const bfloat16* a, const bfloat16* b, float* c, bool accumulate) {
  ENGINE_CHECK(m >= 0 && n >= 0 && k >= 0, "gemm_bf16: negative size m {}, n {}, k {}", m, n, k);
  ENGINE_CHECK(a != nullptr && b != nullptr && c != nullptr, "gemm_bf16: a, b and c must not be null");
  if (m == 0 || n == 0) return;
  dnnl_rt::run("gemm_bf16", [&] {
    thread_local std::map<Key, dnnl::matmul> plans;
    const Key key{m, n, k, trans_a == Trans::Yes, trans_b == Trans::Yes, accumulate};
    const dnnl::memory::desc a_md = bf16_operand(m, k, trans_a), b_md = bf16_operand(k, n, trans_b);
    const dnnl::memory::desc c_md(Dims{m, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
    auto it = plans.find(key);
    if (it == plans.end()) {
      dnnl_rt::check_room_for_kernels("a bf16 matmul");
      dnnl::primitive_attr attr;
      if (accumulate) {
        dnnl::post_ops sum;
        sum.append_sum(1.0f);
        attr.set_post_ops(sum);
      }
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr,
                                            dnnl_rt::cpu_engine());
      it = plans.emplace(key, dnnl::matmul(pd)).first;
    }
    dnnl::engine& e = dnnl_rt::cpu_engine();
    dnnl::stream& s = dnnl_rt::cpu_stream();
    it->second.execute(s, {{DNNL_ARG_SRC, dnnl::memory(a_md, e, const_cast<bfloat16*>(a))},
                           {DNNL_ARG_WEIGHTS, dnnl::memory(b_md, e, const_cast<bfloat16*>(b))},
                           {DNNL_ARG_DST, dnnl::memory(c_md, e, c)}});
    s.wait();
  });
}

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
