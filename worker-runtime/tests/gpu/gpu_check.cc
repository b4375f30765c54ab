#include "gpu_check.h"

#include <cmath>

namespace korovod::gputest {

DeviceBuffer::DeviceBuffer(size_t bytes) {
  if (cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes) != cudaSuccess) ptr_ = nullptr;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

TensorView GpuContext::upload(DeviceBuffer& buf, DataType dtype, std::vector<int64_t> shape,
                              const std::vector<double>& values) {
  const std::vector<std::byte> bytes = encode(dtype, values);
  MPI_CHECK(c, buf.data() != nullptr, "cudaMalloc of {} bytes failed", bytes.size());
  if (!bytes.empty()) {
    MPI_CHECK(c, cudaMemcpy(buf.data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice) == cudaSuccess,
              "cudaMemcpy to the device");
  }
  return TensorView{buf.data(), dtype, std::move(shape), device};
}

OutputAllocator GpuContext::device_allocator(DataType dtype) {
  return [this, dtype](const std::vector<int64_t>& shape) -> Result<void*> {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    outputs.push_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(n * element_size(dtype))));
    if (!outputs.back()->data()) return Status::invalid_argument("cudaMalloc failed");
    return outputs.back()->data();
  };
}

std::vector<double> GpuContext::download(const void* p, DataType dtype, int64_t count) {
  std::vector<std::byte> bytes(static_cast<size_t>(count * element_size(dtype)));
  if (!bytes.empty()) {
    MPI_CHECK(c, cudaMemcpy(bytes.data(), p, bytes.size(), cudaMemcpyDefault) == cudaSuccess, "cudaMemcpy back");
  }
  return decode(dtype, bytes);
}

void GpuContext::expect_values(const std::string& what, DataType dtype, const std::vector<double>& got,
                               const std::vector<double>& want) {
  if (!MPI_CHECK(c, got.size() == want.size(), "{}: {} elements, expected {}", what, got.size(), want.size())) return;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(got[i] - want[i]) > tolerance(dtype, want[i])) {
      MPI_CHECK(c, false, "{} ({}): element {} is {}, expected {}", what, dtype_name(dtype), i, got[i], want[i]);
      return;
    }
  }
}

bool GpuContext::finished(const std::string& what, const Result<Handle>& h) {
  if (!MPI_CHECK(c, h.is_ok(), "{}: enqueue: {}", what, h.status().to_string())) return false;
  const Status s = rt.wait(*h);
  return MPI_CHECK(c, s.is_ok(), "{}: {}", what, s.to_string());
}

}  // namespace korovod::gputest
