// tests/common/pytorch_tools.h (issue 28, defect 5): a test is skipped unless every module its scripts import
// imports. Before, only `import torch` was tried, so torch without torchvision (what `pip install torch`
// gives) ran the PyTorch checks, which then failed on `import torchvision`. Here a stand-in torch package on
// PYTHONPATH plays that machine.

#include "tests/common/pytorch_tools.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/scratch_dirs.h"

namespace engine::testing {
namespace {

TEST(PyTorchTools, ATestNeedingTorchvisionIsSkippedWhereOnlyTorchImports) {
  if (command_output("python3 -c 'print(1)'") != "1") GTEST_SKIP() << "python3 is not on PATH";
  const std::filesystem::path dir = scratch_dir("cnn_engine_", "fake_torch");
  std::filesystem::create_directories(dir / "torch");
  std::ofstream(dir / "torch" / "__init__.py") << "__version__ = '0.0+stand-in'\n";
  // A torchvision that does not import, ahead of any installed one (a real torchvision would fail on the
  // stand-in torch too, but with a message of its own): "only torch imports" on every machine.
  std::filesystem::create_directories(dir / "torchvision");
  std::ofstream(dir / "torchvision" / "__init__.py")
      << "raise ImportError('stand-in: no torchvision here')\n";
  const char* old = std::getenv("PYTHONPATH");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("PYTHONPATH", dir.c_str(), 1);

  EXPECT_TRUE(python_import_failures("python3", {"torch"}).empty());
  const std::vector<std::string> failures =
      python_import_failures("python3", {"torch", "torchvision", "no_such_module_here"});
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0], "torchvision: stand-in: no torchvision here");
  EXPECT_EQ(failures[1], "no_such_module_here: No module named 'no_such_module_here'");
  EXPECT_EQ(python_import_failures("/nonexistent/python3", {"torch"}),
            (std::vector<std::string>{"torch: /nonexistent/python3 does not run"}));

  if (std::getenv("ENGINE_TORCHRUN") == nullptr) {  // else the python beside it is asked, not python3
    const std::string reason = pytorch_skip_reason({"torch", "torchvision"});
    EXPECT_NE(reason.find("torchvision: "), std::string::npos) << reason;
    EXPECT_EQ(reason.find("torch: "), std::string::npos) << "torch imports:\n" << reason;
    EXPECT_NE(reason.find("bash scripts/install-python-deps.sh"), std::string::npos) << reason;
  }

  if (old != nullptr) {
    ::setenv("PYTHONPATH", saved.c_str(), 1);
  } else {
    ::unsetenv("PYTHONPATH");
  }
}

}  // namespace
}  // namespace engine::testing
