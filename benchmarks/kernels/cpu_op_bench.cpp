// cpu_op_bench: the fast CPU kernels of the zoo's ops (kernels/cpu_fast) timed at the shapes the zoo models
// run at (batch 64, 32x32 images: convnext_tiny, efficientnet_b0, mobilenet_v3_large, regnet_y_400mf,
// densenet121), forward and backward, one row at a time, so that benchmarks/cpu_op_peer.sh can interleave
// each row with PyTorch's same op on the same shape (benchmarks/pytorch/op_peer.py has the same rows by
// name). Correctness is the tests' (each kernel against the float64 reference); this only times.
//
//   cpu_op_bench --list                  the rows' names and shapes
//   cpu_op_bench --row dwconv7_s1        one row: one JSON line {row, fwd_ms, bwd_ms, isa} (medians)
//   cpu_op_bench --smoke                 every row once, untimed (ctest label cpu: the rows' buffers and
//   calls)
// Threads: OMP_NUM_THREADS.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kernels/activation_kind.h"
#include "kernels/broadcast.h"
#include "kernels/cpu_fast/activation.h"
#include "kernels/cpu_fast/binary.h"
#include "kernels/cpu_fast/channel_layernorm.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/copy_rows.h"
#include "kernels/cpu_fast/gelu.h"
#include "kernels/cpu_fast/global_avgpool.h"
#include "kernels/cpu_fast/host_probe.h"
#include "kernels/cpu_fast/softmax.h"

