#pragma once
// Internal to conv2d_cudnn.cpp and conv2d_cudnn_algos.cpp: cuDNN's convolution algorithms by name, and which
// of them are transform algorithms (Winograd, FFT: their rounding follows the norms of the transformed
// tiles rather than each output's terms), for the descriptions a failing GPU comparison prints
// (describe_conv_plans in conv2d_cudnn.h).

#include <cudnn.h>

namespace engine::cuda::detail {

const char* algorithm_name(cudnnConvolutionFwdAlgo_t a);
const char* algorithm_name(cudnnConvolutionBwdDataAlgo_t a);
const char* algorithm_name(cudnnConvolutionBwdFilterAlgo_t a);

bool is_transform_algorithm(cudnnConvolutionFwdAlgo_t a);
bool is_transform_algorithm(cudnnConvolutionBwdDataAlgo_t a);
bool is_transform_algorithm(cudnnConvolutionBwdFilterAlgo_t a);

const char* math_type_name(cudnnMathType_t m);

}  // namespace engine::cuda::detail
