// Conv2d through cuDNN's legacy convolution API (cudnnConvolutionForward / BackwardData / BackwardFilter):
// per-shape plans cached in the CudaHandles, one algorithm per direction chosen on first use, workspaces
// from the caching allocator. See conv2d_cudnn.h. float32 and bf16 data share every step; the data type is
// part of the plan's key, and decides which math types an algorithm may use (acceptable, math_type_for).
#include "kernels/cuda/conv2d_cudnn.h"

#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/cuda/bias.h"
#include "kernels/cuda/cast.h"
#include "kernels/cuda/conv2d_cudnn_algos.h"
#include "kernels/cuda/conv2d_cudnn_plan.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/scratch.h"
#include "kernels/cuda/transpose.h"

namespace engine::cuda {
namespace {

using detail::CudnnConvPlan;

bool is_bf16(const CudnnConvPlan& plan) { return plan.data_type == CUDNN_DATA_BFLOAT16; }

// The math type the algorithm searches run with (handles.h: tensor-op math for bf16).
cudnnMathType_t search_math_type(const CudaHandles& h, const CudnnConvPlan& plan) {
  return cudnn_search_math_type(plan.data_type, h.allow_tf32());
}

CudnnConvPlan& plan_for(CudaHandles& handles, const Conv2dShape& s, cudnnDataType_t type, Layout layout) {
  auto& plans = handles.conv_plans().plans;
  const detail::ConvKey key = detail::conv_key(s, type, layout);
  auto it = plans.find(key);
  if (it != plans.end()) return *it->second;

  auto plan = std::make_unique<CudnnConvPlan>();
  plan->data_type = type;
  plan->layout = layout;
  plan->x.set(layout, s.n, s.c, s.h, s.w, type);
  plan->w.set(layout, s.k, s.c_per_group(), s.r, s.s, type);  // [K, C/G, R, S]: cuDNN's grouped filter
  // The convolution descriptor's type is the compute type: fp32 for both (cuDNN's PSEUDO_BFLOAT16_CONFIG:
  // bf16 x, w and y with fp32 accumulation, compute capability 8.0 and later).
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(plan->conv.get(), s.pad_h, s.pad_w, s.stride_h, s.stride_w,
                                              s.dilation_h, s.dilation_w, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
  CUDNN_CHECK(cudnnSetConvolutionGroupCount(plan->conv.get(), s.groups));
  CUDNN_CHECK(cudnnSetConvolutionMathType(plan->conv.get(), search_math_type(handles, *plan)));
  int n = 0, k = 0, p = 0, q = 0;
  CUDNN_CHECK(
      cudnnGetConvolution2dForwardOutputDim(plan->conv.get(), plan->x.get(), plan->w.get(), &n, &k, &p, &q));
  ENGINE_CHECK(n == s.n && k == s.k && p == s.p() && q == s.q(),
               "conv2d_cudnn: cuDNN's output [{}, {}, {}, {}] differs from the shape's [{}, {}, {}, {}]", n,
               k, p, q, s.n, s.k, s.p(), s.q());
  plan->y.set(layout, n, k, p, q, type);
  return *plans.emplace(key, std::move(plan)).first->second;
}

// Whether cuDNN's candidate `perf` may be used under the handles' options, for data of the plan's type.
template <typename Perf>
bool acceptable(const Perf& perf, const CudaHandlesOptions& o, bool must_be_deterministic, bool bf16) {
  if (perf.status != CUDNN_STATUS_SUCCESS) return false;
  if (perf.memory > o.max_conv_workspace_bytes) return false;
  if (must_be_deterministic && o.deterministic && perf.determinism != CUDNN_DETERMINISTIC) return false;
  // bf16 data: tensor-op math is the point (exact products, fp32 accumulation); conversion math (operands
  // converted to another reduced type) is not autocast's arithmetic.
  if (bf16) return perf.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  // fp32 means fp32: a candidate that needs tensor-op math (TF32) is skipped unless TF32 is allowed.
  if (!o.allow_tf32 &&
      (perf.mathType == CUDNN_TENSOR_OP_MATH || perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) {
    return false;
  }
  return true;
}

// What cuDNN said about each candidate (algorithm, status, math type, determinism, workspace), for the
// error when none is usable: the reason is then in the message, not behind another run.
template <typename Perf>
std::string describe_candidates(const std::vector<Perf>& perfs, int returned) {
  std::string out;
  for (int i = 0; i < returned; ++i) {
    const Perf& p = perfs[static_cast<std::size_t>(i)];
    out += fmt::format(
        "\n  algo {} ({}): {}, math {}, {}, {} bytes", static_cast<int>(p.algo),
        detail::algorithm_name(p.algo), cudnnGetErrorString(p.status), static_cast<int>(p.mathType),
        p.determinism == CUDNN_DETERMINISTIC ? "deterministic" : "non-deterministic", p.memory);
  }
  return out;
}

template <typename Perf>
Perf pick(const std::vector<Perf>& perfs, int returned, const CudaHandlesOptions& o,
          bool must_be_deterministic, const char* direction, const Conv2dShape& s,
          const CudnnConvPlan& plan) {
  const bool bf16 = is_bf16(plan);
  for (int i = 0; i < returned; ++i) {
    if (acceptable(perfs[static_cast<std::size_t>(i)], o, must_be_deterministic, bf16)) {
      return perfs[static_cast<std::size_t>(i)];
    }
  }
  ENGINE_FAIL(
      "conv2d_cudnn: no usable {} {} {} algorithm for x[{}, {}, {}, {}] w[{}, {}, {}, {}] stride ({}, {}) "
      "pad "
      "({}, {}) among {} candidates (deterministic={}, allow_tf32={}, workspace limit {} bytes; math types: "
      "0 default, 1 tensor op, 2 tensor op with conversion, 3 FMA):{}",
      bf16 ? "bfloat16" : "float32", layout_name(plan.layout), direction, s.n, s.c, s.h, s.w, s.k,
      s.c_per_group(), s.r, s.s, s.stride_h, s.stride_w, s.pad_h, s.pad_w, returned, o.deterministic,
      o.allow_tf32, o.max_conv_workspace_bytes, describe_candidates(perfs, returned));
}

// The math type to run a chosen algorithm with: the one cuDNN reported for it when TF32 is allowed or the
// data is bf16 (it decides between the tensor-core and FMA kernels of the algorithm), else always FMA. The
// searches run with search_math_type on the descriptor, so they only offer what that type permits. bf16:
// TENSOR_OP or DEFAULT (cuDNN 9.19 on an H200 reports DEFAULT for some directions), which on sm_80 and later
// permits bf16 tensor cores too (PyTorch runs bf16 under DEFAULT); the pair cuDNN measured is what runs.
cudnnMathType_t math_type_for(const CudaHandles& h, const CudnnConvPlan& plan, cudnnMathType_t reported) {
  return h.allow_tf32() || is_bf16(plan) ? reported : CUDNN_FMA_MATH;
}

// The searches run with search_math_type on the descriptor (a chosen direction may have left another one
// there).
void reset_search_math_type(const CudaHandles& h, CudnnConvPlan& plan) {
  CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), search_math_type(h, plan)));
}

// The largest workspace any algorithm in [0, count) needs, capped at the limit (for the benchmark search).
template <typename SizeOf>
std::size_t max_workspace(int count, std::size_t limit, SizeOf size_of) {
  std::size_t most = 0;
  for (int a = 0; a < count; ++a) {
    std::size_t bytes = 0;
    if (size_of(a, &bytes) == CUDNN_STATUS_SUCCESS && bytes <= limit) most = std::max(most, bytes);
  }
  return most;
}

void choose_forward(CudaHandles& h, cudaStream_t stream, CudnnConvPlan& plan, const Conv2dShape& s,
                    const void* x, const void* w, void* y) {
  reset_search_math_type(h, plan);
  const CudaHandlesOptions& o = h.options();
  int count = 0, returned = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h.cudnn(), &count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(static_cast<std::size_t>(count));
  if (o.conv_search == ConvAlgoSearch::Heuristic) {
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h.cudnn(), plan.x.get(), plan.w.get(), plan.conv.get(),
                                                       plan.y.get(), count, &returned, perfs.data()));
  } else {
    const std::size_t bytes = max_workspace(
        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, o.max_conv_workspace_bytes, [&](int a, std::size_t* out) {
          return cudnnGetConvolutionForwardWorkspaceSize(h.cudnn(), plan.x.get(), plan.w.get(),
                                                         plan.conv.get(), plan.y.get(),
                                                         static_cast<cudnnConvolutionFwdAlgo_t>(a), out);
        });
    Tensor ws = detail::scratch<std::uint8_t>(static_cast<std::int64_t>(bytes), h.device(), stream);
    CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(h.cudnn(), plan.x.get(), x, plan.w.get(), w,
                                                       plan.conv.get(), plan.y.get(), y, count, &returned,
                                                       perfs.data(), ws.raw_data(), bytes));
  }
  const auto perf = pick(perfs, returned, o, /*must_be_deterministic=*/true, "forward", s, plan);
  const cudnnMathType_t math = math_type_for(h, plan, perf.mathType);
  CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), math));
  std::size_t bytes = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h.cudnn(), plan.x.get(), plan.w.get(), plan.conv.get(),
                                                      plan.y.get(), perf.algo, &bytes));
  plan.forward = {true, perf.algo, math, bytes};
}

