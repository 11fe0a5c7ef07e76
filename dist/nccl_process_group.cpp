#include "dist/nccl_process_group.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/error.h"
#include "core/stream.h"
#include "dist/comm_supervisor.h"

namespace engine::dist {
namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
    case DType::I32: return ncclInt32;
    case DType::U8: return ncclUint8;
  }
  return ncclUint8;
}

// An NCCL result as the supervisor reads it; a failure carries file, line, the call and NCCL's message
// (the text NCCL_CHECK would throw).
CommStatus nccl_status(ncclResult_t r, const char* expr, const char* file, int line) {
  if (r == ncclSuccess) return CommStatus::ready();
  if (r == ncclInProgress) return CommStatus::in_progress();
  return CommStatus::failed(fmt::format("{}:{}: {} in `{}`", file, line, detail::status_message(r), expr));
}
#define NCCL_STATUS(expr) nccl_status((expr), #expr, __FILE__, __LINE__)

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(ncclComm_t comm) : comm_(comm) {}
  ncclComm_t get() const { return comm_; }

  CommStatus async_status() override {
    ncclResult_t state = ncclSuccess;
    CommStatus call = NCCL_STATUS(ncclCommGetAsyncError(comm_, &state));  // returned: not const, so it moves
    if (call.state == CommStatus::State::Failed) return call;
    if (state == ncclSuccess) return CommStatus::ready();
    if (state == ncclInProgress) return CommStatus::in_progress();
    return CommStatus::failed(fmt::format("NCCL async error: {}", detail::status_message(state)));
  }
  // Teardown cannot throw; a failure is said, then there is nothing more to do about it.
  void abort() override { report(NCCL_STATUS(ncclCommAbort(comm_))); }
  void destroy() override { report(NCCL_STATUS(ncclCommDestroy(comm_))); }

 private:
  static void report(const CommStatus& s) {
    if (s.state == CommStatus::State::Failed) std::fprintf(stderr, "warning: %s\n", s.error.c_str());
  }
  ncclComm_t comm_;
};

// An event recorded after a collective; Event::query clears the cudaErrorNotReady it leaves as the thread's
// last error, so a later ENGINE_LAUNCH_CHECK does not report it.
//
// A collective captured into a CUDA graph (apps/train/training_graph.h) runs only when the graph is launched,
// and an event recorded during a capture cannot be queried: such a marker records nothing and reports ready.
// The replays' collectives are then watched at the run's next synchronizing collective (the stop vote, the
// epoch's totals), which the watchdog times as usual. The CUDA event is made on the first record outside a
// capture, so a marker the supervisor makes in the middle of a capture creates no CUDA object there.
class CudaEventMarker final : public Marker {
 public:
  void record(void* stream) override {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    CUDA_CHECK(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status));
    captured_ = status != cudaStreamCaptureStatusNone;
    if (captured_) return;
    if (!event_) event_.emplace();
    event_->record(static_cast<cudaStream_t>(stream));
  }
  CommStatus query() override {
    if (captured_ || !event_) return CommStatus::ready();
    try {
      return event_->query() ? CommStatus::ready() : CommStatus::in_progress();
    } catch (const std::exception& e) {
      return CommStatus::failed(e.what());
    }
  }

 private:
  std::optional<Event> event_;  // made on the first record outside a capture
  bool captured_ = false;       // recorded while its stream captured a graph
};

// One collective inside ncclGroupStart/End; the group is ended even when the call inside failed, so that
// this thread is not left inside a group. The result is the call's failure, else the group end's status.
template <typename Fn>
CommStatus nccl_group(Fn&& call) {
  CommStatus start = NCCL_STATUS(ncclGroupStart());  // returned: not const, so it moves
  if (start.state == CommStatus::State::Failed) return start;
  const CommStatus queued = call();
  const CommStatus end = NCCL_STATUS(ncclGroupEnd());
  return queued.state == CommStatus::State::Failed ? queued : end;
}

// NCCL orders its work on the stream: nothing to wait for on the host.
class NcclWork final : public Work {
 public:
  void wait() override {}
};

class NcclProcessGroup final : public ProcessGroup {
 public:
  NcclProcessGroup(std::shared_ptr<TcpStore> store, int rank, int world_size,
                   std::chrono::milliseconds timeout, int device)
      : ProcessGroup(rank, world_size, timeout),
        store_(std::move(store)),
        device_(device),
        supervisor_(supervisor_options(timeout, device)) {
    set_device(device);
    ncclUniqueId id;
    static_assert(sizeof(id) == NCCL_UNIQUE_ID_BYTES, "ncclUniqueId layout");
    if (rank == 0) {
      NCCL_CHECK(ncclGetUniqueId(&id));
      std::vector<char> bytes(sizeof(id));
      std::memcpy(bytes.data(), &id, sizeof(id));
      store_->set("nccl_unique_id", bytes);
    } else {
      const std::vector<char> bytes = store_->get("nccl_unique_id");
      ENGINE_CHECK(bytes.size() == sizeof(id),
                   "rank {}: the NCCL unique id in the store has {} bytes, not {}", rank, bytes.size(),
                   sizeof(id));
      std::memcpy(&id, bytes.data(), sizeof(id));
    }
    supervisor_.create("ncclCommInitRankConfig", [&] {
      ncclComm_t comm = nullptr;
      ncclConfig_t config = nccl_comm_config();
      CommSupervisor::Created made;
      made.status = NCCL_STATUS(ncclCommInitRankConfig(&comm, world_size, id, rank, &config));
      if (comm != nullptr) {
        comm_ = comm;
        made.comm = std::make_unique<NcclCommunicator>(comm);
      }
      return made;
    });
  }

