#include "apps/train/ddp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "core/device.h"
#include "core/error.h"
#include "dist/metrics.h"
#include "dist/model_sync.h"
#include "dist/reducer.h"
#include "dist/single_process_group.h"
#include "dist/sync_batchnorm_layer.h"

namespace engine::apps {

namespace {

// The Trainer's DataParallel over a process group: DDP's constructor at attach time, then the Reducer.
class DdpSync final : public DataParallel {
 public:
  DdpSync(dist::ProcessGroup& pg, layers::Model& model, const dist::ReducerOptions& options)
      : pg_(pg), model_(model), traced_(options.record_timeline) {
    dist::verify_same_model(pg, model);
    dist::broadcast_parameters(pg, model);  // also after --resume: every rank read the same file
    reducer_ = std::make_unique<dist::Reducer>(pg, model, options);
  }

  const dist::Reducer& reducer() const { return *reducer_; }

  void before_backward(bool ends_step) override { reducer_->set_sync(ends_step); }
  void after_backward() override { reducer_->finish(); }
  void abandon_step() override {
    ENGINE_CHECK(reducer_->abandon_step(),
                 "a failed step left a partial --accumulate sum behind, which cannot be re-run exactly");
  }

  std::optional<std::chrono::steady_clock::time_point> trace_step_begin() override {
    if (!traced_) return std::nullopt;
    return reducer_->mark_step_start();
  }
  void trace_step_end(trace::Recorder& recorder, std::size_t step_span) override {
    if (traced_) reducer_->trace_timeline(recorder, step_span);
  }
  void trace_done() override {
    if (traced_) reducer_->stop_timeline();
    traced_ = false;
  }

  void before_evaluate(std::int64_t epochs_done) override {
    if (pg_.world_size() == 1) return;
    dist::broadcast_buffers(pg_, model_);
    dist::verify_replicas(pg_, model_, fmt::format("after {} epoch(s)", epochs_done));
  }

  // One all-reduce of the totals' float64 form (dist/metrics.h) carries the vote: exact for small integers.
  bool any_rank(bool local) override {
    if (pg_.world_size() == 1) return local;
    const dist::EvalTotals sum = dist::all_reduce_totals(pg_, {0.0, 0, local ? 1 : 0},
                                                         model_.context().device, model_.context().stream);
    return sum.count > 0;
  }

  // The sums equal world_size times this rank's values only when every rank has them (for two ranks; with
  // more, at least one rank of a disagreement sees it, fails, and the others fail with it).
  void check_same_start(std::int64_t epoch, std::int64_t position) override {
    if (pg_.world_size() == 1) return;
    const dist::EvalTotals sum = dist::all_reduce_totals(pg_, {0.0, epoch, position}, model_.context().device,
                                                         model_.context().stream);
    const std::int64_t w = pg_.world_size();
    ENGINE_CHECK(
        sum.correct == w * epoch && sum.count == w * position,
        "rank {}: the ranks start training at different points (this rank: {} epoch(s) done, sampler "
        "position {}; the mean over ranks: {:.2f} epochs, position {:.1f}). Each rank read "
        "--resume itself: with --resume auto every node needs the same --checkpoint-dir (a shared "
        "folder)",
        pg_.rank(), epoch, position, static_cast<double>(sum.correct) / static_cast<double>(w),
        static_cast<double>(sum.count) / static_cast<double>(w));
  }

  void reduce_totals(EpochTotals& train, EpochTotals& test) override {
    if (pg_.world_size() == 1) return;
    const Device device = model_.context().device;
    void* stream = model_.context().stream;
    for (EpochTotals* t : {&train, &test}) {
      const dist::EvalTotals sum =
          dist::all_reduce_totals(pg_, {t->loss_sum, t->correct, t->samples}, device, stream);
      *t = EpochTotals{sum.loss_sum, sum.correct, sum.count};
    }
  }

