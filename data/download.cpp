#include "data/download.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"
#include "data/file_io.h"

extern char** environ;

namespace engine::data {

namespace {

namespace fs = std::filesystem;

// Must agree with scripts/download-data.sh (tests/cpu/cnn_train_download_test.cpp compares them).
std::vector<DownloadFile> mnist_files() {
  const std::pair<const char*, const char*> files[] = {
      {"train-images-idx3-ubyte", "f68b3c2dcbeaaa9fbdd348bbdeb94873"},
      {"train-labels-idx1-ubyte", "d53e105ee54ea40749a09fcbcd1e9432"},
      {"t10k-images-idx3-ubyte", "9fb629c4189551a2d022fa330f9573f3"},
      {"t10k-labels-idx1-ubyte", "ec29112dd5afa0611ce80d1b7f02629c"},
  };
  std::vector<DownloadFile> out;
  for (const auto& [name, md5] : files) {
    const std::string file = std::string(name) + ".gz";
    // The original site often refuses downloads; the second serves the same files (same md5s).
    out.push_back({file,
                   md5,
                   {"http://yann.lecun.com/exdb/mnist/" + file,
                    "https://ossci-datasets.s3.amazonaws.com/mnist/" + file}});
  }
  return out;
}

struct ProcessResult {
  int spawn_error = 0;  // errno of a failed start (ENOENT: the program is not installed)
  int status = 0;       // waitpid's status
  std::string output;   // stdout and stderr

  bool succeeded() const { return spawn_error == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
  std::string describe() const {
    std::string text = output;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    const std::string how = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                              : fmt::format("signal {}", WTERMSIG(status));
    return text.empty() ? how : fmt::format("{} ({})", text, how);
  }
};

// Runs `args` (args[0] looked up in PATH, no shell) and collects its stdout and stderr.
ProcessResult run_process(const std::vector<std::string>& args) {
  ProcessResult r;
  int fds[2];
  ENGINE_CHECK(::pipe2(fds, O_CLOEXEC) == 0, "pipe: {}", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  r.spawn_error = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (r.spawn_error == 0) {
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
      if (n > 0) {
        r.output.append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        break;
      }
    }
    while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
    }
  }
  ::close(fds[0]);
  return r;
}

// Removes a download's temporary file on every way out.
struct PartFile {
  fs::path path;
  ~PartFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

void fetch(const DownloadFile& file, const std::string& dataset, const fs::path& target) {
  const PartFile part{target.string() + "." + std::to_string(::getpid()) + ".part"};
  std::string failures;
  for (const std::string& url : download_urls(file)) {
    std::error_code ec;
    fs::remove(part.path, ec);
    const ProcessResult r =
        run_process({"curl", "--fail", "--location", "--silent", "--show-error", "--connect-timeout", "20",
                     "--retry", "2", "-o", part.path.string(), url});
    ENGINE_CHECK(r.spawn_error != ENOENT, "downloading {} needs curl (apt-get install curl)", url);
    ENGINE_CHECK(r.spawn_error == 0, "could not start curl for {}: {}", url, std::strerror(r.spawn_error));
    std::string failure;
    if (!r.succeeded()) {
      failure = fmt::format("could not download {} ({}; no internet access, or the server is down?)", url,
                            r.describe());
    } else {
      const std::string md5 = file_md5(part.path.string());
      if (md5 == file.md5) {
        fs::rename(part.path, target, ec);
        ENGINE_CHECK(!ec, "{}: could not rename {} to it: {}", target.string(), part.path.string(),
                     ec.message());
        return;
      }
      failure = fmt::format("{}: md5 mismatch ({}, expected {}); file removed", url, md5, file.md5);
    }
    failures += (failures.empty() ? "" : "; ") + failure;
  }
  ENGINE_FAIL(
      "{}. Fetch {} by other means (scripts/download-data.sh {} "
      "on a machine with internet access, or a browser) and put it at {}, or set ENGINE_DATA_MIRROR to a "
      "URL prefix (file:///path/ works) under which it lies",
      failures, file.name, dataset, target.string());
}

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

}  // namespace

bool dataset_downloadable(const std::string& name) { return name == "cifar10" || name == "mnist"; }

const std::vector<DownloadFile>& dataset_files(const std::string& name) {
  // Must agree with scripts/download-data.sh (tests/cpu/cnn_train_download_test.cpp compares them).
  static const std::vector<DownloadFile> cifar10 = {
      {"cifar-10-binary.tar.gz",
       "c32a1d4ab5d03f1284b67883e8d87530",
       {"https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"}}};
  static const std::vector<DownloadFile> mnist = mnist_files();
  if (name == "cifar10") return cifar10;
  if (name == "mnist") return mnist;
  ENGINE_FAIL(
      "{} cannot be downloaded: only cifar10 and mnist can (Fashion-MNIST comes from Debian: apt-get install "
      "dataset-fashion-mnist)",
      name);
}

std::vector<std::string> download_urls(const DownloadFile& file) {
  const char* mirror = std::getenv("ENGINE_DATA_MIRROR");
  if (mirror == nullptr || *mirror == '\0') return file.urls;
  std::string prefix = mirror;
  if (prefix.back() != '/') prefix.push_back('/');
  return {prefix + file.name};
}

bool dataset_present(const std::string& name, const std::string& dir) {
  const fs::path d(dir);
  if (name == "cifar10") {  // the layouts data/cifar10.h accepts
    return is_regular_file(dir) || path_exists(d / "cifar-10-binary.tar.gz") ||
           path_exists(d / "cifar-10-batches-bin") || path_exists(d / "data_batch_1.bin") ||
           path_exists(d / "data_batch_1.bin.gz");
  }
  if (name == "mnist") {  // data/idx.h reads each file gzipped or not
    for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                          "t10k-labels-idx1-ubyte"}) {
      if (!path_exists(d / f) && !path_exists(d / (std::string(f) + ".gz"))) return false;
    }
    return true;
  }
  return false;
}

