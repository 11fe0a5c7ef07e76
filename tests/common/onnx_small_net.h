#pragma once
// A small CNN outside the zoo, written as an ONNX file by the engine's exporter, for the tests that run
// cnn_train --model FILE.onnx (tests/cpu/cnn_train_onnx_test.cpp, tests/gpu/cnn_train_onnx_gpu_test.cpp):
// conv-bn-relu, a residual block (conv-bn-relu-conv-bn + identity), global average pool, linear, at the
// tiny folder dataset's 3 x 32 x 32.

#include <memory>
#include <string>

#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/global_avgpool.h"
#include "layers/linear.h"
#include "layers/model.h"
#include "layers/onnx/onnx_model.h"
#include "layers/relu.h"
#include "layers/residual.h"
#include "layers/sequential.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::testing {

inline std::unique_ptr<layers::Sequential> onnx_small_net_conv_bn(int in, int out) {
  auto s = std::make_unique<layers::Sequential>();
  s->emplace<layers::Conv2d>(layers::Conv2dOptions{.in_channels = in,
                                                   .out_channels = out,
                                                   .kernel_size = 3,
                                                   .stride = 1,
                                                   .padding = 1,
                                                   .bias = false,
                                                   .identity_init = false});
  s->emplace<layers::BatchNorm2d>(out);
  return s;
}

// The file dir/small_net_<classes>.onnx, written, with `classes` outputs; its path.
inline std::string small_net_onnx(const std::string& dir, int classes) {
  auto root = std::make_unique<layers::Sequential>();
  root->add(onnx_small_net_conv_bn(3, 8), "stem");
  root->emplace<layers::ReLU>();
  auto main = onnx_small_net_conv_bn(8, 8);
  main->emplace<layers::ReLU>();
  main->add(onnx_small_net_conv_bn(8, 8));
  root->emplace<layers::Residual>(std::move(main), nullptr);
  root->emplace<layers::GlobalAvgPool>();
  root->emplace<layers::Linear>(8, classes);
  layers::Model model("small_net", std::move(root), {3, 32, 32});  // the folder loader's size
  model.finalize(layers::testing::cpu_context(), 11);
  std::string path = dir + "/small_net_" + std::to_string(classes) + ".onnx";
  layers::onnx::export_model(model, path);
  return path;
}

}  // namespace engine::testing
