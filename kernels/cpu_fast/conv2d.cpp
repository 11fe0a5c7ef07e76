#include "kernels/cpu_fast/conv2d.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "kernels/cpu_fast/dnnl_runtime.h"

namespace engine::cpu_fast {
namespace {

using dnnl::memory;
using dnnl_rt::Operand;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;
constexpr auto kDirect = dnnl::algorithm::convolution_direct;

// The primitives of one convolution shape, built on its first call and reused by every later one: the
// forward, and (on the first backward) the backward-data and backward-weights, each with its operands'
// reorders. Activations and weights are described as `any`, so oneDNN picks its blocked layouts (nChw8c on
// AVX2); the reorders to and from the engine's plain NCHW/KCRS tensors are primitives built here, once.
struct ConvPlan {
  memory::desc x_plain, w_plain, y_plain, b_plain;
  memory::dims strides, dilates, pad_l, pad_r;
  memory::desc x_any, w_any, y_any;
  bool bias;

  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_forward fwd;
  Operand fwd_x, fwd_w, fwd_y;

  bool backward_ready = false;
  std::optional<dnnl::convolution_backward_data> bwd_data;  // built when a dx is first asked for
  Operand bd_dy, bd_w, bd_dx;
  dnnl::convolution_backward_weights bwd_weights;
  Operand bw_x, bw_dy, bw_dw;
  bool bwd_weights_bias = false;
};

using Key = std::tuple<int, int, int, int, int, int, int, int, int, int, int, int, int, int, bool>;

Key key_of(const Conv2dShape& g, bool bias) {
  return {g.n,        g.c,     g.h,     g.w,      g.k,          g.r,          g.s, g.stride_h,
          g.stride_w, g.pad_h, g.pad_w, g.groups, g.dilation_h, g.dilation_w, bias};
}

ConvPlan make_plan(const Conv2dShape& g, bool bias) {
  ConvPlan p;
  // Grouped: oneDNN's 5-d weights [G, K/G, C/G, R, S] (goihw), the same bytes as the engine's [K, C/G, R, S].
  const memory::dims x{g.n, g.c, g.h, g.w}, y{g.n, g.k, g.p(), g.q()}, b{g.k};
  const memory::dims w = g.groups == 1 ? memory::dims{g.k, g.c, g.r, g.s}
                                       : memory::dims{g.groups, g.k_per_group(), g.c_per_group(), g.r, g.s};
  p.x_plain = memory::desc(x, kF32, Tag::nchw);
  p.w_plain = memory::desc(w, kF32, g.groups == 1 ? Tag::oihw : Tag::goihw);
  p.y_plain = memory::desc(y, kF32, Tag::nchw);
  p.b_plain = memory::desc(b, kF32, Tag::x);
  p.x_any = memory::desc(x, kF32, Tag::any);
  p.w_any = memory::desc(w, kF32, Tag::any);
  p.y_any = memory::desc(y, kF32, Tag::any);
  p.strides = {g.stride_h, g.stride_w};
  p.dilates = {g.dilation_h - 1, g.dilation_w - 1};  // oneDNN counts dilation from 0 (dense)
  p.pad_l = {g.pad_h, g.pad_w};
  p.pad_r = {g.pad_h, g.pad_w};  // oneDNN floors the output size as PyTorch does: symmetric padding works
  p.bias = bias;
  auto& eng = dnnl_rt::cpu_engine();
  const auto desc =
      bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, kDirect, p.x_any, p.w_any,
                                             p.b_plain, p.y_any, p.strides, p.dilates, p.pad_l, p.pad_r)
           : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, kDirect, p.x_any, p.w_any,
                                             p.y_any, p.strides, p.dilates, p.pad_l, p.pad_r);
  p.fwd_pd = dnnl::convolution_forward::primitive_desc(desc, eng);
  p.fwd = dnnl::convolution_forward(p.fwd_pd);
  p.fwd_x = Operand(p.x_plain, p.fwd_pd.src_desc(), true);
  p.fwd_w = Operand(p.w_plain, p.fwd_pd.weights_desc(), true);
  p.fwd_y = Operand(p.y_plain, p.fwd_pd.dst_desc(), false);
  return p;
}

