#include "core/execution_context.h"

namespace engine {

std::string_view conv_algorithm_name(ConvAlgorithm a) {
  switch (a) {
    case ConvAlgorithm::Cudnn: return "cudnn";
    case ConvAlgorithm::ImplicitGemm: return "implicit-gemm";
  }
  return "?";
}

}  // namespace engine
