#include "data/data_home.h"

#include <cstdlib>
#include <filesystem>

namespace engine::data {

std::string user_data_dir(std::string_view name) {
  namespace fs = std::filesystem;
  fs::path cache;
  // XDG: a relative $XDG_CACHE_HOME is invalid and ignored.
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    cache = xdg;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    cache = fs::path(home) / ".cache";
  } else {
    std::error_code ec;
    cache = fs::temp_directory_path(ec);
    if (ec) cache = "/tmp";
  }
  return (cache / "cnn_engine" / name).string();
}

}  // namespace engine::data
