#pragma once
// The work a model must do, counted per layer from the shapes alone (nothing runs): floating-point
// operations and the fewest bytes of device memory each layer's forward and backward must move. This is the
// "floor" of docs/PERFORMANCE.md, and the list of shapes the kernel benchmarks time (the zoo models at the
// batch they train at), so both follow layers/models.h instead of a copied table.
//
// Conventions (fp32 storage, 4 bytes an element):
//   - a multiply-add is 2 FLOPs. Conv2d forward: 2*N*K*P*Q*C*R*S (+ N*K*P*Q for the bias); backward: the same
//     again for dW, again for dX unless the layer needs no input gradient (the model's first layer), plus
//     the bias gradient. Linear likewise with 2*N*in*out.
//   - memory-bound layers get nominal counts (ReLU 1 per element; BatchNorm 8 forward and 11 backward per
//     element; max-pool k*k-1 compares per output; ...). They are a rounding error next to the convolutions;
//     for those layers the byte count is what matters.
//   - bytes: each input read once and each output written once (parameters and gradients included), which
//     is what an ideal kernel moves; real kernels move more (BatchNorm reads x twice, cuDNN reads tiles many
//     times from L2, which this does not count).
//   - Residual blocks add a "residual_add" entry (y = a + b forward; da = db = dy backward).

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "layers/model.h"

namespace engine::bench {

struct LayerCost {
  std::string path;  // the layer's state-dict path: "features.0", "layer2.0.shortcut.0"
  std::string kind;  // "Conv2d", "BatchNorm2d", ..., "ResidualAdd"
  Shape in, out;     // with the batch dimension
  double forward_flops = 0, backward_flops = 0;
  double forward_bytes = 0, backward_bytes = 0;
  std::int64_t params = 0;  // this layer's own parameter elements
  bool needs_input_grad = true;
  // Geometry for the kernel benchmarks (meaningful for the kinds that have it).
  int kernel = 0, stride = 0, padding = 0, out_channels = 0;
  bool bias = false;
};

struct ModelCost {
  std::string model;
  std::int64_t batch = 0;
  std::int64_t parameters = 0;
  std::vector<LayerCost> layers;
  double forward_flops() const;
  double backward_flops() const;
  double forward_bytes() const;
  double backward_bytes() const;
  double gradient_bytes() const { return 4.0 * static_cast<double>(parameters); }
  // SGD with momentum and weight decay over the flat buffers: reads p, g, buf, writes p, buf (20 bytes and 6
  // FLOPs a parameter).
  double optimizer_bytes() const { return 20.0 * static_cast<double>(parameters); }
  double optimizer_flops() const { return 6.0 * static_cast<double>(parameters); }
};

// Walks `model` (built by layers::build_model, finalized or not) for inputs [batch, sample_shape...].
ModelCost model_cost(const layers::Model& model, std::int64_t batch);

// The same for a zoo model by name, on its usual input (3x32x32; 1x28x28 for mnist_cnn), 10 classes.
ModelCost zoo_model_cost(const std::string& name, std::int64_t batch);

// A per-layer table (forward/backward GFLOP and MB per layer, then the totals) as text.
std::string format_model_cost(const ModelCost& cost);

}  // namespace engine::bench
