#include "kernels/cpu_fast/conv2d_plan.h"

#include <map>
#include <memory>
#include <tuple>

#include "core/error.h"
#include "kernels/cpu_fast/conv2d_algo.h"

namespace engine::cpu_fast::conv_plan {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;
constexpr auto kBf16 = memory::data_type::bf16;

using Key = std::tuple<int, int, int, int, int, int, int, int, int, int, int, int, int, int, bool, bool,
                       ConvAlgo, Layout, Layout>;

Key key_of(const Conv2dShape& g, bool bias, bool bf16, ConvLayouts l) {
  return {g.n,        g.c,        g.h,         g.w,     g.k,      g.r,          g.s,
          g.stride_h, g.stride_w, g.pad_h,     g.pad_w, g.groups, g.dilation_h, g.dilation_w,
          bias,       bf16,       conv_algo(), l.x,     l.y};
}

// Builds one candidate with `make`; a Winograd candidate oneDNN declines (dnnl_unimplemented) is skipped.
template <typename Impl, typename Make>
void add_candidate(std::vector<Impl>& out, dnnl::algorithm a, Make&& make) {
  if (a == dnnl::algorithm::convolution_direct) {
    out.push_back(make(a));
    return;
  }
  try {
    out.push_back(make(a));
  } catch (const dnnl::error& e) {
    if (e.status != dnnl_unimplemented) throw;
  }
}

// The `any` descriptors of x, w and y a candidate is built with: the plan's type, except that a bf16 plan's
// Winograd candidate is oneDNN's float32 Winograd on the bf16 operands widened (exactly) by its input
// reorders, its bf16 outputs rounded once by its output reorder (conv2d_algo.h: its accuracy).
struct AnyDescs {
  memory::desc x, w, y;
};
AnyDescs any_descs(const ConvPlan& p, dnnl::algorithm alg) {
  if (alg == dnnl::algorithm::convolution_direct) return {p.x_any, p.w_any, p.y_any};
  return {memory::desc(p.x_any.dims(), kF32, Tag::any), memory::desc(p.w_any.dims(), kF32, Tag::any),
          memory::desc(p.y_any.dims(), kF32, Tag::any)};
}

// The forward's descriptor (also the backward directions' hint).
dnnl::convolution_forward::primitive_desc forward_pd(const ConvPlan& p, dnnl::algorithm alg, bool bias) {
  const AnyDescs a = any_descs(p, alg);
  const auto desc =
      bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, a.x, a.w, p.b_plain, a.y,
                                             p.strides, p.dilates, p.pad_l, p.pad_r)
           : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, a.x, a.w, a.y, p.strides,
                                             p.dilates, p.pad_l, p.pad_r);
  return {desc, dnnl_rt::cpu_engine()};
}

// Builds a direction's candidates, one per algorithm the plan allows; when oneDNN declines all of them
// (--cpu-conv-algo winograd on a shape its Winograd does not take), the direct one.
template <typename Impl, typename Make>
void build_candidates(const ConvPlan& p, std::vector<Impl>& out, Make&& make) {
  for (const dnnl::algorithm a : p.algorithms) add_candidate(out, a, make);
  if (out.empty()) out.push_back(make(dnnl::algorithm::convolution_direct));
}

ConvPlan make_plan(const Conv2dShape& g, bool bias, bool bf16, ConvLayouts layouts) {
  ConvPlan p;
  const auto act = bf16 ? kBf16 : kF32;
  // Grouped: oneDNN's 5-d weights [G, K/G, C/G, R, S] (goihw), the same bytes as the engine's [K, C/G, R, S].
  const memory::dims x{g.n, g.c, g.h, g.w}, y{g.n, g.k, g.p(), g.q()}, b{g.k};
  const memory::dims w = g.groups == 1 ? memory::dims{g.k, g.c, g.r, g.s}
                                       : memory::dims{g.groups, g.k_per_group(), g.c_per_group(), g.r, g.s};
  ENGINE_CHECK(g.groups == 1 || (layouts.x == Layout::NCHW && layouts.y == Layout::NCHW),
               "conv2d: a grouped convolution's activations are NCHW (kernels/ops converts blocked ones)");
  p.x_plain = memory::desc(x, act, dnnl_rt::activation_tag(layouts.x));
  p.w_plain = memory::desc(w, act, g.groups == 1 ? Tag::oihw : Tag::goihw);
  p.dw_plain = memory::desc(w, kF32, g.groups == 1 ? Tag::oihw : Tag::goihw);
  p.y_plain = memory::desc(y, act, dnnl_rt::activation_tag(layouts.y));
  p.b_plain = memory::desc(b, kF32, Tag::x);
  p.x_any = memory::desc(x, act, Tag::any);
  p.w_any = memory::desc(w, act, Tag::any);
  p.dw_any = memory::desc(w, kF32, Tag::any);
  p.y_any = memory::desc(y, act, Tag::any);
  p.strides = {g.stride_h, g.stride_w};
  p.dilates = {g.dilation_h - 1, g.dilation_w - 1};  // oneDNN counts dilation from 0 (dense)
  p.pad_l = {g.pad_h, g.pad_w};
  p.pad_r = {g.pad_h, g.pad_w};  // oneDNN floors the output size as PyTorch does: symmetric padding works
  const ConvAlgo setting = conv_algo();  // bf16: oneDNN has no bf16 Winograd; its float32 one widens (above)
  if (setting != ConvAlgo::Winograd || !winograd_shape(g))
    p.algorithms.push_back(dnnl::algorithm::convolution_direct);
  if (setting != ConvAlgo::Direct && winograd_shape(g) && winograd_available())
    p.algorithms.push_back(dnnl::algorithm::convolution_winograd);
  build_candidates(p, p.fwd.candidates, [&](dnnl::algorithm alg) {
    const auto pd = forward_pd(p, alg, bias);
    return Forward{dnnl::convolution_forward(pd), Operand(p.x_plain, pd.src_desc(), true),
                   Operand(p.w_plain, pd.weights_desc(), true), Operand(p.y_plain, pd.dst_desc(), false),
                   pd.impl_info_str()};
  });
  return p;
}

}  // namespace

