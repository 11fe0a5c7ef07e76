#pragma once
// The models and data of the DDP tests, shared by the worker processes (dist_test_worker) and the gtest
// binary that computes the single-process references. Everything is float64 on the CPU (the CPU reference
// kernels have a double instantiation), so the distributed and single-process gradients agree to ~1e-15.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"
#include "dist/process_group.h"
#include "dist/sync_batchnorm_layer.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/model.h"
#include "layers/relu.h"
#include "layers/sequential.h"

namespace engine::dist::testing {

inline constexpr int kChannels = 3, kSize = 8, kClasses = 5;
inline constexpr std::uint64_t kInitSeed = 1234;

// "plain": conv(3->4, 3x3, pad 1) ReLU maxpool2 flatten linear(64->5)      (no BatchNorm)
// "syncbn": conv(3->4) BN(4) ReLU maxpool2 flatten linear(64->5), where BN is SyncBatchNorm2d over `pg`, or
//           layers::BatchNorm2d when `pg` is null (the single-process reference).
// "wide": plain with linear(64->6): a different model, for the mismatch test.
inline layers::Model build_test_model(const std::string& kind, ProcessGroup* pg, DType dtype = DType::F64) {
  auto net = std::make_unique<layers::Sequential>();
  net->emplace<layers::Conv2d>(
      layers::Conv2dOptions{.in_channels = kChannels, .out_channels = 4, .kernel_size = 3, .padding = 1});
  if (kind == "syncbn") {
    if (pg != nullptr) {
      net->add(std::make_unique<SyncBatchNorm2d>(*pg, 4));
    } else {
      net->emplace<layers::BatchNorm2d>(4);
    }
  }
  net->emplace<layers::ReLU>();
  net->emplace<layers::MaxPool2d>(2);
  net->emplace<layers::Flatten>();
  net->emplace<layers::Linear>(64, kind == "wide" ? kClasses + 1 : kClasses);
  layers::Model m(kind, std::move(net), {kChannels, kSize, kSize});
  layers::ExecutionContext ctx;
  ctx.dtype = dtype;
  m.finalize(ctx, kInitSeed);
  return m;
}

// Sample i of the global data set of batch `seed`: uniform in [-1, 1).
inline Tensor make_inputs(std::int64_t begin, std::int64_t count, std::uint64_t seed) {
  const std::int64_t per = kChannels * kSize * kSize;
  Tensor t = Tensor::empty({count, kChannels, kSize, kSize}, DType::F64);
  double* p = t.data<double>();
  for (std::int64_t i = 0; i < count * per; ++i) {
    const std::uint32_t w = philox_word(seed, 0xda7a, static_cast<std::uint64_t>(begin * per + i));
    p[i] = static_cast<double>(w) / 2147483648.0 - 1.0;
  }
  return t;
}

inline Tensor make_labels(std::int64_t begin, std::int64_t count, std::uint64_t seed) {
  Tensor t = Tensor::empty({count}, DType::I32);
  for (std::int64_t i = 0; i < count; ++i) {
    t.data<std::int32_t>()[i] = static_cast<std::int32_t>(
        philox_word(seed, 0x1abe1, static_cast<std::uint64_t>(begin + i)) % kClasses);
  }
  return t;
}

// float64 or float32 elements as doubles.
inline std::vector<double> values(const Tensor& t) {
  if (t.dtype() == DType::F64) return t.to_vector<double>();
  const std::vector<float> f = t.to_vector<float>();
  return {f.begin(), f.end()};
}

// `t` (float64) in `dtype`.
inline Tensor in_dtype(const Tensor& t, DType dtype) {
  if (dtype == DType::F64) return t;
  const std::vector<double> v = t.to_vector<double>();
  return Tensor::from_vector(std::vector<float>(v.begin(), v.end()), t.shape());
}

}  // namespace engine::dist::testing
