#pragma once
// The worker launcher behind `cnn_train --gpus 0,1` and `cnn_train --cpu --nproc 2`: runs one worker process
// per rank on this machine and supervises them.
//
// Each worker is a fork/exec of `options.executable` (default /proc/self/exe: the program itself) with the
// caller's argv and the environment plus
//   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (the rank numbers: one node, unless nnodes/node_rank say),
//   MASTER_ADDR (127.0.0.1 unless given), MASTER_PORT (a free port unless given),
//   ENGINE_LAUNCHER=1 (so the program knows it is a worker and must not launch again; it reads all of these
//   with dist::read_dist_env), and, with GPUs, ENGINE_GPU = the rank's GPU id from the list
//   (CUDA_VISIBLE_DEVICES is left alone, so NCCL still sees every GPU and their links).
// Output: every line a worker writes goes through a pipe to a reader thread of the launcher, which writes it
// whole (never interleaved mid-line):
//   stderr of every rank, tagged "[rank N] ";
//   stdout of rank 0, untagged (the epoch lines read as a single-process run's), and stdout of the other
//   ranks dropped; with log_all_ranks every rank's stdout is shown, tagged.
// Failure: when a worker exits non-zero or is killed by a signal, the others may end on their own for up to
// `settle`, then get SIGTERM, then SIGKILL after `grace`; the result is non-zero and its message names the
// first failing rank and its status or signal (ranks failing at the same moment are all named, the likelier
// cause first: a signal, then any status but `peer_failure_status`, a worker's way to say its process group
// failed because of another rank). Workers also get SIGTERM if the launcher itself dies (PR_SET_PDEATHSIG),
// so none is orphaned. Stop signals: SIGTERM, SIGINT or SIGUSR1 sent to the launcher are forwarded to every
// worker (each time one comes), and the launcher then waits for all of them instead of killing the rest when
// one ends: the workers stop together after a checkpoint (apps/train/stop_signal.h). The result is the first
// rank's non-zero status.

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dist/process_group.h"

namespace engine::dist {

struct LaunchOptions {
  std::vector<int> gpus;  // one rank per entry, pinned to that GPU; empty: `nproc` CPU ranks
  int nproc = 1;          // used when `gpus` is empty
  bool log_all_ranks = false;
  std::string executable = "/proc/self/exe";
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port (dist::find_free_port); several nodes must all name one
  // Several nodes (torchrun's --nnodes/--node-rank): this launcher runs ranks node_rank * W .. + W - 1 of a
  // world of nnodes * W (W = this node's ranks, the same on every node); LOCAL_RANK is the rank on the node.
  // Messages and output tags name the global rank; rank 0's stdout is shown on node 0 only.
  int nnodes = 1;
  int node_rank = 0;
  std::chrono::milliseconds grace{5000};
  std::chrono::milliseconds settle{
      2000};  // after the first failure, how long the others may end on their own
  // A rank stopped (SIGSTOP, a debugger) after every other rank has exited 0 waits on nobody, so no peer's
  // timeout names it: after this long stopped it is ended and named (cnn_train: its --timeout).
  std::chrono::milliseconds stopped_limit{600000};
  std::vector<std::pair<std::string, std::string>> extra_env;  // more variables for every worker
  int peer_failure_status = kPeerFailureExitStatus;            // dist/process_group.h
};

struct LaunchResult {
  int exit_code = 0;     // 0 when every rank exited 0; else the failing rank's status, or 128 + signal
  int failed_rank = -1;  // the first rank that failed, or -1
  std::string message;   // "rank 1 (pid 4242) was killed by signal 9 (Killed)"; empty on success
};

// Starts the workers with `argv` (argv[0] is what they see as their name) and returns when all have ended.
// Throws engine::Error when a worker cannot be started (then none is left running).
LaunchResult launch_workers(const std::vector<std::string>& argv, const LaunchOptions& options);

// Parses `--gpus` ("0,1,3"): throws engine::Error naming the value for an empty list or item, a non-integer,
// an id >= device_count, or an id listed twice unless `allow_repeats` (only the gloo backend can put two
// ranks on one GPU).
// OMP_NUM_THREADS for each of `workers` processes on a machine of `hardware_threads` when the user set none:
// an equal share, at least 1, so the ranks' OpenMP/oneDNN threads do not oversubscribe the cores (torchrun
// sets 1 in the same case).
int threads_per_worker(int workers, unsigned hardware_threads);

std::vector<int> parse_gpu_list(std::string_view text, int device_count, bool allow_repeats);

}  // namespace engine::dist