void prepare_backward(ConvPlan& p, bool with_bias_grad) {
  auto& eng = dnnl_rt::cpu_engine();
  if (!p.backward_ready || p.bwd_weights_bias != with_bias_grad) {
    dnnl_rt::check_room_for_kernels("a convolution's backward-weights");
    const auto desc =
        with_bias_grad
            ? dnnl::convolution_backward_weights::desc(kDirect, p.x_any, p.w_any, p.b_plain, p.y_any,
                                                       p.strides, p.dilates, p.pad_l, p.pad_r)
            : dnnl::convolution_backward_weights::desc(kDirect, p.x_any, p.w_any, p.y_any, p.strides,
                                                       p.dilates, p.pad_l, p.pad_r);
    const dnnl::convolution_backward_weights::primitive_desc pd(desc, eng, p.fwd_pd);
    p.bwd_weights = dnnl::convolution_backward_weights(pd);
    p.bw_x = Operand(p.x_plain, pd.src_desc(), true);
    p.bw_dy = Operand(p.y_plain, pd.diff_dst_desc(), true);
    p.bw_dw = Operand(p.w_plain, pd.diff_weights_desc(), false);
    p.bwd_weights_bias = with_bias_grad;
    p.backward_ready = true;
  }
}

void prepare_backward_data(ConvPlan& p) {
  if (p.bwd_data) return;
  dnnl_rt::check_room_for_kernels("a convolution's backward-data");
  const auto desc = dnnl::convolution_backward_data::desc(kDirect, p.x_any, p.w_any, p.y_any, p.strides,
                                                          p.dilates, p.pad_l, p.pad_r);
  const dnnl::convolution_backward_data::primitive_desc pd(desc, dnnl_rt::cpu_engine(), p.fwd_pd);
  p.bwd_data = dnnl::convolution_backward_data(pd);
  p.bd_dy = Operand(p.y_plain, pd.diff_dst_desc(), true);
  p.bd_w = Operand(p.w_plain, pd.weights_desc(), true);
  p.bd_dx = Operand(p.x_plain, pd.diff_src_desc(), false);
}

// The plans of this thread, by shape (a model has a handful of shapes; each plan holds its blocked buffers).
ConvPlan& plan_for(const Conv2dShape& g, bool bias) {
  thread_local std::map<Key, std::unique_ptr<ConvPlan>> plans;
  std::unique_ptr<ConvPlan>& slot = plans[key_of(g, bias)];
  if (!slot) {
    dnnl_rt::check_room_for_kernels("a convolution's forward");
    slot = std::make_unique<ConvPlan>(make_plan(g, bias));
  }
  return *slot;
}

}  // namespace

void conv2d_forward(const Conv2dShape& g, const float* x, const float* w, const float* bias, float* y) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr, "conv2d_forward: x, w and y must not be null");
  dnnl_rt::run("conv2d_forward", [&] {
    ConvPlan& p = plan_for(g, bias != nullptr);
    dnnl::stream& s = dnnl_rt::cpu_stream();
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, p.fwd_x.read(x)},
                                         {DNNL_ARG_WEIGHTS, p.fwd_w.read(w)},
                                         {DNNL_ARG_DST, p.fwd_y.write(y)}};
    memory b;
    if (bias != nullptr) {
      b = memory(p.b_plain, dnnl_rt::cpu_engine(), const_cast<float*>(bias));
      args.emplace(DNNL_ARG_BIAS, b);
    }
    p.fwd.execute(s, args);
    p.fwd_y.finish();
    s.wait();
  });
}

void conv2d_backward(const Conv2dShape& g, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "conv2d_backward: x, w, dy and dw must not be null (dx and db may be)");
  dnnl_rt::run("conv2d_backward", [&] {
    // The forward of this shape built the plan; a backward without one (a test, a gradient check) builds it.
    ConvPlan& p = plan_for(g, db != nullptr);
    dnnl::stream& s = dnnl_rt::cpu_stream();
    prepare_backward(p, db != nullptr);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, p.bw_x.read(x)},
                                         {DNNL_ARG_DIFF_DST, p.bw_dy.read(dy)},
                                         {DNNL_ARG_DIFF_WEIGHTS, p.bw_dw.write(dw)}};
    memory b;
    if (db != nullptr) {
      b = memory(p.b_plain, dnnl_rt::cpu_engine(), db);
      args.emplace(DNNL_ARG_DIFF_BIAS, b);
    }
    p.bwd_weights.execute(s, args);
    p.bw_dw.finish();
    if (dx != nullptr) {
      prepare_backward_data(p);
      // Both backward passes read dy in the same blocked layout (nChw8c): the one reorder above serves both.
      const bool same_dy = p.bd_dy.wanted() == p.bw_dy.wanted();
      p.bwd_data->execute(s, {{DNNL_ARG_DIFF_DST, same_dy ? args.at(DNNL_ARG_DIFF_DST) : p.bd_dy.read(dy)},
                              {DNNL_ARG_WEIGHTS, p.bd_w.read(w)},
                              {DNNL_ARG_DIFF_SRC, p.bd_dx.write(dx)}});
      p.bd_dx.finish();
    }
    s.wait();
  });
}

}  // namespace engine::cpu_fast
