// Setup, staging and completion of the NCCL backend; the collectives are in nccl_collectives.cc.
#include "transport/nccl/nccl_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "transport/common/gpu_plane.h"
#include "transport/nccl/nccl_mapping.h"

namespace korovod::nccl {

Result<int> visible_gpus() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorInsufficientDriver) {
    // What a machine without the NVIDIA driver reports (no libcuda.so): CUDA's own text, "CUDA
    // driver version is insufficient for CUDA runtime version", reads like a broken install.
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    return Status::unknown(fmt::format(
        "no NVIDIA GPU usable: cudaGetDeviceCount: no NVIDIA driver on this host, or one older than CUDA {}.{} needs "
        "({})", runtime / 1000, runtime % 1000 / 10, cudaGetErrorName(error)));
  }
  if (error != cudaSuccess) {
    return Status::unknown(fmt::format("no NVIDIA GPU usable: cudaGetDeviceCount: {} ({})",
                                       cudaGetErrorString(error), cudaGetErrorName(error)));
  }
  if (count == 0) return Status::unknown("no NVIDIA GPU usable: cudaGetDeviceCount found 0 devices");
  return count;
}

std::string gpu_bus_id(int device) {
  char id[32] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof id, device) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return id;
}

NcclBackend::NcclBackend(std::unique_ptr<ControlChannel> control, int local_rank, std::string host_id)
    : control_(std::move(control)), local_rank_(local_rank), host_id_(std::move(host_id)) {}

NcclBackend::~NcclBackend() {
  if (device_ >= 0) cudaSetDevice(device_);
  if (comm_) ncclCommDestroy(comm_);
  for (Scratch& s : scratch_) {
    if (s.ptr) cudaFree(s.ptr);
  }
  if (stream_) cudaStreamDestroy(stream_);
}

Status NcclBackend::select_device(const void* hint) {
  Result<int> gpus = visible_gpus();
  if (!gpus.is_ok()) return gpus.status();
  device_ = local_rank_ % *gpus;
  cudaPointerAttributes attr{};
  if (hint && cudaPointerGetAttributes(&attr, hint) == cudaSuccess && attr.type == cudaMemoryTypeDevice) {
    device_ = attr.device;  // the tensors' GPU wins over the local rank's guess
  }
  cudaGetLastError();  // a failed attribute query must not linger as the sticky last error
  KOROVOD_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device_), fmt::format("cudaSetDevice({})", device_)));
  return cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}

Status NcclBackend::create_communicator(const void* hint) {
  Status local = select_device(hint);
  ncclUniqueId id{};
  if (local.is_ok() && rank() == 0) local = nccl_status(ncclGetUniqueId(&id), "ncclGetUniqueId");
  // Every member reports (its GPU, or why it has none) before anyone enters ncclCommInitRank,
  // which would wait forever for a member that failed; rank 0 sends the verdict (and the id) to
  // all.
  const std::string report = local.is_ok() ? "ok " + gpu_identity_line({host_id_, gpu_bus_id(device_)})
                                           : "err " + local.message();
  Result<std::vector<std::string>> reports = control_->gather_to_root(report);
  if (!reports.is_ok()) return reports.status();
  std::string verdict;
  if (rank() == 0) verdict = setup_verdict(*reports, std::string(id.internal, sizeof id.internal));
  KOROVOD_RETURN_IF_ERROR(control_->broadcast_from_root(verdict));
  if (verdict.rfind("ok", 0) != 0 || verdict.size() != 2 + sizeof id.internal) {
    // Every member got this same verdict and is still in step: the GPU operations fail, the
    // engine (and CPU collectives) go on.
    return Status::invalid_argument(verdict.size() > 3 ? verdict.substr(3) : "NCCL setup of the process set failed");
  }
  std::memcpy(id.internal, verdict.data() + 2, sizeof id.internal);
  return nccl_status(ncclCommInitRank(&comm_, size(), id, rank()), "ncclCommInitRank");
}

std::string setup_verdict(const std::vector<std::string>& reports, const std::string& id) {
  std::string failures;
  std::vector<GpuIdentity> gpus;
  std::vector<int> ranks;
  for (size_t r = 0; r < reports.size(); ++r) {
    const std::string& line = reports[r];
    if (line.rfind("ok ", 0) == 0) {
      gpus.push_back(parse_gpu_identity(line.substr(3)));
      ranks.push_back(static_cast<int>(r));
    } else {
      const std::string why = line.substr(std::min<size_t>(4, line.size()));  // after "err "
      failures += fmt::format("{}rank {}: {}", failures.empty() ? "" : "; ", r, why);
    }
  }
  if (!failures.empty()) return "err NCCL setup of the process set failed on " + failures;
  // NCCL would refuse this in ncclCommInitRank ("Duplicate GPU detected"); say why, and what to do.
  if (std::string shared = shared_gpus(gpus, ranks); !shared.empty()) {
    return fmt::format("err NCCL setup of the process set failed: {} (process set ranks), and NCCL needs a GPU per "
                       "rank; KOROVOD_GPU_OPERATIONS=staging runs GPU tensors through host memory instead", shared);
  }
  return "ok" + id;
}

