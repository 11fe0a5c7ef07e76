// Transfer learning (ImportOptions::new_head, cnn_train --new-head): the classifier of a file exported with
// another number of classes, replaced by one of the data's, freshly initialized, its names kept.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "layers/onnx/onnx_attrs.h"
#include "layers/onnx/onnx_builder.h"

namespace engine::layers::onnx::detail {

namespace {

// Nodes between the classifier and the output that keep its class axis (squeezenet's ReLU, pooling and
// Flatten after its 1x1 convolution; a Softmax; Dropout).
const std::set<std::string> kPassThrough{"Relu",     "GlobalAveragePool", "AveragePool", "ReduceMean",
                                         "Flatten",  "Reshape",           "Squeeze",     "Dropout",
                                         "Identity", "Softmax",           "LogSoftmax"};

// The constant `name` with axis `axis` set to `classes`, its values zeros (the layer initializes it).
void resize(Builder& b, const pb::NodeProto& node, const std::string& name, std::size_t axis, int classes) {
  const Value& v = b.value_of(name);
  if (!v.constant || v.computed || axis >= v.data.shape.size()) {
    b.refuse(node,
             fmt::format("--new-head: '{}' is not a weight of the file that the new head can replace", name));
  }
  HostTensor t;
  t.shape = v.data.shape;
  t.shape[axis] = classes;
  t.values.assign(static_cast<std::size_t>(shape_numel(t.shape)), 0.0);
  b.define(name, Value{-1, true, t, {}});
  b.fresh_weights.insert(name);
}

}  // namespace

void replace_head(Builder& b, const pb::GraphProto& g, const std::vector<const pb::NodeProto*>& order,
                  int classes) {
  std::map<std::string, const pb::NodeProto*> producer;
  for (const pb::NodeProto* n : order) {
    for (const std::string& out : n->output()) producer[out] = n;
  }
  const std::string what = fmt::format("ONNX model '{}': --new-head", b.what());
  std::string name = g.output(0).name();
  const pb::NodeProto* bias_add = nullptr;  // MatMul's bias: the Add after it (the newer exporter's form)
  for (;;) {
    const auto it = producer.find(name);
    ENGINE_CHECK(it != producer.end(),
                 "{}: found no Linear (Gemm, MatMul) or 1x1 Conv before the output '{}'", what,
                 g.output(0).name());
    const pb::NodeProto& n = *it->second;
    const std::string& op = n.op_type();
    if (op == "Gemm") {
      const bool transposed = node_int(n, "transB", 0) != 0;  // weight [out, in], else [in, out]
      resize(b, n, n.input(1), transposed ? 0 : 1, classes);
      if (n.input_size() > 2 && !n.input(2).empty()) resize(b, n, n.input(2), 0, classes);
      return;
    }
    if (op == "MatMul") {
      resize(b, n, n.input(1), 1, classes);  // [in, out]
      if (bias_add != nullptr) {
        const int other = bias_add->input(0) == n.output(0) ? 1 : 0;
        resize(b, *bias_add, bias_add->input(other), 0, classes);
      }
      return;
    }
    if (op == "Conv") {
      const Value& w = b.value_of(n.input(1));
      if (w.data.shape.size() != 4 || w.data.shape[2] != 1 || w.data.shape[3] != 1) {
        b.refuse(n, fmt::format("--new-head: the classifier '{}' {} is not a 1x1 convolution", n.input(1),
                                shape_str(w.data.shape)));
      }
      resize(b, n, n.input(1), 0, classes);
      if (n.input_size() > 2 && !n.input(2).empty()) resize(b, n, n.input(2), 0, classes);
      return;
    }
    if (op == "Add" && bias_add == nullptr && n.input_size() == 2) {
      const int run_time = b.has(n.input(0)) && b.value_of(n.input(0)).constant ? 1 : 0;
      const auto from = producer.find(n.input(run_time));
      if (from != producer.end() && from->second->op_type() == "MatMul") {
        bias_add = &n;
        name = n.input(run_time);
        continue;
      }
    }
    if (kPassThrough.count(op) == 0) {
      b.refuse(n, fmt::format("--new-head: the output '{}' comes from this {} node, not from a Linear (Gemm, "
                              "MatMul) or 1x1 Conv classifier through {}",
                              g.output(0).name(), op, fmt::join(kPassThrough, ", ")));
    }
    name = n.input(0);
  }
}

}  // namespace engine::layers::onnx::detail
