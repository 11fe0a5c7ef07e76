#pragma once
// Bootstrap: who am I in the job (rank, world size, local rank, where rank 0 is) from the environment, and
// the process group built from that.
//
// Sources, first match wins (so torchrun inside a Slurm allocation is read as torchrun):
//   1. our launcher (dist/launcher.h) and torchrun: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
//      (our launcher also sets ENGINE_LAUNCHER=1 and ENGINE_GPU, the GPU the rank is pinned to);
//   2. OpenMPI (mpirun): OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK,
//      OMPI_COMM_WORLD_LOCAL_SIZE;
//   3. Slurm (srun): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NNODES;
//   4. none of them: a single process (rank 0 of 1).
// RANK and WORLD_SIZE must come together; LOCAL_RANK, when absent, is taken equal to RANK (one node).
// MASTER_ADDR defaults to 127.0.0.1 and MASTER_PORT to 29500 (torchrun's default port), except:
//   - Slurm without MASTER_ADDR: the first host of SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST, else
//     SLURM_NODELIST), expanded from Slurm's compressed form ("gpu[07-10,12]" -> "gpu07"); without
//     MASTER_PORT: 15000 + the last four digits of SLURM_JOB_ID (PyTorch Lightning's rule), so two jobs
//     sharing a node get different ports. Every task derives the same address and port by itself.
//   - mpirun across nodes (OMPI_COMM_WORLD_LOCAL_SIZE < OMPI_COMM_WORLD_SIZE) must export MASTER_ADDR, else
//     it is refused (mpirun -x MASTER_ADDR=host0 ...).
// Who serves the store at MASTER_ADDR:MASTER_PORT (dist/tcp_store.h):
//   - torchrun with TORCHELASTIC_USE_AGENT_STORE=True (what torchrun sets for its workers): torchrun's agent
//     already serves a c10d TCPStore there; every rank is a client, its keys under
//     "/worker/attempt_<TORCHELASTIC_RESTART_COUNT>" (PyTorch's own worker prefix), so a restarted attempt
//     never sees the keys of the one before;
//   - everyone else: rank 0 serves our store there, every rank is a client.
// A value that is not an integer, out of range, or contradicting another (RANK >= WORLD_SIZE, LOCAL_RANK >=
// WORLD_SIZE, a port outside 1..65535) is an engine::Error naming the variable and its value.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "dist/process_group.h"

namespace engine::dist {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int gpu = -1;                 // ENGINE_GPU (set by our launcher), else -1: use LOCAL_RANK
  std::string source = "none";  // "launcher", "torchrun", "openmpi", "slurm" or "none"
  bool agent_store = false;     // torchrun's agent serves the store (TORCHELASTIC_USE_AGENT_STORE=True)
  std::string store_prefix;     // the key prefix in that store ("/worker/attempt_0"), empty for ours
  int restart_count = 0;        // TORCHELASTIC_RESTART_COUNT: how many times torchrun restarted the workers
  std::string master_from;  // where master_addr came from ("MASTER_ADDR", "SLURM_STEP_NODELIST", "default")

  // True when the environment describes a job (even one of world size 1 under a launcher).
  bool distributed() const { return source != "none"; }
};

// The variable lookup, replaceable in tests; returns nullptr for an unset variable.
using EnvLookup = std::function<const char*(const char*)>;

// Reads the environment (std::getenv unless `lookup` is given). Throws engine::Error naming the variable.
DistEnv read_dist_env(const EnvLookup& lookup = {});

// The first host of a Slurm node list in its compressed form: "node[01-04,07],gpu3" -> "node01",
// "rack[1-2]-n[3-4]" -> "rack1-n3", "a,b" -> "a". Throws engine::Error naming `variable` when the list is
// empty or its brackets do not match.
std::string first_slurm_host(std::string_view nodelist, std::string_view variable);

// MASTER_PORT under Slurm when not exported: 15000 + the last four digits of the job id (15000..24999).
// Throws engine::Error naming SLURM_JOB_ID when it is not a number.
int slurm_job_port(std::string_view job_id);

// Backend and backend_name: dist/process_group.h.
Backend parse_backend(std::string_view name);  // "gloo" or "nccl", else engine::Error naming the value

// The CUDA device this rank uses: ENGINE_GPU when the launcher set it, else LOCAL_RANK (torchrun's
// convention), checked against device_count() (an engine::Error naming the rank and the variable).
int rank_cuda_device(const DistEnv& env);

// Rendezvous at MASTER_ADDR:MASTER_PORT (torchrun's agent or rank 0 serves the store), then the backend's
// group:
//   gloo: the TCP full mesh; `cuda_device` is unused (CUDA tensors go through host copies);
//   nccl: rank 0 makes the NCCL unique id and publishes it in the store; `cuda_device` is this rank's GPU.
// Everything is bounded by `timeout`: an unreachable MASTER_ADDR, a port in use, or a rank that never comes
// is an engine::Error within about that time.
std::unique_ptr<ProcessGroup> init_process_group(const DistEnv& env, Backend backend,
                                                 std::chrono::milliseconds timeout, int cuda_device = -1);

}  // namespace engine::dist