Status NcclBackend::ensure_ready(const void* hint) {
  if (!ready_ && init_status_.is_ok()) {
    init_status_ = create_communicator(hint);
    ready_ = init_status_.is_ok();
  }
  if (!init_status_.is_ok()) return init_status_;
  copy_backs_.clear();
  return cuda_status(cudaSetDevice(device_), "cudaSetDevice");
}

Result<void*> NcclBackend::to_device(const void* p, int64_t bytes, int slot, bool copy_in, bool copy_back) {
  cudaPointerAttributes attr{};
  if (p && cudaPointerGetAttributes(&attr, p) == cudaSuccess &&
      (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged)) {
    if (attr.type == cudaMemoryTypeDevice && attr.device != device_) {
      return Status::invalid_argument(fmt::format(
          "tensor on GPU {}, but this process set's NCCL communicator is on GPU {}", attr.device, device_));
    }
    return const_cast<void*>(p);
  }
  cudaGetLastError();
  Scratch& s = scratch_[slot];
  const int64_t need = std::max<int64_t>(bytes, 64);
  if (s.bytes < need) {
    if (s.ptr) cudaFree(s.ptr);
    s = {};
    KOROVOD_RETURN_IF_ERROR(cuda_status(cudaMalloc(&s.ptr, static_cast<size_t>(need)), "cudaMalloc (staging)"));
    s.bytes = need;
  }
  if (copy_in && p && bytes > 0) {
    KOROVOD_RETURN_IF_ERROR(cuda_status(
        cudaMemcpyAsync(s.ptr, p, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync"));
  }
  if (copy_back && p && bytes > 0) copy_backs_.push_back({const_cast<void*>(p), s.ptr, bytes});
  return s.ptr;
}

Status NcclBackend::device_pair(const void*& send, int64_t send_bytes, void*& recv, int64_t recv_bytes) {
  if (send == recv) {
    Result<void*> both = to_device(recv, std::max(send_bytes, recv_bytes), 0, true, true);
    if (!both.is_ok()) return both.status();
    send = recv = *both;
    return Status::ok();
  }
  Result<void*> s = to_device(send, send_bytes, 0, true, false);
  if (!s.is_ok()) return s.status();
  Result<void*> r = to_device(recv, recv_bytes, 1, false, true);
  if (!r.is_ok()) return r.status();
  send = *s;
  recv = *r;
  return Status::ok();
}

Status NcclBackend::finish(Status enqueued) {
  if (enqueued.is_ok()) {
    for (const CopyBack& c : copy_backs_) {
      enqueued = cuda_status(cudaMemcpyAsync(c.host, c.device, static_cast<size_t>(c.bytes),
                                             cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
      if (!enqueued.is_ok()) break;
    }
  }
  copy_backs_.clear();
  // Wait even after a failed enqueue: nothing may still write into the caller's memory.
  const Status synced = cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  ncclResult_t async = ncclSuccess;
  if (comm_) ncclCommGetAsyncError(comm_, &async);
  if (!enqueued.is_ok()) return enqueued;
  if (!synced.is_ok()) return synced;
  return nccl_status(async, "NCCL (asynchronous error)");
}

Status NcclBackend::copy(void* dst, const void* src, int64_t bytes) {
  if (bytes <= 0 || dst == src) return Status::ok();
  // Not collective (a broadcast root's own copy, Adasum's copies to and from host memory), so no
  // communicator setup here. But the calling thread's current GPU must be the tensor's: on a
  // thread that never chose one, CUDA would open a context on GPU 0 for every rank of the host.
  int device = device_;
  if (device < 0) {
    for (const void* p : {static_cast<const void*>(dst), src}) {
      cudaPointerAttributes attr{};
      if (cudaPointerGetAttributes(&attr, p) == cudaSuccess && attr.type == cudaMemoryTypeDevice) {
        device = attr.device;
        break;
      }
    }
    cudaGetLastError();  // a failed attribute query must not linger as the sticky last error
  }
  if (device >= 0) KOROVOD_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device), fmt::format("cudaSetDevice({})", device)));
  return cuda_status(cudaMemcpy(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault), "cudaMemcpy");
}

}  // namespace korovod::nccl
