#include "dist/gloo_process_group.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <signal.h>
#include <string>
#include <thread>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include "core/device.h"
#include "dist/peer_probe.h"

namespace engine::dist {
namespace {

// The completion state one Work shares with its queued operation.
struct Completion {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  Work::HostSpan span;  // set by the communication thread before `done`
};

class GlooWork final : public Work {
 public:
  explicit GlooWork(std::shared_ptr<Completion> c) : c_(std::move(c)) {}
  void wait() override {
    std::unique_lock lock(c_->mutex);
    c_->cv.wait(lock, [&] { return c_->done; });
    if (c_->error) std::rethrow_exception(c_->error);
  }
  std::optional<HostSpan> host_span() const override { return c_->span; }

 private:
  std::shared_ptr<Completion> c_;
};

template <typename T>
void sum_into(void* out, const void* a, const void* b, std::size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
}

void sum_bf16(void* out, const void* a, const void* b, std::size_t n) {
  auto* o = static_cast<bfloat16*>(out);
  const auto* x = static_cast<const bfloat16*>(a);
  const auto* y = static_cast<const bfloat16*>(b);
  for (std::size_t i = 0; i < n; ++i) o[i] = to_bfloat16(from_bfloat16(x[i]) + from_bfloat16(y[i]));
}

class GlooProcessGroup final : public ProcessGroup {
 public:
  GlooProcessGroup(std::shared_ptr<TcpStore> store, int rank, int world_size,
                   std::chrono::milliseconds timeout, const std::string& local_address)
      : ProcessGroup(rank, world_size, timeout), store_(std::move(store)) {
    // A write to a peer that died must be an error we report, not a SIGPIPE that kills this rank silently
    // (gloo's TCP pairs do not all send with MSG_NOSIGNAL). Only the default disposition is replaced.
    struct sigaction current {};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
      ::signal(SIGPIPE, SIG_IGN);
    try {
      gloo::transport::tcp::attr attr;
      attr.hostname = local_address;
      attr.ai_family = AF_INET;
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(rank, world_size);
      context->setTimeout(timeout);
      context->connectFullMesh(*store_, device);
      context_ = std::move(context);
      probe_ = std::make_unique<PeerProbe>(*store_, rank, world_size, local_address);
    } catch (const gloo::Exception& e) {
      ENGINE_FAIL("{}", describe_failure("connecting the gloo mesh", e.what()));
    } catch (const engine::Error& e) {
      ENGINE_FAIL("{}", describe_failure("connecting the gloo mesh", e.what()));
    }
    thread_ = std::thread([this] { run(); });
  }

  ~GlooProcessGroup() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  Backend backend_kind() const override { return Backend::Gloo; }
  bool failed() const override { return failed_; }

  std::unique_ptr<Work> all_reduce_async(const Tensor& tensor, ReduceOp op, void* stream) override {
    const DType dt = tensor.dtype();
    ENGINE_CHECK(dt == DType::F32 || dt == DType::F64 || dt == DType::BF16,
                 "gloo all_reduce: {} is not float32, float64 or bfloat16", tensor.str());
    const std::string what = fmt::format("all_reduce({}) of {}", reduce_op_name(op), tensor.str());
    return enqueue(what, tensor, stream, /*copy_back=*/true,
                   [this, op, dt](const Tensor& host, std::uint32_t tag) {
                     gloo::AllreduceOptions opts(context_);
                     opts.setTag(tag);
                     void* p = host.raw_data();
                     const auto n = static_cast<std::size_t>(host.numel());
                     switch (dt) {
                       case DType::F32:
                         opts.setOutput(static_cast<float*>(p), n);
                         opts.setReduceFunction(&sum_into<float>);
                         break;
                       case DType::F64:
                         opts.setOutput(static_cast<double*>(p), n);
                         opts.setReduceFunction(&sum_into<double>);
                         break;
                       default:
                         opts.setOutput(static_cast<bfloat16*>(p), n);
                         opts.setReduceFunction(&sum_bf16);
                         break;
                     }
                     gloo::allreduce(opts);
                     if (op == ReduceOp::Avg && world_size() > 1) divide(host, world_size());
                   });
  }

  std::unique_ptr<Work> broadcast_async(const Tensor& tensor, int root, void* stream) override {
    ENGINE_CHECK(root >= 0 && root < world_size(), "broadcast: root {} is not a rank of {}", root,
                 world_size());
    const std::string what = fmt::format("broadcast from rank {} of {}", root, tensor.str());
    return enqueue(what, tensor, stream, /*copy_back=*/true,
                   [this, root](const Tensor& host, std::uint32_t tag) {
                     gloo::BroadcastOptions opts(context_);
                     opts.setTag(tag);
                     opts.setRoot(root);
                     opts.setOutput(static_cast<std::uint8_t*>(host.raw_data()), host.nbytes());
                     gloo::broadcast(opts);
                   });
  }

