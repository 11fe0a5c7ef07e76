// Fuzzes the idx reader's in-memory layer with an images file and a labels file. Input layout: a 4-byte
// little-endian length L, then L bytes of the images file (fewer if the input is shorter), then the labels
// file.

#include <algorithm>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const std::size_t declared = std::size_t{data[0]} | std::size_t{data[1]} << 8 | std::size_t{data[2]} << 16 |
                               std::size_t{data[3]} << 24;
  const std::span<const std::uint8_t> rest(data + 4, size - 4);
  const std::size_t split = std::min(declared, rest.size());
  try {
    const auto d = engine::data::decode_idx(rest.first(split), "fuzz-images", rest.subspan(split),
                                            "fuzz-labels", engine::data::mnist_class_names());
    if (static_cast<std::int64_t>(d.images.size()) != d.size() * d.height * d.width) __builtin_trap();
  } catch (const engine::Error&) {
  }
  return 0;
}
