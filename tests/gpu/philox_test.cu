// The device's Philox words equal the host's for the same (seed, offset, index): the basis for GPU dropout
// masks and GPU augmentation that match the CPU exactly.
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda_check.h"
#include "core/philox.h"
#include "core/tensor.h"
#include "tests/common/gpu.h"

namespace engine {
namespace {

__global__ void philox_words_kernel(std::uint64_t seed, std::uint64_t offset, std::uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = philox_word(seed, offset, static_cast<std::uint64_t>(i));
}

__global__ void philox_uniform_kernel(std::uint64_t seed, std::uint64_t offset, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = philox_uniform(seed, offset, static_cast<std::uint64_t>(i));
}

TEST(PhiloxGpu, DeviceWordsEqualHostWords) {
  SKIP_WITHOUT_GPU();
  const int n = 100003;  // not a multiple of 4 or of the block size
  const std::uint64_t seed = 0x123456789abcdefull, offset = 42;
  Tensor words = Tensor::empty({n}, DType::I32, Device::cuda(0));
  Tensor uniforms = Tensor::empty({n}, DType::F32, Device::cuda(0));
  words.fill_bytes(0xFF);
  uniforms.fill_bytes(0xFF);
  philox_words_kernel<<<(n + 255) / 256, 256>>>(seed, offset, static_cast<std::uint32_t*>(words.raw_data()),
                                                n);
  ENGINE_LAUNCH_CHECK();
  philox_uniform_kernel<<<(n + 255) / 256, 256>>>(seed, offset, uniforms.data<float>(), n);
  ENGINE_LAUNCH_CHECK();
  const std::vector<std::int32_t> w = words.to(Device::cpu()).to_vector<std::int32_t>();
  const std::vector<float> u = uniforms.to(Device::cpu()).to_vector<float>();
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(static_cast<std::uint32_t>(w[i]), philox_word(seed, offset, i)) << "index " << i;
    ASSERT_EQ(u[i], philox_uniform(seed, offset, i)) << "index " << i;
  }
}

}  // namespace
}  // namespace engine
