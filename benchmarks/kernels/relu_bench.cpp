// ReLU forward (y = max(x, 0): reads x, writes y) and backward (dx = x > 0 ? dy : 0: reads x and dy, writes
// dx), kernels/cuda/relu.h against kernels/cpu/relu.h. Memory-bound: 8 and 12 bytes an element.

#include <algorithm>

#include "benchmarks/kernels/families.h"
#include "kernels/cpu/relu.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "kernels/cuda/relu.h"
#endif

namespace engine::bench {

namespace {

Check check(GpuBench* g, std::int64_t n) {
  const std::vector<float> x = random_floats(n, 1), dy = random_floats(n, 2);
  const std::vector<double> xd = to_double(x), dyd = to_double(dy);
  std::vector<double> y_ref(x.size()), dx_ref(x.size());
  cpu::relu_forward(xd.data(), y_ref.data(), n);
  cpu::relu_backward(xd.data(), dyd.data(), dx_ref.data(), n);
  std::vector<float> y(x.size()), dx(x.size());
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    const Tensor tx = g->upload(x, {n}), tdy = g->upload(dy, {n});
    Tensor ty = g->poisoned({n}), tdx = g->poisoned({n});
    cuda::relu_forward(g->stream(), tx.data<float>(), ty.data<float>(), n);
    cuda::relu_backward(g->stream(), tx.data<float>(), tdy.data<float>(), tdx.data<float>(), n);
    y = g->download(ty);
    dx = g->download(tdx);
  }
#endif
  if (g == nullptr) {
    cpu::relu_forward(x.data(), y.data(), n);
    cpu::relu_backward(x.data(), dy.data(), dx.data(), n);
  }
  const std::string where = "n=" + std::to_string(n);
  return worst({compare(y, y_ref, 0.0, where), compare(dx, dx_ref, 0.0, where)});  // bitwise
}

void run(Report& r, GpuBench* g) {
  const Check c = check(g, g != nullptr ? 1 << 20 : 4096);
  for (const FlatCase& k : flat_zoo_cases("ReLU", r, g)) {
    const double n = static_cast<double>(k.n);
    Row fwd{.family = "relu", .name = "forward", .shape = k.label, .bytes = 8 * n, .check = c};
    Row bwd{.family = "relu", .name = "backward", .shape = k.label, .bytes = 12 * n, .check = c};
#if ENGINE_HAVE_CUDA
    if (g != nullptr) {
      const Tensor x = g->upload(random_floats(k.n, 3), {k.n}), dy = g->upload(random_floats(k.n, 4), {k.n});
      Tensor y = g->empty({k.n}), dx = g->empty({k.n});
      g->time_row(fwd, [&] { cuda::relu_forward(g->stream(), x.data<float>(), y.data<float>(), k.n); });
      g->time_row(bwd, [&] {
        cuda::relu_backward(g->stream(), x.data<float>(), dy.data<float>(), dx.data<float>(), k.n);
      });
      continue;
    }
#endif
    r.add(fwd);
    r.add(bwd);
  }
}

}  // namespace

Family relu_family() { return {"relu", run}; }

}  // namespace engine::bench
