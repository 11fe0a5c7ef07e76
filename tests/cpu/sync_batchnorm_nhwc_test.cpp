// SyncBatchNorm in the NHWC layout on the host path (dist/sync_batchnorm.cpp): an NHWC run walks each
// channel in the NCHW run's order (n outer, cell inner), so on the same logical data it gives the same bits,
// forward and backward, in float64 and float32, on one and on two gloo ranks (threads of this process, each
// with its own group, rank 0 serving the store); so does a run in the CPU's blocked nChw16c/nChw8c. A mix of
// layouts is refused naming the tensors. A whole model with SyncBatchNorm2d in NHWC takes the NCHW model's
// training step on two ranks, and so does `cnn_train --nproc 2 --sync-bn --layout nhwc`.

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "dist/gloo_process_group.h"
#include "dist/single_process_group.h"
#include "dist/sync_batchnorm.h"
#include "dist/sync_batchnorm_layer.h"
#include "dist/tcp_store.h"
#include "kernels/cpu/sgd.h"
#include "kernels/ops/transpose.h"
#include "layers/models.h"
#include "optim/safetensors.h"
#include "tests/common/error_of.h"
#include "tests/cpu/cnn_train_test_util.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::dist {
namespace {

using layers::testing::cpu_context;
using layers::testing::host_values;
using layers::testing::random_tensor;

// Runs fn(pg, rank) on `world` gloo ranks, one thread each (the collectives need them concurrently), and
// returns each rank's result. A rank's exception becomes a test failure naming the rank.
template <typename Result>
std::vector<Result> on_gloo_ranks(int world, const std::function<Result(ProcessGroup&, int)>& fn) {
  const int port = find_free_port();
  const std::chrono::milliseconds timeout(60000);
  std::vector<Result> results(static_cast<std::size_t>(world));
  std::vector<std::string> errors(static_cast<std::size_t>(world));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      const auto i = static_cast<std::size_t>(r);
      try {
        auto store = std::make_shared<TcpStore>("127.0.0.1", port, /*is_server=*/r == 0, timeout);
        const std::string address = store->local_address();
        const std::unique_ptr<ProcessGroup> pg = make_gloo_process_group(store, r, world, timeout, address);
        results[i] = fn(*pg, r);
        pg->barrier();  // no rank tears the mesh down while another still uses it
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < world; ++r) {
    EXPECT_TRUE(errors[static_cast<std::size_t>(r)].empty())
        << "rank " << r << ": " << errors[static_cast<std::size_t>(r)];
  }
  return results;
}

// The bits of t's values in the NCHW order (float32 widens exactly to double, keeping -0 and NaN payloads
// distinct from +0 and each other).
std::vector<std::uint64_t> nchw_bits(const Tensor& t) {
  const Tensor nchw = ops::to_layout(cpu_context(t.dtype()), t, Layout::NCHW);
  std::vector<std::uint64_t> bits;
  for (double v : host_values(nchw)) bits.push_back(std::bit_cast<std::uint64_t>(v));
  return bits;
}

// Everything one forward and one backward of SyncBatchNorm produce, as bits in the NCHW order.
struct BnRun {
  std::vector<std::vector<std::uint64_t>> outputs;
};

const char* const kOutputNames[] = {"y",           "save_mean", "save_invstd", "running_mean",
                                    "running_var", "dx",        "dgamma",      "dbeta"};

// Rank `rank`'s share of a batch [2, C, 5, 4] (its own values per rank) through SyncBatchNorm with the
// activations in `layout` (C = 3, or a blocked layout's multiple).
BnRun run_sync_bn(ProcessGroup& pg, int rank, DType dtype, Layout layout, std::int64_t c = 3) {
  const ExecutionContext ctx = cpu_context(dtype);
  const Shape shape{2, c, 5, 4};
  const auto seed = static_cast<std::uint64_t>(10 * rank);
  // An offset (|mean| >> std) so that the sums' rounding matters: a different order would show in the bits.
  const Tensor x = ops::to_layout(ctx, random_tensor(shape, dtype, 100 + seed, 40.0, 44.0), layout);
  const Tensor dy = ops::to_layout(ctx, random_tensor(shape, dtype, 200 + seed), layout);
  const Tensor gamma = random_tensor({c}, dtype, 300, 0.5, 1.5), beta = random_tensor({c}, dtype, 301);
  const Tensor running_mean = random_tensor({c}, dtype, 302),
               running_var = random_tensor({c}, dtype, 303, 0.5);
  const Tensor y = Tensor::empty(shape, dtype, Device::cpu(), nullptr, layout);
  const Tensor dx = Tensor::empty(shape, dtype, Device::cpu(), nullptr, layout);
  const Tensor mean = Tensor::empty({c}, dtype), invstd = Tensor::empty({c}, dtype);
  const Tensor dgamma = Tensor::empty({c}, dtype), dbeta = Tensor::empty({c}, dtype);
  sync_batchnorm_forward_training(pg, x, gamma, beta, y, mean, invstd, running_mean, running_var, 0.1, 1e-5);
  sync_batchnorm_backward_training(pg, x, gamma, mean, invstd, dy, dx, dgamma, dbeta);
  EXPECT_EQ(y.layout(), layout);
  return {{nchw_bits(y), nchw_bits(mean), nchw_bits(invstd), nchw_bits(running_mean), nchw_bits(running_var),
           nchw_bits(dx), nchw_bits(dgamma), nchw_bits(dbeta)}};
}

// `layout` (NHWC, or a blocked one over C = 16 or 8 channels) against NCHW.
void expect_nhwc_equals_nchw_bitwise(int world, DType dtype, Layout layout = Layout::NHWC) {
  struct Both {
    BnRun nchw, nhwc;
  };
  const std::int64_t c = is_blocked(layout) ? layout_block(layout) : 3;
  const std::vector<Both> ranks = on_gloo_ranks<Both>(world, [&](ProcessGroup& pg, int rank) {
    Both b;
    b.nchw = run_sync_bn(pg, rank, dtype, Layout::NCHW, c);
    b.nhwc = run_sync_bn(pg, rank, dtype, layout, c);
    return b;
  });
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    ASSERT_EQ(ranks[r].nhwc.outputs.size(), std::size(kOutputNames)) << "rank " << r;
    for (std::size_t k = 0; k < std::size(kOutputNames); ++k) {
      EXPECT_EQ(ranks[r].nhwc.outputs[k], ranks[r].nchw.outputs[k])
          << kOutputNames[k] << " of rank " << r << " of " << world << " (" << dtype_name(dtype) << ", "
          << layout_name(layout) << ")";
    }
  }
  if (world > 1) {  // the ranks' shares differ, so their y differ, but the statistics are global
    EXPECT_NE(ranks[0].nhwc.outputs[0], ranks[1].nhwc.outputs[0]);
    EXPECT_EQ(ranks[0].nhwc.outputs[1], ranks[1].nhwc.outputs[1]) << "save_mean is the global one";
  }
}