  std::unique_ptr<Work> all_gather_async(const Tensor& input, const Tensor& output, void* stream) override {
    ENGINE_CHECK(input.dtype() == output.dtype() && output.numel() == input.numel() * world_size(),
                 "all_gather: output {} must hold {} x input {}", output.str(), world_size(), input.str());
    ENGINE_CHECK(input.device() == output.device(), "all_gather: input {} and output {} on different devices",
                 input.str(), output.str());
    const std::string what = fmt::format("all_gather of {}", input.str());
    // The input is copied into this rank's slot of the output, then gathered in place.
    return enqueue(what, output, stream, /*copy_back=*/true,
                   [this, in = input](const Tensor& host, std::uint32_t tag) {
                     Tensor mine = host.flat_range(in.numel() * rank(), {in.numel()});
                     mine.copy_from(in.device().is_cpu() ? in : in.to(Device::cpu()));
                     gloo::AllgatherOptions opts(context_);
                     opts.setTag(tag);
                     opts.setOutput(static_cast<std::uint8_t*>(host.raw_data()), host.nbytes());
                     gloo::allgather(opts);
                   });
  }

  void barrier() override {
    enqueue("barrier", Tensor(), nullptr, false, [this](const Tensor&, std::uint32_t tag) {
      gloo::BarrierOptions opts(context_);
      opts.setTag(tag);
      gloo::barrier(opts);
    })->wait();
  }

  void synchronize(void* /*stream*/) override {
    enqueue("synchronize", Tensor(), nullptr, false, [](const Tensor&, std::uint32_t) {})->wait();
  }

 private:
  using Body = std::function<void(const Tensor& host, std::uint32_t tag)>;
  struct Task {
    std::string what;
    Tensor tensor;  // undefined for barrier/synchronize
    void* stream;
    bool copy_back;
    Body body;
    std::shared_ptr<Completion> completion;
  };

  static void divide(const Tensor& t, int w) {
    const auto n = static_cast<std::size_t>(t.numel());
    if (t.dtype() == DType::F32) {
      float* p = t.data<float>();
      for (std::size_t i = 0; i < n; ++i) p[i] /= static_cast<float>(w);
    } else if (t.dtype() == DType::F64) {
      double* p = t.data<double>();
      for (std::size_t i = 0; i < n; ++i) p[i] /= w;
    } else {
      bfloat16* p = t.data<bfloat16>();
      for (std::size_t i = 0; i < n; ++i) p[i] = to_bfloat16(from_bfloat16(p[i]) / static_cast<float>(w));
    }
  }

  std::unique_ptr<Work> enqueue(std::string what, const Tensor& tensor, void* stream, bool copy_back,
                                Body body) {
    auto completion = std::make_shared<Completion>();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(Task{std::move(what), tensor, stream, copy_back, std::move(body), completion});
    }
    cv_.notify_all();
    return std::make_unique<GlooWork>(std::move(completion));
  }

  void execute(Task& task, std::uint32_t tag) {
    if (!failure_.empty()) ENGINE_FAIL("{} refused: an earlier operation failed: {}", task.what, failure_);
    const Tensor& t = task.tensor;
    if (!t.defined() || t.device().is_cpu()) {
      task.body(t, tag);
      return;
    }
    // CUDA tensor: copy to the host after the work queued on the caller's stream, reduce, copy back.
    set_device(t.device().index);
    Tensor host = t.to(Device::cpu(), task.stream);
    task.body(host, tag);
    if (task.copy_back) Tensor(t).copy_from(host, task.stream);
  }

  void run() {
    std::uint32_t tag = 1;
    for (;;) {
      Task task;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, nothing left
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      std::exception_ptr error;
      task.completion->span.start = std::chrono::steady_clock::now();
      try {
        if (stop_) ENGINE_FAIL("{} not run: the process group is being destroyed", task.what);
        execute(task, tag++);
      } catch (const gloo::Exception& e) {
        failed_ = true;
        failure_ = describe_failure(task.what, e.what()) + lost_peers();
        error = std::make_exception_ptr(engine::Error(failure_, __FILE__, __LINE__));
      } catch (const std::exception& e) {
        failed_ = true;
        if (failure_.empty()) failure_ = describe_failure(task.what, e.what());
        error = std::make_exception_ptr(engine::Error(failure_, __FILE__, __LINE__));
      }
      task.completion->span.end = std::chrono::steady_clock::now();
      {
        std::lock_guard lock(task.completion->mutex);
        task.completion->done = true;
        task.completion->error = error;
      }
      task.completion->cv.notify_all();
    }
  }

  // After a failed collective: which ranks are lost, on which hosts (dist/peer_probe.h), or "".
  std::string lost_peers() const {
    const auto deadline = std::min(timeout(), std::chrono::milliseconds(3000));
    const std::string lost = describe_lost_peers(probe_->probe(deadline), deadline);
    return lost.empty() ? "" : ". Lost: " + lost;
  }

  std::atomic<bool> failed_{false};  // set by the communication thread
  std::unique_ptr<PeerProbe> probe_;
  std::shared_ptr<TcpStore> store_;
  std::shared_ptr<gloo::Context> context_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  std::atomic<bool> stop_{false};
  std::string failure_;  // touched by the communication thread only
  std::thread thread_;
};

}  // namespace

std::unique_ptr<ProcessGroup> make_gloo_process_group(std::shared_ptr<TcpStore> store, int rank,
                                                      int world_size, std::chrono::milliseconds timeout,
                                                      const std::string& local_address) {
  return std::make_unique<GlooProcessGroup>(std::move(store), rank, world_size, timeout, local_address);
}

}  // namespace engine::dist
