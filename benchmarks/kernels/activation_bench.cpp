// The pointwise activations (Sigmoid, Tanh, SiLU, HardSigmoid, HardSwish, Clip as ReLU6, LeakyRelu) forward
// (reads x, writes y) and backward (reads x and dy, writes dx), kernels/cuda/activation.h against
// kernels/cpu/activation.h, at the zoo's ReLU sizes. Memory-bound: 8 and 12 bytes an element.

#include <cmath>

#include "benchmarks/kernels/families.h"
#include "kernels/cpu/activation.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "kernels/cuda/activation.h"
#endif

namespace engine::bench {

namespace {

const ActivationParams kKinds[] = {{ActivationKind::Sigmoid},
                                   {ActivationKind::Tanh},
                                   {ActivationKind::SiLU},
                                   {ActivationKind::HardSigmoid, 0.2f, 0.5f},
                                   {ActivationKind::HardSwish},
                                   {ActivationKind::Clip, 0.0f, 6.0f},
                                   {ActivationKind::LeakyRelu, 0.01f}};

// Norm-wise: every element is within a few float roundings of the reference (tests/common/
// activation_tolerance.h has the per-element bounds; 2 ulp functions, a handful of roundings after).
constexpr double kTolerance = 16 * 0x1p-24;

Check check(const ActivationParams& p, GpuBench* g, std::int64_t n) {
  const std::vector<float> x = random_floats(n, 1), dy = random_floats(n, 2);
  const std::vector<double> xd = to_double(x), dyd = to_double(dy);
  std::vector<double> y_ref(x.size()), dx_ref(x.size());
  // Backward from what the forward kept: its output for Sigmoid and Tanh (kernels/activation_kind.h).
  const bool out = activation_backward_reads_output(p.kind);
  cpu::activation_forward(p, xd.data(), y_ref.data(), n);
  cpu::activation_backward(p, out ? y_ref.data() : xd.data(), dyd.data(), dx_ref.data(), n);
  std::vector<float> y(x.size()), dx(x.size());
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    const Tensor tx = g->upload(x, {n}), tdy = g->upload(dy, {n});
    Tensor ty = g->poisoned({n}), tdx = g->poisoned({n});
    cuda::activation_forward(g->stream(), p, tx.data<float>(), ty.data<float>(), n);
    cuda::activation_backward(g->stream(), p, (out ? ty : tx).data<float>(), tdy.data<float>(),
                              tdx.data<float>(), n);
    y = g->download(ty);
    dx = g->download(tdx);
  }
#endif
  if (g == nullptr) {
    cpu::activation_forward(p, x.data(), y.data(), n);
    cpu::activation_backward(p, out ? y.data() : x.data(), dy.data(), dx.data(), n);
  }
  const std::string where = std::string(activation_name(p.kind)) + " n=" + std::to_string(n);
  return worst({compare(y, y_ref, kTolerance, where), compare(dx, dx_ref, kTolerance, where)});
}

void run(Report& r, GpuBench* g) {
  for (const ActivationParams& p : kKinds) {
    const Check c = check(p, g, g != nullptr ? 1 << 20 : 4096);
    const std::string name(activation_name(p.kind));
    for (const FlatCase& k : flat_zoo_cases("ReLU", r, g)) {
      const double n = static_cast<double>(k.n);
      Row fwd{
          .family = "activation", .name = name + " forward", .shape = k.label, .bytes = 8 * n, .check = c};
      Row bwd{
          .family = "activation", .name = name + " backward", .shape = k.label, .bytes = 12 * n, .check = c};
#if ENGINE_HAVE_CUDA
      if (g != nullptr) {
        const Tensor x = g->upload(random_floats(k.n, 3), {k.n}),
                     dy = g->upload(random_floats(k.n, 4), {k.n});
        Tensor y = g->empty({k.n}), dx = g->empty({k.n});
        g->time_row(fwd,
                    [&] { cuda::activation_forward(g->stream(), p, x.data<float>(), y.data<float>(), k.n); });
        g->time_row(bwd, [&] {
          cuda::activation_backward(g->stream(), p, x.data<float>(), dy.data<float>(), dx.data<float>(), k.n);
        });
        continue;
      }
#endif
      r.add(fwd);
      r.add(bwd);
    }
  }
}

}  // namespace

Family activation_family() { return {"activation", run}; }

}  // namespace engine::bench