TEST(SyncBatchNormNhwc, HostPathEqualsNchwBitwiseFloat64OneRank) {
  expect_nhwc_equals_nchw_bitwise(1, DType::F64);
}
TEST(SyncBatchNormNhwc, HostPathEqualsNchwBitwiseFloat64TwoRanks) {
  expect_nhwc_equals_nchw_bitwise(2, DType::F64);
}
TEST(SyncBatchNormNhwc, HostPathEqualsNchwBitwiseFloat32OneRank) {
  expect_nhwc_equals_nchw_bitwise(1, DType::F32);
}
TEST(SyncBatchNormNhwc, HostPathEqualsNchwBitwiseFloat32TwoRanks) {
  expect_nhwc_equals_nchw_bitwise(2, DType::F32);
}

// The CPU's blocked layouts (nChw16c, nChw8c) walk each channel in the same order too.
TEST(SyncBatchNormNhwc, BlockedHostPathEqualsNchwBitwise) {
  for (const Layout layout : {Layout::NCHW16c, Layout::NCHW8c}) {
    expect_nhwc_equals_nchw_bitwise(1, DType::F64, layout);
    expect_nhwc_equals_nchw_bitwise(2, DType::F32, layout);
  }
}

TEST(SyncBatchNormNhwc, MixedLayoutsAreRefusedNamingTheTensors) {
  auto pg = make_single_process_group();
  const ExecutionContext ctx = cpu_context(DType::F64);
  const Shape shape{2, 3, 5, 4};
  const Tensor x = ops::to_layout(ctx, random_tensor(shape, DType::F64, 1), Layout::NHWC);
  const Tensor y_nchw = Tensor::empty(shape, DType::F64);
  const Tensor gamma = random_tensor({3}, DType::F64, 2), beta = random_tensor({3}, DType::F64, 3);
  const Tensor mean = Tensor::empty({3}, DType::F64), invstd = Tensor::empty({3}, DType::F64);
  const std::string fwd = testing::error_of([&] {
    sync_batchnorm_forward_training(*pg, x, gamma, beta, y_nchw, mean, invstd, Tensor(), Tensor(), 0.1, 1e-5);
  });
  EXPECT_NE(fwd.find("SyncBatchNorm forward: mixed layouts (NCHW and NHWC)"), std::string::npos) << fwd;
  EXPECT_NE(fwd.find("x "), std::string::npos) << fwd;
  EXPECT_NE(fwd.find("y "), std::string::npos) << fwd;

  const Tensor y = Tensor::empty(shape, DType::F64, Device::cpu(), nullptr, Layout::NHWC);
  sync_batchnorm_forward_training(*pg, x, gamma, beta, y, mean, invstd, Tensor(), Tensor(), 0.1, 1e-5);
  const Tensor dy_nchw = random_tensor(shape, DType::F64, 4);
  const Tensor dx = Tensor::empty(shape, DType::F64, Device::cpu(), nullptr, Layout::NHWC);
  const Tensor dgamma = Tensor::empty({3}, DType::F64), dbeta = Tensor::empty({3}, DType::F64);
  const std::string bwd = testing::error_of(
      [&] { sync_batchnorm_backward_training(*pg, x, gamma, mean, invstd, dy_nchw, dx, dgamma, dbeta); });
  EXPECT_NE(bwd.find("SyncBatchNorm backward: mixed layouts (NCHW and NHWC)"), std::string::npos) << bwd;
  EXPECT_NE(bwd.find("dy "), std::string::npos) << bwd;
}