void choose_backward_data(CudaHandles& h, cudaStream_t stream, CudnnConvPlan& plan, const Conv2dShape& s,
                          const void* w, const void* dy, void* dx) {
  reset_search_math_type(h, plan);
  const CudaHandlesOptions& o = h.options();
  int count = 0, returned = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h.cudnn(), &count));
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(static_cast<std::size_t>(count));
  if (o.conv_search == ConvAlgoSearch::Heuristic) {
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h.cudnn(), plan.w.get(), plan.y.get(),
                                                            plan.conv.get(), plan.x.get(), count, &returned,
                                                            perfs.data()));
  } else {
    const std::size_t bytes = max_workspace(
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, o.max_conv_workspace_bytes, [&](int a, std::size_t* out) {
          return cudnnGetConvolutionBackwardDataWorkspaceSize(
              h.cudnn(), plan.w.get(), plan.y.get(), plan.conv.get(), plan.x.get(),
              static_cast<cudnnConvolutionBwdDataAlgo_t>(a), out);
        });
    Tensor ws = detail::scratch<std::uint8_t>(static_cast<std::int64_t>(bytes), h.device(), stream);
    CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(h.cudnn(), plan.w.get(), w, plan.y.get(), dy,
                                                            plan.conv.get(), plan.x.get(), dx, count,
                                                            &returned, perfs.data(), ws.raw_data(), bytes));
  }
  const auto perf = pick(perfs, returned, o, /*must_be_deterministic=*/true, "backward data", s, plan);
  const cudnnMathType_t math = math_type_for(h, plan, perf.mathType);
  CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), math));
  std::size_t bytes = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(h.cudnn(), plan.w.get(), plan.y.get(),
                                                           plan.conv.get(), plan.x.get(), perf.algo, &bytes));
  plan.backward_data = {true, perf.algo, math, bytes};
}

