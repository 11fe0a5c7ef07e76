#pragma once
// One description per op of its NHWC test, run in several modes (after ggml's per-op test structs): each case
// builds its inputs from fixed seeds in NCHW order, hands them to the op in the environment's dtype, device
// and layout (outputs poisoned with NaN bytes first), and returns every output's values in NCHW order as
// doubles. The tests run a case twice, as the float64 NCHW reference on the CPU and as the path under test
// (float32 CPU or CUDA, NHWC), and compare. Sizes are odd and stride/padding non-trivial, so a wrong index
// in either layout shows.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/ops/avgpool2d.h"
#include "kernels/ops/batchnorm2d.h"
#include "kernels/ops/conv2d.h"
#include "kernels/ops/global_avgpool.h"
#include "kernels/ops/maxpool2d.h"
#include "kernels/ops/relu.h"
#include "kernels/ops/residual_add.h"
#include "kernels/ops/transpose.h"
#include "tests/common/gradcheck.h"

namespace engine::testing::layout_cases {

struct Env {
  ExecutionContext ctx;       // device, dtype (F32 or F64), stream, handles
  Layout layout;              // of every 4-d tensor (a blocked one: of those whose channels fill its blocks)
  std::int64_t channels = 5;  // of the BatchNorm, pooling and elementwise cases (a blocked layout's multiple)
};

using Outputs = std::vector<std::pair<std::string, std::vector<double>>>;

// The values of any tensor (F32, F64, I32; any device and layout) in NCHW order.
inline std::vector<double> values(const Env& e, const Tensor& t) {
  const Tensor host = ops::to_layout(ExecutionContext{}, t.to(Device::cpu(), e.ctx.stream), Layout::NCHW);
  std::vector<double> v(static_cast<std::size_t>(host.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) {
    switch (host.dtype()) {
      case DType::F64: v[i] = host.data<double>()[i]; break;
      case DType::F32: v[i] = static_cast<double>(host.data<float>()[i]); break;
      case DType::I32: v[i] = host.data<std::int32_t>()[i]; break;
      default: ENGINE_FAIL("values of {}", t.str());
    }
  }
  return v;
}

// Random values in [lo, hi) given in NCHW order, as a tensor of the environment's dtype and device in
// `layout` (4-d shapes) or NCHW.
inline Tensor random_in(const Env& e, const Shape& shape, std::uint64_t seed, Layout layout, double lo,
                        double hi) {
  const std::vector<double> v = random_values(static_cast<std::size_t>(shape_numel(shape)), seed, lo, hi);
  Tensor host = Tensor::empty(shape, e.ctx.dtype);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (e.ctx.dtype == DType::F64) {
      host.data<double>()[i] = v[i];
    } else {
      host.data<float>()[i] = static_cast<float>(v[i]);
    }
  }
  return ops::to_layout(ExecutionContext{}, host,
                        shape.size() == 4 ? activation_layout(layout, shape[1], shape[2] * shape[3]) : layout)
      .to(e.ctx.device, e.ctx.stream);
}
// An activation: in the environment's layout.
inline Tensor input(const Env& e, const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return random_in(e, shape, seed, e.layout, lo, hi);
}
// A parameter: NCHW ([K, C, R, S] for a conv weight) in every layout.
inline Tensor parameter(const Env& e, const Shape& shape, std::uint64_t seed) {
  return random_in(e, shape, seed, Layout::NCHW, -1.0, 1.0);
}

// An output full of 0xFF bytes (NaN in float, -1 in int32): a value the op forgets to write shows.
inline Tensor poisoned(const Env& e, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(
      shape, dtype, e.ctx.device, e.ctx.stream,
      shape.size() == 4 ? activation_layout(e.layout, shape[1], shape[2] * shape[3]) : Layout::NCHW);
  t.fill_bytes(0xFF, e.ctx.stream);
  return t;
}
inline Tensor poisoned(const Env& e, const Shape& shape) { return poisoned(e, shape, e.ctx.dtype); }

// x[3, 5, 7, 6], w[4, 5, 3, 3], stride 2, padding 1, with bias: forward, then backward from a random dy.
inline Outputs conv2d_of(const Env& e, const Conv2dShape& s) {
  const Shape w_shape{s.k, s.c_per_group(), s.r, s.s};
  const Tensor x = input(e, {s.n, s.c, s.h, s.w}, 11);
  const Tensor w = parameter(e, w_shape, 12);
  const Tensor b = parameter(e, {s.k}, 13);
  const Shape y_shape{s.n, s.k, s.p(), s.q()};
  const Tensor y = poisoned(e, y_shape);
  ops::conv2d_forward(e.ctx, s, x, w, b, y);
  const Tensor dy = input(e, y_shape, 14);
  const Tensor dx = poisoned(e, {s.n, s.c, s.h, s.w});
  Tensor dw = Tensor::empty(w_shape, e.ctx.dtype, e.ctx.device, e.ctx.stream);
  dw.fill_bytes(0xFF, e.ctx.stream);
  Tensor db = Tensor::empty({s.k}, e.ctx.dtype, e.ctx.device, e.ctx.stream);
  db.fill_bytes(0xFF, e.ctx.stream);
  ops::conv2d_backward(e.ctx, s, x, w, dy, dx, dw, db);
  return {{"y", values(e, y)}, {"dx", values(e, dx)}, {"dw", values(e, dw)}, {"db", values(e, db)}};
}

inline Outputs conv2d(const Env& e) {
  return conv2d_of(e, {.n = 3,
                       .c = 5,
                       .h = 7,
                       .w = 6,
                       .k = 4,
                       .r = 3,
                       .s = 3,
                       .stride_h = 2,
                       .stride_w = 2,
                       .pad_h = 1,
                       .pad_w = 1});
}

// Two groups (4 -> 6 channels) with dilation 2 over x[3, 4, 9, 8], and a depthwise 3x3 stride 2 (6 groups).
inline Outputs grouped_conv2d(const Env& e) {
  Outputs out = conv2d_of(e, {.n = 3,
                              .c = 4,
                              .h = 9,
                              .w = 8,
                              .k = 6,
                              .r = 3,
                              .s = 3,
                              .stride_h = 1,
                              .stride_w = 1,
                              .pad_h = 2,
                              .pad_w = 1,
                              .groups = 2,
                              .dilation_h = 2,
                              .dilation_w = 2});
  for (auto& [name, v] : conv2d_of(e, {.n = 3,
                                      .c = 6,
                                      .h = 7,
                                      .w = 9,
                                      .k = 6,
                                      .r = 3,
                                      .s = 3,
                                      .stride_h = 2,
                                      .stride_w = 2,
                                      .pad_h = 1,
                                      .pad_w = 1,
                                      .groups = 6})) {
    out.emplace_back("depthwise " + name, std::move(v));
  }
  return out;
}

// BatchNorm2d over x[3, 5, 7, 3] (values offset from 0, so the shifted sums matter): training forward (the
// running statistics updated), backward; `relu` fuses ReLU into both.
inline Outputs batchnorm_training(const Env& e, bool relu) {
  const BatchNorm2dShape s{.n = 3, .c = static_cast<int>(e.channels), .h = 7, .w = 3};
  const Shape shape{s.n, s.c, s.h, s.w};
  const Tensor x = input(e, shape, 21, 2.0, 5.0);
  const Tensor gamma = input(e, {s.c}, 22, 0.5, 1.5), beta = input(e, {s.c}, 23);
  const Tensor running_mean = input(e, {s.c}, 24), running_var = input(e, {s.c}, 25, 0.5, 1.5);
  const Tensor y = poisoned(e, shape), mean = poisoned(e, {s.c}), invstd = poisoned(e, {s.c});
  ops::batchnorm2d_forward_training(e.ctx, s, x, gamma, beta, y, mean, invstd, running_mean, running_var, 0.1,
                                    1e-5, relu);
  const Tensor dy = input(e, shape, 26);
  const Tensor dx = poisoned(e, shape), dgamma = poisoned(e, {s.c}), dbeta = poisoned(e, {s.c});
  ops::batchnorm2d_backward_training(e.ctx, s, x, gamma, mean, invstd, dy, dx, dgamma, dbeta,
                                     relu ? y : Tensor());
  return {{"y", values(e, y)},
          {"save_mean", values(e, mean)},
          {"save_invstd", values(e, invstd)},
          {"running_mean", values(e, running_mean)},
          {"running_var", values(e, running_var)},
          {"dx", values(e, dx)},
          {"dgamma", values(e, dgamma)},
          {"dbeta", values(e, dbeta)}};
}

// BatchNorm2d in eval mode (running statistics), forward and backward.
inline Outputs batchnorm_eval(const Env& e, bool relu) {
  const BatchNorm2dShape s{.n = 3, .c = static_cast<int>(e.channels), .h = 7, .w = 3};
  const Shape shape{s.n, s.c, s.h, s.w};
  const Tensor x = input(e, shape, 31);
  const Tensor gamma = input(e, {s.c}, 32, 0.5, 1.5), beta = input(e, {s.c}, 33);
  const Tensor running_mean = input(e, {s.c}, 34), running_var = input(e, {s.c}, 35, 0.5, 1.5);
  const Tensor y = poisoned(e, shape);
  ops::batchnorm2d_forward_eval(e.ctx, s, x, gamma, beta, running_mean, running_var, y, 1e-5, relu);
  const Tensor dy = input(e, shape, 36);
  const Tensor dx = poisoned(e, shape), dgamma = poisoned(e, {s.c}), dbeta = poisoned(e, {s.c});
  ops::batchnorm2d_backward_eval(e.ctx, s, x, gamma, running_mean, running_var, dy, dx, dgamma, dbeta, 1e-5,
                                 relu ? y : Tensor());
  return {
      {"y", values(e, y)}, {"dx", values(e, dx)}, {"dgamma", values(e, dgamma)}, {"dbeta", values(e, dbeta)}};
}

// Max pooling 3x3, stride 2, padding 1 over x[3, 5, 7, 6] (overlapping windows), forward and backward.
inline Outputs maxpool(const Env& e) {
  const Pool2dShape s{.n = 3,
                      .c = static_cast<int>(e.channels),
                      .h = 7,
                      .w = 6,
                      .kernel_h = 3,
                      .kernel_w = 3,
                      .stride_h = 2,
                      .stride_w = 2,
                      .pad_h = 1,
                      .pad_w = 1};
  const Shape out{s.n, s.c, s.p(), s.q()};
  const Tensor x = input(e, {s.n, s.c, s.h, s.w}, 41);
  const Tensor y = poisoned(e, out), argmax = poisoned(e, out, DType::I32);
  ops::maxpool2d_forward(e.ctx, s, x, y, argmax);
  const Tensor dy = input(e, out, 42);
  const Tensor dx = poisoned(e, {s.n, s.c, s.h, s.w});
  ops::maxpool2d_backward(e.ctx, s, dy, argmax, dx);
  return {{"y", values(e, y)}, {"argmax", values(e, argmax)}, {"dx", values(e, dx)}};
}

// Average pooling 3x2, stride 2x1, padding 1x1 over x[3, 5, 7, 6] (overlapping, the padding not counted),
// forward and backward.
inline Outputs avgpool(const Env& e) {
  const AvgPool2dShape s{{.n = 3,
                          .c = 5,
                          .h = 7,
                          .w = 6,
                          .kernel_h = 3,
                          .kernel_w = 2,
                          .stride_h = 2,
                          .stride_w = 1,
                          .pad_h = 1,
                          .pad_w = 1},
                         false};
  const Shape out{s.window.n, s.window.c, s.p(), s.q()};
  const Tensor x = input(e, {s.window.n, s.window.c, s.window.h, s.window.w}, 45);
  const Tensor y = poisoned(e, out);
  ops::avgpool2d_forward(e.ctx, s, x, y);
  const Tensor dy = input(e, out, 46);
  const Tensor dx = poisoned(e, {s.window.n, s.window.c, s.window.h, s.window.w});
  ops::avgpool2d_backward(e.ctx, s, dy, dx);
  return {{"y", values(e, y)}, {"dx", values(e, dx)}};
}

// Global average pooling of x[3, 5, 7, 3] to [3, 5] and back.
inline Outputs global_avgpool(const Env& e) {
  const Shape shape{3, e.channels, 7, 3};
  const Tensor x = input(e, shape, 51);
  const Tensor y = poisoned(e, {3, e.channels});
  ops::global_avgpool_forward(e.ctx, x, y);
  const Tensor dy = input(e, {3, e.channels}, 52);
  const Tensor dx = poisoned(e, shape);
  ops::global_avgpool_backward(e.ctx, dy, dx);
  return {{"y", values(e, y)}, {"dx", values(e, dx)}};
}

// ReLU forward and backward and the residual add over [3, 5, 7, 3]: elementwise in memory order.
inline Outputs elementwise(const Env& e) {
  const Shape shape{3, e.channels, 7, 3};
  const Tensor x = input(e, shape, 61), other = input(e, shape, 62), dy = input(e, shape, 63);
  const Tensor y = poisoned(e, shape), dx = poisoned(e, shape), sum = poisoned(e, shape);
  ops::relu_forward(e.ctx, x, y);
  ops::relu_backward(e.ctx, x, dy, dx);
  ops::residual_add(e.ctx, x, other, sum);
  return {{"relu", values(e, y)}, {"relu_dx", values(e, dx)}, {"add", values(e, sum)}};
}

// Each output within tol * max(1, max |expected|) of the expected one (NaN fails).
inline void expect_close(const Outputs& actual, const Outputs& expected, double tol,
                         const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t k = 0; k < expected.size(); ++k) {
    const auto& [name, want] = expected[k];
    const std::vector<double>& got = actual[k].second;
    ASSERT_EQ(got.size(), want.size()) << what << " " << name;
    double scale = 1.0;
    for (double v : want) scale = std::max(scale, std::abs(v));
    int bad = 0;
    for (std::size_t i = 0; i < want.size() && bad < 5; ++i) {
      if (!(std::abs(got[i] - want[i]) <= tol * scale)) {
        ++bad;
        ADD_FAILURE() << what << " " << name << "[" << i << "]: " << got[i] << " vs " << want[i]
                      << " (tolerance " << tol * scale << ")";
      }
    }
  }
}

}  // namespace engine::testing::layout_cases
