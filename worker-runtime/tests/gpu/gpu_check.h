// Shared pieces of rt_gpu_test: device buffers, one check context per rank, comparisons.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../mpi/mpi_check.h"
#include "gpu_values.h"

namespace korovod::gputest {

using mpitest::Checker;

// cudaMalloc'd memory, freed on destruction.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

struct GpuContext {
  Runtime& rt;
  Checker& c;
  int rank;
  int size;
  int device;
  // The data plane rank 0's startup line named: NCCL (one rank per GPU) or host staging (ranks
  // sharing a GPU), whose semantics are the CPU path's: every dtype reduces, any op scales.
  bool staging;
  std::vector<std::unique_ptr<DeviceBuffer>> outputs;  // what the allocators handed out

  // A device tensor holding `values` in `dtype`.
  TensorView upload(DeviceBuffer& buf, DataType dtype, std::vector<int64_t> shape, const std::vector<double>& values);
  // An OutputAllocator giving device memory (kept in `outputs` until the context goes).
  OutputAllocator device_allocator(DataType dtype);
  // `count` elements of `dtype` at `p` (device or host memory).
  std::vector<double> download(const void* p, DataType dtype, int64_t count);
  // One CHECK per case: the first element off by more than the dtype's tolerance fails it.
  void expect_values(const std::string& what, DataType dtype, const std::vector<double>& got,
                     const std::vector<double>& want);
  // Waits for `h` and checks it succeeded; false (and a failed CHECK) otherwise.
  bool finished(const std::string& what, const Result<Handle>& h);
};

void check_allreduce(GpuContext& g);
void check_allreduce_scaled_and_grouped(GpuContext& g);
void check_allgather_broadcast(GpuContext& g);
void check_alltoall_reducescatter_barrier(GpuContext& g);
void check_ready_event(GpuContext& g);  // the framework's stream event is waited for
// `resets` times: a new runtime from `make`, a device allreduce, shutdown; then the device's free
// memory, the threads and the descriptors must be as after the first (gpu_reset_check.cc).
void check_resets(Checker& c, int rank, int size, int device, bool staging, int resets,
                  const std::function<Result<std::unique_ptr<Runtime>>()>& make);

}  // namespace korovod::gputest