void choose_backward_filter(CudaHandles& h, cudaStream_t stream, CudnnConvPlan& plan, const Conv2dShape& s,
                            const void* x, const void* dy, void* dw) {
  reset_search_math_type(h, plan);
  const CudaHandlesOptions& o = h.options();
  int count = 0, returned = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h.cudnn(), &count));
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(static_cast<std::size_t>(count));
  if (o.conv_search == ConvAlgoSearch::Heuristic) {
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h.cudnn(), plan.x.get(), plan.y.get(),
                                                              plan.conv.get(), plan.w.get(), count, &returned,
                                                              perfs.data()));
  } else {
    const std::size_t bytes = max_workspace(
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, o.max_conv_workspace_bytes, [&](int a, std::size_t* out) {
          return cudnnGetConvolutionBackwardFilterWorkspaceSize(
              h.cudnn(), plan.x.get(), plan.y.get(), plan.conv.get(), plan.w.get(),
              static_cast<cudnnConvolutionBwdFilterAlgo_t>(a), out);
        });
    Tensor ws = detail::scratch<std::uint8_t>(static_cast<std::int64_t>(bytes), h.device(), stream);
    CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(h.cudnn(), plan.x.get(), x, plan.y.get(), dy,
                                                              plan.conv.get(), plan.w.get(), dw, count,
                                                              &returned, perfs.data(), ws.raw_data(), bytes));
  }
  const auto perf = pick(perfs, returned, o, /*must_be_deterministic=*/true, "backward filter", s, plan);
  const cudnnMathType_t math = math_type_for(h, plan, perf.mathType);
  CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), math));
  std::size_t bytes = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
      h.cudnn(), plan.x.get(), plan.y.get(), plan.conv.get(), plan.w.get(), perf.algo, &bytes));
  plan.backward_filter = {true, perf.algo, math, bytes};
}

