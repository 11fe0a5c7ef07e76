#include "layers/execution_context.h"

namespace engine::layers {

std::string_view conv_algorithm_name(ConvAlgorithm a) {
  switch (a) {
    case ConvAlgorithm::Cudnn: return "cudnn";
    case ConvAlgorithm::HandWritten: return "hand-written";
  }
  return "?";
}

}  // namespace engine::layers
