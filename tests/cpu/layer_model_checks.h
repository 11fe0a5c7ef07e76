#pragma once
// Whole-model checks the layer tests share (tests/cpu/conv2d_*_layer_test.cpp): a gradient check of a model
// in float64, and ONNX out and back in giving the same network (tests/common/same_network.h). Header-only, as
// layer_test_util.h.

#include <string>

#include <gtest/gtest.h>

#include "layers/onnx/onnx_model.h"
#include "tests/common/same_network.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::layers::testing {

// check_model_gradients on `model` (finalized on the CPU in float64) for a batch of 2 random inputs of
// `sample` and labels of `classes`, `max_elements_per_input` coordinates of each tensor (0: every element);
// at least `min_checked` checked.
inline void expect_model_gradients(Model& model, const Shape& sample, int classes, std::size_t min_checked,
                                   std::size_t max_elements_per_input = 40) {
  Shape x_shape{2};
  x_shape.insert(x_shape.end(), sample.begin(), sample.end());
  const Tensor x = random_tensor(x_shape, DType::F64, 21);
  ModelCheck c;
  c.kind = CheckKind::Coordinates;
  c.options.max_elements_per_input = max_elements_per_input;
  const engine::testing::GradCheckResult r =
      check_model_gradients(model, x, random_labels(2, classes, 22), c);
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.checked, min_checked);
}

// Writes `net` (finalized on `ctx`) to ONNX and reads it back, finalized with another seed so that every
// value must come from the file; `net` then takes the file's float32 values, and both give the same logits
// and gradients in training mode on 2 random inputs. Returns the model read back.
inline Model expect_onnx_round_trip(Model& net, const ExecutionContext& ctx, const std::string& tag,
                                    const Shape& sample, int classes) {
  const std::string path = (engine::testing::scratch_dir("onnx_" + tag + "_", "net") / "net.onnx").string();
  onnx::export_model(net, path);
  onnx::ImportOptions o;
  o.sample_shape = sample;
  o.num_classes = classes;
  Model imported = onnx::import_model(path, o);
  imported.finalize(ctx, 99);
  Tensor params = net.flat_parameters();
  params.copy_from(imported.flat_parameters());  // the file's float32 values in both
  Shape x_shape{2};
  x_shape.insert(x_shape.end(), sample.begin(), sample.end());
  engine::testing::expect_same_network(net, imported, random_tensor(x_shape, ctx.dtype, 17),
                                       random_tensor({2, classes}, ctx.dtype, 23));
  return imported;
}

}  // namespace engine::layers::testing