void download_dataset(const std::string& name, const std::string& dir) {
  const std::vector<DownloadFile>& files = dataset_files(name);
  std::error_code ec;
  // The folders this call makes: a failed download removes those it left empty (no stray empty folder).
  std::vector<fs::path> made;
  for (fs::path p = fs::absolute(dir, ec); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    made.push_back(p);
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir, ec);
  ENGINE_CHECK(fs::is_directory(dir, ec), "{}: cannot create the folder for {}{}", dir, name,
               ec ? ": " + ec.message() : std::string());
  try {
    for (const DownloadFile& file : files) {
      const fs::path target = fs::path(dir) / file.name;
      if (is_regular_file(target.string()) && file_md5(target.string()) == file.md5) continue;
      fetch(file, name, target);
    }
  } catch (...) {
    for (const fs::path& p : made) {  // deepest first; fs::remove leaves a folder that is not empty
      if (!fs::is_empty(p, ec) || !fs::remove(p, ec)) break;
    }
    throw;
  }
}

std::string file_md5(const std::string& path) {
  const ProcessResult r = run_process({"md5sum", "--", path});
  ENGINE_CHECK(r.spawn_error != ENOENT, "checking {} needs md5sum (apt-get install coreutils)", path);
  ENGINE_CHECK(r.succeeded(), "md5sum {} failed: {}", path, r.describe());
  // "HASH  NAME\n"; md5sum puts a backslash first when the name needs escaping.
  std::string hash = r.output.substr(r.output.rfind('\\', 0) == 0 ? 1 : 0, 32);
  ENGINE_CHECK(hash.size() == 32 && hash.find_first_not_of("0123456789abcdef") == std::string::npos,
               "md5sum {}: unexpected output '{}'", path, r.output);
  return hash;
}

}  // namespace engine::data