// y = conv(x, w), overwritten, in the plan's data type (float32 or bf16).
void run_forward(CudaHandles& handles, cudaStream_t stream, CudnnConvPlan& plan, const Conv2dShape& shape,
                 const void* x, const void* w, void* y) {
  if (!plan.forward.ready) choose_forward(handles, stream, plan, shape, x, w, y);
  CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), plan.forward.math_type));
  Tensor ws = detail::scratch<std::uint8_t>(static_cast<std::int64_t>(plan.forward.workspace_bytes),
                                            handles.device(), stream);
  // alpha and beta are float for both data types (the compute type's scaling type).
  const float one = 1.0f, zero = 0.0f;  // y = 1 * conv(x, w) + 0 * y: overwrite
  CUDNN_CHECK(cudnnConvolutionForward(handles.cudnn(), &one, plan.x.get(), x, plan.w.get(), w,
                                      plan.conv.get(), plan.forward.algo, ws.raw_data(),
                                      plan.forward.workspace_bytes, &zero, plan.y.get(), y));
}

// dw = conv_dW(x, dy) and, when dx is not null, dx = conv_dx(w, dy), overwritten, in the plan's data type.
void run_backward(CudaHandles& handles, cudaStream_t stream, CudnnConvPlan& plan, const Conv2dShape& shape,
                  const void* x, const void* w, const void* dy, void* dx, void* dw) {
  const float one = 1.0f, zero = 0.0f;  // overwrite the gradients
  if (!plan.backward_filter.ready) choose_backward_filter(handles, stream, plan, shape, x, dy, dw);
  {
    CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), plan.backward_filter.math_type));
    Tensor ws = detail::scratch<std::uint8_t>(static_cast<std::int64_t>(plan.backward_filter.workspace_bytes),
                                              handles.device(), stream);
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        handles.cudnn(), &one, plan.x.get(), x, plan.y.get(), dy, plan.conv.get(), plan.backward_filter.algo,
        ws.raw_data(), plan.backward_filter.workspace_bytes, &zero, plan.w.get(), dw));
  }
  if (dx != nullptr) {
    if (!plan.backward_data.ready) choose_backward_data(handles, stream, plan, shape, w, dy, dx);
    CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), plan.backward_data.math_type));
    Tensor ws = detail::scratch<std::uint8_t>(static_cast<std::int64_t>(plan.backward_data.workspace_bytes),
                                              handles.device(), stream);
    CUDNN_CHECK(cudnnConvolutionBackwardData(handles.cudnn(), &one, plan.w.get(), w, plan.y.get(), dy,
                                             plan.conv.get(), plan.backward_data.algo, ws.raw_data(),
                                             plan.backward_data.workspace_bytes, &zero, plan.x.get(), dx));
  }
}

template <typename T>
constexpr cudnnDataType_t cudnn_type() {
  return std::is_same_v<T, bfloat16> ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

// The weight as cuDNN's filter descriptor of `layout` wants it: w itself (NCHW), or a [K, R, S, C] copy in
// `krsc` (NHWC: each filter's [C, R*S] matrix transposed).
template <typename T>
const T* filter_for(cudaStream_t stream, const Conv2dShape& s, Layout layout, const T* w, Tensor& krsc,
                    int device) {
  if (layout == Layout::NCHW) return w;
  krsc = detail::scratch<T>(static_cast<std::int64_t>(s.w_size()), device, stream);
  batched_transpose(stream, s.k, s.c_per_group(), static_cast<std::int64_t>(s.r) * s.s, sizeof(T), w,
                    krsc.raw_data());
  return krsc.template data<T>();
}

// Bias add and gradient: one bias per channel, channels in planes (NCHW) or innermost (NHWC: the columns of
// an [N*P*Q, K] matrix). T: the storage type of y / dy (bias.h's float32 and bf16 overloads).
template <typename T>
void add_bias(cudaStream_t stream, const Conv2dShape& s, Layout layout, T* y, const float* bias) {
  if (layout == Layout::NHWC) {
    bias_add_rows(stream, y, bias, s.n * s.p() * s.q(), s.k);
  } else {
    bias_add_nchw(stream, y, bias, s.n, s.k, s.p() * s.q());
  }
}
template <typename T>
void bias_gradient(cudaStream_t stream, const Conv2dShape& s, Layout layout, const T* dy, float* db) {
  if (layout == Layout::NHWC) {
    bias_grad_nhwc(stream, dy, db, static_cast<std::int64_t>(s.n) * s.p() * s.q(), s.k);
  } else {
    bias_grad_nchw(stream, dy, db, s.n, s.k, s.p() * s.q());
  }
  // bf16 autocast's db is the bf16 gradient of the bf16 bias copy: the (double-accumulated) sum rounded.
  if constexpr (std::is_same_v<T, bfloat16>) round_to_bf16_values(stream, db, db, s.k);
}

// float32 and bf16 data alike: the plan of T's data type in `layout`; the bias (fp32 master data) added by
// bias.h's kernel of T (bf16: rounded to bf16 first, the sum rounded again, as PyTorch's autocast on CUDA).
template <typename T>
void forward(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape, const T* x, const T* w,
             const float* bias, T* y, Layout layout, const char* op) {
  shape.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && y != nullptr, "{}: x, w and y must not be null", op);
  handles.bind(stream);
  Tensor krsc;
  w = filter_for(stream, shape, layout, w, krsc, handles.device());
  run_forward(handles, stream, plan_for(handles, shape, cudnn_type<T>(), layout), shape, x, w, y);
  if (bias != nullptr) add_bias(stream, shape, layout, y, bias);
}

