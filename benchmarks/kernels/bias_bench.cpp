// Bias add and bias gradient, kernels/cuda/bias.h: per channel of an NCHW conv output (vgg6's and mnist_cnn's
// convolutions have biases) and per column of a linear output. The reference is the defining loop in double
// (kernels/cpu has no separate bias op: it is folded into cpu::conv2d_* / cpu::linear_*).
// Add: reads y and b, writes y (8 bytes an element); grad: reads dy, writes db (4 bytes an element).

#include "benchmarks/kernels/families.h"

#if ENGINE_HAVE_CUDA
#include "benchmarks/kernels/gpu_harness.h"
#include "kernels/cuda/bias.h"
#endif

namespace engine::bench {

namespace {

// [n, c, hw] (hw = 1: the rows x cols layout of a linear layer, c = cols).
struct BiasShape {
  int n, c, hw;
  std::int64_t size() const { return static_cast<std::int64_t>(n) * c * hw; }
};

Check check(GpuBench* g, BiasShape s, bool nchw) {
  (void)nchw;  // the CPU loops serve both layouts (hw = 1 for rows)
  const std::vector<float> y0 = random_floats(s.size(), 13), b = random_floats(s.c, 14);
  std::vector<double> y_ref = to_double(y0), db_ref(static_cast<std::size_t>(s.c), 0.0);
  for (std::int64_t i = 0; i < s.size(); ++i) {
    const auto ch = static_cast<std::size_t>((i / s.hw) % s.c);
    y_ref[static_cast<std::size_t>(i)] += static_cast<double>(b[ch]);
    db_ref[ch] += static_cast<double>(y0[static_cast<std::size_t>(i)]);  // db of dy = y0
  }
  std::vector<float> y = y0, db(static_cast<std::size_t>(s.c));
#if ENGINE_HAVE_CUDA
  if (g != nullptr) {
    Tensor ty = g->upload(y0, {s.size()}), tdb = g->poisoned({s.c});
    const Tensor tdy = g->upload(y0, {s.size()}), tb = g->upload(b, {s.c});
    if (nchw) {
      cuda::bias_add_nchw(g->stream(), ty.data<float>(), tb.data<float>(), s.n, s.c, s.hw);
      cuda::bias_grad_nchw(g->stream(), tdy.data<float>(), tdb.data<float>(), s.n, s.c, s.hw);
    } else {
      cuda::bias_add_rows(g->stream(), ty.data<float>(), tb.data<float>(), s.n, s.c);
      cuda::bias_grad_rows(g->stream(), tdy.data<float>(), tdb.data<float>(), s.n, s.c);
    }
    y = g->download(ty);
    db = g->download(tdb);
  }
#endif
  if (g == nullptr) {  // the same loops in float, each sum kept in double as the kernels do
    std::vector<double> acc(static_cast<std::size_t>(s.c), 0.0);
    for (std::int64_t i = 0; i < s.size(); ++i) {
      const auto ch = static_cast<std::size_t>((i / s.hw) % s.c);
      y[static_cast<std::size_t>(i)] += b[ch];
      acc[ch] += static_cast<double>(y0[static_cast<std::size_t>(i)]);
    }
    for (std::size_t k = 0; k < acc.size(); ++k) db[k] = static_cast<float>(acc[k]);
  }
  const std::string where = dims({s.n, s.c, s.hw});
  return worst({compare(y, y_ref, 1e-6, where), compare(db, db_ref, 1e-6, where)});
}

void run(Report& r, GpuBench* g) {
  struct Case {
    std::string label;
    BiasShape s;
    bool nchw;
  };
  std::vector<Case> cases;
  for (const ZooLayer& z : zoo_layers("Conv2d")) {
    if (!z.layer.bias) continue;
    const Shape& o = z.layer.out;
    cases.push_back({shape_str(o) + " " + z.model + " " + z.layer.path,
                     {static_cast<int>(o[0]), static_cast<int>(o[1]), static_cast<int>(o[2] * o[3])},
                     true});
  }
  for (const ZooLayer& z : zoo_layers("Linear")) {
    const Shape& o = z.layer.out;
    cases.push_back({shape_str(o) + " " + z.model + " " + z.layer.path,
                     {static_cast<int>(o[0]), static_cast<int>(o[1]), 1},
                     false});
  }
  if (g != nullptr && r.options().fill_size)
    cases.push_back({"[256, 64, 64, 64] fill", {256, 64, 4096}, true});
  for (const Case& k : cases) {
    // Validated at a small batch of the same geometry (2 rows / images), every case.
    const Check c = check(g, {2, k.s.c, k.s.hw}, k.nchw);
    const double n = static_cast<double>(k.s.size());
    const std::string layout = k.nchw ? "nchw" : "rows";
    Row add{.family = "bias", .name = "add " + layout, .shape = k.label, .bytes = 8 * n, .check = c};
    Row grad{.family = "bias", .name = "grad " + layout, .shape = k.label, .bytes = 4 * n, .check = c};
#if ENGINE_HAVE_CUDA
    if (g != nullptr) {
      Tensor y = g->upload(random_floats(k.s.size(), 15), {k.s.size()}), db = g->empty({k.s.c});
      const Tensor b = g->upload(random_floats(k.s.c, 16), {k.s.c});
      if (k.nchw) {
        g->time_row(add, [&] {
          cuda::bias_add_nchw(g->stream(), y.data<float>(), b.data<float>(), k.s.n, k.s.c, k.s.hw);
        });
        g->time_row(grad, [&] {
          cuda::bias_grad_nchw(g->stream(), y.data<float>(), db.data<float>(), k.s.n, k.s.c, k.s.hw);
        });
      } else {
        g->time_row(
            add, [&] { cuda::bias_add_rows(g->stream(), y.data<float>(), b.data<float>(), k.s.n, k.s.c); });
        g->time_row(grad, [&] {
          cuda::bias_grad_rows(g->stream(), y.data<float>(), db.data<float>(), k.s.n, k.s.c);
        });
      }
      continue;
    }
#endif
    r.add(add);
    r.add(grad);
  }
}

}  // namespace

Family bias_family() { return {"bias", run}; }

}  // namespace engine::bench
