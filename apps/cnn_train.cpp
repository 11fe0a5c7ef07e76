// cnn_train: trains a model of the zoo on a dataset, on GPUs or on the CPU, with SGD and a learning-rate
// schedule; evaluates on the test set every epoch; writes safetensors checkpoints PyTorch can load.
//
//   cnn_train --dataset cifar10|mnist|fashion-mnist|folder:PATH [--model vgg6|cnn3|mnist_cnn|resnet18]
//             [--epochs N] [--batch-size B] [--lr LR] [--schedule constant|step|cosine] ... (--help lists
//             all)
//   cnn_train --gpus 0,1 ...          distributed data parallel, one process per GPU (apps/train/ddp.h)
//   cnn_train --cpu --nproc 2 ...     the same with CPU ranks through gloo
//   torchrun --nproc_per_node=2 --no-python cnn_train ...   (or mpirun -np 2, or srun): each started
//                                     process is one rank
//   cnn_train --download ...          fetches cifar10/mnist first when missing (apps/train/data_download.h;
//                                     ENGINE_DATA_MIRROR=URL-prefix fetches from a mirror)
//
// Exit codes: 0 done; 2 bad usage or bad input (the message names the flag or the file); 1 a failure while
// running (a NaN/Inf loss names the epoch and step); 3 a collective failed: another rank failed or stalled
// (or the network did); 128 + N stopped by signal N (SIGTERM, SIGINT, SIGUSR1: after a checkpoint that
// --resume auto continues from, apps/train/stop_signal.h). A launching process exits with the code of the
// rank where the failure began, and names it.
//
// Restarts: with --resume auto a run started again with the same command (by torchrun --max-restarts, a
// requeued Slurm job, or by hand) continues from the newest checkpoint in --checkpoint-dir. A new run into a
// --checkpoint-dir holding checkpoints is refused (apps/train/checkpoint_folder.h): --overwrite replaces
// them. A refused input's message has no source location; --verbose adds it (apps/cli/cli_errors.h).

#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apps/cli/cli_errors.h"
#include "apps/ddp_flags.h"
#include "apps/train/data_download.h"
#include "apps/train/ddp.h"
#include "apps/train/observers.h"
#include "apps/train/stop_signal.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"
#include "apps/train_flags.h"
#include "core/error.h"
#include "kernels/cpu_fast/omp_wait.h"

namespace {

// Starts one rank per GPU (or --nproc ranks) running this program with the same arguments, and waits. A
// failure is reported by the launcher ("launcher: rank 1 (pid 4242) exited with status 1; ...").
int launch(int argc, char** argv, const engine::dist::LaunchOptions& options) {
  const std::vector<std::string> args(argv, argv + argc);
  return engine::dist::launch_workers(args, options).exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  engine::cpu_fast::prefer_passive_omp_wait(argv);  // kernels/cpu_fast/omp_wait.h: before any thread starts
  engine::apps::TrainConfig config;
  engine::apps::DdpConfig ddp;
  CLI::App app{"cnn_train: train a CNN of the model zoo (GPU when present, else CPU)"};
  engine::apps::add_train_flags(app, config);
  engine::apps::add_ddp_flags(app, ddp);
  engine::apps::add_verbose_flag(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return engine::apps::report_parse_error(app, e, "cnn_train");
  }

  // DdpRank holds the process group, which the Trainer's layers and reducer use: it is made first, and the
  // Trainer is destroyed first.
  std::unique_ptr<engine::apps::DdpRank> rank;
  std::unique_ptr<engine::apps::Trainer> trainer;
  try {  // everything before the first step is checking input: flags, environment, data files, checkpoints
    engine::apps::finish_train_config(app, config);
    const engine::dist::DistEnv env = engine::dist::read_dist_env();
    if (engine::apps::should_launch(ddp, env)) {
      const engine::dist::LaunchOptions options = engine::apps::plan_launch(ddp, config);
      return launch(argc, argv, options);
    }
    // A rank: stop signals go to one thread of their own (apps/train/stop_signal.h), blocked here before the
    // process group, the loaders and OpenMP start theirs.
    engine::apps::route_stop_signals_to_one_thread();
    rank = std::make_unique<engine::apps::DdpRank>(ddp, config, env);
    engine::apps::download_train_data(config, env, rank->process_group());  // --download
    trainer = std::make_unique<engine::apps::Trainer>(config, rank->hooks());
    engine::apps::attach_outputs(*trainer);  // what the flags ask to see (apps/train/observers.h)
  } catch (const std::exception& e) {
    fmt::print(stderr, "cnn_train: {}\n", engine::apps::failure_text(e));
    return rank && rank->group_failed() ? engine::dist::kPeerFailureExitStatus : 2;
  }
  try {
    trainer->run();
    rank->report(trainer->history());
  } catch (const engine::apps::StopRequested& e) {
    std::fflush(stdout);
    fmt::print(stderr, "cnn_train: {}; run it again with --resume auto to continue\n", e.what());
    return 128 + e.signal();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "cnn_train: {}\n", engine::apps::failure_text(e));
    return rank->group_failed() ? engine::dist::kPeerFailureExitStatus : 1;
  }
  trainer.reset();
  return 0;
}
