#pragma once
// Distributed data parallel training in cnn_train: PyTorch's DistributedDataParallel, built from dist/.
//
//   The user's process   `cnn_train --gpus 0,1 ...` or `cnn_train --cpu --nproc 2 ...`, outside any launcher:
//                        checks the flags against the machine (plan_launch: bad ids, repeats, a backend the
//                        device cannot use are refused before anything starts), then re-executes itself once
//                        per rank (dist::launch_workers) and only supervises: rank 0's stdout is the run's,
//                        every stderr line is tagged "[rank N]", and one failing rank ends them all.
//   A rank               cnn_train started by that launcher, by torchrun, mpirun or srun
//   (dist::read_dist_env):
//                        DdpRank joins the process group (nccl for GPU ranks, gloo for CPU ranks unless
//                        --backend says), then gives the Trainer its hooks: SyncBatchNorm2d for --sync-bn,
//                        and a DataParallel that checks all ranks built the same model, broadcasts rank 0's
//                        weights, all-reduces gradient buckets during backward (dist::Reducer: one all-reduce
//                        per --accumulate K batches), gives every rank rank 0's BatchNorm buffers and checks
//                        the replicas are bitwise equal before each evaluation, and sums the epoch totals.
//                        Rank 0 alone logs (unless --log-all-ranks) and writes checkpoints, metrics and
//                        plots.
//   A single process     no launcher variables and neither --gpus nor --nproc > 1: world size 1; DdpRank
//                        makes a dist::SingleProcessGroup only when --accumulate needs the Reducer.

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "apps/train/flag_choice.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"
#include "dist/bootstrap.h"
#include "dist/launcher.h"
#include "dist/process_group.h"
#include "dist/reducer.h"

namespace engine::apps {

// --backend: Auto is nccl for GPU ranks and gloo for CPU ranks (resolve_backend).
enum class BackendChoice { Auto, Nccl, Gloo };
inline constexpr std::array<FlagChoice<BackendChoice>, 3> kBackendChoices = {{
    {"auto", BackendChoice::Auto},
    {"nccl", BackendChoice::Nccl},
    {"gloo", BackendChoice::Gloo},
}};
dist::Backend resolve_backend(BackendChoice choice, bool gpu_ranks);

inline constexpr std::array<FlagChoice<dist::GradCompression>, 2> kGradCompressionChoices = {{
    {"none", dist::GradCompression::None},
    {"bf16", dist::GradCompression::Bf16},
}};

// What the distributed flags say (apps/ddp_flags.h fills it).
struct DdpConfig {
  std::string gpus;  // "0,1": one rank per listed GPU
  int nproc = 1;     // ranks on this machine when --gpus is not given
  int nnodes = 1;    // several machines, each running this launcher (torchrun's --nnodes/--node-rank)
  int node_rank = 0;
  std::string master_addr;  // node 0's address, which every node names (several nodes only)
  int master_port = 0;
  BackendChoice backend = BackendChoice::Auto;
  double bucket_mb = 25.0;
  dist::GradCompression grad_compression = dist::GradCompression::None;
  bool sync_bn = false;
  double timeout_seconds = 600.0;
  bool log_all_ranks = false;
  double baseline_ips = 0.0;  // one GPU's img/s, for the speedup line; 0: none
};

// True when this process must start the ranks: --gpus or --nproc > 1 given, and no launcher started it.
bool should_launch(const DdpConfig& ddp, const dist::DistEnv& env);

// What to launch, checked against this machine. Throws engine::Error naming the flag (exit 2): --gpus with
// --cpu or --nproc, an unknown, empty or repeated GPU id (repeats need --backend gloo), --backend nccl for
// CPU ranks, more --nproc GPU ranks than GPUs. A repeated id is also let through to NCCL when
// NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL >= 2.30 can share a GPU between ranks).
dist::LaunchOptions plan_launch(const DdpConfig& ddp, const TrainConfig& config);

// One rank's side of the run (or a single process's).
class DdpRank {
 public:
  // Fills config.world_size/rank/device_index/log_all_ranks from `env` and joins the process group (a
  // collective: every rank constructs one). Throws engine::Error for a bad backend or device, or a
  // rendezvous that does not complete within --timeout.
  DdpRank(const DdpConfig& ddp, TrainConfig& config, const dist::DistEnv& env);
  ~DdpRank();

  // The Trainer's hooks. The Trainer must be destroyed before this object (it holds the process group).
  TrainerHooks hooks();

  // The group (null for a single process that needs none), for the barrier after --download.
  dist::ProcessGroup* process_group() const { return pg_.get(); }

  // True when this rank's process group failed: the error it is failing with began on another rank (or in
  // the network), so cnn_train exits with dist::kPeerFailureExitStatus and the launcher names the other.
  bool group_failed() const { return pg_ && pg_->failed(); }

  // Rank 0, after a distributed run: the global throughput, and speedup and scaling efficiency against
  // --baseline-ips.
  void report(const std::vector<EpochMetrics>& history) const;

 private:
  DdpConfig ddp_;
  int world_size_ = 1;
  int rank_ = 0;
  bool time_all_reduces_ = false;           // --trace over several ranks: the Reducer records its timeline
  std::unique_ptr<dist::ProcessGroup> pg_;  // null for a single process that needs none
};

// The throughput the speedup line uses: the median img/s of the epochs after the first (the first pays for
// cuDNN's algorithm search and the allocator's warm-up), or the first's when it is the only one.
double steady_images_per_second(const std::vector<EpochMetrics>& history);

}  // namespace engine::apps