namespace {

using namespace engine;
using Buf = std::vector<float>;

Buf filled(std::size_t n, float base) {
  Buf v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = base + 0.001f * static_cast<float>(i % 1997) - 1.0f;
  return v;
}

struct Row {
  std::string name, shape;
  std::function<void()> fwd, bwd;
};

Conv2dShape conv(int c, int hw, int r, int groups) {
  Conv2dShape g;
  g.n = 64;
  g.c = g.k = c;
  g.h = g.w = hw;
  g.r = g.s = r;
  g.pad_h = g.pad_w = r / 2;
  g.groups = groups;
  return g;
}

Row conv_row(const std::string& name, const std::string& model, const Conv2dShape& g) {
  auto x = std::make_shared<Buf>(filled(g.x_size(), 0.1f)),
       w = std::make_shared<Buf>(filled(g.w_size(), 0.2f));
  auto b = std::make_shared<Buf>(filled(static_cast<std::size_t>(g.k), 0.3f));
  auto y = std::make_shared<Buf>(g.y_size()), dy = std::make_shared<Buf>(filled(g.y_size(), 0.4f));
  auto dx = std::make_shared<Buf>(g.x_size()), dw = std::make_shared<Buf>(g.w_size()),
       db = std::make_shared<Buf>(static_cast<std::size_t>(g.k));
  return {name,
          "[64," + std::to_string(g.c) + "," + std::to_string(g.h) + "," + std::to_string(g.w) + "] k" +
              std::to_string(g.r) + " g" + std::to_string(g.groups) + " " + model,
          [=] { cpu_fast::conv2d_forward(g, x->data(), w->data(), b->data(), y->data()); },
          [=] {
            cpu_fast::conv2d_backward(g, x->data(), w->data(), dy->data(), dx->data(), dw->data(),
                                      db->data());
          }};
}

// A pointwise (1x1) convolution: convnext_tiny's ChannelLinear, regnet's 1x1 layers.
Conv2dShape pointwise(int c, int hw, int k) {
  Conv2dShape g = conv(c, hw, 1, 1);
  g.k = k;
  return g;
}

Row activation_row(const std::string& name, ActivationParams p, std::int64_t n, const std::string& shape) {
  auto x = std::make_shared<Buf>(filled(static_cast<std::size_t>(n), 0.5f)),
       y = std::make_shared<Buf>(x->size());
  auto dy = std::make_shared<Buf>(filled(x->size(), 0.6f)), dx = std::make_shared<Buf>(x->size());
  const bool from_y = activation_backward_reads_output(p.kind);
  return {
      name, shape, [=] { cpu_fast::activation_forward(p, x->data(), y->data(), n); },
      [=] { cpu_fast::activation_backward(p, from_y ? y->data() : x->data(), dy->data(), dx->data(), n); }};
}

// squeeze-excite's Mul (and the same broadcast as an Add): y[n, c, h, w] = a[n, c, h, w] op b[n, c]; the
// gradients: a's elementwise, b's summed over h, w.
Row broadcast_row(const std::string& name, BinaryOp op) {
  const std::int64_t nc = 64LL * 144, hw = 64;
  BroadcastAxes all;
  all.rank = 2;
  all.size[0] = nc, all.size[1] = hw;
  all.out[0] = hw, all.out[1] = 1;
  all.a[0] = hw, all.a[1] = 1;
  all.b[0] = 1, all.b[1] = 0;
  all.numel = nc * hw;
  BroadcastGrad da{all, {}, 0}, dbg;
  dbg.operand = 1;
  dbg.kept.rank = dbg.reduced.rank = 1;
  dbg.kept.size[0] = nc, dbg.kept.out[0] = hw, dbg.kept.a[0] = hw, dbg.kept.b[0] = 1, dbg.kept.numel = nc;
  dbg.reduced.size[0] = hw, dbg.reduced.out[0] = 1, dbg.reduced.a[0] = 1, dbg.reduced.b[0] = 0;
  dbg.reduced.numel = hw;
  auto a = std::make_shared<Buf>(filled(static_cast<std::size_t>(nc * hw), 0.5f));
  auto b = std::make_shared<Buf>(filled(static_cast<std::size_t>(nc), 0.7f));
  auto y = std::make_shared<Buf>(a->size()), dy = std::make_shared<Buf>(filled(a->size(), 0.6f));
  auto dA = std::make_shared<Buf>(a->size()), dB = std::make_shared<Buf>(b->size());
  return {name,
          op == BinaryOp::Mul ? "[64,144,8,8] x [64,144,1,1] squeeze-excite" : "[64,144,8,8] + [64,144,1,1]",
          [=] { cpu_fast::binary_forward(op, all, a->data(), b->data(), y->data()); },
          [=] {
            cpu_fast::binary_backward(op, da, dy->data(), a->data(), b->data(), dA->data());
            cpu_fast::binary_backward(op, dbg, dy->data(), a->data(), b->data(), dB->data());
          }};
}

std::vector<Row> rows() {
  std::vector<Row> r;
  r.push_back(conv_row("dwconv7_s1", "convnext_tiny stage 1", conv(96, 8, 7, 96)));
  r.push_back(conv_row("dwconv7_s3", "convnext_tiny stage 3", conv(384, 2, 7, 384)));
  r.push_back(conv_row("dwconv7_s4", "convnext_tiny stage 4", conv(768, 1, 7, 768)));
  r.push_back(conv_row("dwconv5_2x2", "efficientnet_b0", conv(672, 2, 5, 672)));
  r.push_back(conv_row("dwconv3_16x16", "efficientnet_b0", conv(32, 16, 3, 32)));
  r.push_back(conv_row("gconv3_2x2", "regnet_y_400mf", conv(208, 2, 3, 26)));
  r.push_back(conv_row("gconv3_4x4", "regnet_y_400mf", conv(104, 4, 3, 13)));
  r.push_back(conv_row("gconv3_8x8", "regnet_y_400mf", conv(48, 8, 3, 6)));
  r.push_back(conv_row("pw_s1", "convnext_tiny stage 1 ChannelLinear 96->384", pointwise(96, 8, 384)));
  r.push_back(conv_row("pw_s2", "convnext_tiny stage 2 ChannelLinear 192->768", pointwise(192, 4, 768)));
  r.push_back(conv_row("pw_s3", "convnext_tiny stage 3 ChannelLinear 384->1536", pointwise(384, 2, 1536)));
  r.push_back(conv_row("pw_s4", "convnext_tiny stage 4 ChannelLinear 768->3072", pointwise(768, 1, 3072)));
  r.push_back(conv_row("pw_regnet", "regnet_x_400mf 1x1 400->400 at 1x1", pointwise(400, 1, 400)));
  r.push_back(conv_row("pw_regnet4", "regnet_x_400mf 1x1 64->64 at 4x4", pointwise(64, 4, 64)));
  r.push_back(conv_row("pw_r50", "resnet50 1x1 256->64 at 8x8", pointwise(256, 8, 64)));
  const std::int64_t act = 64LL * 144 * 8 * 8;
  const std::string act_shape = "[64,144,8,8]";
  {
    const std::int64_t n = 64LL * 384 * 8 * 8;
    auto x = std::make_shared<Buf>(filled(static_cast<std::size_t>(n), 0.5f)),
         y = std::make_shared<Buf>(x->size());
    auto dy = std::make_shared<Buf>(filled(x->size(), 0.6f)), dx = std::make_shared<Buf>(x->size());
    r.push_back({"gelu", "[64,384,8,8] convnext_tiny stage 1",
                 [=] { cpu_fast::gelu_forward(x->data(), y->data(), n); },
                 [=] { cpu_fast::gelu_backward(x->data(), dy->data(), dx->data(), n); }});
  }
  r.push_back(activation_row("sigmoid", {ActivationKind::Sigmoid}, act, act_shape));
  r.push_back(activation_row("silu", {ActivationKind::SiLU}, act, act_shape));
  r.push_back(activation_row("hardswish", {ActivationKind::HardSwish}, act, act_shape));
  r.push_back(activation_row("hardsigmoid", {ActivationKind::HardSigmoid, 1.0f / 6, 0.5f}, act, act_shape));
  r.push_back(activation_row("clip", {ActivationKind::Clip, 0.0f, 6.0f}, act, act_shape));
  r.push_back(activation_row("tanh", {ActivationKind::Tanh}, act, act_shape));
  r.push_back(activation_row("leakyrelu", {ActivationKind::LeakyRelu, 0.01f}, act, act_shape));
  r.push_back(broadcast_row("mul_broadcast", BinaryOp::Mul));
  r.push_back(broadcast_row("add_broadcast", BinaryOp::Add));
  {
    auto x = std::make_shared<Buf>(filled(static_cast<std::size_t>(act), 0.5f)),
         y = std::make_shared<Buf>(64 * 144);
    auto dy = std::make_shared<Buf>(filled(64 * 144, 0.6f)), dx = std::make_shared<Buf>(x->size());
    r.push_back({"global_avgpool", act_shape,
                 [=] { cpu_fast::global_avgpool_forward(64, 144, 8, 8, x->data(), y->data()); },
                 [=] { cpu_fast::global_avgpool_backward(64, 144, 8, 8, dy->data(), dx->data()); }});
  }
  {
    const ChannelAffineShape s{64, 96, 64};
    auto x = std::make_shared<Buf>(filled(static_cast<std::size_t>(s.numel()), 0.5f)),
         y = std::make_shared<Buf>(x->size());
    auto g = std::make_shared<Buf>(filled(96, 1.0f)), b = std::make_shared<Buf>(filled(96, 0.2f));
    auto dy = std::make_shared<Buf>(filled(x->size(), 0.6f)), dx = std::make_shared<Buf>(x->size());
    auto dg = std::make_shared<Buf>(96), db = std::make_shared<Buf>(96);
    r.push_back(
        {"channel_layernorm", "[64,96,8,8] convnext_tiny stage 1",
         [=] { cpu_fast::channel_layernorm_forward(s, 1e-6, x->data(), g->data(), b->data(), y->data()); },
         [=] {
           cpu_fast::channel_layernorm_backward(s, 1e-6, x->data(), g->data(), dy->data(), dx->data(),
                                                dg->data(), db->data());
         }});
  }
  {
    auto x = std::make_shared<Buf>(filled(64 * 1000, 0.5f)), y = std::make_shared<Buf>(x->size());
    auto dy = std::make_shared<Buf>(filled(x->size(), 0.6f)), dx = std::make_shared<Buf>(x->size());
    r.push_back({"softmax", "[64,1000]", [=] { cpu_fast::softmax_forward(x->data(), y->data(), 64, 1000); },
                 [=] { cpu_fast::softmax_backward(y->data(), dy->data(), dx->data(), 64, 1000); }});
  }
  {  // densenet121's Concat of [64, 128, 8, 8] and [64, 32, 8, 8]; backward: the two slices back out
    const std::int64_t plane = 64, c0 = 128, c1 = 32;
    auto a = std::make_shared<Buf>(filled(static_cast<std::size_t>(64 * c0 * plane), 0.5f));
    auto b = std::make_shared<Buf>(filled(static_cast<std::size_t>(64 * c1 * plane), 0.6f));
    auto y = std::make_shared<Buf>(a->size() + b->size());
    const RowCopy ra{64, c0 * plane, c0 * plane, 0, (c0 + c1) * plane, 0},
        rb{64, c1 * plane, c1 * plane, 0, (c0 + c1) * plane, c0 * plane};
    const RowCopy ba{64, c0 * plane, (c0 + c1) * plane, 0, c0 * plane, 0},
        bb{64, c1 * plane, (c0 + c1) * plane, c0 * plane, c1 * plane, 0};
    r.push_back({"concat", "[64,128,8,8] + [64,32,8,8] densenet121",
                 [=] {
                   cpu_fast::copy_rows(ra, a->data(), y->data());
                   cpu_fast::copy_rows(rb, b->data(), y->data());
                 },
                 [=] {
                   cpu_fast::copy_rows(ba, y->data(), a->data());
                   cpu_fast::copy_rows(bb, y->data(), b->data());
                 }});
  }
  {  // shufflenet_v2_x1_0's Split of [64, 116, 4, 4] into two halves (backward: the halves back in), and its
     // channel shuffle of the concatenated halves (2 groups; backward: the inverse shuffle, 58 groups)
    const std::int64_t plane = 16, c = 116, h = c / 2;
    auto x = std::make_shared<Buf>(filled(static_cast<std::size_t>(64 * c * plane), 0.5f));
    auto y0 = std::make_shared<Buf>(x->size() / 2), y1 = std::make_shared<Buf>(x->size() / 2);
    auto dx = std::make_shared<Buf>(x->size());
    const RowCopy f0{64, h * plane, c * plane, 0, h * plane, 0},
        f1{64, h * plane, c * plane, h * plane, h * plane, 0};
    const RowCopy b0{64, h * plane, h * plane, 0, c * plane, 0},
        b1{64, h * plane, h * plane, 0, c * plane, h * plane};
    r.push_back({"split", "[64,116,4,4] -> 2 x [64,58,4,4] shufflenet_v2_x1_0",
                 [=] {
                   cpu_fast::copy_rows(f0, x->data(), y0->data());
                   cpu_fast::copy_rows(f1, x->data(), y1->data());
                 },
                 [=] {
                   cpu_fast::copy_rows(b0, y0->data(), dx->data());
                   cpu_fast::copy_rows(b1, y1->data(), dx->data());
                 }});
    r.push_back({"channel_shuffle", "[64,116,4,4] g2 shufflenet_v2_x1_0",
                 [=] { cpu_fast::channel_shuffle(64, c, plane, 2, x->data(), dx->data()); },
                 [=] { cpu_fast::channel_shuffle(64, c, plane, h, dx->data(), x->data()); }});
  }
  return r;
}

double median_ms(const std::function<void()>& f, int warmup, int repeats) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The fast CPU kernels of the zoo's ops, timed at the zoo's shapes (one row a call)"};
  bool list = false, smoke = false;
  std::string row;
  int warmup = 3, repeats = 21;
  app.add_flag("--list", list, "print the rows");
  app.add_flag("--smoke", smoke, "run every row once, untimed");
  app.add_option("--row", row, "time this row");
  app.add_option("--warmup", warmup, "untimed runs")->check(CLI::NonNegativeNumber);
  app.add_option("--repeats", repeats, "timed runs (the median is reported)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  const std::vector<Row> all = rows();
  if (list) {
    for (const Row& r : all) std::printf("%s\t%s\n", r.name.c_str(), r.shape.c_str());
    return 0;
  }
  if (smoke) {
    for (const Row& r : all) {
      r.fwd();
      r.bwd();
      std::printf("%s: ran\n", r.name.c_str());
    }
    return 0;
  }
  const auto it = std::find_if(all.begin(), all.end(), [&](const Row& r) { return r.name == row; });
  if (it == all.end()) {
    std::fprintf(stderr, "cpu_op_bench: --row '%s': not a row (cpu_op_bench --list)\n", row.c_str());
    return 2;
  }
  it->fwd();  // the first call builds oneDNN's primitives
  it->bwd();
  const nlohmann::json j = {{"row", it->name},
                            {"shape", it->shape},
                            {"fwd_ms", median_ms(it->fwd, warmup, repeats)},
                            {"bwd_ms", median_ms(it->bwd, warmup, repeats)},
                            {"isa", cpu_fast::onednn_isa()}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
