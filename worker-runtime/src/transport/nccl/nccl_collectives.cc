// The collectives of the NCCL backend. Uneven allgather / reducescatter become grouped
// broadcasts / reduces (NCCL's own need equal counts); alltoallv is grouped send/recv.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "transport/nccl/nccl_backend.h"
#include "transport/nccl/nccl_mapping.h"

namespace korovod::nccl {
namespace {

bool all_equal(const std::vector<int64_t>& v) { return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end(); }

int64_t total(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

const char* at(const void* base, int64_t offset) { return static_cast<const char*>(base) + offset; }
char* at(void* base, int64_t offset) { return static_cast<char*>(base) + offset; }

// Ends an NCCL group even when a call inside it failed (a group left open breaks later calls).
Status end_group(Status inside) {
  const Status ended = nccl_status(ncclGroupEnd(), "ncclGroupEnd");
  return inside.is_ok() ? ended : inside;
}

}  // namespace

class NcclBackend::RedOp {
 public:
  RedOp(ncclRedOp_t op, ncclComm_t custom_of) : op_(op), comm_(custom_of) {}
  ~RedOp() {
    if (comm_) ncclRedOpDestroy(op_, comm_);
  }
  RedOp(const RedOp&) = delete;
  RedOp& operator=(const RedOp&) = delete;
  ncclRedOp_t op() const { return op_; }

