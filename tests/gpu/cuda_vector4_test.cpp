// The 128-bit paths of the elementwise kernels (kernels/cuda/vector4.cuh) and their scalar fallbacks: relu,
// residual add, dropout, the fused SGD step and the bf16 casts, each against its CPU reference bit for bit
// (every one of these kernels promises it in its .cu header), at lengths around the vector width (0, 1, 3,
// 4, 5: no whole group, one group, a group and a tail) and past a block (1023, 4099), and on views 0, 1, 2
// or 3 elements into a 16-byte-aligned buffer: offset 0 takes the vector path, the others the scalar one
// (detail::vector_aligned refuses them). A second misaligned case moves only the output, so one pointer alone
// must force the fallback.
//
// Each view sits in a buffer padded before and after with poison bytes (0xFF: NaN as float); outputs start
// poisoned inside the view too. After the call the view must hold the reference's bits and the padding its
// poison: a vector store past the end of a short view, or one element the tail loop forgot, fails here.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/stream.h"
#include "kernels/cpu/cast.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/relu.h"
#include "kernels/cpu/residual_add.h"
#include "kernels/cpu/sgd.h"
#include "kernels/cuda/cast.h"
#include "kernels/cuda/dropout.h"
#include "kernels/cuda/relu.h"
#include "kernels/cuda/residual_add.h"
#include "kernels/cuda/sgd.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

constexpr std::int64_t kSizes[] = {0, 1, 3, 4, 5, 1023, 4099};
constexpr std::int64_t kOffsets[] = {0, 1, 2, 3};  // elements into the buffer; 0 is 16-byte aligned
constexpr std::int64_t kGuard = 8;                 // poisoned elements after each view
constexpr std::uint8_t kPoison = 0xFF;

// One view of `n` elements starting `offset` elements into a device buffer of offset + n + kGuard.
template <typename T>
struct View {
  Tensor buffer;
  std::int64_t offset = 0, n = 0;
  T* data() const { return buffer.data<T>() + offset; }
};

template <typename T>
T poison_value() {
  T v;
  std::memset(&v, kPoison, sizeof(T));
  return v;
}

// `values` at `offset`, poison around them (and inside too when `values` is empty and n > 0: an output).
template <typename T>
View<T> device_view(const std::vector<T>& values, std::int64_t offset, cudaStream_t s, std::int64_t n = -1) {
  if (n < 0) n = static_cast<std::int64_t>(values.size());
  std::vector<T> host(static_cast<std::size_t>(offset + n + kGuard), poison_value<T>());
  std::copy(values.begin(), values.end(), host.begin() + offset);
  return {to_device(host, s), offset, n};
}

template <typename T>
View<T> output_view(std::int64_t n, std::int64_t offset, cudaStream_t s) {
  return device_view<T>({}, offset, s, n);
}

template <typename T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The view holds `want` bit for bit and the padding around it is still poison.
template <typename T>
::testing::AssertionResult holds(const View<T>& v, const std::vector<T>& want, cudaStream_t s) {
  const std::vector<std::uint8_t> all = bytes_of(to_host<T>(v.buffer, s));
  const auto begin = static_cast<std::size_t>(v.offset) * sizeof(T);
  const auto end = begin + static_cast<std::size_t>(v.n) * sizeof(T);
  for (std::size_t b = 0; b < all.size(); ++b) {
    if ((b < begin || b >= end) && all[b] != kPoison) {
      return ::testing::AssertionFailure()
             << "element " << static_cast<std::int64_t>(b / sizeof(T)) - v.offset
             << " of the view (outside [0, " << v.n << ")) was written";
    }
  }
  const std::vector<std::uint8_t> inside(all.begin() + static_cast<std::ptrdiff_t>(begin),
                                         all.begin() + static_cast<std::ptrdiff_t>(end));
  return bitwise_equal(inside, bytes_of(want));
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// (n, offset of every pointer, offset of the output only)
using Case = std::tuple<std::int64_t, std::int64_t, bool>;

class CudaVector4 : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    stream_.emplace(0);
  }
  cudaStream_t s() const { return stream_->get(); }
  std::int64_t n() const { return std::get<0>(GetParam()); }
  std::size_t size() const { return static_cast<std::size_t>(n()); }
  // Inputs sit at in_offset(); outputs at out_offset(), which differs from it in the output-only cases.
  std::int64_t in_offset() const { return std::get<2>(GetParam()) ? 0 : std::get<1>(GetParam()); }
  std::int64_t out_offset() const { return std::get<1>(GetParam()); }
  // Offset 0 must really be the vector path: the buffer's start is 16-byte aligned (the allocators' rule).
  template <typename T>
  void expect_path(const View<T>& in, const View<T>& out) const {
    if (in_offset() == 0 && out_offset() == 0) {
      EXPECT_TRUE(aligned16(in.data()) && aligned16(out.data())) << "offset 0 is not 16-byte aligned";
    } else {
      EXPECT_FALSE(aligned16(in.data()) && aligned16(out.data())) << "a misaligned case is aligned";
    }
  }

  std::optional<Stream> stream_;
};

