// cuDNN's convolution algorithms by name, which are transform algorithms (conv2d_cudnn_algos.h), and the
// plans' chosen algorithms described (conv2d_cudnn.h: describe_conv_plans).
#include "kernels/cuda/conv2d_cudnn_algos.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/layout.h"
#include "kernels/cuda/conv2d_cudnn.h"
#include "kernels/cuda/conv2d_cudnn_plan.h"
#include "kernels/cuda/handles.h"

namespace engine::cuda {
namespace detail {

const char* algorithm_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "unknown";
  }
}

const char* algorithm_name(cudnnConvolutionBwdDataAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "unknown";
  }
}

const char* algorithm_name(cudnnConvolutionBwdFilterAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "ALGO_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
    default: return "unknown";
  }
}

bool is_transform_algorithm(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

bool is_transform_algorithm(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}

bool is_transform_algorithm(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

const char* math_type_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor-op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor-op-conversion";
    case CUDNN_FMA_MATH: return "fma";
    default: return "unknown";
  }
}

namespace {

template <typename Algo>
std::string direction(const char* what, const ChosenAlgo<Algo>& c) {
  if (!c.ready) return fmt::format(" {} -", what);
  return fmt::format(" {} {}{} ({})", what, algorithm_name(c.algo), is_transform_algorithm(c.algo) ? "*" : "",
                     math_type_name(c.math_type));
}

}  // namespace
}  // namespace detail

std::vector<std::string> describe_conv_plans(CudaHandles& handles) {
  std::vector<std::string> out;
  for (const auto& [key, plan] : handles.conv_plans().plans) {
    // key: n, c, h, w, k, r, s, stride_h, stride_w, pad_h, pad_w, groups, dilation_h, dilation_w, type,
    // layout
    out.push_back(fmt::format("{} {} x[{}, {}, {}, {}] w[{}, {}, {}, {}] stride {} pad {}:{}{}{}",
                              plan->data_type == CUDNN_DATA_BFLOAT16 ? "bf16" : "fp32",
                              layout_name(plan->layout), key[0], key[1], key[2], key[3], key[4],
                              key[1] / key[11], key[5], key[6], key[7], key[9],
                              detail::direction("forward", plan->forward),
                              detail::direction("| backward data", plan->backward_data),
                              detail::direction("| backward filter", plan->backward_filter)));
  }
  return out;
}

}  // namespace engine::cuda
