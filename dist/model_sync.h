#pragma once
// Start-of-training agreement between ranks (DDP's constructor): every rank must have built the same model,
// and every rank must start from rank 0's weights.

#include <cstdint>
#include <string_view>

#include "dist/process_group.h"
#include "layers/model.h"

namespace engine::dist {

// A 64-bit FNV-1a hash of the parameters' names and shapes and the model's dtype, in parameter order.
std::uint64_t model_signature(const layers::Model& model);

// All-gathers (parameter count, number of parameter tensors, model_signature) and throws engine::Error on
// every rank when a rank differs from rank 0, naming the first such rank and both descriptions. A
// collective: every rank calls it.
void verify_same_model(ProcessGroup& pg, const layers::Model& model);

// Rank 0's flat parameter buffer and flat buffer of buffers (BatchNorm running statistics) to every rank:
// one broadcast each, on the model's stream. Host counters (num_batches_tracked) are not sent: they start
// equal. A collective.
void broadcast_parameters(ProcessGroup& pg, const layers::Model& model);

// Rank 0's buffers alone. Plain BatchNorm updates its running statistics with each rank's own batches, so
// they differ between ranks; before an evaluation every rank takes rank 0's, which is what PyTorch's DDP
// (broadcast_buffers=True) evaluates with, and what rank 0's checkpoint holds. A collective.
void broadcast_buffers(ProcessGroup& pg, const layers::Model& model);

// A 64-bit FNV-1a digest of the bytes of the flat parameters and flat buffers (copied to the host).
std::uint64_t weights_digest(const layers::Model& model);

// All-gathers weights_digest and throws engine::Error on every rank when a rank's differs from rank 0's,
// naming the rank and `when` ("after epoch 3"). DDP keeps the replicas bitwise equal (every rank applies the
// same averaged gradient); this is the check that it did. A collective.
void verify_replicas(ProcessGroup& pg, const layers::Model& model, std::string_view when);

}  // namespace engine::dist
