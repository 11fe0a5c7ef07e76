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

namespace engine::cpu {

struct SgdOptions {
  double lr = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;

  void validate() const;  // throws engine::Error naming the bad option and its value
};

// Updates params (and momentum_buffer) in place. grads is read only.
template <typename T>
void sgd_step(const SgdOptions& options, T* params, const T* grads, T* momentum_buffer, std::int64_t n,
              bool first_step);

}  // namespace engine::cpu
