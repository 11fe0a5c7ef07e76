#include "kernels/cpu_fast/conv2d.h"

#include <memory>
#include <string>
#include <unordered_map>

#include "core/error.h"
#include "kernels/cpu_fast/conv2d_choice.h"
#include "kernels/cpu_fast/conv2d_grouped.h"
#include "kernels/cpu_fast/conv2d_patchify.h"
#include "kernels/cpu_fast/conv2d_plan.h"
#include "kernels/cpu_fast/conv2d_pointwise.h"
#include "kernels/cpu_fast/conv2d_weights_gemm.h"
#include "kernels/cpu_fast/dnnl_runtime.h"

namespace engine::cpu_fast {
namespace {

using dnnl::memory;
using dnnl_rt::Operand;
using Args = std::unordered_map<int, memory>;
using conv_choice::Choice;
using conv_choice::run_choice;
using conv_plan::BackwardData;
using conv_plan::BackwardWeights;
using conv_plan::ConvPlan;
using conv_plan::find_plan;
using conv_plan::Forward;
using conv_plan::plain;
using conv_plan::plan_for;
using conv_plan::prepare_backward_data;
using conv_plan::prepare_backward_weights;

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
  const ConvPlan* found = find_plan(g, bias, bf16, layouts);
  if (found == nullptr) return {};
  const ConvPlan& p = *found;
  const std::string d = direction;
  if (d == "fwd") return chosen_impl(g, bf16, p.fwd);
  if (d == "bwd_weights") return p.weights_gemm ? kWeightsGemm : chosen_impl(g, bf16, p.bwd_weights);
  if (d == "bwd_data") return chosen_impl(g, bf16, p.bwd_data);
  ENGINE_FAIL("conv2d_impl: unknown direction '{}' (fwd, bwd_data, bwd_weights)", d);
}

}  // namespace engine::cpu_fast
