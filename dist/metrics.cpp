#include "dist/metrics.h"

#include <vector>

#include "core/error.h"

namespace engine::dist {

EvalTotals all_reduce_totals(ProcessGroup& pg, const EvalTotals& local, Device device, void* stream) {
  constexpr double kExact = 9007199254740992.0;  // 2^53
  ENGINE_CHECK(static_cast<double>(local.count) < kExact && static_cast<double>(local.correct) < kExact,
               "all_reduce_totals: counts beyond 2^53 cannot be summed exactly");
  Tensor t = Tensor::from_vector(std::vector<double>{local.loss_sum, static_cast<double>(local.correct),
                                                     static_cast<double>(local.count)},
                                 {3});
  if (pg.backend_kind() == Backend::Nccl && device.is_cuda()) {
    Tensor d = t.to(device, stream);
    pg.all_reduce(d, ReduceOp::Sum, stream);
    t = d.to(Device::cpu(), stream);
  } else {
    pg.all_reduce(t, ReduceOp::Sum, stream);
  }
  const double* v = t.data<double>();
  return {v[0], static_cast<std::int64_t>(v[1]), static_cast<std::int64_t>(v[2])};
}

}  // namespace engine::dist
