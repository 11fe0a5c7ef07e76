#pragma once
// Element types a Tensor can hold, and the C++ type that stands for each on the host.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/host_device.h"

namespace engine {

enum class DType : std::uint8_t { F32, F64, BF16, F16, I32, U8 };

// Host stand-ins for the 16-bit float types: raw bits, so a Tensor of them can be typed on the host.
// Conversions live in the kernels that compute with them.
struct bfloat16 {
  std::uint16_t bits;
};
struct float16 {
  std::uint16_t bits;
};

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::BF16:
    case DType::F16: return 2;
    case DType::I32: return 4;
    case DType::U8: return 1;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F64: return "float64";
    case DType::BF16: return "bfloat16";
    case DType::F16: return "float16";
    case DType::I32: return "int32";
    case DType::U8: return "uint8";
  }
  return "?";
}

template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::F32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::F64;
};
template <>
struct dtype_of<bfloat16> {
  static constexpr DType value = DType::BF16;
};
template <>
struct dtype_of<float16> {
  static constexpr DType value = DType::F16;
};
template <>
struct dtype_of<std::int32_t> {
  static constexpr DType value = DType::I32;
};
template <>
struct dtype_of<std::uint8_t> {
  static constexpr DType value = DType::U8;
};

static_assert(sizeof(bfloat16) == 2 && sizeof(float16) == 2, "16-bit types must be packed");

// bfloat16 is the top half of a float32; rounding to nearest even, NaN kept quiet (a NaN stays a NaN with
// its sign and top payload bits; the quiet bit is set). One definition for the host and the CUDA kernels
// (kernels/cuda/cast.h), so the gradient compression rounds the same bits on either device.
ENGINE_HOST_DEVICE bfloat16 to_bfloat16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<std::uint16_t>((u >> 16) | 0x40)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<std::uint16_t>(u >> 16)};
}
ENGINE_HOST_DEVICE float from_bfloat16(bfloat16 b) {
  std::uint32_t u = static_cast<std::uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace engine
