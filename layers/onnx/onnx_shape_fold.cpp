// The shape-only subgraphs exporters write (Shape, Gather, Unsqueeze, Squeeze, Concat of shapes, Constant,
// Expand, Cast, CastLike, Reshape, Flatten, Slice, Transpose, arithmetic on shapes), evaluated once at import
// against the model's input shape (the file's batch, or 1 for a symbolic one): a node whose inputs are all
// constants (or a Shape of a run-time value) becomes a constant, so nothing of it runs per step.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "core/error.h"
#include "kernels/broadcast.h"
#include "layers/onnx/onnx_attrs.h"
#include "layers/onnx/onnx_builder.h"

namespace engine::layers::onnx::detail {

namespace {

std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> st(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

std::int64_t numel_of(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>());
}

// Integer values; the int64 limits exporters write for "to the end" (2^63 - 1 is 2^63 as a double) clamp.
std::vector<std::int64_t> as_ints(const HostTensor& t) {
  std::vector<std::int64_t> v;
  for (const double d : t.values) {
    constexpr double kLimit = 9.2e18;
    v.push_back(d >= kLimit    ? std::numeric_limits<std::int64_t>::max()
                : d <= -kLimit ? std::numeric_limits<std::int64_t>::min()
                               : static_cast<std::int64_t>(d));
  }
  return v;
}

// An axis in [-rank, rank) as [0, rank); refuses others.
std::int64_t axis_in(const Builder& b, const pb::NodeProto& node, std::int64_t axis, std::int64_t rank) {
  if (axis < -rank || axis >= rank)
    b.refuse(node, fmt::format("axis {} is out of range for rank {}", axis, rank));
  return axis < 0 ? axis + rank : axis;
}

// The values of `t` at the indices of an output of shape `out` (t broadcast to it, numpy's rule).
HostTensor broadcast_to(const HostTensor& t, const Shape& out) {
  HostTensor y{std::vector<double>(static_cast<std::size_t>(numel_of(out))), out};
  const std::vector<std::int64_t> st = strides_of(t.shape), ost = strides_of(out);
  const std::size_t off = out.size() - t.shape.size();
  for (std::int64_t i = 0; i < numel_of(out); ++i) {
    std::int64_t src = 0;
    for (std::size_t d = off; d < out.size(); ++d) {
      const std::int64_t idx = (i / ost[d]) % out[d];
      if (t.shape[d - off] != 1) src += idx * st[d - off];
    }
    y.values[static_cast<std::size_t>(i)] = t.values[static_cast<std::size_t>(src)];
  }
  return y;
}

Shape broadcast_shapes(const Builder& b, const pb::NodeProto& node, const Shape& a, const Shape& c) {
  const std::size_t rank = std::max(a.size(), c.size());
  Shape y(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const std::int64_t dc = i + c.size() >= rank ? c[i + c.size() - rank] : 1;
    if (da != dc && da != 1 && dc != 1)
      b.refuse(node, fmt::format("shapes {} and {} do not broadcast", shape_str(a), shape_str(c)));
    y[i] = da == 1 ? dc : da;
  }
  return y;
}

HostTensor gather(const Builder& b, const pb::NodeProto& node, const HostTensor& data,
                  const HostTensor& idx) {
  const auto rank = static_cast<std::int64_t>(data.shape.size());
  if (rank == 0) b.refuse(node, "gathers from a scalar");
  const std::int64_t axis = axis_in(b, node, node_int(node, "axis", 0), rank);
  const std::int64_t n = data.shape[static_cast<std::size_t>(axis)];
  Shape out(data.shape.begin(), data.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= data.shape[static_cast<std::size_t>(d)];
  for (std::int64_t d = axis + 1; d < rank; ++d) inner *= data.shape[static_cast<std::size_t>(d)];
  HostTensor y{{}, out};
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const double v : idx.values) {
      auto k = static_cast<std::int64_t>(v);
      if (k < -n || k >= n) b.refuse(node, fmt::format("index {} is out of range for {} values", k, n));
      k = k < 0 ? k + n : k;
      for (std::int64_t i = 0; i < inner; ++i)
        y.values.push_back(data.values[static_cast<std::size_t>((o * n + k) * inner + i)]);
    }
  }
  return y;
}

HostTensor concat(const Builder& b, const pb::NodeProto& node, const std::vector<const HostTensor*>& in) {
  const auto rank = static_cast<std::int64_t>(in[0]->shape.size());
  const std::int64_t axis = axis_in(b, node, node_int(node, "axis", 0), rank);
  Shape out = in[0]->shape;
  out[static_cast<std::size_t>(axis)] = 0;
  std::int64_t outer = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= out[static_cast<std::size_t>(d)];
  for (const HostTensor* t : in) {
    if (static_cast<std::int64_t>(t->shape.size()) != rank)
      b.refuse(node, fmt::format("concatenates {} and {}", shape_str(in[0]->shape), shape_str(t->shape)));
    out[static_cast<std::size_t>(axis)] += t->shape[static_cast<std::size_t>(axis)];
  }
  HostTensor y{{}, out};
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const HostTensor* t : in) {
      const std::int64_t row = outer == 0 ? 0 : numel_of(t->shape) / outer;
      y.values.insert(y.values.end(), t->values.begin() + o * row, t->values.begin() + (o + 1) * row);
    }
  }
  return y;
}

