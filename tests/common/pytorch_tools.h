#pragma once
// Finding PyTorch for the tests that check us against the real thing (its TCPStore, its torchrun, its
// modules). scripts/install-python-deps.sh puts PyTorch in a venv of its own and scripts/test.sh points
// ENGINE_TORCHRUN at it; where it could not be installed those tests GTEST_SKIP with how to enable them. Each
// test names every Python module its script imports (SKIP_WITHOUT_PYTHON_MODULES), and each is imported for
// real before the test runs: torch alone was checked, so with torch installed without torchvision (or
// safetensors, or a torchvision built for another torch) the tests failed instead of skipping.
//
//   ENGINE_TORCHRUN=/path/to/venv/bin/torchrun   torchrun to use; the python beside it runs the scripts
//   (else) torchrun and python3 from PATH

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

// The python to run the scripts with: the one beside $ENGINE_TORCHRUN, else python3 from PATH.
inline std::string pytorch_python() {
  if (const char* env = std::getenv("ENGINE_TORCHRUN"); env != nullptr && *env != '\0') {
    const auto beside = std::filesystem::path(env).parent_path() / "python3";
    if (std::filesystem::exists(beside)) return beside.string();
  }
  return "python3";
}

inline const PyTorchTools& pytorch_tools() {
  static const PyTorchTools tools = [] {
    PyTorchTools t;
    const std::string python = pytorch_python();
    std::string torchrun = "torchrun";
    if (const char* env = std::getenv("ENGINE_TORCHRUN"); env != nullptr && *env != '\0') torchrun = env;
    t.version = command_output(python + " -c 'import torch; print(torch.__version__)' 2>/dev/null");
    if (t.version.empty()) return t;
    t.python = python;
    if (!command_output("command -v " + torchrun).empty()) t.torchrun = torchrun;
    return t;
  }();
  return tools;
}

// The modules of `modules` that `python` cannot import, each with the first line of its error
// ("torchvision: No module named 'torchvision'"); every module when python itself does not run.
inline std::vector<std::string> python_import_failures(const std::string& python,
                                                       const std::vector<std::string>& modules) {
  std::string command = python +
                        " -c 'import importlib, sys\n"
                        "for m in sys.argv[1:]:\n"
                        "    try:\n"
                        "        importlib.import_module(m)\n"
                        "    except Exception as e:\n"
                        "        print(m + \": \" + (str(e).splitlines() or [type(e).__name__])[0])\n"
                        "print(\"checked\")'";
  for (const std::string& m : modules) command += " " + m;
  const std::string out = command_output(command + " 2>/dev/null");
  std::vector<std::string> failures;
  if (out.size() < 7 || out.substr(out.size() - 7) != "checked") {
    for (const std::string& m : modules) failures.push_back(m + ": " + python + " does not run");
    return failures;
  }
  std::size_t start = 0;
  for (std::size_t end; (end = out.find('\n', start)) != std::string::npos; start = end + 1)
    failures.push_back(out.substr(start, end - start));
  return failures;
}

// Why a test whose scripts import `modules` cannot run here ("" when it can): the modules that do not import,
// and how to install them. Imported once per test process and module list.
inline std::string pytorch_skip_reason(const std::vector<std::string>& modules) {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, std::string> reasons;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = reasons.find(modules); it != reasons.end()) return it->second;
  const std::string python = pytorch_python();
  const std::vector<std::string> failures = python_import_failures(python, modules);
  std::string reason;
  if (!failures.empty()) {
    reason = fmt::format(
        "{} cannot import what this test's scripts need ({}): skipped. To run it: bash "
        "scripts/install-python-deps.sh (PyTorch into a venv of its own), then scripts/test.sh, or ctest "
        "with "
        "ENGINE_TORCHRUN=<that venv>/bin/torchrun (scripts/python-env.sh names the venv)",
        python, fmt::join(failures, "; "));
  }
  return reasons.emplace(modules, reason).first->second;
}

inline constexpr const char* kHowToEnablePyTorch =
    "torchrun was not found beside the python that imports torch, nor on PATH: skipped. To run it: bash "
    "scripts/install-python-deps.sh (PyTorch into a venv of its own), then ENGINE_TORCHRUN=<that "
    "venv>/bin/torchrun (scripts/python-env.sh names the venv; scripts/test.sh sets it)";

}  // namespace engine::testing

// Skips the test, naming what is missing, unless the python of pytorch_python() imports every module given
// (the strings a script's import lines name: "torch", "torchvision", "safetensors.torch").
#define SKIP_WITHOUT_PYTHON_MODULES(...)                                                    \
  do {                                                                                      \
    const std::string skip_reason_ = ::engine::testing::pytorch_skip_reason({__VA_ARGS__}); \
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;                                \
  } while (0)