TEST_P(CudaVector4, ReluForwardAndBackward) {
  const auto x = nonzero_floats(size(), 11), dy = nonzero_floats(size(), 12);
  std::vector<float> y_ref(x.size()), dx_ref(x.size());
  cpu::relu_forward(x.data(), y_ref.data(), n());
  cpu::relu_backward(x.data(), dy.data(), dx_ref.data(), n());
  const View<float> x_d = device_view(x, in_offset(), s()), dy_d = device_view(dy, in_offset(), s());
  const View<float> y_d = output_view<float>(n(), out_offset(), s()),
                    dx_d = output_view<float>(n(), out_offset(), s());
  expect_path(x_d, y_d);
  cuda::relu_forward(s(), x_d.data(), y_d.data(), n());
  cuda::relu_backward(s(), x_d.data(), dy_d.data(), dx_d.data(), n());
  EXPECT_TRUE(holds(y_d, y_ref, s())) << "y";
  EXPECT_TRUE(holds(dx_d, dx_ref, s())) << "dx";
}

TEST_P(CudaVector4, ResidualAddForwardAndBackward) {
  const auto a = nonzero_floats(size(), 21), b = nonzero_floats(size(), 22), dy = nonzero_floats(size(), 23);
  std::vector<float> y_ref(a.size()), da_ref(a.size()), db_ref(a.size());
  cpu::residual_add_forward(a.data(), b.data(), y_ref.data(), n());
  cpu::residual_add_backward(dy.data(), da_ref.data(), db_ref.data(), n());
  const View<float> a_d = device_view(a, in_offset(), s()), b_d = device_view(b, in_offset(), s());
  const View<float> dy_d = device_view(dy, in_offset(), s());
  const View<float> y_d = output_view<float>(n(), out_offset(), s());
  const View<float> da_d = output_view<float>(n(), out_offset(), s()),
                    db_d = output_view<float>(n(), out_offset(), s());
  expect_path(a_d, y_d);
  cuda::residual_add_forward(s(), a_d.data(), b_d.data(), y_d.data(), n());
  cuda::residual_add_backward(s(), dy_d.data(), da_d.data(), db_d.data(), n());
  EXPECT_TRUE(holds(y_d, y_ref, s())) << "y";
  EXPECT_TRUE(holds(da_d, da_ref, s())) << "da";
  EXPECT_TRUE(holds(db_d, db_ref, s())) << "db";
}

TEST_P(CudaVector4, DropoutForwardAndBackward) {
  const float p = 0.3f;
  const std::uint64_t seed = 77, offset = 5;
  const auto x = nonzero_floats(size(), 31), dy = nonzero_floats(size(), 32);
  std::vector<float> y_ref(x.size()), dx_ref(x.size());
  cpu::dropout_forward(p, seed, offset, x.data(), y_ref.data(), n());
  cpu::dropout_backward(p, seed, offset, dy.data(), dx_ref.data(), n());
  const View<float> x_d = device_view(x, in_offset(), s()), dy_d = device_view(dy, in_offset(), s());
  const View<float> y_d = output_view<float>(n(), out_offset(), s()),
                    dx_d = output_view<float>(n(), out_offset(), s());
  expect_path(x_d, y_d);
  cuda::dropout_forward(s(), p, seed, offset, x_d.data(), y_d.data(), n());
  cuda::dropout_backward(s(), p, seed, offset, dy_d.data(), dx_d.data(), n());
  EXPECT_TRUE(holds(y_d, y_ref, s())) << "y";
  EXPECT_TRUE(holds(dx_d, dx_ref, s())) << "dx";
}

