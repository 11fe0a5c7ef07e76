#include "dist/nccl_process_group.h"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/error.h"

namespace engine::dist {
namespace {

using Clock = std::chrono::steady_clock;

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

// NCCL orders its work on the stream: nothing to wait for on the host.
class NcclWork final : public Work {
 public:
  void wait() override {}
};

class NcclProcessGroup final : public ProcessGroup {
 public:
  NcclProcessGroup(std::shared_ptr<TcpStore> store, int rank, int world_size,
                   std::chrono::milliseconds timeout, int device)
      : ProcessGroup(rank, world_size, timeout), store_(std::move(store)), device_(device) {
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
    // Non-blocking initialization, polled under the timeout: a rank that never joins cannot hang this one.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    NCCL_CHECK(ncclCommInitRankConfig(&comm_, world_size, id, rank, &config));
    wait_for_comm("ncclCommInitRankConfig");
    CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    watchdog_ = std::thread([this] { watch(); });
  }

  ~NcclProcessGroup() override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    watchdog_.join();
    for (const Pending& p : pending_) cudaEventDestroy(p.event);
    for (cudaEvent_t e : spare_events_) cudaEventDestroy(e);
    if (done_ != nullptr) cudaEventDestroy(done_);
    if (comm_ != nullptr) {
      if (aborted_) return;
      ncclCommDestroy(comm_);  // errors at teardown are not reported: nothing to do about them
    }
  }

  std::string_view backend() const override { return "nccl"; }
  bool failed() const override { return aborted_; }

  std::unique_ptr<Work> all_reduce_async(const Tensor& tensor, ReduceOp op, void* stream) override {
    check_tensor(tensor, "all_reduce");
    const DType dt = tensor.dtype();
    ENGINE_CHECK(dt == DType::F32 || dt == DType::F64 || dt == DType::BF16,
                 "nccl all_reduce: {} is not float32, float64 or bfloat16", tensor.str());
    last_ = fmt::format("all_reduce({}) of {}", reduce_op_name(op), tensor.str());
    group([&] {
      NCCL_CHECK(ncclAllReduce(tensor.raw_data(), tensor.raw_data(), static_cast<std::size_t>(tensor.numel()),
                               nccl_type(dt), op == ReduceOp::Avg ? ncclAvg : ncclSum, comm_,
                               static_cast<cudaStream_t>(stream)));
    });
    watch_until_done(stream);
    return std::make_unique<NcclWork>();
  }

  std::unique_ptr<Work> broadcast_async(const Tensor& tensor, int root, void* stream) override {
    check_tensor(tensor, "broadcast");
    ENGINE_CHECK(root >= 0 && root < world_size(), "broadcast: root {} is not a rank of {}", root,
                 world_size());
    last_ = fmt::format("broadcast from rank {} of {}", root, tensor.str());
    group([&] {
      NCCL_CHECK(ncclBroadcast(tensor.raw_data(), tensor.raw_data(), tensor.nbytes(), ncclUint8, root, comm_,
                               static_cast<cudaStream_t>(stream)));
    });
    watch_until_done(stream);
    return std::make_unique<NcclWork>();
  }

  std::unique_ptr<Work> all_gather_async(const Tensor& input, const Tensor& output, void* stream) override {
    check_tensor(input, "all_gather");
    check_tensor(output, "all_gather");
    ENGINE_CHECK(input.dtype() == output.dtype() && output.numel() == input.numel() * world_size(),
                 "all_gather: output {} must hold {} x input {}", output.str(), world_size(), input.str());
    last_ = fmt::format("all_gather of {}", input.str());
    group([&] {
      NCCL_CHECK(ncclAllGather(input.raw_data(), output.raw_data(), input.nbytes(), ncclUint8, comm_,
                               static_cast<cudaStream_t>(stream)));
    });
    watch_until_done(stream);
    return std::make_unique<NcclWork>();
  }

