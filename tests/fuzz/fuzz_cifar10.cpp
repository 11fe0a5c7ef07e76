// Fuzzes the CIFAR-10 reader's in-memory layer: the bytes as one batch file, as a (decompressed) tarball, and
// as batches.meta.txt.

#include <cstdint>
#include <span>
#include <string_view>

#include "core/error.h"
#include "data/cifar10.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  try {
    const auto d = engine::data::decode_cifar10_batch(bytes, "fuzz.bin");
    if (d.size() * engine::data::kCifar10RecordBytes != static_cast<std::int64_t>(size)) __builtin_trap();
  } catch (const engine::Error&) {
  }
  try {
    engine::data::decode_cifar10_tar(bytes, "fuzz.tar", engine::data::Split::Test);
  } catch (const engine::Error&) {
  }
  try {
    engine::data::parse_cifar10_meta(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.txt");
  } catch (const engine::Error&) {
  }
  return 0;
}
