#include "core/cuda_graph.h"

#include <exception>
#include <utility>
#include <vector>

#include "core/cuda_check.h"
#include "core/error.h"

namespace engine {

CudaGraph::~CudaGraph() { reset(); }

CudaGraph::CudaGraph(CudaGraph&& other) noexcept
    : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  if (this != &other) {
    reset();
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

void CudaGraph::reset() noexcept {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

namespace {

// Ends a capture that the body left (or that failed), whatever state it is in; returns the graph if one came
// out and clears the non-sticky capture error so later calls do not report it.
cudaGraph_t end_capture(cudaStream_t stream, cudaError_t& status) {
  cudaGraph_t graph = nullptr;
  status = cudaStreamEndCapture(stream, &graph);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    graph = nullptr;
  }
  return graph;
}

}  // namespace

std::string CudaGraph::capture(cudaStream_t stream, const std::function<void()>& body) {
  reset();
  cudaStreamCaptureStatus before = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &before));
  ENGINE_CHECK(before == cudaStreamCaptureStatusNone, "CudaGraph: the stream is already capturing");
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    body();
  } catch (const Error& e) {
    // A CUDA call refused during capture surfaces as the body's Error: end the capture and say why.
    cudaError_t status = cudaSuccess;
    cudaGraph_t graph = end_capture(stream, status);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    return std::string("capture failed inside the step: ") + e.what();
  } catch (...) {
    cudaError_t status = cudaSuccess;
    cudaGraph_t graph = end_capture(stream, status);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    throw;
  }
  cudaError_t status = cudaSuccess;
  graph_ = end_capture(stream, status);
  if (graph_ == nullptr) {
    return "cudaStreamEndCapture: " + detail::status_message(status) +
           " (the step did something a capture does not allow: a host synchronization, the legacy stream, "
           "or a stream it did not join back)";
  }
  const cudaError_t inst = cudaGraphInstantiate(&exec_, graph_, 0);
  if (inst != cudaSuccess) {
    (void)cudaGetLastError();
    exec_ = nullptr;
    reset();
    return "cudaGraphInstantiate: " + detail::status_message(inst);
  }
  return "";
}

void CudaGraph::launch(cudaStream_t stream) const {
  ENGINE_CHECK(exec_ != nullptr, "CudaGraph: launch of a graph that was never captured");
  CUDA_CHECK(cudaGraphLaunch(exec_, stream));
}

std::size_t CudaGraph::kernel_nodes() const {
  ENGINE_CHECK(graph_ != nullptr, "CudaGraph: no captured graph to count");
  return count_kernel_nodes(graph_);
}

std::size_t count_kernel_nodes(cudaGraph_t graph) {
  std::size_t count = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::size_t kernels = 0;
  for (std::size_t i = 0; i < count; ++i) {
    cudaGraphNodeType type{};
    CUDA_CHECK(cudaGraphNodeGetType(nodes[i], &type));
    if (type == cudaGraphNodeTypeKernel) {
      ++kernels;
    } else if (type == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;
      CUDA_CHECK(cudaGraphChildGraphNodeGetGraph(nodes[i], &child));
      kernels += count_kernel_nodes(child);
    }
  }
  return kernels;
}

}  // namespace engine
