#pragma once
// Sgd: torch.optim.SGD over a Model's flat parameter and gradient buffers, with one flat momentum buffer of
// the same layout. One step is one call over the whole model (kernels/cpu/sgd.h on the CPU, in float or
// double; the fused kernels/cuda/sgd.h kernel on CUDA), with PyTorch's semantics: weight decay added to the
// gradient, momentum buffer = the gradient on the first step (no dampening then), dampening afterwards,
// nesterov.
//
// The learning rate is an argument of step(), so a schedule (optim/lr_schedule.h) owns it. The padding
// between parameters in the flat buffers is zero in parameters and gradients, so it stays zero in the
// momentum buffer.
//
// State for a checkpoint: the momentum buffer and whether it holds anything yet (torch's state dict has no
// momentum_buffer entry before the first step).

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "kernels/cpu/sgd.h"
#include "layers/model.h"

namespace engine::optim {

struct SgdConfig {
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  // Parameter groups over ranges of the flat parameter buffer (kernels/cpu/sgd.h SgdGroup; build them from
  // parameter names with optim/param_groups.h). Elements in no group use weight_decay and the step's lr.
  std::vector<cpu::SgdGroup> groups = {};
};

class Sgd {
 public:
  // The model must be finalized and must outlive the optimizer. Throws engine::Error for options torch
  // rejects (negative momentum or weight decay, nesterov without momentum or with dampening).
  Sgd(layers::Model& model, const SgdConfig& config);

  // p -= lr * (update from the gradients now in the model's gradient buffer). Queued on the model's stream
  // on CUDA. Throws engine::Error for a negative or NaN lr.
  void step(double lr);
  // CUDA: from now on the step's kernel reads its rate from this device address (one double: a captured
  // graph's step state, apps/train/step_state.h) rather than from step()'s argument, which is still
  // validated; the caller writes the same value there. nullptr goes back to the argument. Throws on the CPU.
  void set_device_lr(const double* device_lr);

  const SgdConfig& config() const { return config_; }
  // Replaces the parameter groups (optim/param_groups.h: a rule with epochs=N freezes its parameters from
  // epoch N on). Queued after the steps before it on CUDA; the momentum buffer is kept.
  void set_groups(std::vector<cpu::SgdGroup> groups);
  // Flat, like the model's parameter buffer; undefined when momentum == 0 (torch keeps no buffer then).
  const Tensor& momentum_buffer() const { return momentum_; }
  // True once a step has filled the momentum buffer (torch: state[p]['momentum_buffer'] exists).
  bool has_momentum_state() const { return has_state_; }
  // Restoring from a checkpoint: says whether the buffer (written by the caller) holds state.
  void set_has_momentum_state(bool has_state) { has_state_ = has_state; }
  std::int64_t steps() const { return steps_; }
  void set_steps(std::int64_t steps) { steps_ = steps; }

 private:
  layers::Model& model_;
  SgdConfig config_;
  std::vector<cpu::SgdGroup> tiles_;  // the groups tiling the flat buffer; empty without groups
  Tensor device_tiles_;               // CUDA: tiles_ as bytes in device memory, for the fused kernel
  Tensor momentum_;
  bool has_state_ = false;
  std::int64_t steps_ = 0;
  const double* device_lr_ = nullptr;
};

}  // namespace engine::optim
