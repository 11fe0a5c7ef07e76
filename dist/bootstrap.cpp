#include "dist/bootstrap.h"

#include <charconv>
#include <cstdlib>
#include <optional>

#include "core/device.h"
#include "core/error.h"
#include "dist/gloo_interface.h"
#include "dist/gloo_process_group.h"
#include "dist/tcp_store.h"
#if ENGINE_HAVE_CUDA
#include "dist/nccl_process_group.h"
#endif

namespace engine::dist {
namespace {

class Env {
 public:
  explicit Env(const EnvLookup& lookup) : lookup_(lookup) {}

  bool has(const char* name) const { return get(name) != nullptr; }
  const char* get(const char* name) const {
    const char* v = lookup_ ? lookup_(name) : std::getenv(name);
    return (v != nullptr && *v != '\0') ? v : nullptr;
  }
  // The integer value of `name` (nullopt when unset); an engine::Error naming it when not an integer.
  std::optional<int> integer(const char* name) const {
    const char* v = get(name);
    if (v == nullptr) return std::nullopt;
    const std::string_view s(v);
    int value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    ENGINE_CHECK(ec == std::errc() && end == s.data() + s.size(),
                 "environment variable {}='{}' is not an integer", name, s);
    return value;
  }
  int required(const char* name, const char* because) const {
    const std::optional<int> v = integer(name);
    ENGINE_CHECK(v.has_value(), "environment variable {} is not set ({})", name, because);
    return *v;
  }

