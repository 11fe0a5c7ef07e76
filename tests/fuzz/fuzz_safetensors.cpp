// Fuzzes the safetensors reader (optim/safetensors.h, what every checkpoint load and --resume auto's search
// parse first): every tensor it accepts must lie inside the file, and the entries must tile the data block.

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "optim/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto file = engine::optim::SafetensorsFile::parse(std::vector<std::uint8_t>(data, data + size),
                                                            "fuzz.safetensors");
    std::size_t covered = 0;
    for (const auto& [name, entry] : file.entries()) {
      const auto bytes = file.bytes(entry);
      if (bytes.data() < file.data().data() ||
          bytes.data() + bytes.size() > file.data().data() + file.data().size())
        __builtin_trap();
      covered += bytes.size();
    }
    if (covered != file.data().size()) __builtin_trap();
  } catch (const engine::Error&) {
  }
  return 0;
}
