// The fused SGD step over a model's flat buffers (momentum 0.9, weight decay 5e-4, the CIFAR recipe),
// kernels/cuda/sgd.h against kernels/cpu/sgd.h. One launch for the whole model: reads params, grads and the
// momentum buffer, writes params and the buffer: 20 bytes a parameter. Sizes: each zoo model's parameter
// count, and 64 Mi parameters to fill the GPU.

#include "benchmarks/kernels/families.h"
#include "kernels/cpu/sgd.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "kernels/cuda/sgd.h"
#endif

namespace engine::bench {

namespace {

const cpu::SgdOptions kSgd{.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4};

// Two steps (the first initializes the buffer, the second uses it); the parameters and buffer after both.
Check check(GpuBench* g, std::int64_t n) {
  const std::vector<float> p0 = random_floats(n, 8), g0 = random_floats(n, 9);
  std::vector<double> p_ref = to_double(p0), buf_ref(p0.size());
  const std::vector<double> gd = to_double(g0);
  cpu::sgd_step(kSgd, p_ref.data(), gd.data(), buf_ref.data(), n, true);
  cpu::sgd_step(kSgd, p_ref.data(), gd.data(), buf_ref.data(), n, false);
  std::vector<float> p = p0, buf(p0.size());
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    Tensor tp = g->upload(p0, {n}), tbuf = g->poisoned({n});
    const Tensor tg = g->upload(g0, {n});
    cuda::sgd_step(g->stream(), kSgd, tp.data<float>(), tg.data<float>(), tbuf.data<float>(), n, true);
    cuda::sgd_step(g->stream(), kSgd, tp.data<float>(), tg.data<float>(), tbuf.data<float>(), n, false);
    p = g->download(tp);
    buf = g->download(tbuf);
  }
#endif
  if (g == nullptr) {
    cpu::sgd_step(kSgd, p.data(), g0.data(), buf.data(), n, true);
    cpu::sgd_step(kSgd, p.data(), g0.data(), buf.data(), n, false);
  }
  const std::string where = "n=" + std::to_string(n);
  return worst({compare(p, p_ref, 1e-6, where), compare(buf, buf_ref, 1e-6, where)});
}

void run(Report& r, GpuBench* g) {
  const Check c = check(g, g != nullptr ? 1 << 20 : 4096);
  std::vector<FlatCase> cases;
  for (const char* model : {"vgg6", "resnet18", "mnist_cnn"}) {
    const std::int64_t n = zoo_model_cost(model, 1).parameters;
    cases.push_back({dims({n}) + " " + model + " params", n});
  }
  add_fill_case(cases, r, g);
  for (const FlatCase& k : cases) {
    Row row{.family = "sgd",
            .name = "step momentum+wd",
            .shape = k.label,
            .bytes = 20 * static_cast<double>(k.n),
            .check = c};
#if ENGINE_HAVE_CUDA
    if (g != nullptr) {
      Tensor p = g->upload(random_floats(k.n, 10), {k.n}), buf = g->upload(random_floats(k.n, 11), {k.n});
      const Tensor grad = g->upload(random_floats(k.n, 12), {k.n});
      // Tiny lr: thousands of timed steps must not drive the values anywhere unusual.
      cpu::SgdOptions o = kSgd;
      o.lr = 1e-6;
      g->time_row(row, [&] {
        cuda::sgd_step(g->stream(), o, p.data<float>(), grad.data<float>(), buf.data<float>(), k.n, false);
      });
      continue;
    }
#endif
    r.add(row);
  }
}

}  // namespace

Family sgd_family() { return {"sgd", run}; }

}  // namespace engine::bench