  // Destroys the communicator after a clean finish, aborts it on an error path (dist/comm_supervisor.h).
  ~NcclProcessGroup() override { supervisor_.shutdown(std::uncaught_exceptions() > 0); }

  Backend backend_kind() const override { return Backend::Nccl; }
  bool failed() const override { return supervisor_.failed(); }

  std::unique_ptr<Work> all_reduce_async(const Tensor& tensor, ReduceOp op, void* stream) override {
    check_tensor(tensor, "all_reduce");
    const DType dt = tensor.dtype();
    ENGINE_CHECK(dt == DType::F32 || dt == DType::F64 || dt == DType::BF16,
                 "nccl all_reduce: {} is not float32, float64 or bfloat16", tensor.str());
    queue(fmt::format("all_reduce({}) of {}", reduce_op_name(op), tensor.str()), stream, [&] {
      return NCCL_STATUS(ncclAllReduce(
          tensor.raw_data(), tensor.raw_data(), static_cast<std::size_t>(tensor.numel()), nccl_type(dt),
          op == ReduceOp::Avg ? ncclAvg : ncclSum, comm_, static_cast<cudaStream_t>(stream)));
    });
    return std::make_unique<NcclWork>();
  }

  std::unique_ptr<Work> broadcast_async(const Tensor& tensor, int root, void* stream) override {
    check_tensor(tensor, "broadcast");
    ENGINE_CHECK(root >= 0 && root < world_size(), "broadcast: root {} is not a rank of {}", root,
                 world_size());
    queue(fmt::format("broadcast from rank {} of {}", root, tensor.str()), stream, [&] {
      return NCCL_STATUS(ncclBroadcast(tensor.raw_data(), tensor.raw_data(), tensor.nbytes(), ncclUint8, root,
                                       comm_, static_cast<cudaStream_t>(stream)));
    });
    return std::make_unique<NcclWork>();
  }

  std::unique_ptr<Work> all_gather_async(const Tensor& input, const Tensor& output, void* stream) override {
    check_tensor(input, "all_gather");
    check_tensor(output, "all_gather");
    ENGINE_CHECK(input.dtype() == output.dtype() && output.numel() == input.numel() * world_size(),
                 "all_gather: output {} must hold {} x input {}", output.str(), world_size(), input.str());
    queue(fmt::format("all_gather of {}", input.str()), stream, [&] {
      return NCCL_STATUS(ncclAllGather(input.raw_data(), output.raw_data(), input.nbytes(), ncclUint8, comm_,
                                       static_cast<cudaStream_t>(stream)));
    });
    return std::make_unique<NcclWork>();
  }

  void barrier() override {
    // A one-element all-reduce on a private stream, waited for under the timeout.
    supervisor_.check_usable("barrier");
    set_device(device_);
    Stream stream(device_);
    cudaStream_t s = stream.get();
    float* d = nullptr;
    CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&d), sizeof(float), s));
    CUDA_CHECK(cudaMemsetAsync(d, 0, sizeof(float), s));
    queue("barrier", s, [&] { return NCCL_STATUS(ncclAllReduce(d, d, 1, ncclFloat32, ncclSum, comm_, s)); });
    supervisor_.synchronize(s);
    CUDA_CHECK(cudaFreeAsync(d, s));
    stream.synchronize();
  }

  void synchronize(void* stream) override {
    set_device(device_);
    supervisor_.synchronize(stream);
  }

 private:
  CommSupervisorOptions supervisor_options(std::chrono::milliseconds timeout, int device) {
    CommSupervisorOptions o;
    o.timeout = timeout;
    o.describe = [this](std::string_view what, const std::string& why) {
      return describe_failure(what, why);
    };
    o.make_marker = [] { return std::make_unique<CudaEventMarker>(); };
    o.watchdog_start = [device] {
      // Events are queried on the rank's device; a failure here shows in the main thread's calls.
      if (cudaSetDevice(device) != cudaSuccess) (void)cudaGetLastError();
    };
    return o;
  }

  void check_tensor(const Tensor& t, const char* what) const {
    supervisor_.check_usable(what);
    ENGINE_CHECK(t.is_cuda() && t.device().index == device_, "nccl {}: {} is not on this rank's cuda:{}",
                 what, t.str(), device_);
  }

  template <typename Call>
  void queue(const std::string& what, void* stream, Call&& call) {
    set_device(device_);
    supervisor_.collective(what, stream, [&] { return nccl_group(call); });
  }

  std::shared_ptr<TcpStore> store_;
  int device_;
  ncclComm_t comm_ = nullptr;  // owned by supervisor_ (NcclCommunicator); used inside its collective()
  CommSupervisor supervisor_;  // last: its watchdog starts when everything above exists
};

}  // namespace

ncclConfig_t nccl_comm_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  return config;
}

std::unique_ptr<ProcessGroup> make_nccl_process_group(std::shared_ptr<TcpStore> store, int rank,
                                                      int world_size, std::chrono::milliseconds timeout,
                                                      int cuda_device) {
  return std::make_unique<NcclProcessGroup>(std::move(store), rank, world_size, timeout, cuda_device);
}

}  // namespace engine::dist
