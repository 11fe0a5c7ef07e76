// 2x2 max-pool forward (writes y and the int32 argmax) and backward (a gather into dx),
// kernels/cuda/maxpool2d.h against kernels/cpu/maxpool2d.h. Memory-bound: forward reads x and writes
// y + argmax; backward reads dy + argmax and writes dx.

#include "benchmarks/kernels/families.h"
#include "kernels/cpu/maxpool2d.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "kernels/cuda/maxpool2d.h"
#endif

namespace engine::bench {

namespace {

Check check_max(GpuBench* g, const Pool2dShape& s) {
  const std::int64_t nx = s.input_size(), ny = s.output_size();
  const std::vector<float> x = random_floats(nx, 25), dy = random_floats(ny, 26);
  const std::vector<double> xd = to_double(x), dyd = to_double(dy);
  std::vector<double> y_ref(static_cast<std::size_t>(ny)), dx_ref(static_cast<std::size_t>(nx));
  std::vector<std::int32_t> arg_ref(static_cast<std::size_t>(ny));
  cpu::maxpool2d_forward(s, xd.data(), y_ref.data(), arg_ref.data());
  cpu::maxpool2d_backward(s, dyd.data(), arg_ref.data(), dx_ref.data());
  std::vector<float> y(y_ref.size()), dx(dx_ref.size());
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    const Tensor tx = g->upload(x, {nx}), tdy = g->upload(dy, {ny});
    Tensor ty = g->poisoned({ny}), targ = g->empty({ny}, DType::I32), tdx = g->poisoned({nx});
    cuda::maxpool2d_forward(g->stream(), s, tx.data<float>(), ty.data<float>(), targ.data<std::int32_t>());
    cuda::maxpool2d_backward(g->stream(), s, tdy.data<float>(), targ.data<std::int32_t>(), tdx.data<float>());
    y = g->download(ty);
    dx = g->download(tdx);  // routed by the GPU's own argmax: wrong indices show here
  }
#endif
  if (g == nullptr) {
    std::vector<std::int32_t> arg(arg_ref.size());
    cpu::maxpool2d_forward(s, x.data(), y.data(), arg.data());
    cpu::maxpool2d_backward(s, dy.data(), arg.data(), dx.data());
  }
  const std::string where = dims({s.n, s.c, s.h, s.w});
  return worst({compare(y, y_ref, 0.0, where), compare(dx, dx_ref, 0.0, where)});
}

Pool2dShape pool_shape(const Shape& in, int kernel, int stride) {
  return {.n = static_cast<int>(in[0]),
          .c = static_cast<int>(in[1]),
          .h = static_cast<int>(in[2]),
          .w = static_cast<int>(in[3]),
          .kernel_h = kernel,
          .kernel_w = kernel,
          .stride_h = stride,
          .stride_w = stride,
          .pad_h = 0,
          .pad_w = 0};
}

void run(Report& r, GpuBench* g) {
  struct Case {
    std::string label;
    Pool2dShape s;
  };
  std::vector<Case> cases;
  for (const ZooLayer& z : zoo_layers("MaxPool2d"))
    cases.push_back({z.label(), pool_shape(z.layer.in, z.layer.kernel, z.layer.stride)});
  if (g != nullptr && r.options().fill_size)
    cases.push_back({"[512, 64, 64, 64] fill", pool_shape({512, 64, 64, 64}, 2, 2)});
  for (const Case& k : cases) {
    Pool2dShape small = k.s;
    small.n = 2;
    const Check c = check_max(g, small);
    const double nx = static_cast<double>(k.s.input_size()), ny = static_cast<double>(k.s.output_size());
    Row fwd{.family = "maxpool2d", .name = "forward", .shape = k.label, .bytes = 4 * nx + 8 * ny, .check = c};
    Row bwd{
        .family = "maxpool2d", .name = "backward", .shape = k.label, .bytes = 8 * ny + 4 * nx, .check = c};
#if ENGINE_HAVE_CUDA
    if (g != nullptr) {
      const Tensor x = g->upload(random_floats(k.s.input_size(), 29), {k.s.input_size()});
      const Tensor dy = g->upload(random_floats(k.s.output_size(), 30), {k.s.output_size()});
      Tensor y = g->empty({k.s.output_size()}), arg = g->empty({k.s.output_size()}, DType::I32);
      Tensor dx = g->empty({k.s.input_size()});
      g->time_row(fwd, [&] {
        cuda::maxpool2d_forward(g->stream(), k.s, x.data<float>(), y.data<float>(), arg.data<std::int32_t>());
      });
      g->time_row(bwd, [&] {
        cuda::maxpool2d_backward(g->stream(), k.s, dy.data<float>(), arg.data<std::int32_t>(),
                                 dx.data<float>());
      });
      continue;
    }
#endif
    r.add(fwd);
    r.add(bwd);
  }
}

}  // namespace

Family maxpool2d_family() { return {"maxpool2d", run}; }

}  // namespace engine::bench
