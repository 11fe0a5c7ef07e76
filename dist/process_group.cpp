#include "dist/process_group.h"

#include <fmt/format.h>

namespace engine::dist {

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::Nccl: return "nccl";
    case Backend::Gloo: return "gloo";
    case Backend::Single: return "single";
  }
  return "?";
}

std::string_view reduce_op_name(ReduceOp op) { return op == ReduceOp::Sum ? "sum" : "avg"; }

ProcessGroup::ProcessGroup(int rank, int world_size, std::chrono::milliseconds timeout)
    : rank_(rank), world_size_(world_size), timeout_(timeout) {
  ENGINE_CHECK(world_size >= 1 && rank >= 0 && rank < world_size,
               "process group: rank {} is not in [0, {}) (world size {})", rank, world_size, world_size);
  ENGINE_CHECK(timeout.count() > 0, "process group: the timeout must be positive, got {} ms",
               timeout.count());
}

std::string ProcessGroup::describe_failure(std::string_view collective, const std::string& why) const {
  return fmt::format("rank {} of {} ({}): {} failed: {}", rank_, world_size_, backend(), collective, why);
}

void ProcessGroup::all_reduce(const Tensor& tensor, ReduceOp op, void* stream) {
  all_reduce_async(tensor, op, stream)->wait();
  synchronize(stream);
}

void ProcessGroup::broadcast(const Tensor& tensor, int root, void* stream) {
  broadcast_async(tensor, root, stream)->wait();
  synchronize(stream);
}

void ProcessGroup::all_gather(const Tensor& input, const Tensor& output, void* stream) {
  all_gather_async(input, output, stream)->wait();
  synchronize(stream);
}

}  // namespace engine::dist
