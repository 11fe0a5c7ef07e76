#include "kernels/cpu_fast/conv2d.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "kernels/cpu_fast/conv2d_algo.h"
#include "kernels/cpu_fast/conv2d_choice.h"
#include "kernels/cpu_fast/conv2d_grouped.h"
#include "kernels/cpu_fast/conv2d_patchify.h"
#include "kernels/cpu_fast/conv2d_pointwise.h"
#include "kernels/cpu_fast/conv2d_weights_gemm.h"
#include "kernels/cpu_fast/dnnl_runtime.h"

namespace engine::cpu_fast {
namespace {

using dnnl::memory;
using dnnl_rt::Operand;
using Tag = memory::format_tag;
using Args = std::unordered_map<int, memory>;
using conv_choice::Choice;
using conv_choice::run_choice;
constexpr auto kF32 = memory::data_type::f32;
constexpr auto kBf16 = memory::data_type::bf16;

// One direction of one shape under one algorithm: the primitive, its operands' reorders (each algorithm has
// its own blocked layouts: Winograd's weights are transformed tiles) and oneDNN's name for what runs.
struct Forward {
  dnnl::convolution_forward prim;
  Operand x, w, y;
  std::string impl;
};
struct BackwardData {
  dnnl::convolution_backward_data prim;
  Operand dy, w, dx;
  std::string impl;
};
struct BackwardWeights {
  dnnl::convolution_backward_weights prim;
  Operand x, dy, dw;
  std::string impl;
};

// The primitives of one convolution shape, built on its first call and reused by every later one: the
// forward, and (on the first backward) the backward-weights and backward-data. Activations and weights are
// described as `any`, so oneDNN picks its blocked layouts (nChw8c on AVX2, nChw16c on AVX-512); the
// reorders to and from the engine's plain NCHW/KCRS tensors are primitives built here, once.
// bf16 plans (conv2d_forward_bf16): x, w, y, dy and dx bf16 (widened for a Winograd candidate: any_descs);
// dw and the bias float32. Shapes whose backward-weights oneDNN runs slowly compute dw as an im2col GEMM
// instead (conv2d_weights_gemm.h).
struct ConvPlan {
  memory::desc x_plain, w_plain, y_plain, b_plain, dw_plain;
  memory::dims strides, dilates, pad_l, pad_r;
  memory::desc x_any, w_any, y_any, dw_any;
  std::vector<dnnl::algorithm> algorithms;  // direct, and Winograd where the setting and the shape allow
  Choice<Forward> fwd;
  Choice<BackwardWeights> bwd_weights;
  bool bwd_weights_bias = false;
  bool weights_gemm = false;  // the last backward's dw ran conv2d_weights_gemm.h (its rule)
  Choice<BackwardData> bwd_data;
};

using Key = std::tuple<int, int, int, int, int, int, int, int, int, int, int, int, int, int, bool, bool,
                       ConvAlgo, Layout, Layout>;

// The engine's own kernels (conv2d_pointwise.h, conv2d_weights_gemm.h) read NCHW only.
bool plain(ConvLayouts l) { return l.x == Layout::NCHW && l.y == Layout::NCHW; }

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

using PlanMap = std::map<Key, std::unique_ptr<ConvPlan>>;

// The plans of this thread, by shape and algorithm setting (a model has a handful of shapes; each plan holds
// its blocked buffers).
PlanMap& plans() {
  thread_local PlanMap map;
  return map;
}

ConvPlan& plan_for(const Conv2dShape& g, bool bias, bool bf16, ConvLayouts layouts) {
  std::unique_ptr<ConvPlan>& slot = plans()[key_of(g, bias, bf16, layouts)];
  if (!slot) {
    dnnl_rt::check_room_for_kernels("a convolution's forward");
    slot = std::make_unique<ConvPlan>(make_plan(g, bias, bf16, layouts));
  }
  return *slot;
}

}  // namespace

// The forward's x in its primitive's layout (`x`, allocated on the first forward that converts, reallocated
// when the layout changes) and whether a forward filled it since the last backward.
struct ConvSaved::Impl {
  memory x;
  bool valid = false;
  long reuses = 0;

