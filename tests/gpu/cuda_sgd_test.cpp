// The fused SGD kernel against cpu::sgd_step<float> over several steps: the kernel performs the reference's
// double operations in the same order with no FMA contraction, so parameters and momentum buffers must be
// bitwise equal after every step, for every option combination torch allows.
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/ema.h"
#include "kernels/cpu/sgd.h"
#include "kernels/cuda/ema.h"
#include "kernels/cuda/sgd.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

struct SgdCase {
  const char* name;
  cpu::SgdOptions options;
};

// Readable parameter names in gtest/ctest output.
void PrintTo(const SgdCase& p, std::ostream* os) { *os << p.name; }

class CudaSgd : public ::testing::TestWithParam<SgdCase> {};

TEST_P(CudaSgd, StepsEqualTheReferenceBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const cpu::SgdOptions o = GetParam().options;
  const std::int64_t n = 1001;  // odd: the tail of the grid is exercised
  auto params = nonzero_floats(n, 301);
  std::vector<float> buffer(n, 0.0f);
  Tensor params_d = to_device(params, s);
  Tensor buffer_d = poisoned<float>(n, s);  // the first step must write it without reading it
  for (int step = 0; step < 5; ++step) {
    const auto grads = nonzero_floats(n, 310 + static_cast<std::uint64_t>(step));
    Tensor grads_d = to_device(grads, s);
    cpu::sgd_step(o, params.data(), grads.data(), buffer.data(), n, step == 0);
    cuda::sgd_step(s, o, params_d.data<float>(), grads_d.data<float>(), buffer_d.data<float>(), n, step == 0);
    ASSERT_TRUE(bitwise_equal(to_host<float>(params_d, s), params)) << "params after step " << step;
    if (o.momentum != 0.0) {
      ASSERT_TRUE(bitwise_equal(to_host<float>(buffer_d, s), buffer))
          << "momentum buffer after step " << step;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Options, CudaSgd,
    ::testing::Values(SgdCase{"plain", {.lr = 0.1}},
                      SgdCase{"weight_decay", {.lr = 0.05, .weight_decay = 5e-4}},
                      SgdCase{"momentum", {.lr = 0.1, .momentum = 0.9}},
                      SgdCase{"momentum_dampening_decay",
                              {.lr = 0.02, .momentum = 0.9, .dampening = 0.3, .weight_decay = 1e-3}},
                      SgdCase{"nesterov",
                              {.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true}}),
    [](const ::testing::TestParamInfo<SgdCase>& param) { return std::string(param.param.name); });

// Parameter groups in the one launch: odd-sized groups with gaps, a frozen one, a binary search per element.
TEST(CudaSgdGroups, StepsEqualTheReferenceBitwiseAndFrozenRangesStay) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const std::int64_t n = 1001;
  const std::vector<cpu::SgdGroup> groups = {
      {.begin = 3, .end = 10, .lr_scale = 64.0, .weight_decay = 0.0},
      {.begin = 10, .end = 11, .frozen = true},
      {.begin = 200, .end = 533, .lr_scale = 0.5, .weight_decay = 1e-2},
      {.begin = 600, .end = 997, .weight_decay = 5e-4, .frozen = true}};
  const cpu::SgdOptions o{.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true};
  const std::vector<cpu::SgdGroup> tiles = cpu::tile_sgd_groups(groups, o.weight_decay, n);
  Tensor tiles_host =
      Tensor::empty({static_cast<std::int64_t>(tiles.size() * sizeof(cpu::SgdGroup))}, DType::U8);
  std::memcpy(tiles_host.data<std::uint8_t>(), tiles.data(), tiles.size() * sizeof(cpu::SgdGroup));
  const Tensor tiles_d = tiles_host.to(Device::cuda(0), s);
  auto params = nonzero_floats(n, 321);
  std::vector<float> buffer(n, 0.0f);
  Tensor params_d = to_device(params, s);
  Tensor buffer_d = to_device(buffer, s);
  for (int step = 0; step < 4; ++step) {
    const auto grads = nonzero_floats(n, 330 + static_cast<std::uint64_t>(step));
    Tensor grads_d = to_device(grads, s);
    cpu::sgd_step_groups<float>(o, groups, params.data(), grads.data(), buffer.data(), n, step == 0);
    cuda::sgd_step_tiles(s, o, reinterpret_cast<const cpu::SgdGroup*>(tiles_d.data<std::uint8_t>()),
                         static_cast<int>(tiles.size()), params_d.data<float>(), grads_d.data<float>(),
                         buffer_d.data<float>(), n, step == 0);
    ASSERT_TRUE(bitwise_equal(to_host<float>(params_d, s), params)) << "params after step " << step;
    ASSERT_TRUE(bitwise_equal(to_host<float>(buffer_d, s), buffer)) << "momentum after step " << step;
  }
  EXPECT_EQ(buffer[10], 0.0f);  // frozen: the momentum buffer was never written
  EXPECT_EQ(buffer[700], 0.0f);
}

// The weight average's kernel (kernels/cuda/ema.h) against cpu::ema_update<float>: the same double
// operations without contraction, so bitwise equal, with and without the lookahead copy-back.
TEST(CudaEma, EqualsTheReferenceBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const std::int64_t n = 1001;
  for (const bool copy_back : {false, true}) {
    auto ema = nonzero_floats(n, 341), x = nonzero_floats(n, 342);
    Tensor ema_d = to_device(ema, s), x_d = to_device(x, s);
    for (const double rho : {0.0, 0.8573749, 1.0}) {
      cpu::ema_update<float>(rho, ema.data(), x.data(), n, copy_back);
      cuda::ema_update(s, rho, ema_d.data<float>(), x_d.data<float>(), n, copy_back);
      ASSERT_TRUE(bitwise_equal(to_host<float>(ema_d, s), ema)) << "rho " << rho;
      ASSERT_TRUE(bitwise_equal(to_host<float>(x_d, s), x)) << "rho " << rho;
    }
  }
}

TEST(CudaSgdRules, RejectsWhatTorchRejects) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  Tensor buf = poisoned<float>(8, stream.get());
  float* p = buf.data<float>();
  EXPECT_THROW(cuda::sgd_step(stream.get(), {.lr = -0.1}, p, p, nullptr, 4, true), Error);
  EXPECT_THROW(
      cuda::sgd_step(stream.get(), {.lr = 0.1, .dampening = 0.1, .nesterov = true}, p, p, p + 4, 4, true),
      Error);
  EXPECT_THROW(cuda::sgd_step(stream.get(), {.lr = 0.1, .momentum = 0.9}, p, p, nullptr, 4, true), Error);
}

}  // namespace
}  // namespace engine