void prepare_backward_weights(ConvPlan& p, bool with_bias_grad) {
  if (!p.bwd_weights.candidates.empty() && p.bwd_weights_bias == with_bias_grad) return;
  dnnl_rt::check_room_for_kernels("a convolution's backward-weights");
  p.bwd_weights = {};
  build_candidates(p, p.bwd_weights.candidates, [&](dnnl::algorithm alg) {
    const AnyDescs a = any_descs(p, alg);
    const auto desc = with_bias_grad
                          ? dnnl::convolution_backward_weights::desc(alg, a.x, p.dw_any, p.b_plain, a.y,
                                                                     p.strides, p.dilates, p.pad_l, p.pad_r)
                          : dnnl::convolution_backward_weights::desc(alg, a.x, p.dw_any, a.y, p.strides,
                                                                     p.dilates, p.pad_l, p.pad_r);
    const dnnl::convolution_backward_weights::primitive_desc pd(desc, dnnl_rt::cpu_engine(),
                                                                forward_pd(p, alg, with_bias_grad));
    return BackwardWeights{dnnl::convolution_backward_weights(pd), Operand(p.x_plain, pd.src_desc(), true),
                           Operand(p.y_plain, pd.diff_dst_desc(), true),
                           Operand(p.dw_plain, pd.diff_weights_desc(), false), pd.impl_info_str()};
  });
  p.bwd_weights_bias = with_bias_grad;
}

void prepare_backward_data(ConvPlan& p) {
  if (!p.bwd_data.candidates.empty()) return;
  dnnl_rt::check_room_for_kernels("a convolution's backward-data");
  build_candidates(p, p.bwd_data.candidates, [&](dnnl::algorithm alg) {
    const AnyDescs a = any_descs(p, alg);
    const dnnl::convolution_backward_data::desc desc(alg, a.x, a.w, a.y, p.strides, p.dilates, p.pad_l,
                                                     p.pad_r);
    const dnnl::convolution_backward_data::primitive_desc pd(desc, dnnl_rt::cpu_engine(),
                                                             forward_pd(p, alg, false));
    return BackwardData{dnnl::convolution_backward_data(pd), Operand(p.y_plain, pd.diff_dst_desc(), true),
                        Operand(p.w_plain, pd.weights_desc(), true),
                        Operand(p.x_plain, pd.diff_src_desc(), false), pd.impl_info_str()};
  });
}

namespace {

using PlanMap = std::map<Key, std::unique_ptr<ConvPlan>>;

// The plans of this thread, by shape and algorithm setting (a model has a handful of shapes; each plan holds
// its blocked buffers).
PlanMap& plans() {
  thread_local PlanMap map;
  return map;
}

}  // namespace

ConvPlan& plan_for(const Conv2dShape& g, bool bias, bool bf16, ConvLayouts layouts) {
  std::unique_ptr<ConvPlan>& slot = plans()[key_of(g, bias, bf16, layouts)];
  if (!slot) {
    dnnl_rt::check_room_for_kernels("a convolution's forward");
    slot = std::make_unique<ConvPlan>(make_plan(g, bias, bf16, layouts));
  }
  return *slot;
}

const ConvPlan* find_plan(const Conv2dShape& g, bool bias, bool bf16, ConvLayouts layouts) {
  const auto it = plans().find(key_of(g, bias, bf16, layouts));
  return it == plans().end() ? nullptr : it->second.get();
}

}  // namespace engine::cpu_fast::conv_plan
