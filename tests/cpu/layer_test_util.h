#pragma once
// Helpers for the layer and model tests (tests/cpu/layer_*_test.cpp, model_*_test.cpp and
// tests/gpu/layers_gpu_test.cpp): host tensors from and to doubles, contexts, and a gradient-check harness
// for a whole Model run in float64. Header-only, because the test targets compile *_test.cpp files only.

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/philox.h"
#include "core/tensor.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/execution_context.h"
#include "layers/flatten.h"
#include "layers/global_avgpool.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/model.h"
#include "layers/relu.h"
#include "layers/residual.h"
#include "layers/sequential.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/common/gradcheck.h"

namespace engine::layers::testing {

// Overwrites the values of a CPU tensor (F32 or F64) with `values`.
inline void set_values(const Tensor& t, const std::vector<double>& values) {
  ENGINE_CHECK(t.device().is_cpu() && static_cast<std::size_t>(t.numel()) == values.size(),
               "set_values on {}", t.str());
  if (t.dtype() == DType::F64) {
    double* p = t.data<double>();
    for (std::size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  } else {
    float* p = t.data<float>();
    for (std::size_t i = 0; i < values.size(); ++i) p[i] = static_cast<float>(values[i]);
  }
}

// A CPU tensor of `dtype` (F32 or F64) holding `values`.
inline Tensor host_tensor(const std::vector<double>& values, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  set_values(t, values);
  return t;
}

// The elements of a CPU tensor (F32, F64 or I32) as doubles.
inline std::vector<double> host_values(const Tensor& t) {
  ENGINE_CHECK(t.device().is_cpu(), "host_values on {}", t.str());
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) {
    switch (t.dtype()) {
      case DType::F64: v[i] = t.data<double>()[i]; break;
      case DType::F32: v[i] = static_cast<double>(t.data<float>()[i]); break;
      case DType::I32: v[i] = t.data<std::int32_t>()[i]; break;
      default: ENGINE_FAIL("host_values on {}", t.str());
    }
  }
  return v;
}

// Random values in [lo, hi) (Philox, fixed seed) as a CPU tensor.
inline Tensor random_tensor(const Shape& shape, DType dtype, std::uint64_t seed, double lo = -1.0,
                            double hi = 1.0) {
  return host_tensor(
      engine::testing::random_values(static_cast<std::size_t>(shape_numel(shape)), seed, lo, hi), shape,
      dtype);
}

// Labels in [0, classes) as an int32 CPU tensor.
inline Tensor random_labels(std::int64_t n, int classes, std::uint64_t seed) {
  Tensor t = Tensor::empty({n}, DType::I32);
  for (std::int64_t i = 0; i < n; ++i) {
    t.data<std::int32_t>()[i] = static_cast<std::int32_t>(
        philox_word(seed, 0x1abe1, static_cast<std::uint64_t>(i)) % static_cast<std::uint32_t>(classes));
  }
  return t;
}

// Every layer kind in a few hundred parameters, for inputs [N, 3, 8, 8] and 3 classes:
//   conv(3->4, 3x3) BN ReLU maxpool2 | residual block (conv1 3x3 stride 2, bn1, relu1, conv2, bn2; shortcut
//   1x1 conv stride 2 + BN) | global average pool | linear(6->5) dropout(0.3) linear(5->3)
inline std::unique_ptr<Sequential> small_test_net() {
  auto net = std::make_unique<Sequential>();
  net->emplace<Conv2d>(Conv2dOptions{.in_channels = 3, .out_channels = 4, .kernel_size = 3, .padding = 1});
  net->emplace<BatchNorm2d>(4);
  net->emplace<ReLU>();
  net->emplace<MaxPool2d>(2);
  auto main = std::make_unique<Sequential>();
  main->emplace_named<Conv2d>(
      "conv1",
      Conv2dOptions{
          .in_channels = 4, .out_channels = 6, .kernel_size = 3, .stride = 2, .padding = 1, .bias = false});
  main->emplace_named<BatchNorm2d>("bn1", 6);
  main->emplace_named<ReLU>("relu1");
  main->emplace_named<Conv2d>(
      "conv2",
      Conv2dOptions{.in_channels = 6, .out_channels = 6, .kernel_size = 3, .padding = 1, .bias = false});
  main->emplace_named<BatchNorm2d>("bn2", 6);
  auto shortcut = std::make_unique<Sequential>();
  shortcut->emplace<Conv2d>(
      Conv2dOptions{.in_channels = 4, .out_channels = 6, .kernel_size = 1, .stride = 2, .bias = false});
  shortcut->emplace<BatchNorm2d>(6);
  net->add(std::make_unique<Residual>(std::move(main), std::move(shortcut)), "block");
  net->emplace<GlobalAvgPool>();
  net->emplace<Linear>(6, 5);
  net->emplace<Dropout>(0.3);
  net->emplace<Linear>(5, 3);
  return net;
}

inline ExecutionContext cpu_context(DType dtype = DType::F32, std::uint64_t dropout_seed = 7) {
  ExecutionContext c;
  c.device = Device::cpu();
  c.dtype = dtype;
  c.dropout_seed = dropout_seed;
  return c;
}

// The gradient of L = loss(model(x), labels) (times the checker's probe) with respect to the model's
// parameters and its input, checked against central differences. The model must be finalized on the CPU in
// float64; the harness turns needs_input_grad on.
//
// Two ways to see the parameters, because a whole model is too big to perturb element by element:
//  - Directions: a random direction v per GROUP (per layer, per parameter tensor or per residual block:
//    ModelCheck::group_depth; the input x is a group of its own), each parameter's part scaled to that
//    parameter's RMS. The checker perturbs one scalar t per group, theta + t v, and the analytic side is
//    <grad, v>. Three forward passes check every element of the group at once: an error in any element shows,
//    unless it is exactly orthogonal to a random v.
//  - Coordinates: the checker's element-wise check on each parameter tensor and on x, on a random sample of
//    options.max_elements_per_input coordinates per tensor (0 = all of them).
// Forwards run in train mode; the context's dropout state is reset to (seed, 0) before each, so every
// evaluation sees the same masks.
enum class CheckKind { Directions, Coordinates };

// How Directions groups parameters: consecutive parameters whose names share the first `depth` components
// ("layer2.0.conv1.weight" at depth 2: "layer2.0") form one group. depth 0 = one group per parameter; the
// default, -1, groups by layer (the name minus its last component).
struct ModelCheck {
  CheckKind kind = CheckKind::Directions;
  int group_depth = -1;
  engine::testing::GradCheckOptions options;
};

inline std::string group_key(const std::string& name, int depth) {
  if (depth == 0) return name;
  if (depth < 0) return name.substr(0, name.rfind('.'));
  std::size_t end = 0;
  for (int i = 0; i < depth; ++i) {
    end = name.find('.', end == 0 ? 0 : end + 1);
    if (end == std::string::npos) return name.substr(0, name.rfind('.'));
  }
  return name.substr(0, end);
}

inline engine::testing::GradCheckResult check_model_gradients(Model& model, const Tensor& x,
                                                              const Tensor& labels, const ModelCheck& check,
                                                              double label_smoothing = 0.1) {
  using engine::testing::GradCheckCase;
  ENGINE_CHECK(model.finalized() && model.context().dtype == DType::F64 && model.context().device.is_cpu(),
               "check_model_gradients needs a model finalized on the CPU in float64");
  model.set_needs_input_grad(true);
  ExecutionContext& ctx = model.context();
  SoftmaxCrossEntropy loss(label_smoothing);
  const std::vector<Parameter>& params = model.parameters();
  const std::size_t np = params.size();

  // Tensor k < np is parameter k; tensor np is the input.
  std::vector<Tensor> tensors;
  for (const Parameter& p : params) tensors.push_back(p.value);
  Tensor x_work = host_tensor(host_values(x), x.shape(), DType::F64);
  tensors.push_back(x_work);
  std::vector<std::vector<double>> base;
  for (const Tensor& t : tensors) base.push_back(host_values(t));

  auto run_forward = [&](std::uint64_t seed) {
    ctx.dropout_seed = seed;
    ctx.dropout_offset = 0;
    const Tensor logits = model.forward(x_work, Mode::Train);
    return host_values(loss.forward(ctx, logits, labels));
  };
  // Runs backward for dL = dy[0] and returns the gradient of each tensor.
  auto run_backward = [&](const std::vector<double>& dy, std::uint64_t seed) {
    run_forward(seed);
    const Tensor dx = model.backward(loss.backward(dy[0]));
    std::vector<std::vector<double>> grads;
    for (const Parameter& p : params) grads.push_back(host_values(p.grad));
    grads.push_back(host_values(dx));
    return grads;
  };

  GradCheckCase c;
  if (check.kind == CheckKind::Coordinates) {
    std::vector<std::vector<double>> mirrors = base;  // the checker perturbs these
    auto sync = [&]() {
      for (std::size_t k = 0; k < tensors.size(); ++k) set_values(tensors[k], mirrors[k]);
    };
    for (std::size_t k = 0; k < tensors.size(); ++k) {
      c.inputs.push_back({k < np ? params[k].name : std::string("input"), &mirrors[k]});
    }
    c.forward = [&](std::uint64_t seed) {
      sync();
      return run_forward(seed);
    };
    c.backward = [&](const std::vector<double>& dy, std::uint64_t seed) {
      sync();
      return run_backward(dy, seed);
    };
    return engine::testing::check_gradients(c, check.options);
  }

  // Groups of tensors, each with one scalar t.
  std::vector<std::vector<std::size_t>> groups;
  std::vector<std::string> names;
  for (std::size_t k = 0; k < np; ++k) {
    const std::string key = group_key(params[k].name, check.group_depth);
    if (!names.empty() && names.back() == key) {
      groups.back().push_back(k);
      continue;
    }
    groups.push_back({k});
    names.push_back(key);
  }
  groups.push_back({np});
  names.emplace_back("input");

  std::vector<std::vector<double>> direction(tensors.size());
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    double sum_sq = 0.0;
    for (double v : base[k]) sum_sq += v * v;
    const double rms = base[k].empty() ? 0.0 : std::sqrt(sum_sq / static_cast<double>(base[k].size()));
    const double scale = rms > 0.0 ? rms : 1.0;
    direction[k] = engine::testing::random_values(base[k].size(), 0xd1ec + k, -scale, scale);
  }
  std::vector<std::vector<double>> t(groups.size(), std::vector<double>(1, 0.0));
  for (std::size_t g = 0; g < groups.size(); ++g) c.inputs.push_back({names[g], &t[g]});
  auto apply = [&]() {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      for (std::size_t k : groups[g]) {
        std::vector<double> v = base[k];
        for (std::size_t i = 0; i < v.size(); ++i) v[i] += t[g][0] * direction[k][i];
        set_values(tensors[k], v);
      }
    }
  };
  c.forward = [&](std::uint64_t seed) {
    apply();
    return run_forward(seed);
  };
  c.backward = [&](const std::vector<double>& dy, std::uint64_t seed) {
    apply();
    const std::vector<std::vector<double>> grads = run_backward(dy, seed);
    std::vector<std::vector<double>> out;
    for (const std::vector<std::size_t>& group : groups) {
      double dot = 0.0;
      for (std::size_t k : group) {
        for (std::size_t i = 0; i < grads[k].size(); ++i) dot += grads[k][i] * direction[k][i];
      }
      out.push_back({dot});
    }
    return out;
  };
  return engine::testing::check_gradients(c, check.options);
}

}  // namespace engine::layers::testing
