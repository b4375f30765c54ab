#include "transport/common/staging_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernels/kernels.h"

namespace korovod {
namespace {

int64_t total(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

// As the CPU algorithms: Average is a Sum, divided by the set's size with the postscale.
ReduceOp wire_op(ReduceOp op) { return op == ReduceOp::kAverage ? ReduceOp::kSum : op; }
double effective_postscale(ReduceOp op, double postscale, int size) {
  return op == ReduceOp::kAverage ? postscale / size : postscale;
}

// Staging buffers grow in whole 64 KiB steps, so a run of slightly larger tensors does not
// reallocate pinned memory (slow) each time.
constexpr int64_t kBufferStep = 64 * 1024;

}  // namespace

StagingBackend::StagingBackend(std::unique_ptr<DeviceCopier> copier, int rank, int size, std::string why)
    : copier_(std::move(copier)), rank_(rank), size_(size), why_(std::move(why)) {}

StagingBackend::~StagingBackend() {
  for (HostBuffer& b : buffers_) {
    if (b.ptr) copier_->free_host(b.ptr);
  }
}

std::string StagingBackend::description() const {
  return fmt::format("host staging through {} ({})", host_ ? host_->name() : "no host data plane", why_);
}

Status StagingBackend::need_host_plane(const char* what) const {
  if (host_) return Status::ok();
  // The same on every member (the providers agree on the planes), so no one is left waiting.
  return Status::invalid_argument(
      fmt::format("host staging of a GPU {}: this process set has no host data plane to stage through", what));
}

Result<void*> StagingBackend::buffer(int slot, int64_t bytes) {
  HostBuffer& b = buffers_[slot];
  if (b.ptr && b.bytes >= bytes) return b.ptr;
  if (b.ptr) copier_->free_host(b.ptr);
  b = {};
  const int64_t want = std::max<int64_t>((bytes + kBufferStep - 1) / kBufferStep, 1) * kBufferStep;
  Result<void*> p = copier_->allocate_host(want);
  if (!p.is_ok()) return p.status();
  b = {*p, want};
  return b.ptr;
}

Result<StagingBackend::HostView> StagingBackend::host_view(const void* p, int64_t bytes, int slot, bool copy_in,
                                                           const char* what) {
  Result<bool> device = copier_->on_device(p);
  if (!device.is_ok()) {
    return Status::unknown(fmt::format("host staging of a GPU {}: {}", what, device.status().message()));
  }
  if (!*device) return HostView{const_cast<void*>(p), nullptr, bytes};
  Result<void*> host = buffer(slot, bytes);
  if (!host.is_ok()) {
    return Status::unknown(fmt::format("host staging of a GPU {}: {} bytes of host memory: {}", what, bytes,
                                       host.status().message()));
  }
  if (copy_in) KOROVOD_RETURN_IF_ERROR(to_host(*host, p, bytes, what));
  return HostView{*host, const_cast<void*>(p), bytes};
}

Status StagingBackend::load(void* host, const void* src, int64_t bytes, const char* what) {
  if (bytes <= 0 || host == src) return Status::ok();
  Result<bool> device = copier_->on_device(src);
  if (!device.is_ok()) {
    return Status::unknown(fmt::format("host staging of a GPU {}: {}", what, device.status().message()));
  }
  if (*device) return to_host(host, src, bytes, what);
  std::memcpy(host, src, static_cast<size_t>(bytes));
  return Status::ok();
}

Status StagingBackend::to_host(void* host, const void* device, int64_t bytes, const char* what) {
  if (bytes <= 0) return Status::ok();
  const Status copied = copier_->copy(host, device, bytes);
  if (copied.is_ok()) return copied;
  return Status::unknown(fmt::format("host staging of a GPU {}: copy of {} bytes to the host: {}", what, bytes,
                                     copied.message()));
}

Status StagingBackend::copy_back(const HostView& v, const char* what) {
  if (!v.device || v.bytes <= 0) return Status::ok();
  const Status copied = copier_->copy(v.device, v.host, v.bytes);
  if (copied.is_ok()) return copied;
  return Status::unknown(fmt::format("host staging of a GPU {}: copy of {} bytes back to the device: {}", what,
                                     v.bytes, copied.message()));
}

Status StagingBackend::allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) {
  return allreduce_scaled(send, recv, count, dtype, op, 1.0, 1.0);
}

Status StagingBackend::allreduce_scaled(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op,
                                        double prescale, double postscale) {
  KOROVOD_RETURN_IF_ERROR(need_host_plane("allreduce"));
  if (count == 0) return Status::ok();  // the same count on every member
  const int64_t bytes = count * element_size(dtype);
  // One buffer: the input is loaded into the output's host view and reduced there in place.
  Result<HostView> out = host_view(recv, bytes, 1, /*copy_in=*/false, "allreduce");
  if (!out.is_ok()) return out.status();
  KOROVOD_RETURN_IF_ERROR(load(out->host, send, bytes, "allreduce"));
  kernels::scale(dtype, out->host, count, prescale);
  KOROVOD_RETURN_IF_ERROR(host_->allreduce(out->host, out->host, count, dtype, wire_op(op)));
  kernels::scale(dtype, out->host, count, effective_postscale(op, postscale, size_));
  return copy_back(*out, "allreduce");
}

Status StagingBackend::reducescatter(const void* send, void* recv, const std::vector<int64_t>& recv_counts,
                                     DataType dtype, ReduceOp op) {
  return reducescatter_scaled(send, recv, recv_counts, dtype, op, 1.0, 1.0);
}

Status StagingBackend::reducescatter_scaled(const void* send, void* recv, const std::vector<int64_t>& recv_counts,
                                            DataType dtype, ReduceOp op, double prescale, double postscale) {
  KOROVOD_RETURN_IF_ERROR(need_host_plane("reducescatter"));
  const int64_t count = total(recv_counts);
  if (count == 0) return Status::ok();  // the same counts on every member
  const int64_t elem = element_size(dtype);
  Result<HostView> in = host_view(send, count * elem, 0, /*copy_in=*/true, "reducescatter");
  if (!in.is_ok()) return in.status();
  const void* scaled = in->host;
  if (prescale != 1.0) {
    // Never scale the caller's own host memory in place: a staged copy may be, the input not.
    Result<void*> scratch = in->device ? Result<void*>(in->host) : buffer(0, count * elem);
    if (!scratch.is_ok()) return Status::unknown(fmt::format("host staging of a GPU reducescatter: {}",
                                                             scratch.status().message()));
    kernels::scale_copy(dtype, *scratch, in->host, count, prescale);
    scaled = *scratch;
  }
  Result<HostView> out = host_view(recv, recv_counts[rank_] * elem, 1, /*copy_in=*/false, "reducescatter");
  if (!out.is_ok()) return out.status();
  KOROVOD_RETURN_IF_ERROR(host_->reducescatter(scaled, out->host, recv_counts, dtype, wire_op(op)));
  kernels::scale(dtype, out->host, recv_counts[rank_], effective_postscale(op, postscale, size_));
  return copy_back(*out, "reducescatter");
}

Status StagingBackend::allgatherv(const void* send, int64_t send_bytes, void* recv,
                                  const std::vector<int64_t>& recv_bytes) {
  KOROVOD_RETURN_IF_ERROR(need_host_plane("allgather"));
  if (total(recv_bytes) == 0) return Status::ok();  // the same sizes on every member
  Result<HostView> in = host_view(send, send_bytes, 0, /*copy_in=*/true, "allgather");
  if (!in.is_ok()) return in.status();
  Result<HostView> out = host_view(recv, total(recv_bytes), 1, /*copy_in=*/false, "allgather");
  if (!out.is_ok()) return out.status();
  KOROVOD_RETURN_IF_ERROR(host_->allgatherv(in->host, send_bytes, out->host, recv_bytes));
  return copy_back(*out, "allgather");
}

Status StagingBackend::broadcast(void* buffer, int64_t bytes, int root) {
  KOROVOD_RETURN_IF_ERROR(need_host_plane("broadcast"));
  if (bytes == 0) return Status::ok();
  Result<HostView> v = host_view(buffer, bytes, 0, /*copy_in=*/rank_ == root, "broadcast");
  if (!v.is_ok()) return v.status();
  KOROVOD_RETURN_IF_ERROR(host_->broadcast(v->host, bytes, root));
  return rank_ == root ? Status::ok() : copy_back(*v, "broadcast");
}

Status StagingBackend::alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                                 const std::vector<int64_t>& recv_bytes) {
  KOROVOD_RETURN_IF_ERROR(need_host_plane("alltoall"));
  // No early return: how many bytes a member sends and receives differs between members.
  Result<HostView> in = host_view(send, total(send_bytes), 0, /*copy_in=*/true, "alltoall");
  if (!in.is_ok()) return in.status();
  Result<HostView> out = host_view(recv, total(recv_bytes), 1, /*copy_in=*/false, "alltoall");
  if (!out.is_ok()) return out.status();
  KOROVOD_RETURN_IF_ERROR(host_->alltoallv(in->host, send_bytes, out->host, recv_bytes));
  return copy_back(*out, "alltoall");
}

Status StagingBackend::barrier() {
  KOROVOD_RETURN_IF_ERROR(need_host_plane("barrier"));
  return host_->barrier();
}

Status StagingBackend::copy(void* dst, const void* src, int64_t bytes) {
  if (bytes <= 0 || dst == src) return Status::ok();
  const Status copied = copier_->copy(dst, src, bytes);
  if (copied.is_ok()) return copied;
  return Status::unknown(fmt::format("copy of {} bytes of a GPU tensor: {}", bytes, copied.message()));
}

}  // namespace korovod