  void barrier() override {
    // A one-element all-reduce on a private stream, waited for under the timeout.
    set_device(device_);
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float* d = nullptr;
    CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&d), sizeof(float), s));
    CUDA_CHECK(cudaMemsetAsync(d, 0, sizeof(float), s));
    last_ = "barrier";
    try {
      group([&] { NCCL_CHECK(ncclAllReduce(d, d, 1, ncclFloat32, ncclSum, comm_, s)); });
      synchronize(s);
    } catch (...) {
      cudaStreamDestroy(s);
      throw;
    }
    CUDA_CHECK(cudaFreeAsync(d, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaStreamDestroy(s));
  }

  void synchronize(void* stream) override {
    ENGINE_CHECK(!aborted_, "{}", describe_failure(last_, "the communicator was aborted earlier"));
    set_device(device_);
    CUDA_CHECK(cudaEventRecord(done_, static_cast<cudaStream_t>(stream)));
    const auto deadline = Clock::now() + timeout();
    for (;;) {
      const cudaError_t q = cudaEventQuery(done_);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) CUDA_CHECK(q);
      ncclResult_t async = ncclSuccess;
      NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
      if (async != ncclSuccess && async != ncclInProgress) {
        abort_and_fail(
            fmt::format("NCCL async error: {} ({})", ncclGetErrorString(async), ncclGetLastError(comm_)));
      }
      if (Clock::now() >= deadline) {
        abort_and_fail(fmt::format("not finished after {} ms (a peer died or stalled?)", timeout().count()));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

 private:
  void check_tensor(const Tensor& t, const char* what) const {
    ENGINE_CHECK(!aborted_, "{}", describe_failure(what, "the communicator was aborted earlier"));
    ENGINE_CHECK(t.is_cuda() && t.device().index == device_, "nccl {}: {} is not on this rank's cuda:{}",
                 what, t.str(), device_);
  }

  // One collective inside ncclGroupStart/End; with a non-blocking communicator the group may still be in
  // progress on return: poll until it is queued, under the timeout.
  template <typename Fn>
  void group(Fn&& fn) {
    set_device(device_);
    NCCL_CHECK(ncclGroupStart());
    fn();
    const ncclResult_t r = ncclGroupEnd();
    if (r != ncclInProgress) NCCL_CHECK(r);
    wait_for_comm(last_);
  }

  void wait_for_comm(const std::string& what) {
    const auto deadline = Clock::now() + timeout();
    for (;;) {
      ncclResult_t state = ncclSuccess;
      NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) {
        last_ = what;
        abort_and_fail(
            fmt::format("NCCL error: {} ({})", ncclGetErrorString(state), ncclGetLastError(comm_)));
      }
      if (Clock::now() >= deadline) {
        last_ = what;
        abort_and_fail(
            fmt::format("still in progress after {} ms (a rank never joined?)", timeout().count()));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // The watchdog. Collectives run on streams, so a dead or stalled peer leaves an NCCL kernel spinning, and
  // this process blocks in a later launch or synchronization where nothing polls. An event recorded after
  // each collective is watched by a thread: when one is not done within the timeout, or
  // ncclCommGetAsyncError reports an error, the thread aborts the communicator (which ends the NCCL kernels),
  // prints the rank, the collective and the cause, and ends the process with status 1, as PyTorch's NCCL
  // watchdog does. A launcher then stops the other ranks.
  struct Pending {
    cudaEvent_t event;
    Clock::time_point deadline;
    std::string what;
  };

  void watch_until_done(void* stream) {
    cudaEvent_t event = nullptr;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!spare_events_.empty()) {
        event = spare_events_.back();
        spare_events_.pop_back();
      }
    }
    if (event == nullptr) CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(event, static_cast<cudaStream_t>(stream)));
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      pending_.push_back({event, Clock::now() + timeout(), last_});
    }
    wake_.notify_one();
  }

  void watch() {
    if (cudaSetDevice(device_) != cudaSuccess)
      return;  // the main thread's calls report the device's problems
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::milliseconds(100));
      while (!pending_.empty()) {
        const cudaError_t q = cudaEventQuery(pending_.front().event);
        if (q == cudaErrorNotReady) break;
        if (q != cudaSuccess) {
          watchdog_fail(pending_.front().what,
                        fmt::format("CUDA error {} ({})", cudaGetErrorName(q), cudaGetErrorString(q)));
        }
        spare_events_.push_back(pending_.front().event);
        pending_.pop_front();
      }
      if (pending_.empty() || aborted_) continue;
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess &&
          async != ncclInProgress) {
        watchdog_fail(pending_.front().what, fmt::format("NCCL async error: {} ({})",
                                                         ncclGetErrorString(async), ncclGetLastError(comm_)));
      }
      if (Clock::now() >= pending_.front().deadline) {
        watchdog_fail(pending_.front().what,
                      fmt::format("not finished after {} ms (a peer died or stalled?)", timeout().count()));
      }
    }
  }

  [[noreturn]] void watchdog_fail(const std::string& what, const std::string& why) {
    const std::string message = describe_failure(what, why + "; the watchdog aborted the communicator");
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    ncclCommAbort(comm_);
    std::_Exit(1);
  }

  [[noreturn]] void abort_and_fail(const std::string& why) {
    if (!aborted_) {
      aborted_ = true;
      ncclCommAbort(comm_);  // the result is moot: we are failing anyway
    }
    ENGINE_FAIL("{}", describe_failure(last_, why));
  }

  std::shared_ptr<TcpStore> store_;
  int device_;
  ncclComm_t comm_ = nullptr;
  cudaEvent_t done_ = nullptr;
  std::atomic<bool> aborted_{false};  // read by the watchdog thread
  std::string last_ = "initialization";
  // The watchdog's state, under mutex_.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> spare_events_;
  bool stop_ = false;
  std::thread watchdog_;  // last: started when everything above exists
};

}  // namespace

std::unique_ptr<ProcessGroup> make_nccl_process_group(std::shared_ptr<TcpStore> store, int rank,
                                                      int world_size, std::chrono::milliseconds timeout,
                                                      int cuda_device) {
  return std::make_unique<NcclProcessGroup>(std::move(store), rank, world_size, timeout, cuda_device);
}

}  // namespace engine::dist
