// Ready events on a real GPU: the framework's stream is still copying the input when the tensor
// is submitted; with the CUDA event recorded behind that copy as its ReadyEvent, the NCCL
// collective (on korovod's own stream) must see the copied values, never the zeros before them.
#include <fmt/format.h>

#include "gpu_check.h"
#include "korovod/cuda.h"

namespace korovod::gputest {

void check_ready_event(GpuContext& g) {
  const int64_t count = int64_t{16} << 20;  // 64 MiB of float32: the copy takes a while
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  cudaStream_t stream = nullptr;
  float* host = nullptr;
  if (!MPI_CHECK(g.c, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "cudaStreamCreate") ||
      !MPI_CHECK(g.c, cudaMallocHost(reinterpret_cast<void**>(&host), bytes) == cudaSuccess, "cudaMallocHost")) {
    return;
  }
  for (int64_t i = 0; i < count; ++i) host[i] = static_cast<float>(g.rank + 1);
  DeviceBuffer in(bytes), out(bytes);
  cudaMemset(in.data(), 0, bytes);
  cudaDeviceSynchronize();
  cudaMemcpyAsync(in.data(), host, bytes, cudaMemcpyHostToDevice, stream);  // still running below
  Result<std::shared_ptr<const ReadyEvent>> event = record_cuda_ready_event(stream);
  if (MPI_CHECK(g.c, event.is_ok(), "record_cuda_ready_event: {}", event.status().to_string())) {
    CollectiveArgs a;
    a.name = "ready_event.allreduce";
    a.input = TensorView{in.data(), DataType::kFloat32, {count}, g.device};
    a.output = TensorView{out.data(), DataType::kFloat32, {count}, g.device};
    a.op = ReduceOp::kSum;
    a.ready_event = *event;
    if (g.finished(a.name, g.rt.enqueue(std::move(a)))) {
      const std::vector<double> got = g.download(out.data(), DataType::kFloat32, count);
      const double want = g.size * (g.size + 1) / 2.0;
      g.expect_values("allreduce after a ready event", DataType::kFloat32, {got.front(), got[got.size() / 2], got.back()},
                      {want, want, want});
    }
  }
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  cudaFreeHost(host);
}

}  // namespace korovod::gputest
