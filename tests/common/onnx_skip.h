#pragma once
// ONNX tests exist in every build; in a build without libonnx-dev (onnx::onnx_available() false) they skip,
// visibly. Either SKIP_WITHOUT_ONNX() at the top of a test, or a fixture derived from OnnxTest.

#include <gtest/gtest.h>

#include "layers/onnx/onnx_model.h"

#define SKIP_WITHOUT_ONNX()                                                           \
  do {                                                                                \
    if (!::engine::layers::onnx::onnx_available()) {                                  \
      GTEST_SKIP() << "this build has no ONNX support (no libonnx-dev at configure)"; \
    }                                                                                 \
  } while (0)

namespace engine::testing {

// The fixture of a file of ONNX tests: `class OnnxSomething : public engine::testing::OnnxTest {};`.
class OnnxTest : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_WITHOUT_ONNX(); }
};

}  // namespace engine::testing
