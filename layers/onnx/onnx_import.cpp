// Reading an ONNX file: parse, check the graph's wiring (one producer per tensor, no dangling input, no
// cycle), keep the nodes the output depends on, in topological order, and hand each to convert_node.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "layers/onnx/onnx_builder.h"

namespace engine::layers::onnx {

using detail::Builder;
using detail::Value;
namespace pb = detail::pb;

bool onnx_available() { return true; }

bool is_onnx_path(std::string_view model_name) {  // .onnx in any case (my_net.ONNX)
  if (model_name.size() <= 5) return false;
  std::string_view ext = model_name.substr(model_name.size() - 5);
  return std::equal(ext.begin(), ext.end(), ".onnx",
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

namespace {

std::string read_bytes(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  ENGINE_CHECK(in.good(), "{} '{}': cannot open it (missing, a directory, or unreadable)", what, path);
  std::ostringstream s;
  s << in.rdbuf();
  ENGINE_CHECK(!in.bad(), "{} '{}': read error", what, path);
  return s.str();
}

// The per-sample shape of the graph input from the file: every dimension after the batch, fixed.
Shape file_input_shape(const pb::ValueInfoProto& input, const std::string& what, std::int64_t* batch) {
  const pb::TypeProto& type = input.type();
  ENGINE_CHECK(type.has_tensor_type() && type.tensor_type().has_shape(),
               "ONNX model '{}': input '{}' has no tensor shape", what, input.name());
  Shape shape;
  const auto& dims = type.tensor_type().shape().dim();
  ENGINE_CHECK(dims.size() >= 2,
               "ONNX model '{}': input '{}' has {} dimensions; [N, ...] of 2 or more expected", what,
               input.name(), dims.size());
  *batch = dims[0].has_dim_value() && dims[0].dim_value() > 0 ? dims[0].dim_value() : 1;
  for (int i = 1; i < dims.size(); ++i) shape.push_back(dims[i].has_dim_value() ? dims[i].dim_value() : -1);
  return shape;
}

// The nodes the graph's output depends on, in an order where every node comes after its inputs' producers.
std::vector<const pb::NodeProto*> reachable_in_order(const pb::GraphProto& g, const std::string& output,
                                                     const std::set<std::string>& sources,
                                                     const std::string& what) {
  std::map<std::string, const pb::NodeProto*> producer;
  for (const pb::NodeProto& n : g.node()) {
    for (const std::string& o : n.output()) {
      if (o.empty()) continue;
      ENGINE_CHECK(sources.count(o) == 0,
                   "ONNX model '{}': node '{}' ({}) writes '{}', which is a graph input or "
                   "initializer",
                   what, n.name(), n.op_type(), o);
      const auto [it, fresh] = producer.emplace(o, &n);
      ENGINE_CHECK(fresh, "ONNX model '{}': two nodes write '{}': '{}' ({}) and '{}' ({})", what, o,
                   it->second->name(), it->second->op_type(), n.name(), n.op_type());
    }
  }
  for (const pb::NodeProto& n : g.node()) {
    for (const std::string& in : n.input()) {
      ENGINE_CHECK(in.empty() || sources.count(in) > 0 || producer.count(in) > 0,
                   "ONNX model '{}': node '{}' ({}) reads '{}', which no node, input or initializer provides",
                   what, n.name(), n.op_type(), in);
    }
  }
  ENGINE_CHECK(sources.count(output) > 0 || producer.count(output) > 0,
               "ONNX model '{}': the graph output '{}' is made by no node", what, output);
  // Depth-first from the output: 0 unvisited, 1 on the path (seeing it again is a cycle), 2 done.
  std::map<const pb::NodeProto*, int> state;
  std::vector<const pb::NodeProto*> order;
  std::vector<std::pair<const pb::NodeProto*, int>> stack;
  if (producer.count(output)) stack.emplace_back(producer.at(output), 0);
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next == 0) state[node] = 1;
    if (next < node->input_size()) {
      const std::string& in = node->input(next++);
      const auto p = producer.find(in);
      if (in.empty() || p == producer.end()) continue;
      const int s = state[p->second];
      ENGINE_CHECK(s != 1, "ONNX model '{}': the graph has a cycle through node '{}' ({})", what,
                   p->second->name(), p->second->op_type());
      if (s == 0) stack.emplace_back(p->second, 0);
      continue;
    }
    state[node] = 2;
    order.push_back(node);
    stack.pop_back();
  }
  return order;
}

// PyTorch's newer exporter (opset 18 and up) runs its graph optimizer by default, which folds every
// BatchNorm into the convolution before it (or drops it where it is the identity, as at initialization): the
// file then trains as another network. Its traces: PyTorch wrote it, convolutions, no BatchNormalization.
void warn_if_batchnorm_was_folded(const pb::ModelProto& model, const std::string& what) {
  if (model.producer_name() != "pytorch" || detail::default_opset(model, what) < 18) return;
  bool conv = false;
  for (const pb::NodeProto& n : model.graph().node()) {
    if (n.op_type() == "BatchNormalization") return;
    conv = conv || n.op_type() == "Conv";
  }
  if (!conv) return;
  std::fprintf(stderr,
               "warning: ONNX model '%s' has convolutions and no BatchNormalization: if the network has "
               "BatchNorm layers, PyTorch's exporter folded them into the convolutions (dynamo=True folds "
               "them unless optimize=False is given; README, \"Your own model\")\n",
               what.c_str());
}

}  // namespace

Model import_model_bytes(std::string_view bytes, const std::string& what, const ImportOptions& options) {
  const pb::ModelProto model = detail::parse_model(bytes, what);
  const std::int64_t opset = detail::default_opset(model, what);
  ENGINE_CHECK(opset >= detail::kMinOpset && opset <= detail::kMaxOpset,
               "ONNX model '{}': opset {} is not supported (opsets {} to {} are)", what, opset,
               detail::kMinOpset, detail::kMaxOpset);
  const pb::GraphProto& g = model.graph();
  ENGINE_CHECK(g.output_size() == 1 || (options.first_output_only && g.output_size() > 1),
               "ONNX model '{}': the graph has {} outputs; the engine trains one (the logits)", what,
               g.output_size());

  Builder b(what, opset, options);
  std::set<std::string> sources;
  for (const pb::TensorProto& t : g.initializer()) {
    ENGINE_CHECK(sources.insert(t.name()).second, "ONNX model '{}': two initializers named '{}'", what,
                 t.name());
    b.define(t.name(),
             Value{-1,
                   true,
                   detail::tensor_values(t, fmt::format("ONNX model '{}': initializer '{}'", what, t.name())),
                   {}});
  }
  const pb::ValueInfoProto* input = nullptr;
  for (const pb::ValueInfoProto& in : g.input()) {
    if (sources.count(in.name()) > 0) continue;  // an initializer listed as an input (IR version < 4)
    const auto bound = options.bound_inputs.find(in.name());
    sources.insert(in.name());
    if (bound != options.bound_inputs.end()) {
      b.define(in.name(), Value{-1, true, bound->second, {}});
      continue;
    }
    ENGINE_CHECK(input == nullptr,
                 "ONNX model '{}': the graph has two inputs without values, '{}' and '{}'; the "
                 "engine feeds one (the images)",
                 what, input ? input->name() : "", in.name());
    input = &in;
  }
  ENGINE_CHECK(input != nullptr, "ONNX model '{}': the graph has no input to feed", what);
  std::int64_t batch = 1;
  Shape sample = file_input_shape(*input, what, &batch);
  if (!options.sample_shape.empty()) {
    bool agree = sample.size() == options.sample_shape.size();
    for (std::size_t i = 0; agree && i < sample.size(); ++i)
      agree = sample[i] < 0 || sample[i] == options.sample_shape[i];
    // An image model's fixed height and width: what to change, the data's size or the export.
    const bool hw = sample.size() == 3 && options.sample_shape.size() == 3 &&
                    (sample[0] < 0 || sample[0] == options.sample_shape[0]) && sample[1] > 0 && sample[2] > 0;
    ENGINE_CHECK(agree, "ONNX model '{}': its input '{}' takes samples {} but the data gives {}{}", what,
                 input->name(), shape_str(sample), shape_str(options.sample_shape),
                 hw ? fmt::format(" (channels, height, width): its fixed height x width {}x{} is not the "
                                  "data's {}x{}; train on {}x{} images (folder datasets: --image-size), or "
                                  "export the model at {}x{} or with symbolic height and width",
                                  sample[1], sample[2], options.sample_shape[1], options.sample_shape[2],
                                  sample[1], sample[2], options.sample_shape[1], options.sample_shape[2])
                    : std::string());
    sample = options.sample_shape;
  }
  for (const std::int64_t d : sample) {
    ENGINE_CHECK(d > 0,
                 "ONNX model '{}': input '{}' has symbolic sizes {} beyond the batch; the importer needs "
                 "them fixed",
                 what, input->name(), shape_str(sample));
  }
  Shape full{batch};
  full.insert(full.end(), sample.begin(), sample.end());
  b.define(input->name(), Value{0, false, {}, full});
  const auto elem = input->type().tensor_type().elem_type();
  b.integer_input = elem != pb::TensorProto::FLOAT && elem != pb::TensorProto::DOUBLE &&
                    elem != pb::TensorProto::FLOAT16 && elem != pb::TensorProto::BFLOAT16 &&
                    elem != pb::TensorProto::UNDEFINED;

  const std::vector<const pb::NodeProto*> order = reachable_in_order(g, g.output(0).name(), sources, what);
  for (const pb::NodeProto* n : order) {
    detail::check_arity(b, *n);
    for (const std::string& in : n->input()) {
      if (!in.empty()) b.consumers[in].push_back(n);
    }
  }
  if (options.new_head) {
    ENGINE_CHECK(options.num_classes > 0, "ONNX model '{}': --new-head needs the data's number of classes",
                 what);
    detail::replace_head(b, g, order, options.num_classes);
  }
  // Constant nodes first: a pattern starting at a node (GELU's Erf form at its Div) reads constants that
  // the topological order may place after that node (PyTorch's exporter writes the Add's 1 that way).
  for (const pb::NodeProto* n : order) {
    if (n->op_type() == "Constant") detail::convert_node(b, *n);
  }
  for (const pb::NodeProto* n : order) {
    if (n->op_type() != "Constant" && b.consumed.count(n) == 0) detail::convert_node(b, *n);
  }
  const Value& out = [&]() -> const Value& {
    ENGINE_CHECK(b.has(g.output(0).name()), "ONNX model '{}': the output '{}' was not built (a bug)", what,
                 g.output(0).name());
    return b.value_of(g.output(0).name());
  }();
  ENGINE_CHECK(!out.constant && out.id >= 0, "ONNX model '{}': the output '{}' does not depend on the input",
               what, g.output(0).name());
  ENGINE_CHECK(!out.channels_last,
               "ONNX model '{}': the output '{}' is in channels-last order (a Transpose perm "
               "[0, 2, 3, 1] not undone): not supported",
               what, g.output(0).name());
  b.graph().set_output(out.id);
  warn_if_batchnorm_was_folded(model, what);
  if (options.num_classes > 0) {
    ENGINE_CHECK(
        out.shape.size() == 2 && out.shape[1] == options.num_classes,
        "ONNX model '{}': it gives outputs {} for {} inputs; the data has {} classes ([N, {}] expected){}",
        what, shape_str(out.shape), shape_str(full), options.num_classes, options.num_classes,
        options.new_head || out.shape.size() != 2
            ? std::string()
            : std::string(" (--new-head replaces its classifier by one of the data's classes, freshly "
                          "initialized)"));
  }
  return Model(what, b.take_graph(), sample);
}

Model import_model(const std::string& path, const ImportOptions& options) {
  return import_model_bytes(read_bytes(path, "ONNX model"), path, options);
}

HostTensor read_tensor_file(const std::string& path) {
  const std::string bytes = read_bytes(path, "ONNX tensor");
  pb::TensorProto t;
  ENGINE_CHECK(!bytes.empty() && t.ParseFromString(bytes),
               "ONNX tensor '{}': not a TensorProto, or truncated", path);
  return detail::tensor_values(t, "ONNX tensor '" + path + "'");
}

}  // namespace engine::layers::onnx
