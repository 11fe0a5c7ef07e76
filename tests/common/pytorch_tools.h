#pragma once
// Finding PyTorch for the tests that check us against the real thing (its TCPStore, its torchrun). CI does
// not install PyTorch (a multi-gigabyte download): those tests GTEST_SKIP with how to enable them.
//
//   ENGINE_TORCHRUN=/path/to/venv/bin/torchrun   torchrun to use; the python beside it runs the scripts
//   (else) torchrun and python3 from PATH, when `python3 -c "import torch"` works

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace engine::testing {

struct PyTorchTools {
  std::string python;    // a python3 that imports torch, or "" when none
  std::string torchrun;  // the torchrun beside it (or on PATH), or ""
  std::string version;   // torch.__version__
};

inline std::string command_output(const std::string& command) {
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[512];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
    if (::pclose(pipe) != 0) return "";
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

inline const PyTorchTools& pytorch_tools() {
  static const PyTorchTools tools = [] {
    PyTorchTools t;
    std::string python = "python3", torchrun = "torchrun";
    if (const char* env = std::getenv("ENGINE_TORCHRUN"); env != nullptr && *env != '\0') {
      torchrun = env;
      const auto beside = std::filesystem::path(env).parent_path() / "python3";
      if (std::filesystem::exists(beside)) python = beside.string();
    }
    t.version = command_output(python + " -c 'import torch; print(torch.__version__)' 2>/dev/null");
    if (t.version.empty()) return t;
    t.python = python;
    if (!command_output("command -v " + torchrun).empty()) t.torchrun = torchrun;
    return t;
  }();
  return tools;
}

inline constexpr const char* kHowToEnablePyTorch =
    "PyTorch is not installed (python3 -c 'import torch' fails): skipped. To run it: python3 -m venv /tmp/tv "
    "&& "
    "/tmp/tv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu, then "
    "ENGINE_TORCHRUN=/tmp/tv/bin/torchrun";

}  // namespace engine::testing