// --- A whole model ---

struct Step {
  std::vector<double> logits, grads, buffers, params;
};

// One DDP training step of resnet18 (every batch norm a SyncBatchNorm2d over `pg`) on this rank's share of
// the batch: forward, loss, backward, the gradients averaged over the ranks, SGD.
template <typename T>
Step ddp_step(ProcessGroup& pg, int rank, DType dtype, Layout layout) {
  const layers::BatchNormFactory sync_bn = [&pg](int c, double eps, double momentum) {
    return std::make_unique<SyncBatchNorm2d>(pg, c, eps, momentum);
  };
  layers::Model m = layers::build_model("resnet18", 3, 10, 16, 16, sync_bn);
  ExecutionContext ctx = cpu_context(dtype, /*dropout_seed=*/5);
  ctx.layout = layout;
  m.finalize(ctx, /*init_seed=*/17);
  const auto seed = static_cast<std::uint64_t>(rank);
  const Tensor x = random_tensor({2, 3, 16, 16}, dtype, 31 + seed);  // NCHW, as the loaders give it
  const Tensor labels = layers::testing::random_labels(2, 10, 41 + seed);
  layers::SoftmaxCrossEntropy loss;
  Step s;
  const Tensor logits = m.forward(x, layers::Mode::Train);
  s.logits = host_values(logits);
  loss.forward(m.context(), logits, labels);
  m.backward(loss.backward());
  const Tensor grads = m.flat_gradients();
  pg.all_reduce(grads, ReduceOp::Sum);
  T* g = grads.data<T>();
  for (std::int64_t i = 0; i < grads.numel(); ++i) g[i] /= static_cast<T>(pg.world_size());
  s.grads = host_values(grads);
  s.buffers = host_values(m.flat_buffers());
  const cpu::SgdOptions sgd{.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
  Tensor momentum = Tensor::zeros(m.flat_parameters().shape(), dtype);
  cpu::sgd_step<T>(sgd, m.flat_parameters().data<T>(), g, momentum.data<T>(), m.flat_parameters().numel(),
                   /*first_step=*/true);
  s.params = host_values(m.flat_parameters());
  return s;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol,
                  const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double scale = 1e-30, worst = 0.0;
  for (double v : b) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  EXPECT_LE(worst, tol * scale) << what << ": worst difference " << worst << " (largest magnitude " << scale
                                << ")";
}

// As tests/cpu/nhwc_model_test.cpp argues: on the CPU the other layers run their NCHW kernels between exact
// transposes, and SyncBatchNorm's host path is bitwise the same in both layouts, so float64 (the
// single-threaded reference) agrees to rounding noise, 1e-13 of the largest magnitude; float32 differs at
// most by the order of threaded float32 reductions, a few ulps amplified by BatchNorm's backward through one
// step: 1e-5, four orders below what one misplaced element does. (Measured: both dtypes bit-identical.)
template <typename T>
void expect_nhwc_model_trains_like_nchw(DType dtype, double tol) {
  struct Both {
    Step nchw, nhwc;
  };
  const std::vector<Both> ranks = on_gloo_ranks<Both>(2, [&](ProcessGroup& pg, int rank) {
    Both b;
    b.nchw = ddp_step<T>(pg, rank, dtype, Layout::NCHW);
    b.nhwc = ddp_step<T>(pg, rank, dtype, Layout::NHWC);
    return b;
  });
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const std::string what = "rank " + std::to_string(r) + " " + std::string(dtype_name(dtype));
    expect_close(ranks[r].nhwc.logits, ranks[r].nchw.logits, tol, what + " logits");
    expect_close(ranks[r].nhwc.grads, ranks[r].nchw.grads, tol, what + " averaged gradients");
    expect_close(ranks[r].nhwc.buffers, ranks[r].nchw.buffers, tol, what + " running statistics");
    expect_close(ranks[r].nhwc.params, ranks[r].nchw.params, tol, what + " parameters after SGD");
  }
  // The statistics are global: both ranks hold the same running statistics, which a local BatchNorm would
  // not (their shares differ).
  EXPECT_EQ(ranks[0].nhwc.buffers, ranks[1].nhwc.buffers);
}

