#pragma once
// Two models that must be one network (a model and its ONNX export read back): the same Train-mode output
// and, after the same backward, the same parameter gradients, to the bit.

#include <gtest/gtest.h>

#include "layers/model.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::testing {

// a and b give equal outputs for x (Train mode) and equal flat gradients after backward(dy).
inline void expect_same_network(layers::Model& a, layers::Model& b, const Tensor& x, const Tensor& dy) {
  EXPECT_EQ(layers::testing::host_values(a.forward(x, layers::Mode::Train)),
            layers::testing::host_values(b.forward(x, layers::Mode::Train)));
  a.backward(dy);
  b.backward(dy);
  EXPECT_EQ(layers::testing::host_values(a.flat_gradients()),
            layers::testing::host_values(b.flat_gradients()));
}

}  // namespace engine::testing