// Two steps (the first writes the momentum buffer without reading it, the second reads it) with weight decay,
// momentum and dampening on (Nesterov needs dampening 0 and adds no other operation kind). The parameters are
// updated in place, so they take the output's offset; the gradients the input's.
TEST_P(CudaVector4, SgdStepWithMomentumAndWeightDecay) {
  const cpu::SgdOptions o{
      .lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 5e-4, .nesterov = false};
  auto params = nonzero_floats(size(), 41);
  std::vector<float> buffer(params.size(), 0.0f);
  const View<float> params_d = device_view(params, out_offset(), s());
  const View<float> buffer_d = output_view<float>(n(), out_offset(), s());
  for (int step = 0; step < 2; ++step) {
    const auto grads = nonzero_floats(size(), 42 + static_cast<std::uint64_t>(step));
    const View<float> grads_d = device_view(grads, in_offset(), s());
    if (step == 0) expect_path(grads_d, params_d);
    cpu::sgd_step(o, params.data(), grads.data(), buffer.data(), n(), step == 0);
    cuda::sgd_step(s(), o, params_d.data(), grads_d.data(), buffer_d.data(), n(), step == 0);
    EXPECT_TRUE(holds(params_d, params, s())) << "params after step " << step;
    EXPECT_TRUE(holds(buffer_d, buffer, s())) << "momentum buffer after step " << step;
  }
}

TEST_P(CudaVector4, CastsToAndFromBfloat16) {
  const auto x = nonzero_floats(size(), 51, 1e-3f, 1e3f);  // many exponents, so rounding is exercised
  std::vector<bfloat16> narrow_ref(x.size());
  std::vector<float> wide_ref(x.size());
  const float scale = 1.0f / 3.0f;  // rounds: the widening multiply must be the host's
  cpu::cast_f32_to_bf16(x.data(), narrow_ref.data(), n());
  cpu::cast_bf16_to_f32_scaled(narrow_ref.data(), wide_ref.data(), n(), scale);
  const View<float> x_d = device_view(x, in_offset(), s());
  const View<bfloat16> narrow_d = output_view<bfloat16>(n(), out_offset(), s());
  if (in_offset() == 0 && out_offset() == 0) {
    EXPECT_TRUE(aligned16(x_d.data()) && aligned16(narrow_d.data())) << "offset 0 is not 16-byte aligned";
  }
  cuda::cast_f32_to_bf16(s(), x_d.data(), narrow_d.data(), n());
  EXPECT_TRUE(holds(narrow_d, narrow_ref, s())) << "float32 -> bfloat16";

  const View<bfloat16> bf_d = device_view(narrow_ref, in_offset(), s());
  const View<float> wide_d = output_view<float>(n(), out_offset(), s());
  cuda::cast_bf16_to_f32_scaled(s(), bf_d.data(), wide_d.data(), n(), scale);
  EXPECT_TRUE(holds(wide_d, wide_ref, s())) << "bfloat16 -> float32 * scale";
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [n, offset, output_only] = info.param;
  return fmt::format("n{}_offset{}{}", n, offset, output_only ? "_output_only" : "");
}

INSTANTIATE_TEST_SUITE_P(Aligned, CudaVector4,
                         ::testing::Combine(::testing::ValuesIn(kSizes), ::testing::ValuesIn(kOffsets),
                                            ::testing::Values(false)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(OutputOnly, CudaVector4,
                         ::testing::Combine(::testing::ValuesIn(kSizes), ::testing::Values(std::int64_t{1}),
                                            ::testing::Values(true)),
                         case_name);

}  // namespace
}  // namespace engine