 private:
  const EnvLookup& lookup_;
};

}  // namespace

DistEnv read_dist_env(const EnvLookup& lookup) {
  const Env env(lookup);
  DistEnv d;
  const char *rank_var = "RANK", *world_var = "WORLD_SIZE", *local_var = "LOCAL_RANK";
  bool multi_node = false;
  if (env.has("RANK") || env.has("WORLD_SIZE")) {
    d.source = env.has("ENGINE_LAUNCHER") ? "launcher" : "torchrun";
    d.rank = env.required("RANK", "WORLD_SIZE is set: RANK and WORLD_SIZE come together");
    d.world_size = env.required("WORLD_SIZE", "RANK is set: RANK and WORLD_SIZE come together");
    d.local_rank = env.integer("LOCAL_RANK").value_or(d.rank);
  } else if (env.has("OMPI_COMM_WORLD_RANK")) {
    d.source = "openmpi";
    rank_var = "OMPI_COMM_WORLD_RANK", world_var = "OMPI_COMM_WORLD_SIZE",
    local_var = "OMPI_COMM_WORLD_LOCAL_RANK";
    d.rank = env.required(rank_var, "set by mpirun");
    d.world_size = env.required(world_var, "set by mpirun with OMPI_COMM_WORLD_RANK");
    d.local_rank = env.integer(local_var).value_or(d.rank);
    const std::optional<int> local_size = env.integer("OMPI_COMM_WORLD_LOCAL_SIZE");
    multi_node = local_size.has_value() && *local_size < d.world_size;
  } else if (env.has("SLURM_PROCID")) {
    d.source = "slurm";
    rank_var = "SLURM_PROCID", world_var = "SLURM_NTASKS", local_var = "SLURM_LOCALID";
    d.rank = env.required(rank_var, "set by srun");
    d.world_size = env.required(world_var, "set by srun with SLURM_PROCID");
    d.local_rank = env.integer(local_var).value_or(d.rank);
    multi_node = env.integer("SLURM_NNODES").value_or(1) > 1;
    for (const char* list : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
      if (const char* v = env.get(list); v != nullptr && !env.has("MASTER_ADDR")) {
        d.master_addr = first_slurm_host(v, list);
        d.master_from = list;
        break;
      }
    }
    if (const char* job = env.get("SLURM_JOB_ID"); job != nullptr && !env.has("MASTER_PORT")) {
      d.master_port = slurm_job_port(job);
    }
  } else {
    return d;  // a single process
  }
  ENGINE_CHECK(d.world_size >= 1, "environment variable {}={} must be at least 1", world_var, d.world_size);
  ENGINE_CHECK(d.rank >= 0 && d.rank < d.world_size, "environment variable {}={} is not in [0, {}={})",
               rank_var, d.rank, world_var, d.world_size);
  ENGINE_CHECK(d.local_rank >= 0 && d.local_rank < d.world_size,
               "environment variable {}={} is not in [0, {}={})", local_var, d.local_rank, world_var,
               d.world_size);
  ENGINE_CHECK(d.local_rank <= d.rank,
               "environment variable {}={} exceeds {}={} (a local rank is at most the rank)", local_var,
               d.local_rank, rank_var, d.rank);
  if (const char* addr = env.get("MASTER_ADDR")) {
    d.master_addr = addr;
    d.master_from = "MASTER_ADDR";
  } else if (d.master_from.empty()) {
    d.master_from = "default";
    ENGINE_CHECK(!multi_node,
                 "environment variable MASTER_ADDR is not set, and this {} job spans several nodes: export "
                 "MASTER_ADDR (the host of rank 0) and MASTER_PORT",
                 d.source);
  }
  if (const std::optional<int> port = env.integer("MASTER_PORT")) {
    ENGINE_CHECK(*port >= 1 && *port <= 65535,
                 "environment variable MASTER_PORT={} is not a TCP port (1..65535)", *port);
    d.master_port = *port;
  }
  if (d.source == "torchrun") {
    // PyTorch's test (torch/distributed/rendezvous.py): the variable equals str(True).
    const char* agent = env.get("TORCHELASTIC_USE_AGENT_STORE");
    d.agent_store = agent != nullptr && std::string_view(agent) == "True";
    d.restart_count = env.integer("TORCHELASTIC_RESTART_COUNT").value_or(0);
    ENGINE_CHECK(d.restart_count >= 0, "environment variable TORCHELASTIC_RESTART_COUNT={} is negative",
                 d.restart_count);
    if (d.agent_store) d.store_prefix = fmt::format("/worker/attempt_{}", d.restart_count);
  }
  if (const std::optional<int> gpu = env.integer("ENGINE_GPU")) {
    ENGINE_CHECK(*gpu >= 0, "environment variable ENGINE_GPU={} is not a GPU id", *gpu);
    d.gpu = *gpu;
  }
  return d;
}

std::string first_slurm_host(std::string_view nodelist, std::string_view variable) {
  std::string host;
  for (std::size_t i = 0; i < nodelist.size(); ++i) {
    const char ch = nodelist[i];
    if (ch == ',') break;  // the end of the first item
    ENGINE_CHECK(ch != ']', "environment variable {}='{}': a ']' without its '['", variable, nodelist);
    if (ch != '[') {
      host += ch;
      continue;
    }
    // A range list "01-04,07": its first number, as written (zero padding kept).
    const std::size_t close = nodelist.find(']', i);
    ENGINE_CHECK(close != std::string_view::npos, "environment variable {}='{}': a '[' without its ']'",
                 variable, nodelist);
    const std::string_view ranges = nodelist.substr(i + 1, close - i - 1);
    const std::string_view first = ranges.substr(0, ranges.find_first_of(",-"));
    ENGINE_CHECK(!first.empty() && first.find_first_not_of("0123456789") == std::string_view::npos,
                 "environment variable {}='{}': '[{}]' is not a list of numbers and ranges", variable,
                 nodelist, ranges);
    host += first;
    i = close;
  }
  ENGINE_CHECK(!host.empty(), "environment variable {}='{}' names no host", variable, nodelist);
  return host;
}

int slurm_job_port(std::string_view job_id) {
  ENGINE_CHECK(!job_id.empty() && job_id.find_first_not_of("0123456789") == std::string_view::npos,
               "environment variable SLURM_JOB_ID='{}' is not a number", job_id);
  const std::string_view last4 = job_id.substr(job_id.size() > 4 ? job_id.size() - 4 : 0);
  return 15000 + std::stoi(std::string(last4));
}

Backend parse_backend(std::string_view name) {
  if (name == "gloo") return Backend::Gloo;
  if (name == "nccl") return Backend::Nccl;
  ENGINE_FAIL("unknown backend '{}': expected 'nccl' or 'gloo'", name);
}

int rank_cuda_device(const DistEnv& env) {
  const int count = device_count();
  const int device = env.gpu >= 0 ? env.gpu : env.local_rank;
  ENGINE_CHECK(device < count, "rank {}: {}={} names GPU {}, but {} GPU(s) are visible", env.rank,
               env.gpu >= 0 ? "ENGINE_GPU" : "LOCAL_RANK", device, device, count);
  return device;
}

std::unique_ptr<ProcessGroup> init_process_group(const DistEnv& env, Backend backend,
                                                 std::chrono::milliseconds timeout, int cuda_device) {
  // Under torchrun's agent store nobody else serves; otherwise rank 0 does.
  auto store = std::make_shared<TcpStore>(env.master_addr, env.master_port, env.rank == 0 && !env.agent_store,
                                          timeout, env.store_prefix);
  if (backend == Backend::Gloo) {
    const std::string local = gloo_bind_address(*store, timeout);
    return make_gloo_process_group(std::move(store), env.rank, env.world_size, timeout, local);
  }
#if ENGINE_HAVE_CUDA
  ENGINE_CHECK(cuda_device >= 0, "rank {}: the nccl backend needs this rank's CUDA device", env.rank);
  return make_nccl_process_group(std::move(store), env.rank, env.world_size, timeout, cuda_device);
#else
  (void)cuda_device;
  ENGINE_FAIL("the nccl backend needs a CUDA build; this build has the CPU device only (use --backend gloo)");
#endif
}

}  // namespace engine::dist
