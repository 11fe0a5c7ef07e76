#include "core/execution_context.h"

namespace engine {

std::string_view conv_algorithm_name(ConvAlgorithm a) {
  switch (a) {
    case ConvAlgorithm::Cudnn: return "cudnn";
    case ConvAlgorithm::ImplicitGemm: return "implicit-gemm";
  }
  return "?";
}

std::string_view layout_name(Layout l) {
  switch (l) {
    case Layout::NCHW: return "NCHW";
    case Layout::NHWC: return "NHWC";
  }
  return "?";
}

}  // namespace engine