 private:
  dist::ProcessGroup& pg_;
  layers::Model& model_;
  std::unique_ptr<dist::Reducer> reducer_;
  bool traced_;  // --trace over several ranks: the reducer records its timeline until trace_done()
};

bool uses_gpus(const TrainConfig& config) { return !config.cpu && device_count() > 0; }

// NCCL 2.30 and newer can put several ranks on one GPU when NCCL_MULTI_RANK_GPU_ENABLE=1; older versions
// refuse at communicator creation, which then fails naming the rank.
bool nccl_multi_rank_gpu() {
  const char* v = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  return v != nullptr && std::string_view(v) == "1";
}

}  // namespace

dist::Backend resolve_backend(BackendChoice choice, bool gpu_ranks) {
  switch (choice) {
    case BackendChoice::Nccl: return dist::Backend::Nccl;
    case BackendChoice::Gloo: return dist::Backend::Gloo;
    case BackendChoice::Auto: break;
  }
  return gpu_ranks ? dist::Backend::Nccl : dist::Backend::Gloo;
}

bool should_launch(const DdpConfig& ddp, const dist::DistEnv& env) {
  return !env.distributed() && (!ddp.gpus.empty() || ddp.nproc > 1 || ddp.nnodes > 1);
}

dist::LaunchOptions plan_launch(const DdpConfig& ddp, const TrainConfig& config) {
  ENGINE_CHECK(ddp.gpus.empty() || ddp.nproc == 1,
               "--gpus and --nproc exclude each other (--gpus {} starts one rank per listed GPU)", ddp.gpus);
  ENGINE_CHECK(ddp.gpus.empty() || !config.cpu,
               "--gpus and --cpu exclude each other (CPU ranks: --cpu --nproc N)");
  ENGINE_CHECK(ddp.backend != BackendChoice::Nccl || (!config.cpu && device_count() > 0),
               "--backend nccl needs GPU ranks, but {}; use --backend gloo",
               config.cpu ? "--cpu is given" : "no GPU is visible");
  dist::LaunchOptions options;
  options.log_all_ranks = ddp.log_all_ranks;
  options.stopped_limit = std::chrono::milliseconds(static_cast<std::int64_t>(ddp.timeout_seconds * 1000));
  ENGINE_CHECK(ddp.node_rank < ddp.nnodes, "--node-rank {} is not a node of --nnodes {}", ddp.node_rank,
               ddp.nnodes);
  ENGINE_CHECK(ddp.nnodes == 1 || (!ddp.master_addr.empty() && ddp.master_port > 0),
               "--nnodes {}: every node needs --master-addr (node 0's address) and --master-port",
               ddp.nnodes);
  options.nnodes = ddp.nnodes;
  options.node_rank = ddp.node_rank;
  if (!ddp.master_addr.empty()) options.master_addr = ddp.master_addr;
  options.master_port = ddp.master_port;
  if (!ddp.gpus.empty()) {
    ENGINE_CHECK(device_count() > 0,
                 "--gpus {}: no GPU is visible on this machine (CPU ranks: --cpu --nproc N)", ddp.gpus);
    options.gpus = dist::parse_gpu_list(ddp.gpus, device_count(),
                                        ddp.backend == BackendChoice::Gloo || nccl_multi_rank_gpu());
    return options;
  }
  options.nproc = ddp.nproc;
  if (uses_gpus(config)) {
    ENGINE_CHECK(ddp.nproc <= device_count(),
                 "--nproc {}: rank r runs on GPU r, but {} GPU(s) are visible (more ranks than GPUs: --gpus "
                 "with repeated ids and --backend gloo, or --cpu for CPU ranks)",
                 ddp.nproc, device_count());
  }
  return options;
}

DdpRank::DdpRank(const DdpConfig& ddp, TrainConfig& config, const dist::DistEnv& env) : ddp_(ddp) {
  config.log_all_ranks = ddp.log_all_ranks;
  if (!env.distributed()) {
    if (config.accumulate > 1) pg_ = dist::make_single_process_group();
    return;
  }
  ENGINE_CHECK(env.source == "launcher" || (ddp.gpus.empty() && ddp.nproc == 1),
               "--gpus/--nproc: this process was started by {} (rank {} of {}), which already started one "
               "process per rank; drop --gpus/--nproc",
               env.source, env.rank, env.world_size);
  world_size_ = env.world_size;
  rank_ = env.rank;
  config.world_size = env.world_size;
  config.rank = env.rank;
  config.restart_count = env.restart_count;
  const bool gpu = uses_gpus(config);
  config.device_index = gpu ? dist::rank_cuda_device(env) : 0;
  const dist::Backend backend = resolve_backend(ddp.backend, gpu);
  ENGINE_CHECK(backend != dist::Backend::Nccl || gpu, "rank {}: --backend nccl needs a GPU, but {}", env.rank,
               config.cpu ? "--cpu is given" : "no GPU is visible");
  const auto timeout = std::chrono::milliseconds(std::llround(ddp.timeout_seconds * 1000.0));
  pg_ = dist::init_process_group(env, backend, timeout, gpu ? config.device_index : -1);
  // gloo copies CUDA gradients on its own thread, which stream events cannot time (dist/reducer.h).
  time_all_reduces_ = !config.trace.empty() && world_size_ > 1 && !(gpu && backend == dist::Backend::Gloo);
  if (!config.trace.empty() && world_size_ > 1 && !time_all_reduces_ && rank_ == 0) {
    fmt::print(
        "cnn_train: --trace: the all-reduces of GPU gradients through gloo are not timed (its host copies "
        "run "
        "on its own thread); the communication track stays empty (nccl times them)\n");
  }
  if (rank_ == 0) {
    fmt::print(
        "cnn_train: {} rank(s) through {} (started by {}) | global batch {} ({} per rank{}) | store {}\n",
        world_size_, dist::backend_name(backend), env.source,
        config.batch_size * config.accumulate * world_size_, config.batch_size,
        config.accumulate > 1 ? fmt::format(" x {} accumulated", config.accumulate) : "",
        env.agent_store ? fmt::format("torchrun's agent at {}:{} (keys under {})", env.master_addr,
                                      env.master_port, env.store_prefix)
                        : fmt::format("served by rank 0 at {}:{}", env.master_addr, env.master_port));
    std::fflush(stdout);
  }
}

DdpRank::~DdpRank() = default;

TrainerHooks DdpRank::hooks() {
  TrainerHooks hooks;
  if (!pg_) return hooks;
  hooks.gloo =
      pg_->backend_kind() == dist::Backend::Gloo;  // for --cuda-graph (apps/train/cuda_graph_policy.h)
  hooks.sync_bn = ddp_.sync_bn && world_size_ > 1;
  if (ddp_.sync_bn && world_size_ > 1) {
    dist::ProcessGroup* pg = pg_.get();
    hooks.make_batchnorm = [pg](int c, double eps, double momentum) {
      return std::make_unique<dist::SyncBatchNorm2d>(*pg, c, eps, momentum);
    };
  }
  dist::ReducerOptions options;
  options.bucket_mb = ddp_.bucket_mb;
  options.first_bucket_mb = std::min(1.0, ddp_.bucket_mb);
  options.compression = ddp_.grad_compression;
  options.record_timeline = time_all_reduces_;
  const bool announce = rank_ == 0 && world_size_ > 1;
  hooks.data_parallel = [pg = pg_.get(), options, announce](layers::Model& model) {
    auto sync = std::make_unique<DdpSync>(*pg, model, options);
    if (announce) {
      fmt::print("cnn_train: {} gradient buckets (first {} MB, then up to {} MB){}\n",
                 sync->reducer().buckets().size(), options.first_bucket_mb, options.bucket_mb,
                 options.compression == dist::GradCompression::Bf16 ? ", sent as bf16" : "");
      std::fflush(stdout);
    }
    return sync;
  };
  return hooks;
}

double steady_images_per_second(const std::vector<EpochMetrics>& history) {
  if (history.empty()) return 0.0;
  if (history.size() == 1) return history[0].images_per_second;
  std::vector<double> ips;
  for (std::size_t i = 1; i < history.size(); ++i) ips.push_back(history[i].images_per_second);
  std::sort(ips.begin(), ips.end());
  const std::size_t n = ips.size();
  return n % 2 == 1 ? ips[n / 2] : 0.5 * (ips[n / 2 - 1] + ips[n / 2]);
}

void DdpRank::report(const std::vector<EpochMetrics>& history) const {
  if (rank_ != 0 || world_size_ == 1 || history.empty()) return;
  const double ips = steady_images_per_second(history);
  std::string line =
      fmt::format("cnn_train: {} ranks: {} img/s in all", world_size_, with_thousands(std::llround(ips)));
  if (ddp_.baseline_ips > 0.0) {
    const double speedup = ips / ddp_.baseline_ips;
    line += fmt::format(" | speedup {:.2f}x over --baseline-ips {} | scaling efficiency {:.1f}%", speedup,
                        with_thousands(std::llround(ddp_.baseline_ips)), 100.0 * speedup / world_size_);
  } else {
    line += " (give --baseline-ips, the img/s of the same run in one process, for the speedup)";
  }
  fmt::print("{}\n", line);
  std::fflush(stdout);
}

}  // namespace engine::apps
