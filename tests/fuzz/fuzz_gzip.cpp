// Fuzzes gunzip (the path every ".gz" dataset file takes), then feeds what it decompressed to the CIFAR-10
// batch decoder as a reader would. A successful gunzip must round-trip through gzip_compress.

#include <cstdint>
#include <span>

#include "core/error.h"
#include "data/cifar10.h"
#include "data/gzip.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::size_t kMaxOutput = std::size_t{16} << 20;  // keep each run fast; the cap is tested too
  std::vector<std::uint8_t> out;
  try {
    out = engine::data::gunzip(std::span<const std::uint8_t>(data, size), "fuzz.gz", kMaxOutput);
  } catch (const engine::Error&) {
    return 0;
  }
  if (out.size() <= (std::size_t{1} << 16)) {
    const auto again = engine::data::gunzip(engine::data::gzip_compress(out, 1), "roundtrip.gz");
    if (again != out) __builtin_trap();
  }
  try {
    engine::data::decode_cifar10_batch(out, "fuzz.bin");
  } catch (const engine::Error&) {
  }
  return 0;
}