HostTensor slice(const Builder& b, const pb::NodeProto& node, const HostTensor& data,
                 const std::vector<const HostTensor*>& in) {
  const auto rank = static_cast<std::int64_t>(data.shape.size());
  const std::vector<std::int64_t> starts = as_ints(*in[1]), ends = as_ints(*in[2]);
  std::vector<std::int64_t> axes(starts.size()), steps(starts.size(), 1);
  std::iota(axes.begin(), axes.end(), 0);
  if (in.size() > 3 && in[3] != nullptr) axes = as_ints(*in[3]);
  if (in.size() > 4 && in[4] != nullptr) steps = as_ints(*in[4]);
  std::vector<std::int64_t> begin(static_cast<std::size_t>(rank), 0), step(static_cast<std::size_t>(rank), 1);
  Shape out = data.shape;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<std::size_t>(axis_in(b, node, axes[i], rank));
    const std::int64_t n = data.shape[a], s = steps[i];
    if (s == 0) b.refuse(node, "a step of 0");
    // ONNX's clamping: [0, n] for a positive step; [0, n - 1] (start) and [-1, n - 1] (end) for a negative.
    auto clamp = [&](std::int64_t v, bool end) {
      v = v < 0 ? v + n : v;
      if (s > 0) return std::clamp<std::int64_t>(v, 0, n);
      return std::clamp<std::int64_t>(v, end ? -1 : 0, n - 1);
    };
    const std::int64_t lo = clamp(starts[i], false), hi = clamp(ends[i], true);
    begin[a] = lo;
    step[a] = s;
    out[a] = s > 0 ? std::max<std::int64_t>(0, (hi - lo + s - 1) / s)
                   : std::max<std::int64_t>(0, (lo - hi - s - 1) / -s);
  }
  HostTensor y{{}, out};
  const std::vector<std::int64_t> st = strides_of(data.shape), ost = strides_of(out);
  for (std::int64_t i = 0; i < numel_of(out); ++i) {
    std::int64_t src = 0;
    for (std::size_t d = 0; d < out.size(); ++d)
      src += (begin[d] + ((i / ost[d]) % out[d]) * step[d]) * st[d];
    y.values.push_back(data.values[static_cast<std::size_t>(src)]);
  }
  return y;
}