TEST(SyncBatchNormNhwc, Resnet18ModelTrainsLikeNchwOnTwoRanksFloat64) {
  expect_nhwc_model_trains_like_nchw<double>(DType::F64, 1e-13);
}

TEST(SyncBatchNormNhwc, Resnet18ModelTrainsLikeNchwOnTwoRanksFloat32) {
  expect_nhwc_model_trains_like_nchw<float>(DType::F32, 1e-5);
}

// cnn_train: two gloo ranks with --sync-bn in NHWC take the NCHW run's step (resnet18, one step: see
// tests/cpu/cnn_train_ddp_test.cpp for why one). The float32 CPU kernels run on exact transposes and
// SyncBatchNorm's host path is bitwise the same in both layouts, so only the order of threaded float32
// reductions may differ: 1e-5 of each tensor's largest value, as tests/cpu/nhwc_model_test.cpp argues.
TEST(SyncBatchNormNhwc, CnnTrainTwoRanksWithSyncBnInNhwcTakeTheNchwStep) {
  namespace t = apps::testing;
  const std::string root = t::tiny_folder_dataset("sync_bn_nhwc");
  const std::string nchw = t::temp_dir("sync_bn_nchw_out"), nhwc = t::temp_dir("sync_bn_nhwc_out");
  const std::vector<std::string> ddp = {"--cpu", "--nproc",      "2", "--sync-bn", "--limit-train",
                                        "16",    "--limit-test", "6"};
  const t::RunResult a = t::run_train(t::with_args(t::tiny_folder_args(root, nchw, "resnet18", 8, 1), ddp));
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const t::RunResult b = t::run_train(t::with_args(t::tiny_folder_args(root, nhwc, "resnet18", 8, 1),
                                                   t::with_args(ddp, {"--layout", "nhwc"})));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(optim::SafetensorsFile::read(nhwc + "/epoch1.safetensors").metadata().at("step"), "1");
  const std::vector<t::TensorDifference> diffs =
      t::checkpoint_differences(nchw + "/epoch1.safetensors", nhwc + "/epoch1.safetensors");
  for (const t::TensorDifference& d : diffs) {
    EXPECT_LE(d.worst, 1e-5 * d.scale)
        << d.name << ": largest difference " << d.worst << " of values up to " << d.scale;
  }
  EXPECT_GT(diffs.size(), 180u) << "resnet18's weights, BatchNorm buffers and momentum buffers";
}

}  // namespace
}  // namespace engine::dist
