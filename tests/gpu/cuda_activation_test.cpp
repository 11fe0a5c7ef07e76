// The CUDA activations (kernels/cuda/activation.cu: kernels/elementwise_math.h's functors through
// launch_map) against the double reference (kernels/cpu/activation) on odd sizes (945: the vector path and
// a tail; 100003 one float off alignment: the scalar path), outputs poisoned first, within the per-element
// bounds of tests/common/activation_tolerance.h. The kinds whose formula has no libm call and nothing to
// fuse (Clip, HardSwish, LeakyRelu) are bitwise the CPU's fast path: the same functor. bf16 storage: the
// float kernel's output on the widened inputs, rounded once (bitwise).

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu_fast/activation.h"
#include "kernels/cuda/activation.h"
#include "tests/common/activation_tolerance.h"
#include "tests/common/elementwise_inputs.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

bool same_formula_as_cpu(const ActivationParams& p) {
  return p.kind == ActivationKind::Clip || p.kind == ActivationKind::HardSwish ||
         p.kind == ActivationKind::LeakyRelu;
}

void check(const ActivationParams& p, std::int64_t n, std::int64_t offset) {
  SCOPED_TRACE(
      fmt::format("{} alpha {} beta {} n {} offset {}", activation_name(p.kind), p.alpha, p.beta, n, offset));
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const auto size = static_cast<std::size_t>(n);
  std::vector<float> x = testing::elementwise_inputs(size, 51), dy = testing::elementwise_inputs(size, 52);
  const float specials[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 3.0f,   -3.0f,
                            6.0f, -2.5f, 2.5f,   60.0f,   -60.0f, -100.0f};
  for (std::size_t i = 0; i < std::min(size, std::size(specials)); ++i) x[i] = specials[i];
  std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end()), y_ref(size), dx_ref(size);
  // Each backward from what its own forward kept (the output, for Sigmoid and Tanh).
  const bool out = activation_backward_reads_output(p.kind);
  cpu::activation_forward(p, xd.data(), y_ref.data(), n);
  cpu::activation_backward(p, out ? y_ref.data() : xd.data(), dyd.data(), dx_ref.data(), n);
  std::vector<float> y_cpu(size), dx_cpu(size);
  cpu_fast::activation_forward(p, x.data(), y_cpu.data(), n);
  cpu_fast::activation_backward(p, out ? y_cpu.data() : x.data(), dy.data(), dx_cpu.data(), n);

  std::vector<float> x_pad(static_cast<std::size_t>(offset), 0.0f), dy_pad = x_pad;
  x_pad.insert(x_pad.end(), x.begin(), x.end());
  dy_pad.insert(dy_pad.end(), dy.begin(), dy.end());
  Tensor x_d = to_device(x_pad, s), dy_d = to_device(dy_pad, s);
  Tensor y_d = poisoned<float>(n + offset, s), dx_d = poisoned<float>(n + offset, s);
  cuda::activation_forward(s, p, x_d.data<float>() + offset, y_d.data<float>() + offset, n);
  const Tensor& saved_d = out ? y_d : x_d;
  cuda::activation_backward(s, p, saved_d.data<float>() + offset, dy_d.data<float>() + offset,
                            dx_d.data<float>() + offset, n);
  const auto y = to_host<float>(y_d, s), dx = to_host<float>(dx_d, s);
  int bad = 0;
  for (std::size_t i = 0; i < size && bad < 5; ++i) {
    const std::size_t at = i + static_cast<std::size_t>(offset);
    const double ey = std::fabs(double(y[at]) - y_ref[i]), edx = std::fabs(double(dx[at]) - dx_ref[i]);
    const double tdx = testing::activation_backward_tolerance(p, xd[i], dyd[i]);
    const bool dx_ok =
        edx <= tdx || (testing::activation_near_kink(p, xd[i]) &&
                       (dx[at] == 0.0f || std::fabs(double(dx[at]) - dyd[i] * double(p.alpha)) <= tdx));
    const bool bitwise_ok = !same_formula_as_cpu(p) || (y[at] == y_cpu[i] && dx[at] == dx_cpu[i]);
    if (!(ey <= testing::activation_forward_tolerance(p, xd[i])) || !dx_ok || !bitwise_ok) {
      ADD_FAILURE() << "[" << i << "] x " << x[i] << ": y " << y[at] << " vs " << y_ref[i] << " (cpu "
                    << y_cpu[i] << "), dx " << dx[at] << " vs " << dx_ref[i] << " (cpu " << dx_cpu[i] << ")";
      ++bad;
    }
  }
}

