#include "apps/cli/output_path.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include "core/error.h"

namespace engine::apps {

std::string output_file_problem(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_directory(path, error)) return "'" + path + "' is a folder: name the file to write";
  const fs::path named = fs::path(path).parent_path();
  const std::string folder = named.empty() ? std::string(".") : named.string();
  if (!fs::exists(folder, error)) return "its folder, '" + folder + "', does not exist";
  if (!fs::is_directory(folder, error)) return "'" + folder + "' is not a folder";
  if (fs::exists(path, error)) {
    if (::access(path.c_str(), W_OK) != 0)
      return "the file cannot be written: " + std::string(std::strerror(errno));
    return "";
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    return "its folder, '" + folder + "', cannot be written into: " + std::string(std::strerror(errno));
  return "";
}

void check_output_file(const char* flag, const std::string& path) {
  if (path.empty()) return;
  const std::string problem = output_file_problem(path);
  ENGINE_CHECK(problem.empty(), "{} '{}': {}", flag, path, problem);
}

}  // namespace engine::apps