  // The forward's input: converted into `x` when the primitive converts it, else read in place.
  memory& keep(Operand& op, const void* data) {
    valid = op.converts();
    if (!valid) return op.read(data);
    if (!x || x.get_desc() != op.wanted()) x = memory(op.wanted(), dnnl_rt::cpu_engine());
    return op.read_into(data, x);
  }
  // Backward-weights' input: the kept one where the layouts agree, else converted again.
  memory& reuse(Operand& op, const void* data) {
    if (!(valid && op.converts() && x.get_desc() == op.wanted())) return op.read(data);
    ++reuses;
    return x;
  }
};

ConvSaved::ConvSaved() : impl_(std::make_unique<Impl>()) {}
ConvSaved::~ConvSaved() = default;
long ConvSaved::reuses() const { return impl_->reuses; }

namespace {

// Whether a float32 grouped direction runs the engine's direct loops (kernels/cpu_fast/conv2d_grouped.h)
// instead of what oneDNN offers: its gemm fallback, where it has no jit kernel for the shape. A grouped
// direction has one candidate (Winograd is dense only).
constexpr const char* kGroupedDirect = "engine:grouped_direct";
template <typename Impl>
bool grouped_direct(const Conv2dShape& g, bool bf16, const Choice<Impl>& c) {
  return !bf16 && g.groups > 1 && c.candidates.size() == 1 &&
         c.candidates.front().impl.find("gemm") != std::string::npos;
}

constexpr const char* kWeightsGemm = "engine:im2col_gemm";

template <typename Impl>
std::string chosen_impl(const Conv2dShape& g, bool bf16, const Choice<Impl>& c) {
  if (grouped_direct(g, bf16, c)) return kGroupedDirect;
  return c.chosen < 0 ? std::string() : c.candidates[static_cast<std::size_t>(c.chosen)].impl;
}

void forward(const Conv2dShape& g, bool bf16, const void* x, const void* w, const float* bias, void* y,
             ConvSaved* saved, ConvLayouts layouts) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr, "conv2d_forward: x, w and y must not be null");
  if (!bf16 && pointwise_gemm(g, layouts)) {
    if (saved != nullptr) saved->impl().valid = false;
    conv2d_pointwise_forward(g, static_cast<const float*>(x), static_cast<const float*>(w), bias,
                             static_cast<float*>(y), layouts);
    return;
  }
  if (!bf16 && patchify_gemm(g, layouts)) {
    if (saved != nullptr) saved->impl().valid = false;
    conv2d_patchify_forward(g, static_cast<const float*>(x), static_cast<const float*>(w), bias,
                            static_cast<float*>(y), layouts);
    return;
  }
  dnnl_rt::run("conv2d_forward", [&] {
    ConvPlan& p = plan_for(g, bias != nullptr, bf16, layouts);
    if (grouped_direct(g, bf16, p.fwd)) {
      if (saved != nullptr) saved->impl().valid = false;  // nothing kept: backward converts x itself
      grouped_conv2d_forward(g, static_cast<const float*>(x), static_cast<const float*>(w), bias,
                             static_cast<float*>(y));
      return;
    }
    dnnl::stream& s = dnnl_rt::cpu_stream();
    run_choice(p.fwd, [&](Forward& f) {
      memory& x_read = saved != nullptr ? saved->impl().keep(f.x, x) : f.x.read(x);
      Args args{{DNNL_ARG_SRC, x_read}, {DNNL_ARG_WEIGHTS, f.w.read(w)}, {DNNL_ARG_DST, f.y.write(y)}};
      if (bias != nullptr)
        args.emplace(DNNL_ARG_BIAS, memory(p.b_plain, dnnl_rt::cpu_engine(), const_cast<float*>(bias)));
      f.prim.execute(s, args);
      f.y.finish();
      s.wait();
    });
  });
}

