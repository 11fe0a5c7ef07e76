#pragma once
// CRC-32C (Castagnoli), the checksum of TensorFlow's record files, and the masking they apply to it.

#include <cstddef>
#include <cstdint>

namespace engine::tensorboard {

// CRC-32C of `size` bytes, continuing from `crc` (0 to start): the reflected polynomial 0x82F63B78, initial
// and final values ~0, as in RFC 3720 (crc32c("123456789") == 0xE3069283).
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);

// TFRecord's masked form: a CRC of data that itself holds CRCs would otherwise be weak.
inline std::uint32_t mask_crc(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

}  // namespace engine::tensorboard
