#include "apps/train/gnuplot.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"

namespace engine::apps {

std::string gnuplot_quoted(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string find_gnuplot() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / "gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return {};
}

void draw_with_gnuplot(
    const std::string& flag, const std::string& png_path, const std::string& data,
    const std::function<std::string(const std::string& data_path, const std::string& image_path)>& script) {
  const std::string gnuplot = find_gnuplot();
  ENGINE_CHECK(!gnuplot.empty(), "{} {}: gnuplot is not installed (Debian package gnuplot-nox)", flag,
               png_path);
  // This process's own temporary names: two runs plotting to one file never share them.
  const std::string stem = fmt::format("{}.{}", png_path, ::getpid());
  const std::string data_path = stem + ".data.tmp", script_path = stem + ".gp.tmp",
                    image_path = stem + ".png.tmp";
  {
    std::ofstream data_file(data_path);
    data_file << data;
    ENGINE_CHECK(data_file.good(), "{}: cannot write '{}'", flag, data_path);
    std::ofstream script_file(script_path);
    script_file << script(data_path, image_path);
    ENGINE_CHECK(script_file.good(), "{}: cannot write '{}'", flag, script_path);
  }
  std::error_code ec;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(gnuplot.c_str(), "gnuplot", script_path.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  std::filesystem::remove(data_path, ec);
  std::filesystem::remove(script_path, ec);
  std::error_code size_ec, rename_ec;
  const bool exited_ok = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const bool drawn = exited_ok && std::filesystem::file_size(image_path, size_ec) > 0 && !size_ec;
  if (drawn) std::filesystem::rename(image_path, png_path, rename_ec);  // atomic: the old image or the new
  if (!drawn || rename_ec) std::filesystem::remove(image_path, ec);
  ENGINE_CHECK(pid > 0, "{} {}: cannot start gnuplot", flag, png_path);
  ENGINE_CHECK(exited_ok, "{} {}: gnuplot {} (its message is above)", flag, png_path,
               WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                                 : fmt::format("was ended by signal {}", WTERMSIG(status)));
  ENGINE_CHECK(drawn, "{} {}: gnuplot wrote nothing", flag, png_path);
  ENGINE_CHECK(!rename_ec, "{} {}: cannot rename {} to it: {}", flag, png_path, image_path,
               rename_ec.message());
}

}  // namespace engine::apps