void backward(const Conv2dShape& g, bool bf16, const void* x, const void* w, const void* dy, void* dx,
              float* dw, float* db, ConvSaved* saved, ConvLayouts layouts) {
  g.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "conv2d_backward: x, w, dy and dw must not be null (dx and db may be)");
  if (!bf16 && pointwise_gemm(g, layouts)) {
    conv2d_pointwise_backward(g, static_cast<const float*>(x), static_cast<const float*>(w),
                              static_cast<const float*>(dy), static_cast<float*>(dx), dw, db, layouts);
    return;
  }
  if (!bf16 && patchify_gemm(g, layouts)) {
    conv2d_patchify_backward(g, static_cast<const float*>(x), static_cast<const float*>(w),
                             static_cast<const float*>(dy), static_cast<float*>(dx), dw, db, layouts);
    return;
  }
  dnnl_rt::run("conv2d_backward", [&] {
    // The forward of this shape built the plan; a backward without one (a test, a gradient check) builds it.
    ConvPlan& p = plan_for(g, db != nullptr, bf16, layouts);
    dnnl::stream& s = dnnl_rt::cpu_stream();
    // The GEMM reads bf16 x and dy blocked as well as NCHW; its float32 variant (a benchmark's) NCHW only.
    p.weights_gemm = (bf16 || plain(layouts)) && weights_grad_gemm(g, bf16);
    if (!p.weights_gemm) prepare_backward_weights(p, db != nullptr);
    const memory* dy_read = nullptr;  // dy in backward-weights' layout, for backward-data to reuse
    const Operand* dy_operand = nullptr;
    if (p.weights_gemm && bf16)
      conv2d_weights_gemm(g, static_cast<const bfloat16*>(x), static_cast<const bfloat16*>(dy), dw, db,
                          {layouts.x, layouts.y});
    else if (p.weights_gemm)
      conv2d_weights_gemm(g, static_cast<const float*>(x), static_cast<const float*>(dy), dw, db);
    else if (grouped_direct(g, bf16, p.bwd_weights))
      grouped_conv2d_backward_weights(g, static_cast<const float*>(x), static_cast<const float*>(dy), dw, db);
    else
      run_choice(p.bwd_weights, [&](BackwardWeights& b) {
        memory& dy_blocked = b.dy.read(dy);
        Args args{{DNNL_ARG_SRC, saved != nullptr ? saved->impl().reuse(b.x, x) : b.x.read(x)},
                  {DNNL_ARG_DIFF_DST, dy_blocked},
                  {DNNL_ARG_DIFF_WEIGHTS, b.dw.write(dw)}};
        if (db != nullptr) args.emplace(DNNL_ARG_DIFF_BIAS, memory(p.b_plain, dnnl_rt::cpu_engine(), db));
        b.prim.execute(s, args);
        b.dw.finish();
        s.wait();
        dy_read = &dy_blocked;
        dy_operand = &b.dy;
      });
    if (dx != nullptr) {
      prepare_backward_data(p);
      if (grouped_direct(g, bf16, p.bwd_data)) {
        grouped_conv2d_backward_data(g, static_cast<const float*>(w), static_cast<const float*>(dy),
                                     static_cast<float*>(dx));
        return;
      }
      run_choice(p.bwd_data, [&](BackwardData& d) {
        // Both backward passes mostly read dy in the same blocked layout: the one reorder above serves both.
        const bool same_dy = dy_operand != nullptr && d.dy.wanted() == dy_operand->wanted();
        d.prim.execute(s, {{DNNL_ARG_DIFF_DST, same_dy ? *dy_read : d.dy.read(dy)},
                           {DNNL_ARG_WEIGHTS, d.w.read(w)},
                           {DNNL_ARG_DIFF_SRC, d.dx.write(dx)}});
        d.dx.finish();
        s.wait();
      });
    }
  });
  if (saved != nullptr) saved->impl().valid = false;  // one backward per forward
}

}  // namespace

void conv2d_forward(const Conv2dShape& g, const float* x, const float* w, const float* bias, float* y,
                    ConvSaved* saved, ConvLayouts layouts) {
  forward(g, false, x, w, bias, y, saved, layouts);
}

void conv2d_backward(const Conv2dShape& g, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db, ConvSaved* saved, ConvLayouts layouts) {
  backward(g, false, x, w, dy, dx, dw, db, saved, layouts);
}

bool native_bf16() {
  static const bool native = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  }();
  return native;
}

void conv2d_forward_bf16(const Conv2dShape& g, const bfloat16* x, const bfloat16* w, const float* bias,
                         bfloat16* y, ConvSaved* saved, ConvLayouts layouts) {
  forward(g, true, x, w, bias, y, saved, layouts);
}

void conv2d_backward_bf16(const Conv2dShape& g, const bfloat16* x, const bfloat16* w, const bfloat16* dy,
                          bfloat16* dx, float* dw, float* db, ConvSaved* saved, ConvLayouts layouts) {
  backward(g, true, x, w, dy, dx, dw, db, saved, layouts);
}

std::string conv2d_impl(const Conv2dShape& g, bool bias, const char* direction, bool bf16,
                        ConvLayouts layouts) {
  if (!bf16 && pointwise_gemm(g, layouts)) return "engine:pointwise_gemm";
  if (!bf16 && patchify_gemm(g, layouts)) return "engine:patchify_gemm";
  const auto it = plans().find(key_of(g, bias, bf16, layouts));
  if (it == plans().end()) return {};
  const ConvPlan& p = *it->second;
  const std::string d = direction;
  if (d == "fwd") return chosen_impl(g, bf16, p.fwd);
  if (d == "bwd_weights") return p.weights_gemm ? kWeightsGemm : chosen_impl(g, bf16, p.bwd_weights);
  if (d == "bwd_data") return chosen_impl(g, bf16, p.bwd_data);
  ENGINE_FAIL("conv2d_impl: unknown direction '{}' (fwd, bwd_data, bwd_weights)", d);
}

}  // namespace engine::cpu_fast