HostTensor transpose(const Builder& b, const pb::NodeProto& node, const HostTensor& data) {
  const std::size_t rank = data.shape.size();
  std::vector<std::int64_t> perm = node_ints(node, "perm");
  if (perm.empty()) {
    for (std::size_t i = 0; i < rank; ++i) perm.push_back(static_cast<std::int64_t>(rank - 1 - i));
  }
  if (perm.size() != rank) b.refuse(node, "perm does not match the rank");
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i)
    out[i] = data.shape[static_cast<std::size_t>(axis_in(b, node, perm[i], static_cast<std::int64_t>(rank)))];
  const std::vector<std::int64_t> st = strides_of(data.shape), ost = strides_of(out);
  HostTensor y{{}, out};
  for (std::int64_t i = 0; i < numel_of(out); ++i) {
    std::int64_t src = 0;
    for (std::size_t d = 0; d < rank; ++d)
      src += ((i / ost[d]) % out[d]) * st[static_cast<std::size_t>(perm[d])];
    y.values.push_back(data.values[static_cast<std::size_t>(src)]);
  }
  return y;
}

}  // namespace

Shape reshape_target(const Builder& b, const pb::NodeProto& node, const Shape& in, const HostTensor& shape) {
  Shape out;
  std::int64_t infer = -1, known = 1;
  const bool allowzero = node_int(node, "allowzero", 0) != 0;
  for (std::size_t i = 0; i < shape.values.size(); ++i) {
    auto d = static_cast<std::int64_t>(shape.values[i]);
    if (d == 0 && !allowzero) {
      if (i >= in.size()) b.refuse(node, fmt::format("a 0 at axis {} of an input {}", i, shape_str(in)));
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0) b.refuse(node, "two -1 in the shape");
      infer = static_cast<std::int64_t>(i);
    } else if (d < 0) {
      b.refuse(node, fmt::format("a size {} in the shape", d));
    } else {
      known *= d;
    }
    out.push_back(d);
  }
  const std::int64_t n = numel_of(in);
  if (infer >= 0 && known > 0) out[static_cast<std::size_t>(infer)] = n / known;
  if (numel_of(out) != n)
    b.refuse(node, fmt::format("shape [{}] does not fit an input {}", fmt::join(shape.values, ", "),
                               shape_str(in)));
  return out;
}