// cuDNN writes the filter gradient in the filter descriptor's type (T: bf16 is the only filter type of the
// bf16 configuration) and layout ([K, R, S, C] for NHWC); dw is fp32 [K, C, R, S]. Where they differ, cuDNN
// writes scratch, which is transposed ([K, R*S, C] -> [K, C, R*S]) and widened (exact: autocast's bf16 dW
// cast up) into dw.
template <typename T>
void backward(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape, const T* x, const T* w,
              const T* dy, T* dx, float* dw, float* db, Layout layout, const char* op) {
  shape.validate();
  ENGINE_CHECK(x != nullptr && w != nullptr && dy != nullptr && dw != nullptr,
               "{}: x, w, dy and dw must not be null", op);
  handles.bind(stream);
  if (db != nullptr) bias_gradient(stream, shape, layout, dy, db);
  const auto w_size = static_cast<std::int64_t>(shape.w_size());
  const int device = handles.device();
  Tensor w_krsc, dw_scratch;
  w = filter_for(stream, shape, layout, w, w_krsc, device);
  T* dw_cudnn = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    if (layout == Layout::NCHW) dw_cudnn = dw;
  }
  if (dw_cudnn == nullptr) {
    dw_scratch = detail::scratch<T>(w_size, device, stream);
    dw_cudnn = dw_scratch.template data<T>();
  }
  run_backward(handles, stream, plan_for(handles, shape, cudnn_type<T>(), layout), shape, x, w, dy, dx,
               dw_cudnn);
  if constexpr (std::is_same_v<T, float>) {
    if (layout == Layout::NHWC) {
      batched_transpose(stream, shape.k, static_cast<std::int64_t>(shape.r) * shape.s, shape.c_per_group(),
                        sizeof(float), dw_cudnn, dw);
    }
  } else {
    Tensor kcrs;
    const T* dw_bf16 = dw_cudnn;
    if (layout == Layout::NHWC) {
      kcrs = detail::scratch<T>(w_size, device, stream);
      batched_transpose(stream, shape.k, static_cast<std::int64_t>(shape.r) * shape.s, shape.c_per_group(),
                        sizeof(T), dw_cudnn, kcrs.raw_data());
      dw_bf16 = kcrs.template data<T>();
    }
    cast_bf16_to_f32_scaled(stream, dw_bf16, dw, w_size, 1.0f);
  }
}

}  // namespace

void conv2d_forward_cudnn(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape, const float* x,
                          const float* w, const float* bias, float* y, Layout layout) {
  ENGINE_NVTX_RANGE("conv2d_forward_cudnn");
  forward(handles, stream, shape, x, w, bias, y, layout, "conv2d_forward_cudnn");
}

void conv2d_backward_cudnn(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape,
                           const float* x, const float* w, const float* dy, float* dx, float* dw, float* db,
                           Layout layout) {
  ENGINE_NVTX_RANGE("conv2d_backward_cudnn");
  backward(handles, stream, shape, x, w, dy, dx, dw, db, layout, "conv2d_backward_cudnn");
}

void conv2d_forward_cudnn_bf16(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape,
                               const bfloat16* x, const bfloat16* w, const float* bias, bfloat16* y,
                               Layout layout) {
  ENGINE_NVTX_RANGE("conv2d_forward_cudnn_bf16");
  forward(handles, stream, shape, x, w, bias, y, layout, "conv2d_forward_cudnn_bf16");
}

void conv2d_backward_cudnn_bf16(CudaHandles& handles, cudaStream_t stream, const Conv2dShape& shape,
                                const bfloat16* x, const bfloat16* w, const bfloat16* dy, bfloat16* dx,
                                float* dw, float* db, Layout layout) {
  ENGINE_NVTX_RANGE("conv2d_backward_cudnn_bf16");
  backward(handles, stream, shape, x, w, dy, dx, dw, db, layout, "conv2d_backward_cudnn_bf16");
}

}  // namespace engine::cuda
