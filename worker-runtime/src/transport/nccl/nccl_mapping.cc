#include "transport/nccl/nccl_mapping.h"

#include <fmt/format.h>

#include <cstring>

#include "kernels/half.h"

namespace korovod::nccl {

Result<ncclDataType_t> nccl_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return ncclUint8;
    case DataType::kInt8: return ncclInt8;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kBool:
      break;
  }
  return Status::invalid_argument(fmt::format(
      "the NCCL backend cannot reduce {} tensors (NCCL has no such type; supported: uint8, int8, int32, "
      "int64, float16, bfloat16, float32, float64)",
      dtype_name(dtype)));
}

Result<ncclRedOp_t> nccl_reduce_op(ReduceOp op, DataType dtype) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kProduct: return ncclProd;
    case ReduceOp::kAverage: return ncclAvg;
    case ReduceOp::kAdasum: break;
  }
  return Status::invalid_argument(
      fmt::format("the NCCL backend has no {} reduction (tensor dtype {})", reduce_op_name(op), dtype_name(dtype)));
}

Result<PreMulScalar> premul_scalar(DataType dtype, double factor) {
  PreMulScalar s;
  switch (dtype) {
    case DataType::kFloat64: std::memcpy(s.bytes, &factor, sizeof factor); return s;
    case DataType::kFloat32: {
      const float f = static_cast<float>(factor);
      std::memcpy(s.bytes, &f, sizeof f);
      return s;
    }
    case DataType::kFloat16: {
      const uint16_t h = kernels::float_to_float16(static_cast<float>(factor));
      std::memcpy(s.bytes, &h, sizeof h);
      return s;
    }
    case DataType::kBFloat16: {
      const uint16_t h = kernels::float_to_bfloat16(static_cast<float>(factor));
      std::memcpy(s.bytes, &h, sizeof h);
      return s;
    }
    default:
      return Status::invalid_argument(fmt::format(
          "the NCCL backend cannot scale {} tensors by {} (prescale/postscale need a floating dtype)",
          dtype_name(dtype), factor));
  }
}

Status nccl_status(ncclResult_t result, std::string_view call) {
  if (result == ncclSuccess) return Status::ok();
  return Status::unknown(fmt::format("{}: {}", call, ncclGetErrorString(result)));
}

Status cuda_status(cudaError_t error, std::string_view call) {
  if (error == cudaSuccess) return Status::ok();
  return Status::unknown(fmt::format("{}: {} ({})", call, cudaGetErrorString(error), cudaGetErrorName(error)));
}

std::string nccl_version_string() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // NCCL_VERSION: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9.
  if (code < 20900) return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
}

}  // namespace korovod::nccl
