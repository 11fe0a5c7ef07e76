// auto_pad SAME_UPPER / SAME_LOWER as the explicit pads the engine's layers take.
#include <string>

#include "core/error.h"
#include "layers/onnx/onnx_builder.h"

namespace engine::layers::onnx::detail {

bool is_same_auto_pad(const std::string& auto_pad) {
  return auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
}

std::pair<int, int> same_pads(const Builder& b, const pb::NodeProto& node, const std::string& auto_pad,
                              const Shape& x, const std::array<int, 2>& kernel,
                              const std::array<int, 2>& stride, const std::array<int, 2>& dilation) {
  if (x.size() != 4) {
    b.refuse(node, fmt::format("auto_pad = {} needs an input [N, C, H, W], got {}", auto_pad, shape_str(x)));
  }
  // Per axis ONNX's total max((ceil(in / stride) - 1) * stride + (kernel - 1) * dilation + 1 - in, 0): the
  // output then has ceil(in / stride) cells. SAME_UPPER puts an odd total's extra cell at the end.
  std::array<std::int64_t, 4> pads{};  // h_begin, w_begin, h_end, w_end
  for (std::size_t a = 0; a < 2; ++a) {
    const std::int64_t in = x[2 + a], s = stride[a];
    const std::int64_t total = std::max<std::int64_t>((in + s - 1) / s - 1, 0) * s +
                               std::int64_t{kernel[a] - 1} * dilation[a] + 1 - in;
    const std::int64_t t = std::max<std::int64_t>(total, 0);
    pads[a] = auto_pad == "SAME_UPPER" ? t / 2 : t - t / 2;
    pads[a + 2] = t - pads[a];
  }
  if (pads[0] != pads[2] || pads[1] != pads[3]) {
    b.refuse(node, fmt::format("auto_pad = {} on the input {} needs pads [{}] (begin h, w, end h, w): uneven "
                               "ends, which the engine's layers do not take (they pad both ends alike)",
                               auto_pad, shape_str(x), fmt::join(pads, ", ")));
  }
  return {static_cast<int>(pads[0]), static_cast<int>(pads[1])};
}

}  // namespace engine::layers::onnx::detail
