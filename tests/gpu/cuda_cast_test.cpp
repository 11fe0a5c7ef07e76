// The float32 <-> bfloat16 cast kernels (kernels/cuda/cast.h) against the host conversions of core/dtype.h,
// bit for bit, on an odd length that covers every special case of the rounding: +-0, +-Inf, quiet and
// signalling NaNs of both signs, denormals, values exactly halfway between two bfloat16 numbers (both tie
// directions), values just either side of halfway, and the largest finite floats (which round to Inf).
// Each output is poisoned with two different byte patterns in two runs, so an element the kernel forgot to
// write cannot pass by matching the poison.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/philox.h"
#include "core/stream.h"
#include "kernels/cuda/cast.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

constexpr std::int64_t kLength = 100003;  // odd, not a multiple of the block or of a vector width
constexpr std::uint8_t kPoisons[] = {0xFF, 0x5A};

float float_of(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Bit patterns whose rounding is worth naming, with the bfloat16 bits round-to-nearest-even gives them.
struct Known {
  std::uint32_t f32;
  std::uint16_t bf16;
};
constexpr Known kKnown[] = {
    {0x00000000u, 0x0000},  // +0
    {0x80000000u, 0x8000},  // -0
    {0x7f800000u, 0x7f80},  // +Inf
    {0xff800000u, 0xff80},  // -Inf
    {0x7fc00000u, 0x7fc0},  // quiet NaN
    {0xffc00001u, 0xffc0},  // negative quiet NaN, payload only in the low half
    {0x7f800001u, 0x7fc0},  // signalling NaN whose payload is only in the low half: still NaN, made quiet
    {0x7fa00000u, 0x7fe0},  // signalling NaN with a high payload: payload kept, made quiet
    {0x00000001u, 0x0000},  // smallest denormal rounds to +0
    {0x80000001u, 0x8000},  // and its negative to -0
    {0x007fffffu, 0x0080},  // largest denormal rounds up to the smallest normal
    {0x00018000u, 0x0002},  // denormal exactly halfway, odd below: up to even
    {0x00008000u, 0x0000},  // denormal exactly halfway, even below: stays
    {0x3f808000u, 0x3f80},  // 1 + 2^-8, halfway: ties to the even 1.0
    {0x3f818000u, 0x3f82},  // halfway with odd below: up to even
    {0xbf818000u, 0xbf82},  // the same, negative
    {0x3f807fffu, 0x3f80},  // just below halfway: down
    {0x3f808001u, 0x3f81},  // just above halfway: up
    {0x7f7fffffu, 0x7f80},  // largest finite float: rounds to +Inf
    {0xff7fffffu, 0xff80},  // and its negative to -Inf
    {0x7f7f7fffu, 0x7f7f},  // largest float that rounds to the largest finite bfloat16
    {0x7f7f8000u, 0x7f80},  // halfway above the largest finite bfloat16 (odd): to +Inf
    {0x7f7e8000u, 0x7f7e},  // halfway, even below: the finite bfloat16
    {0x3f800000u, 0x3f80},  // 1.0 exactly
};

// kLength float32 values: the named patterns first, then four kinds of random patterns in turn: any 32 bits
// (NaNs, infinities and denormals included), exact halfway points, denormals, and one ulp either side of
// halfway.
std::vector<float> cast_inputs() {
  std::vector<float> v(kLength);
  const std::size_t named = std::size(kKnown);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i < named) {
      v[i] = float_of(kKnown[i].f32);
      continue;
    }
    const std::uint32_t r = philox_word(7, 31, i);
    std::uint32_t bits = r;
    switch (i % 4) {
      case 0: break;
      case 1: bits = (r & 0xffff0000u) | 0x8000u; break;
      case 2: bits = r & 0x807fffffu; break;
      default: bits = (r & 0xffff0000u) | ((r & 1u) != 0 ? 0x7fffu : 0x8001u); break;
    }
    v[i] = float_of(bits);
  }
  return v;
}

std::vector<std::uint16_t> bits_of(const std::vector<bfloat16>& v) {
  std::vector<std::uint16_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = v[i].bits;
  return b;
}

template <typename T>
Tensor filled(std::int64_t n, std::uint8_t byte, cudaStream_t stream) {
  Tensor t = Tensor::empty({n}, dtype_of<T>::value, Device::cuda(0), stream);
  t.fill_bytes(byte, stream);
  return t;
}

TEST(CudaCast, Float32ToBfloat16EqualsTheHostRoundingBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const std::vector<float> x = cast_inputs();
  std::vector<std::uint16_t> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = to_bfloat16(x[i]).bits;
  for (std::size_t k = 0; k < std::size(kKnown); ++k) {
    ASSERT_EQ(want[k], kKnown[k].bf16) << "host rounding of 0x" << std::hex << kKnown[k].f32;
  }

  const Tensor x_d = to_device(x, s);
  for (const std::uint8_t poison : kPoisons) {
    Tensor y_d = filled<bfloat16>(kLength, poison, s);
    cuda::cast_f32_to_bf16(s, x_d.data<float>(), y_d.data<bfloat16>(), kLength);
    EXPECT_TRUE(bitwise_equal(bits_of(to_host<bfloat16>(y_d, s)), want))
        << "poison 0x" << std::hex << +poison;
  }
}

TEST(CudaCast, Bfloat16ToFloat32ScaledEqualsTheHostBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  // Every one of the 65536 bfloat16 patterns, then again from the start up to the odd length.
  std::vector<bfloat16> x(kLength);
  for (std::size_t i = 0; i < x.size(); ++i) x[i].bits = static_cast<std::uint16_t>(i & 0xffffu);
  const Tensor x_d = to_device(x, s);

  // 1/world_size for world sizes 1, 2, 3 and 7: exact, a power of two, and two that round.
  for (const int world : {1, 2, 3, 7}) {
    const float scale = 1.0f / static_cast<float>(world);
    std::vector<float> want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) want[i] = from_bfloat16(x[i]) * scale;
    for (const std::uint8_t poison : kPoisons) {
      Tensor y_d = filled<float>(kLength, poison, s);
      cuda::cast_bf16_to_f32_scaled(s, x_d.data<bfloat16>(), y_d.data<float>(), kLength, scale);
      std::vector<float> got = to_host<float>(y_d, s);
      // A NaN must stay a NaN; its payload after the multiplication is the hardware's (the GPU gives the
      // canonical NaN, x86 the quieted input), so NaN entries compare as "is NaN" and are then set equal.
      std::size_t nans = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(want[i])) {
          ++nans;
          ASSERT_TRUE(std::isnan(got[i])) << "world " << world << ", bf16 0x" << std::hex << x[i].bits;
          got[i] = want[i];
        }
      }
      // 254 NaN patterns (2 signs x 127 mantissas) in the full pass; the second pass stops at 0x86a2, past
      // the 127 positive NaNs (0x7f81..0x7fff) but before the negative ones.
      EXPECT_EQ(nans, std::size_t{254 + 127});
      EXPECT_TRUE(bitwise_equal(got, want)) << "world " << world << ", poison 0x" << std::hex << +poison;
    }
  }
}

}  // namespace
}  // namespace engine
