#pragma once
// SGD step, the CPU reference, with torch.optim.SGD's exact semantics (maximize=False). For each of the n
// parameters p with gradient g, in this order:
//
//     g = g + weight_decay * p
//     if momentum != 0:
//         buf = g                                        on the first step (torch: buffer absent; NO
//         dampening) buf = momentum * buf + (1 - dampening) * g     afterwards g   = nesterov ? g + momentum
//         * buf : buf
//     p = p - lr * g
//
// The engine keeps parameters, gradients and momentum buffers in contiguous buffers, so this works on flat
// arrays. `first_step` says the buffer holds nothing yet (torch's `momentum_buffer is None`); it is read only
// when momentum != 0 and first_step is false, and written whenever momentum != 0. With momentum == 0 the
// buffer is untouched and may be null. Arithmetic is in double; p and buf are rounded to T once per step.
//
// Rejected as torch rejects them: lr < 0, momentum < 0, weight_decay < 0, nesterov with momentum <= 0 or
// dampening != 0 (and any NaN).

#include <cstdint>
#include <span>
#include <vector>

namespace engine::cpu {

struct SgdOptions {
  double lr = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;

  void validate() const;  // throws engine::Error naming the bad option and its value
};

// Parameter groups: a range [begin, end) of the flat buffer with its own settings (torch's param_groups):
// the step's lr times `lr_scale`, its own `weight_decay`; `frozen` leaves its parameters and momentum
// buffer untouched (torch: requires_grad=False, so no gradient and no state). Elements in no group use the
// options' lr and weight decay.
struct SgdGroup {
  std::int64_t begin = 0, end = 0;
  double lr_scale = 1.0;
  double weight_decay = 0.0;
  bool frozen = false;
};

// The groups as a tiling of [0, n): the given ranges (sorted by begin, disjoint, inside [0, n), lr_scale and
// weight_decay finite and >= 0, else engine::Error naming the group) and, between them, default segments
// (lr_scale 1, the options' weight decay). Empty ranges are dropped. What every path (reference, fast, CUDA)
// iterates over, so the three agree on which element gets which settings.
std::vector<SgdGroup> tile_sgd_groups(std::span<const SgdGroup> groups, double default_weight_decay,
                                      std::int64_t n);

// Updates params (and momentum_buffer) in place. grads is read only.
template <typename T>
void sgd_step(const SgdOptions& options, T* params, const T* grads, T* momentum_buffer, std::int64_t n,
              bool first_step);

// The same step with parameter groups: per element, lr = options.lr * lr_scale (one double multiply) and
// the group's weight decay; frozen elements are not touched.
template <typename T>
void sgd_step_groups(const SgdOptions& options, std::span<const SgdGroup> groups, T* params, const T* grads,
                     T* momentum_buffer, std::int64_t n, bool first_step);

}  // namespace engine::cpu
