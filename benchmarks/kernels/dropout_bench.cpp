// Dropout forward and backward (p = 0.5 as vgg6's classifier; the mask is regenerated from Philox, never
// stored), kernels/cuda/dropout.h against kernels/cpu/dropout.h: the same mask and the same products, so the
// check is bitwise. Memory-bound: 8 bytes an element each way (the Philox arithmetic is free at these sizes
// only if the kernel is well built; the share of copy bandwidth says whether it is).

#include "benchmarks/kernels/families.h"
#include "kernels/cpu/dropout.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "kernels/cuda/dropout.h"
#endif

namespace engine::bench {

namespace {

constexpr float kP = 0.5f;
constexpr std::uint64_t kSeed = 1234, kOffset = 7;

Check check(GpuBench* g, std::int64_t n) {
  const std::vector<float> x = random_floats(n, 5), dy = random_floats(n, 6);
  const std::vector<double> xd = to_double(x), dyd = to_double(dy);
  std::vector<double> y_ref(x.size()), dx_ref(x.size());
  cpu::dropout_forward(kP, kSeed, kOffset, xd.data(), y_ref.data(), n);
  cpu::dropout_backward(kP, kSeed, kOffset, dyd.data(), dx_ref.data(), n);
  std::vector<float> y(x.size()), dx(x.size());
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    const Tensor tx = g->upload(x, {n}), tdy = g->upload(dy, {n});
    Tensor ty = g->poisoned({n}), tdx = g->poisoned({n});
    cuda::dropout_forward(g->stream(), kP, kSeed, kOffset, tx.data<float>(), ty.data<float>(), n);
    cuda::dropout_backward(g->stream(), kP, kSeed, kOffset, tdy.data<float>(), tdx.data<float>(), n);
    y = g->download(ty);
    dx = g->download(tdx);
  }
#endif
  if (g == nullptr) {
    cpu::dropout_forward(kP, kSeed, kOffset, x.data(), y.data(), n);
    cpu::dropout_backward(kP, kSeed, kOffset, dy.data(), dx.data(), n);
  }
  const std::string where = "n=" + std::to_string(n);
  return worst({compare(y, y_ref, 0.0, where), compare(dx, dx_ref, 0.0, where)});
}

void run(Report& r, GpuBench* g) {
  const Check c = check(g, g != nullptr ? 1 << 20 : 4096);
  for (const FlatCase& k : flat_zoo_cases("Dropout", r, g)) {
    const double n = static_cast<double>(k.n);
    Row fwd{.family = "dropout", .name = "forward p=0.5", .shape = k.label, .bytes = 8 * n, .check = c};
    Row bwd{.family = "dropout", .name = "backward p=0.5", .shape = k.label, .bytes = 8 * n, .check = c};
#if ENGINE_HAVE_CUDA
    if (g != nullptr) {
      const Tensor x = g->upload(random_floats(k.n, 7), {k.n});
      Tensor y = g->empty({k.n});
      g->time_row(fwd, [&] {
        cuda::dropout_forward(g->stream(), kP, kSeed, kOffset, x.data<float>(), y.data<float>(), k.n);
      });
      g->time_row(bwd, [&] {
        cuda::dropout_backward(g->stream(), kP, kSeed, kOffset, x.data<float>(), y.data<float>(), k.n);
      });
      continue;
    }
#endif
    r.add(fwd);
    r.add(bwd);
  }
}

}  // namespace

Family dropout_family() { return {"dropout", run}; }

}  // namespace engine::bench
