#pragma once
// CudaGraph: work captured from a stream into a CUDA graph, instantiated, and replayed with one launch.
// Only in CUDA builds (like core/device_guard.h).
//
// capture() runs `body` between cudaStreamBeginCapture and cudaStreamEndCapture on `stream`. A capture can
// fail for reasons of the body's making (a host synchronization, a call on the legacy stream, an API capture
// does not allow): capture() then ends the capture, clears the error and returns the reason, so the caller
// falls back to eager work with a clear message instead of crashing; an error the body throws itself ends
// the capture and is rethrown. Every CUDA call is checked (file, line, the runtime's message).
//
// The capture mode is thread-local: only this thread's potentially unsafe calls (an uncached cudaMalloc) are
// refused, other threads (the loader's workers, the NCCL watchdog) go on as they were.

#include <cstddef>
#include <functional>
#include <string>

#include <cuda_runtime_api.h>

namespace engine {

class CudaGraph {
 public:
  CudaGraph() = default;
  ~CudaGraph();  // destroys the executable graph and the graph (unchecked: may run during unwinding)
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  CudaGraph(CudaGraph&& other) noexcept;
  CudaGraph& operator=(CudaGraph&& other) noexcept;

  // Captures `body`'s work on `stream` and instantiates it. Returns "" on success, else why the capture
  // failed (the graph then holds nothing). Throws engine::Error when a CUDA call outside the body fails for
  // a reason that is not the capture's (the device is gone), and rethrows what `body` throws.
  std::string capture(cudaStream_t stream, const std::function<void()>& body);

  bool captured() const { return exec_ != nullptr; }
  // One replay of the captured work, queued on `stream` (checked).
  void launch(cudaStream_t stream) const;
  // Kernel nodes in the graph, child graphs included: the kernels one replay runs.
  std::size_t kernel_nodes() const;

 private:
  void reset() noexcept;

  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// Kernel nodes of `graph` (cudaGraphGetNodes + cudaGraphNodeGetType), counting into child-graph nodes.
std::size_t count_kernel_nodes(cudaGraph_t graph);

}  // namespace engine