bool fold_constant(Builder& b, const pb::NodeProto& node) {
  const std::string& op = node.op_type();
  if (op == "Shape" || op == "Size") {
    const Value& v = b.value(node, 0);
    const Shape s = v.constant ? v.data.shape : v.shape;
    const auto rank = static_cast<std::int64_t>(s.size());
    std::int64_t lo = node_int(node, "start", 0), hi = node_int(node, "end", rank);
    lo = std::clamp<std::int64_t>(lo < 0 ? lo + rank : lo, 0, rank);
    hi = std::clamp<std::int64_t>(hi < 0 ? hi + rank : hi, 0, rank);
    HostTensor t;
    if (op == "Size") {
      t = {{static_cast<double>(numel_of(s))}, {}};
    } else {
      for (std::int64_t i = lo; i < hi; ++i)
        t.values.push_back(static_cast<double>(s[static_cast<std::size_t>(i)]));
      t.shape = {static_cast<std::int64_t>(t.values.size())};
    }
    b.define(node.output(0), Value{-1, true, std::move(t), {}, true});
    return true;
  }
  static const std::set<std::string> kFoldable = {
      "Gather",    "Unsqueeze",       "Squeeze", "Concat",   "Cast", "CastLike", "Expand",
      "Reshape",   "Flatten",         "Add",     "Sub",      "Mul",  "Div",      "Slice",
      "Transpose", "ConstantOfShape", "Range",   "Identity", "Neg"};
  if (kFoldable.count(op) == 0) return false;
  std::vector<const HostTensor*> in;
  // CastLike's second input gives only the type (the engine computes in float32 or double either way), so a
  // constant cast like an activation folds too, as PyTorch's newer exporter writes a zero bias.
  const int value_inputs = op == "CastLike" ? 1 : node.input_size();
  for (int i = 0; i < value_inputs; ++i) {
    if (node.input(i).empty()) {
      in.push_back(nullptr);
      continue;
    }
    const Value& v = b.value(node, i);
    if (!v.constant) return false;
    in.push_back(&v.data);
  }
  if (in.empty() || in[0] == nullptr) return false;
  const HostTensor& x = *in[0];
  HostTensor y;
  if (op == "Gather") {
    y = gather(b, node, x, *in.at(1));
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    std::vector<std::int64_t> axes =
        in.size() > 1 && in[1] != nullptr ? as_ints(*in[1]) : node_ints(node, "axes");
    const auto rank = static_cast<std::int64_t>(x.shape.size() + (op == "Unsqueeze" ? axes.size() : 0));
    for (std::int64_t& a : axes) a = axis_in(b, node, a, rank);
    y.values = x.values;
    if (op == "Unsqueeze") {
      std::sort(axes.begin(), axes.end());
      y.shape = x.shape;
      for (const std::int64_t a : axes) y.shape.insert(y.shape.begin() + a, 1);
    } else {
      for (std::size_t i = 0; i < x.shape.size(); ++i) {
        const bool listed = std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) != axes.end();
        if ((axes.empty() && x.shape[i] == 1) || listed) continue;
        y.shape.push_back(x.shape[i]);
      }
    }
  } else if (op == "Concat") {
    y = concat(b, node, in);
  } else if (op == "Cast" || op == "CastLike" || op == "Identity") {
    y = x;
    const std::int64_t to = node_int(node, "to", 1);
    if (op == "Cast" && to != 1 && to != 10 && to != 11 && to != 16) {
      for (double& v : y.values) v = std::trunc(v);  // an integer type
    }
  } else if (op == "Expand") {
    y = broadcast_to(x, broadcast_shapes(b, node, x.shape, Shape(as_ints(*in.at(1)))));
  } else if (op == "Reshape") {
    y = {x.values, reshape_target(b, node, x.shape, *in.at(1))};
  } else if (op == "Flatten") {
    const auto rank = static_cast<std::int64_t>(x.shape.size());
    const std::int64_t axis = node_int(node, "axis", 1);
    const std::int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a > rank) b.refuse(node, fmt::format("axis {} for rank {}", axis, rank));
    const Shape head(x.shape.begin(), x.shape.begin() + a);
    y = {x.values, {numel_of(head), numel_of(x.shape) / std::max<std::int64_t>(1, numel_of(head))}};
  } else if (op == "Neg") {
    y = x;
    for (double& v : y.values) v = -v;
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    const Shape s = broadcast_shapes(b, node, x.shape, in.at(1)->shape);
    const HostTensor l = broadcast_to(x, s), r = broadcast_to(*in[1], s);
    const BinaryOp bop = op == "Add"   ? BinaryOp::Add
                         : op == "Sub" ? BinaryOp::Sub
                         : op == "Mul" ? BinaryOp::Mul
                                       : BinaryOp::Div;
    y.shape = s;
    for (std::size_t i = 0; i < l.values.size(); ++i)
      y.values.push_back(binary_apply<double>(bop, l.values[i], r.values[i]));
  } else if (op == "Slice") {
    y = slice(b, node, x, in);
  } else if (op == "Transpose") {
    y = transpose(b, node, x);
  } else if (op == "ConstantOfShape") {
    double fill = 0.0;
    if (const pb::AttributeProto* a = node_attr(node, "value"))
      fill = tensor_values(a->t(), b.where(node)).values.at(0);
    y.shape = Shape(as_ints(x));
    y.values.assign(static_cast<std::size_t>(numel_of(y.shape)), fill);
  } else {  // Range
    const double start = x.values.at(0), limit = in.at(1)->values.at(0), delta = in.at(2)->values.at(0);
    if (delta == 0) b.refuse(node, "a delta of 0");
    for (double v = start; delta > 0 ? v < limit : v > limit; v += delta) y.values.push_back(v);
    y.shape = {static_cast<std::int64_t>(y.values.size())};
  }
  // Identity and the casts pass a tensor of the file on as one (the TorchScript exporter writes a
  // deduplicated initializer, all-zero biases say, as an Identity of another); everything else computes a new
  // one.
  const bool same_tensor = op == "Identity" || op == "Cast" || op == "CastLike";
  b.define(node.output(0), Value{-1, true, std::move(y), {}, !same_tensor || b.value(node, 0).computed});
  return true;
}

}  // namespace engine::layers::onnx::detail
