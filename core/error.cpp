#include "core/error.h"

#include <string_view>

namespace engine {

namespace {

// The path as the source tree names it ("data/cifar10.cpp"): the user reads the message, the location is for
// a bug report, and a clone's absolute path says nothing there. This file's own __FILE__ tells how the build
// names sources (absolute, or relative to the build folder under ccache's base_dir), so its prefix is cut.
std::string_view source_relative(std::string_view file) {
  constexpr std::string_view kSelf = __FILE__;
  constexpr std::string_view kSelfInTree = "core/error.cpp";
  if constexpr (kSelf.ends_with(kSelfInTree)) {
    constexpr std::string_view kRoot = kSelf.substr(0, kSelf.size() - kSelfInTree.size());
    if (!kRoot.empty() && file.starts_with(kRoot)) return file.substr(kRoot.size());
  }
  while (file.starts_with("../") || file.starts_with("./")) file.remove_prefix(file.find('/') + 1);
  return file;
}

}  // namespace

Error::Error(const std::string& message, const char* file, int line)
    : std::runtime_error(fmt::format("{} [at {}:{}]", message, source_relative(file), line)),
      file_(file),
      line_(line) {}

}  // namespace engine