 private:
  ncclRedOp_t op_;
  ncclComm_t comm_;  // set for a PreMulSum created on it
};

// Sum and Average fold prescale * postscale (and 1/size) into one PreMulSum; other ops take
// no scaling on the GPU.
Result<std::unique_ptr<NcclBackend::RedOp>> NcclBackend::reduction(ReduceOp op, DataType dtype, double prescale,
                                                                   double postscale) {
  Result<ncclDataType_t> type = nccl_dtype(dtype);
  if (!type.is_ok()) return type.status();
  double factor = prescale * postscale;
  if (factor == 1.0) {
    Result<ncclRedOp_t> plain = nccl_reduce_op(op, dtype);
    if (!plain.is_ok()) return plain.status();
    return std::make_unique<RedOp>(*plain, nullptr);
  }
  if (op != ReduceOp::kSum && op != ReduceOp::kAverage) {
    return Status::invalid_argument(fmt::format(
        "the NCCL backend scales only SUM and AVERAGE, not {} (tensor dtype {}, prescale {}, postscale {})",
        reduce_op_name(op), dtype_name(dtype), prescale, postscale));
  }
  if (op == ReduceOp::kAverage) factor /= size();
  Result<PreMulScalar> scalar = premul_scalar(dtype, factor);
  if (!scalar.is_ok()) return scalar.status();
  ncclRedOp_t custom;
  KOROVOD_RETURN_IF_ERROR(nccl_status(
      ncclRedOpCreatePreMulSum(&custom, scalar->bytes, *type, ncclScalarHostImmediate, comm_),
      "ncclRedOpCreatePreMulSum"));
  return std::make_unique<RedOp>(custom, comm_);
}

Status NcclBackend::allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) {
  return allreduce_scaled(send, recv, count, dtype, op, 1.0, 1.0);
}

Status NcclBackend::allreduce_scaled(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op,
                                     double prescale, double postscale) {
  KOROVOD_RETURN_IF_ERROR(ensure_ready(recv));
  Result<std::unique_ptr<RedOp>> red = reduction(op, dtype, prescale, postscale);
  if (!red.is_ok()) return red.status();
  if (count == 0) return Status::ok();
  const int64_t bytes = count * element_size(dtype);
  KOROVOD_RETURN_IF_ERROR(device_pair(send, bytes, recv, bytes));
  return finish(nccl_status(ncclAllReduce(send, recv, static_cast<size_t>(count), *nccl_dtype(dtype), (*red)->op(),
                                          comm_, stream_),
                            "ncclAllReduce"));
}

Status NcclBackend::reducescatter(const void* send, void* recv, const std::vector<int64_t>& recv_counts,
                                  DataType dtype, ReduceOp op) {
  return reducescatter_scaled(send, recv, recv_counts, dtype, op, 1.0, 1.0);
}

Status NcclBackend::reducescatter_scaled(const void* send, void* recv, const std::vector<int64_t>& recv_counts,
                                         DataType dtype, ReduceOp op, double prescale, double postscale) {
  KOROVOD_RETURN_IF_ERROR(ensure_ready(send));
  Result<std::unique_ptr<RedOp>> red = reduction(op, dtype, prescale, postscale);
  if (!red.is_ok()) return red.status();
  const int64_t elem = element_size(dtype);
  if (total(recv_counts) == 0) return Status::ok();
  KOROVOD_RETURN_IF_ERROR(device_pair(send, total(recv_counts) * elem, recv, recv_counts[rank()] * elem));
  const ncclDataType_t type = *nccl_dtype(dtype);
  if (all_equal(recv_counts)) {
    return finish(nccl_status(ncclReduceScatter(send, recv, static_cast<size_t>(recv_counts[0]), type, (*red)->op(),
                                                comm_, stream_),
                              "ncclReduceScatter"));
  }
  Status inside = nccl_status(ncclGroupStart(), "ncclGroupStart");
  if (!inside.is_ok()) return finish(inside);
  int64_t offset = 0;
  for (int k = 0; k < size() && inside.is_ok(); ++k) {
    if (recv_counts[k] > 0) {
      inside = nccl_status(ncclReduce(at(send, offset * elem), recv, static_cast<size_t>(recv_counts[k]), type,
                                      (*red)->op(), k, comm_, stream_),
                           "ncclReduce");
    }
    offset += recv_counts[k];
  }
  return finish(end_group(inside));
}

Status NcclBackend::allgatherv(const void* send, int64_t send_bytes, void* recv,
                               const std::vector<int64_t>& recv_bytes) {
  KOROVOD_RETURN_IF_ERROR(ensure_ready(recv));
  if (total(recv_bytes) == 0) return Status::ok();
  const bool in_place = send == recv;
  KOROVOD_RETURN_IF_ERROR(device_pair(send, send_bytes, recv, total(recv_bytes)));
  if (all_equal(recv_bytes) && !in_place) {
    return finish(nccl_status(ncclAllGather(send, recv, static_cast<size_t>(recv_bytes[0]), ncclUint8, comm_, stream_),
                              "ncclAllGather"));
  }
  Status inside = nccl_status(ncclGroupStart(), "ncclGroupStart");
  if (!inside.is_ok()) return finish(inside);
  int64_t offset = 0;
  for (int k = 0; k < size() && inside.is_ok(); ++k) {
    if (recv_bytes[k] > 0) {
      const void* from = k == rank() ? send : at(recv, offset);
      inside = nccl_status(ncclBroadcast(from, at(recv, offset), static_cast<size_t>(recv_bytes[k]), ncclUint8, k,
                                         comm_, stream_),
                           "ncclBroadcast");
    }
    offset += recv_bytes[k];
  }
  return finish(end_group(inside));
}

Status NcclBackend::broadcast(void* buffer, int64_t bytes, int root) {
  KOROVOD_RETURN_IF_ERROR(ensure_ready(buffer));
  if (bytes == 0) return Status::ok();
  const void* send = buffer;
  KOROVOD_RETURN_IF_ERROR(device_pair(send, bytes, buffer, bytes));
  return finish(nccl_status(ncclBroadcast(buffer, buffer, static_cast<size_t>(bytes), ncclUint8, root, comm_, stream_),
                            "ncclBroadcast"));
}

Status NcclBackend::alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                              const std::vector<int64_t>& recv_bytes) {
  // Always set up first: whether this rank moves any bytes differs between ranks.
  KOROVOD_RETURN_IF_ERROR(ensure_ready(send));
  KOROVOD_RETURN_IF_ERROR(device_pair(send, total(send_bytes), recv, total(recv_bytes)));
  Status inside = nccl_status(ncclGroupStart(), "ncclGroupStart");
  if (!inside.is_ok()) return finish(inside);
  int64_t send_offset = 0, recv_offset = 0;
  for (int k = 0; k < size() && inside.is_ok(); ++k) {
    if (send_bytes[k] > 0) {
      inside = nccl_status(ncclSend(at(send, send_offset), static_cast<size_t>(send_bytes[k]), ncclUint8, k, comm_,
                                    stream_),
                           "ncclSend");
    }
    if (inside.is_ok() && recv_bytes[k] > 0) {
      inside = nccl_status(ncclRecv(at(recv, recv_offset), static_cast<size_t>(recv_bytes[k]), ncclUint8, k, comm_,
                                    stream_),
                           "ncclRecv");
    }
    send_offset += send_bytes[k];
    recv_offset += recv_bytes[k];
  }
  return finish(end_group(inside));
}

Status NcclBackend::barrier() {
  KOROVOD_RETURN_IF_ERROR(ensure_ready(nullptr));
  Result<void*> one = to_device(nullptr, sizeof(float), 0, false, false);
  if (!one.is_ok()) return one.status();
  return finish(nccl_status(ncclAllReduce(*one, *one, 1, ncclFloat32, ncclSum, comm_, stream_), "ncclAllReduce"));
}

}  // namespace korovod::nccl