TEST(CudaActivation, WithinFloatRoundingOfTheReferenceAligned) {
  SKIP_WITHOUT_GPU();
  for (const ActivationParams& p : testing::activation_cases()) {
    check(p, 945, 0);
    check(p, 100003, 0);
  }
}

TEST(CudaActivation, WithinFloatRoundingOfTheReferenceUnaligned) {
  SKIP_WITHOUT_GPU();
  for (const ActivationParams& p : testing::activation_cases()) check(p, 100003, 1);
}

TEST(CudaActivation, Bf16IsTheFloatKernelRoundedOnce) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const std::int64_t n = 1001;
  const auto size = static_cast<std::size_t>(n);
  const std::vector<float> xf = testing::elementwise_inputs(size, 61),
                           dyf = testing::elementwise_inputs(size, 62);
  std::vector<bfloat16> xb(size), dyb(size);
  std::vector<float> xw(size), dyw(size);
  for (std::size_t i = 0; i < size; ++i) {
    xb[i] = to_bfloat16(xf[i]);
    dyb[i] = to_bfloat16(dyf[i]);
    xw[i] = from_bfloat16(xb[i]);
    dyw[i] = from_bfloat16(dyb[i]);
  }
  for (const ActivationParams& p : testing::activation_cases()) {
    SCOPED_TRACE(activation_name(p.kind));
    Tensor x_b = to_device(xb, s), dy_b = to_device(dyb, s), x_w = to_device(xw, s), dy_w = to_device(dyw, s);
    Tensor y_b = poisoned<bfloat16>(n, s), dx_b = poisoned<bfloat16>(n, s);
    Tensor y_w = poisoned<float>(n, s), dx_w = poisoned<float>(n, s);
    // Backward from the saved values of the bf16 run (its bf16 output, for Sigmoid and Tanh), widened for the
    // float kernel.
    const bool out = activation_backward_reads_output(p.kind);
    cuda::activation_forward(s, p, x_b.data<bfloat16>(), y_b.data<bfloat16>(), n);
    cuda::activation_forward(s, p, x_w.data<float>(), y_w.data<float>(), n);
    const auto yb = to_host<bfloat16>(y_b, s);
    std::vector<float> ybw(size);
    for (std::size_t i = 0; i < size; ++i) ybw[i] = from_bfloat16(yb[i]);
    const Tensor saved_w = out ? to_device(ybw, s) : x_w;
    cuda::activation_backward(s, p, (out ? y_b : x_b).data<bfloat16>(), dy_b.data<bfloat16>(),
                              dx_b.data<bfloat16>(), n);
    cuda::activation_backward(s, p, saved_w.data<float>(), dy_w.data<float>(), dx_w.data<float>(), n);
    const auto dxb = to_host<bfloat16>(dx_b, s);
    const auto yw = to_host<float>(y_w, s), dxw = to_host<float>(dx_w, s);
    for (std::size_t i = 0; i < size; ++i) {
      ASSERT_EQ(yb[i].bits, to_bfloat16(yw[i]).bits) << i;
      ASSERT_EQ(dxb[i].bits, to_bfloat16(dxw[i]).bits) << i;
    }
  }
}

}  // namespace
}  // namespace engine
