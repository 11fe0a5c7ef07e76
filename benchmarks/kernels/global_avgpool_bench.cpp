// The global average pool of resnet18 (the GlobalAvgPool layer), forward and backward,
// kernels/cuda/avgpool.h against kernels/cpu/avgpool.h. Memory-bound: forward reads x and writes [N, C];
// backward the reverse.

#include "benchmarks/kernels/families.h"
#include "kernels/cpu/avgpool.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "kernels/cuda/avgpool.h"
#endif

namespace engine::bench {

namespace {

Check check_avg(GpuBench* g, int n, int c, int h, int w) {
  const std::int64_t nx = std::int64_t{n} * c * h * w, ny = std::int64_t{n} * c;
  const std::vector<float> x = random_floats(nx, 27), dy = random_floats(ny, 28);
  const std::vector<double> xd = to_double(x), dyd = to_double(dy);
  std::vector<double> y_ref(static_cast<std::size_t>(ny)), dx_ref(static_cast<std::size_t>(nx));
  cpu::global_avgpool_forward(n, c, h, w, xd.data(), y_ref.data());
  cpu::global_avgpool_backward(n, c, h, w, dyd.data(), dx_ref.data());
  std::vector<float> y(y_ref.size()), dx(dx_ref.size());
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    const Tensor tx = g->upload(x, {nx}), tdy = g->upload(dy, {ny});
    Tensor ty = g->poisoned({ny}), tdx = g->poisoned({nx});
    cuda::global_avgpool_forward(g->stream(), n, c, h, w, tx.data<float>(), ty.data<float>());
    cuda::global_avgpool_backward(g->stream(), n, c, h, w, tdy.data<float>(), tdx.data<float>());
    y = g->download(ty);
    dx = g->download(tdx);
  }
#endif
  if (g == nullptr) {
    cpu::global_avgpool_forward(n, c, h, w, x.data(), y.data());
    cpu::global_avgpool_backward(n, c, h, w, dy.data(), dx.data());
  }
  const std::string where = dims({n, c, h, w});
  return worst({compare(y, y_ref, 1e-6, where), compare(dx, dx_ref, 1e-6, where)});
}

void run(Report& r, GpuBench* g) {
  struct Case {
    std::string label;
    int n, c, h, w;
  };
  std::vector<Case> cases;
  for (const ZooLayer& z : zoo_layers("GlobalAvgPool")) {
    const Shape& i = z.layer.in;
    cases.push_back({z.label(), static_cast<int>(i[0]), static_cast<int>(i[1]), static_cast<int>(i[2]),
                     static_cast<int>(i[3])});
  }
  if (g != nullptr && r.options().fill_size) cases.push_back({"[4096, 512, 8, 8] fill", 4096, 512, 8, 8});
  for (const Case& k : cases) {
    const Check c = check_avg(g, 2, k.c, k.h, k.w);
    const std::int64_t nx = std::int64_t{k.n} * k.c * k.h * k.w, ny = std::int64_t{k.n} * k.c;
    const double bytes = 4.0 * static_cast<double>(nx + ny);
    Row fwd{.family = "global_avgpool", .name = "forward", .shape = k.label, .bytes = bytes, .check = c};
    Row bwd{.family = "global_avgpool", .name = "backward", .shape = k.label, .bytes = bytes, .check = c};
#if ENGINE_HAVE_CUDA
    if (g != nullptr) {
      const Tensor x = g->upload(random_floats(nx, 31), {nx}), dy = g->upload(random_floats(ny, 32), {ny});
      Tensor y = g->empty({ny}), dx = g->empty({nx});
      g->time_row(fwd, [&] {
        cuda::global_avgpool_forward(g->stream(), k.n, k.c, k.h, k.w, x.data<float>(), y.data<float>());
      });
      g->time_row(bwd, [&] {
        cuda::global_avgpool_backward(g->stream(), k.n, k.c, k.h, k.w, dy.data<float>(), dx.data<float>());
      });
      continue;
    }
#endif
    r.add(fwd);
    r.add(bwd);
  }
}

}  // namespace

Family global_avgpool_family() { return {"global_avgpool", run}; }

}  // namespace engine::bench
